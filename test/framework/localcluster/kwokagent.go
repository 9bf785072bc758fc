package localcluster

import (
	"context"
	"os"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
)

// startKWOKAgent runs one device-manager process that reports the cards of every KWOK node, standing in for
// the agents the chart's DaemonSets would run there (KWOK only pretends to run their Pods). It runs as the
// chart's device-manager account and writes each node's ledger with a token bound to that node, as a
// DaemonSet Pod's projected token is, under the policy that keeps an agent to its own node.
func (c *Cluster) startKWOKAgent(ctx context.Context) error {
	data, err := yaml.Marshal(c.cfg.KWOKNodes)
	if err != nil {
		return errors.Wrap(err, "cannot encode the KWOK nodes' inventory")
	}
	inventory := c.path("config", "kwok-inventory.yaml")
	if err := os.WriteFile(inventory, data, 0o644); err != nil {
		return errors.Wrap(err, "cannot write the KWOK nodes' inventory")
	}
	account := rbac.ServiceAccountName("device-manager")
	kubeconfig, err := c.accountKubeconfig(ctx, account, workerv1.DeviceManagerNamespace)
	if err != nil {
		return err
	}
	tokens, err := c.nodeTokens(ctx, account, workerv1.DeviceManagerNamespace, c.cfg.KWOKNodes.Nodes)
	if err != nil {
		return err
	}
	return c.start(componentAgents, nil, c.cfg.KWOKAgent, "device-manager", "--kubeconfig="+kubeconfig,
		"--simulate-inventory="+inventory, "--simulate-node-tokens="+tokens,
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(c.ports.agentMetrics))
}
