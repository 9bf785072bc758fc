package localcluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
	"github.com/gpustack/gpustack-operator/package/rbac"
)

// startOperator runs the operator's worker and, standing in for the per-node DaemonSet, one device-manager
// process that reports every inventory node's simulated cards. Each runs as its own service account with only
// the permissions its RBAC markers grant.
func (c *Cluster) startOperator(ctx context.Context) error {
	if c.cfg.Operator == "" {
		return nil
	}
	// The worker deploys the agents' DaemonSets into their namespace, which the chart would have made.
	if err := c.agentsNamespace(ctx); err != nil {
		return err
	}
	if err := c.startWorker(ctx); err != nil {
		return err
	}
	return c.StartAgents(ctx)
}

// agentsNamespace makes the device agents' namespace as the chart does, labelled to admit their privileged
// Pods; one already there is left as it is.
func (c *Cluster) agentsNamespace(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deviceagent.Namespace, Labels: deviceagent.NamespaceLabels}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the device agents' namespace")
	}
	return nil
}

// startWorker runs the worker as its service account, with webhooks on loopback, and registers them.
func (c *Cluster) startWorker(ctx context.Context) error {
	if err := c.startWorkerReplica(ctx, componentWorker, workerPorts{health: c.ports.worker, webhook: c.ports.workerWebhook,
		metrics: c.ports.workerMetrics, pprof: c.ports.workerPprof}); err != nil {
		return err
	}
	return c.installWorkerWebhooks(ctx, componentWorker)
}

// workerPorts are the loopback ports of one worker replica.
type workerPorts struct{ health, webhook, metrics, pprof int }

// startWorkerReplica runs one worker replica as the worker's service account and waits until it is ready.
func (c *Cluster) startWorkerReplica(ctx context.Context, name string, p workerPorts) error {
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
	if c.workers == nil {
		c.workers = map[string]workerPorts{}
	}
	c.workers[name] = p
	// The worker deploys the device agents' DaemonSets as on a real cluster; KWOK runs their Pods, while the
	// simulated agent below does their work.
	if err := c.start(name, nil, c.cfg.Operator, "worker", "--kubeconfig="+worker,
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(p.health),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(p.metrics),
		"--pprof-bind-address=127.0.0.1:"+strconv.Itoa(p.pprof),
		"--webhook-host=127.0.0.1", "--webhook-port="+strconv.Itoa(p.webhook), "--webhook-cert-dir="+certs,
		"--device-manager-image=gpustack/gpustack-operator:local"); err != nil {
		return err
	}
	return c.waitWorker(ctx, name)
}

// waitWorker waits until a worker replica is ready: its webhooks answer.
func (c *Cluster) waitWorker(ctx context.Context, name string) error {
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.workers[name].health)
	return c.waitFor(ctx, "the operator's worker "+name, 2*time.Minute, func(ctx context.Context) error { return httpOK(ctx, ready) })
}

// WorkerPprofURL is the address of a worker replica's Go profiling endpoints (/debug/pprof/).
func (c *Cluster) WorkerPprofURL(name string) string {
	return fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", c.workers[name].pprof)
}

// StartAgents runs one simulated device agent for every inventory node, as the device-manager service
// account.
func (c *Cluster) StartAgents(ctx context.Context) error {
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
	// Each node's inventory is written with a token bound to that node, as a DaemonSet Pod's is, under the
	// policy that keeps an agent to its node (which the chart ships).
	if err := c.installNodeScope(ctx); err != nil {
		return err
	}
	tokens, err := c.nodeTokens(ctx, rbac.ServiceAccountName("device-manager"), deviceagent.Namespace)
	if err != nil {
		return err
	}
	args := []string{c.cfg.Operator, "device-manager", "--kubeconfig=" + agent, "--simulate-inventory=" + inv, "--simulate-node-tokens=" + tokens,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(c.ports.agentMetrics)}
	return c.start(componentAgents, nil, args...)
}

// installNodeScope creates the device agents' node-scope policy and its binding.
func (c *Cluster) installNodeScope(ctx context.Context) error {
	objs, err := rbac.NodeScope()
	if err != nil {
		return err
	}
	k, err := client.New(c.RESTConfig, client.Options{})
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	for _, o := range objs {
		if err := k.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create %T %s", o, o.GetName())
		}
	}
	return nil
}

// installWorkerWebhooks registers the worker's webhooks with loopback URLs of a replica and the local CA.
func (c *Cluster) installWorkerWebhooks(ctx context.Context, replica string) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	ca, err := os.ReadFile(c.path("pki", "ca.crt"))
	if err != nil {
		return errors.Wrap(err, "cannot read CA")
	}
	base := "https://127.0.0.1:" + strconv.Itoa(c.workers[replica].webhook)
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
