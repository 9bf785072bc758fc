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

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// upMulti starts one member cluster per inventory and a manager cluster (the manager inventory), each on real
// nodes with the chart installed, the manager's with the worker-gateway, every member registered with it; it
// prints the manager's kubeconfig last.
func upMulti(args []string) error {
	fs := flag.NewFlagSet("up-multi", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory of the binaries and assets built by `make tools`")
	dir := fs.String("dir", ".demo", "run directory: one subdirectory per cluster")
	inventories := fs.String("inventories", "examples/clusters/walkthrough.yaml,examples/clusters/h100-mig.yaml", "comma-separated inventory files, one member cluster each")
	managerInventory := fs.String("manager", "examples/clusters/manager.yaml", "inventory file of the manager cluster")
	chart := fs.String("chart", "package/helm/gpustack-operator", "the chart directory (make chart fills its charts/)")
	images := fs.String("images", "_output/package/images/gpustack-operator.tar", "comma-separated image archives every real node imports besides bin/images")
	_ = fs.Parse(args)

	if err := absolute(dir, bin, chart); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	base := localcluster.Config{BinDir: *bin, Detach: true, Progress: os.Stderr, RealNodes: true, NodeCommand: self,
		Chart: *chart, Images: strings.Split(*images, ",")}
	// The clusters' real nodes share the machine's bridge: each takes its own range of node indices.
	first := 1
	start := func(name, file string, values []string, settings map[string]string) (*localcluster.Cluster, error) {
		inv, err := simulated.Load(file)
		if err != nil {
			return nil, err
		}
		cfg := base
		cfg.Dir, cfg.Inventory, cfg.FirstNodeIndex, cfg.ChartValues, cfg.Settings = filepath.Join(*dir, name), inv, first, values, settings
		first += len(inv.Nodes)
		fmt.Fprintf(os.Stderr, ">> %s from %s\n", name, file)
		c, err := localcluster.Start(ctx, cfg)
		return c, errors.Wrapf(err, "cannot start %s (make demo-down stops the clusters already started)", name)
	}
	members := map[string]*localcluster.Cluster{}
	var names []string
	for _, file := range strings.Split(*inventories, ",") {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if members[name] != nil || name == "manager" {
			return errors.Errorf("two clusters are named %s: give each member file its own name, other than manager", name)
		}
		if members[name], err = start(name, file, localcluster.MemberChartValues, nil); err != nil {
			return err
		}
		names = append(names, name)
	}
	manager, err := start("manager", *managerInventory, localcluster.ManagerChartValues, localcluster.ManagerSettings)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := manager.AddMember(ctx, name, members[name]); err != nil {
			return err
		}
	}
	for _, name := range names {
		fmt.Printf("member %s: KUBECONFIG=%s\n", name, members[name].Kubeconfig)
	}
	fmt.Println("On the manager: kubectl get aggregatedinstancetypes, clusterinstancetypes, clustermembers.")
	fmt.Println("Stop them all with: make demo-down")
	fmt.Printf("export KUBECONFIG=%s\n", manager.Kubeconfig)
	return nil
}
