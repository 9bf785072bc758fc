package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/internal/inventory"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// runDeviceManager runs the device agent. With --simulate-inventory it stands in for the agents of every node
// of an inventory file (or of --node only), reporting their simulated cards through the same publishing code
// a real agent uses.
func runDeviceManager(args []string) error {
	fs := flag.NewFlagSet("device-manager", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; in-cluster configuration when empty")
	inventoryFile := fs.String("simulate-inventory", "", "report the cards of this inventory file's nodes instead of real hardware")
	node := fs.String("node", "", "the node to report for; with --simulate-inventory, empty means every node of the file")
	interval := fs.Duration("interval", 30*time.Second, "how often to detect again")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())
	logger := ctrl.Log.WithName("device-manager")

	if *inventoryFile == "" {
		return errors.New("only the simulated backend is available yet: pass --simulate-inventory FILE")
	}
	inv, err := inventory.Load(*inventoryFile)
	if err != nil {
		return err
	}
	agents := map[string]providers.Provider{}
	for _, n := range inv.Nodes {
		if *node == "" || n.Name == *node {
			agents[n.Name] = simulated.New(n)
		}
	}
	if len(agents) == 0 {
		return fmt.Errorf("node %q is not in %s", *node, *inventoryFile)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return errors.Wrap(err, "cannot load the kubeconfig")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return errors.Wrap(err, "cannot create a client")
	}
	pub := &deviceagent.Publisher{Client: c}
	ctx := ctrl.SetupSignalHandler()
	for {
		for name, p := range agents {
			if err := publishOnce(ctx, pub, name, p); err != nil {
				logger.Error(err, "cannot publish", "node", name)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*interval):
		}
	}
}

func publishOnce(ctx context.Context, pub *deviceagent.Publisher, node string, p providers.Provider) error {
	devices, err := p.Detect(ctx)
	if err != nil {
		return errors.Wrapf(err, "cannot detect the cards of node %s", node)
	}
	return pub.Publish(ctx, node, devices)
}
