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

// upMulti starts one member cluster per inventory, each with the operator, and a manager cluster that runs
// the worker-gateway with every member registered; it prints the manager's kubeconfig last.
func upMulti(args []string) error {
	fs := flag.NewFlagSet("up-multi", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory of the binaries and assets built by `make tools`")
	dir := fs.String("dir", ".demo", "run directory: one subdirectory per cluster")
	inventories := fs.String("inventories", "examples/clusters/walkthrough.yaml,examples/clusters/h100-mig.yaml", "comma-separated inventory files, one member cluster each")
	crds := fs.String("crds", "package/crds", "comma-separated files or directories of this project's CRDs")
	operator := fs.String("operator", "bin/gpustack-operator", "the gpustack-operator binary")
	policies := fs.String("policies", "policies/cel", "comma-separated directories of admission policies to install; empty installs none")
	_ = fs.Parse(args)

	if err := absolute(dir, bin, operator); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	base := localcluster.Config{BinDir: *bin, CRDPaths: strings.Split(*crds, ","), Detach: true, Operator: *operator, Progress: os.Stderr}
	if *policies != "" {
		base.PolicyPaths = strings.Split(*policies, ",")
	}
	members := map[string]*localcluster.Cluster{}
	var names []string
	for _, file := range strings.Split(*inventories, ",") {
		inv, err := simulated.Load(file)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if members[name] != nil {
			return errors.Errorf("two inventories are named %s: give each member file its own name", name)
		}
		cfg := base
		cfg.Dir, cfg.Inventory = filepath.Join(*dir, name), inv
		fmt.Fprintf(os.Stderr, ">> member %s from %s\n", name, file)
		if members[name], err = localcluster.Start(ctx, cfg); err != nil {
			return errors.Wrapf(err, "cannot start member %s (make demo-down stops the clusters already started)", name)
		}
		names = append(names, name)
	}
	cfg := base
	// The manager has no nodes: the worker-gateway, the worker and Kueue, whose MultiKueue sends the Instances
	// created there to the members.
	cfg.Dir, cfg.Gateway, cfg.NoNFD, cfg.PolicyPaths = filepath.Join(*dir, "manager"), true, true, nil
	fmt.Fprintln(os.Stderr, ">> the manager, with the worker-gateway and Kueue")
	manager, err := localcluster.Start(ctx, cfg)
	if err != nil {
		return errors.Wrap(err, "cannot start the manager (make demo-down stops the clusters already started)")
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
