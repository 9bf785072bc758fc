// Command benchcluster is the scale harness of `make bench-cluster`: it starts a local cluster of one real node
// and generated KWOK nodes (eight cards each, twelve products), installs the chart as in the demo (its system
// Pods on the real node, a simulated device manager reporting the KWOK nodes' cards), measures how the operator
// behaves at that size, prints a table and one `name: value unit` line per measure, and records the run in a
// results file that the plot is drawn from.
//
//	benchcluster --nodes 1000 --workloads 200 --bin bin --dir .bench-cluster --chart package/helm/gpustack-operator \
//		--image _output/package/images/gpustack-operator.tar
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 5000, "how many KWOK nodes of eight cards to generate")
	flag.IntVar(&o.workloads, "workloads", 500, "how many Instances, and as many bare Kueue Pods, to run")
	flag.IntVar(&o.flips, "flips", 50, "how many gpustack.ai/managed flips to time")
	flag.IntVar(&o.policyCreates, "policy-creates", 200, "dry-run Pod creates to time with the policies, and as many without")
	flag.DurationVar(&o.quiet, "quiet", 5*time.Minute, "how long to count writes with nothing changing")
	flag.StringVar(&o.bin, "bin", "bin", "directory of the binaries and assets built by `make tools`, with gpustack-operator and localcluster")
	flag.StringVar(&o.dir, "dir", ".bench-cluster", "run directory of the cluster (removed and made afresh)")
	flag.StringVar(&o.chart, "chart", "package/helm/gpustack-operator", "the chart to install (make chart fills its charts/)")
	flag.StringVar(&o.image, "image", "_output/package/images/gpustack-operator.tar", "the operator's image archive (make operator-image)")
	flag.StringVar(&o.results, "results", "docs/bench/cluster-results.json", "results file the run is recorded in (empty: none)")
	flag.Parse()
	for _, p := range []*string{&o.bin, &o.dir, &o.chart, &o.image} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fail(err)
		}
		*p = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, o)
	if err != nil {
		fail(err)
	}
	r.print(os.Stdout)
	if o.results != "" {
		if err := record(o.results, r); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchcluster:", err)
	os.Exit(1)
}
