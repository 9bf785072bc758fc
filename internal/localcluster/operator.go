package localcluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
)

// startOperator runs the operator's worker and, standing in for the per-node DaemonSet, one device-manager
// process that reports every inventory node's simulated cards. Each runs as its own service account with only
// the permissions its RBAC markers grant.
func (c *Cluster) startOperator(ctx context.Context) error {
	if c.cfg.Operator == "" {
		return nil
	}
	worker, err := c.serviceAccount(ctx, "worker", workerv1.SystemNamespace)
	if err != nil {
		return err
	}
	// The worker deploys the device agents' DaemonSets as on a real cluster; KWOK runs their Pods, while the
	// simulated agent below does their work.
	if err := c.start(componentWorker, nil, c.cfg.Operator, "worker", "--kubeconfig="+worker,
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(c.ports.worker),
		"--device-manager-image=gpustack/gpustack-operator:local"); err != nil {
		return err
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.ports.worker)
	if err := c.waitFor(ctx, "the operator's worker", time.Minute, func(ctx context.Context) error { return httpOK(ctx, ready) }); err != nil {
		return err
	}
	if c.cfg.Inventory == nil {
		return nil
	}
	data, err := yaml.Marshal(c.cfg.Inventory)
	if err != nil {
		return errors.Wrap(err, "cannot encode the inventory")
	}
	inv := c.path("config", "inventory.yaml")
	if err := os.WriteFile(inv, data, 0o644); err != nil {
		return errors.Wrap(err, "cannot write the inventory")
	}
	agent, err := c.serviceAccount(ctx, "device-manager", deviceagent.Namespace)
	if err != nil {
		return err
	}
	return c.start(componentAgents, nil, c.cfg.Operator, "device-manager", "--kubeconfig="+agent,
		"--simulate-inventory="+inv)
}
