// Command benchcluster is the scale harness of `make bench-cluster`: it starts a local cluster of one real node
// and generated KWOK nodes (eight cards each, twelve products), installs the chart as in the demo (its system
// Pods on the real node, a simulated device manager reporting the KWOK nodes' cards), measures how the operator
// behaves at that size, prints a table and one `name: value unit` line per measure, records the run in a
// results file that the plot is drawn from, and checks the measures against the thresholds of its named
// configuration (test/performance/configs): it exits 3 when one is crossed.
//
//	benchcluster --config test/performance/configs/small.yaml --bin bin --dir .bench-cluster \
//		--chart package/helm/gpustack-operator --image _output/package/images/gpustack-operator.tar
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
	var configPath string
	flag.StringVar(&configPath, "config", "", "a named configuration (test/performance/configs/NAME.yaml): the size, the quiet window and the thresholds")
	flag.IntVar(&o.nodes, "nodes", 5000, "how many KWOK nodes of eight cards to generate (instead of the configuration's)")
	flag.IntVar(&o.workloads, "workloads", 500, "how many Instances, and as many bare Kueue Pods, to run (instead of the configuration's)")
	flag.IntVar(&o.flips, "flips", 50, "how many gpustack.ai/managed flips to time")
	flag.IntVar(&o.policyCreates, "policy-creates", 200, "dry-run Pod creates to time with the policies, and as many without")
	flag.DurationVar(&o.quiet, "quiet", 5*time.Minute, "how long to count writes with nothing changing (instead of the configuration's)")
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
	c, err := sized(&o, configPath)
	if err != nil {
		fail(err)
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
	if c == nil {
		return
	}
	crossed := crossings(r, c.Thresholds)
	fmt.Print(report(c, crossed))
	if len(crossed) > 0 {
		os.Exit(3)
	}
}

// sized takes the size and quiet window from the configuration where the flags did not set them, and returns
// the configuration whose thresholds apply: none without one, or when the flags changed the size it was set at.
func sized(o *options, path string) (*config, error) {
	if path == "" {
		return nil, nil
	}
	c, err := loadConfig(path)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["nodes"] {
		o.nodes = c.Nodes
	}
	if !set["workloads"] {
		o.workloads = c.Workloads
	}
	if !set["quiet"] {
		o.quiet = c.quiet()
	}
	if o.nodes != c.Nodes || o.workloads != c.Workloads || o.quiet != c.quiet() {
		fmt.Fprintf(os.Stderr, ">> the flags change configuration %s's size: its thresholds are not checked\n", c.Name)
		return nil, nil
	}
	return c, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchcluster:", err)
	os.Exit(1)
}
