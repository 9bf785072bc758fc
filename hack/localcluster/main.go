// Command localcluster starts and stops the local Kubernetes cluster that the demo and the end-to-end tests
// run on: a real control plane with real nodes (a kubelet with containerd each, which localcluster run-node
// supervises), on which helm installs the operator's chart; its Pods run in real containers from the images
// built here.
//
//	localcluster up --bin bin --dir .demo --inventory examples/clusters/walkthrough.yaml --chart package/helm/gpustack-operator \
//		--real-nodes --images _output/package/images/gpustack-operator.tar
//	localcluster up-multi --bin bin --dir .demo --inventories examples/clusters/walkthrough.yaml,examples/clusters/h100-mig.yaml
//	localcluster down --dir .demo
//
// Without --real-nodes the inventory's nodes are KWOK's and the cluster stays bare (no chart).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "up-multi":
		err = upMulti(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "run-node":
		err = runNode(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localcluster up --bin DIR --dir DIR --inventory FILE | localcluster up-multi --bin DIR --dir DIR --inventories FILE,FILE | localcluster down --dir DIR")
	os.Exit(2)
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory of the binaries and assets built by `make tools`")
	dir := fs.String("dir", ".demo", "run directory: certificates, data, logs and the kubeconfig")
	inv := fs.String("inventory", "examples/clusters/walkthrough.yaml", "inventory file of the nodes to create")
	chart := fs.String("chart", "", "with --real-nodes, install this chart directory with helm (make chart fills its charts/)")
	realNodes := fs.Bool("real-nodes", false, "run the inventory's nodes as real nodes (kubelet, containerd, runc; needs root and make host-packages) instead of KWOK's")
	images := fs.String("images", "", "comma-separated image archives every real node imports besides bin/images (the operator's, from make package)")
	_ = fs.Parse(args)

	nodes, err := simulated.Load(*inv)
	if err != nil {
		return err
	}
	if err := absolute(dir, bin); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := localcluster.Config{
		BinDir: *bin, Dir: *dir, Inventory: nodes, Detach: true, Progress: os.Stderr, RealNodes: *realNodes,
	}
	if *images != "" {
		cfg.Images = strings.Split(*images, ",")
	}
	if *realNodes {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.NodeCommand = self
	}
	if *chart != "" {
		if err := absolute(chart); err != nil {
			return err
		}
		cfg.Chart = *chart
	}
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("The local cluster runs with %d nodes from %s; logs are in %s/logs.\n", len(nodes.Nodes), *inv, *dir)
	fmt.Println("Stop it with: make demo-down")
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
	return nil
}

// runNode is the supervisor of one real node (realnode.Run), started by the cluster with the node's
// configuration file; localcluster down stops it and everything the node runs.
func runNode(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: localcluster run-node NODE.json")
	}
	return realnode.Run(context.Background(), args[0])
}

// absolute makes each path absolute, as the clusters' processes run in other directories.
func absolute(paths ...*string) error {
	for _, p := range paths {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}

// down stops the cluster of the run directory and those of its subdirectories (up-multi's manager and members).
func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", ".demo", "run directory of the cluster to stop")
	_ = fs.Parse(args)
	dirs := []string{*dir}
	subs, _ := filepath.Glob(filepath.Join(*dir, "*", "pids"))
	for _, p := range subs {
		dirs = append(dirs, filepath.Dir(p))
	}
	var stopped []string
	var errs []error
	for _, d := range dirs {
		s, err := localcluster.Stop(d)
		for _, name := range s {
			stopped = append(stopped, filepath.Base(d)+"/"+name)
		}
		errs = append(errs, err)
	}
	for _, s := range stopped {
		fmt.Println("stopped", s)
	}
	if len(stopped) == 0 {
		fmt.Println("nothing was running in", *dir)
	}
	return kerrors.NewAggregate(errs)
}
