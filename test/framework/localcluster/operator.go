package localcluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
)

// startOperator runs the operator's worker and, standing in for the per-node DaemonSet, one device-manager
// process that reports every inventory node's simulated cards. Each runs as its own service account with only
// the permissions its RBAC markers grant.
func (c *Cluster) startOperator(ctx context.Context) error {
	if c.cfg.Operator == "" {
		return nil
	}
	if !c.cfg.NoWorker {
		if err := c.startWorker(ctx); err != nil {
			return err
		}
	}
	return c.startAgents(ctx)
}

// startWorker runs the worker as its service account, with webhooks on loopback, and registers them.
func (c *Cluster) startWorker(ctx context.Context) error {
	worker, err := c.serviceAccount(ctx, "worker", workerv1.SystemNamespace)
	if err != nil {
		return err
	}
	certs := c.path("worker", "certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		return errors.Wrap(err, "cannot create the worker's certificate directory")
	}
	for _, f := range []struct{ from, to string }{
		{c.path("pki", "webhooks.crt"), certs + "/tls.crt"}, {c.path("pki", "webhooks.key"), certs + "/tls.key"},
	} {
		if err := copyFile(f.from, f.to); err != nil {
			return err
		}
	}
	// The worker deploys the device agents' DaemonSets as on a real cluster; KWOK runs their Pods, while the
	// simulated agent below does their work.
	if err := c.start(componentWorker, nil, c.cfg.Operator, "worker", "--kubeconfig="+worker,
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(c.ports.worker),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(c.ports.workerMetrics),
		"--webhook-host=127.0.0.1", "--webhook-port="+strconv.Itoa(c.ports.workerWebhook), "--webhook-cert-dir="+certs,
		"--device-manager-image=gpustack/gpustack-operator:local"); err != nil {
		return err
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.ports.worker)
	if err := c.waitFor(ctx, "the operator's worker", time.Minute, func(ctx context.Context) error { return httpOK(ctx, ready) }); err != nil {
		return err
	}
	return c.installWorkerWebhooks(ctx)
}

// startAgents runs one simulated device agent for every inventory node, as the device-manager service account.
func (c *Cluster) startAgents(ctx context.Context) error {
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
		"--simulate-inventory="+inv, "--metrics-bind-address=127.0.0.1:"+strconv.Itoa(c.ports.agentMetrics))
}

// installWorkerWebhooks registers the worker's webhooks with loopback URLs and the local CA.
func (c *Cluster) installWorkerWebhooks(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	ca, err := os.ReadFile(c.path("pki", "ca.crt"))
	if err != nil {
		return errors.Wrap(err, "cannot read CA")
	}
	base := "https://127.0.0.1:" + strconv.Itoa(c.ports.workerWebhook)
	mutating, validating := webhooks.Configurations(func(path string) admissionv1.WebhookClientConfig {
		url := base + path
		return admissionv1.WebhookClientConfig{URL: &url, CABundle: ca}
	})
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the worker's mutating webhooks")
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the worker's validating webhooks")
	}
	return nil
}
