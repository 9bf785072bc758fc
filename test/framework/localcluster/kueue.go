package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
)

// kueueNamespace is where the Kueue controller thinks it runs.
const kueueNamespace = kueueconfig.Namespace

// kueueWebhookResources are the resources whose webhooks the local Kueue serves: its own kinds and the two
// integrations it enables. Webhooks of disabled integrations would answer 404 and, failing closed, block
// every Deployment or StatefulSet.
var kueueWebhookResources = map[string]bool{
	"clusterqueues": true, "cohorts": true, "resourceflavors": true, "workloads": true, "workloads/status": true,
	"localqueues": true, "jobs": true, "pods": true,
}

// KueueConfiguration returns the Kueue controller configuration: the local cluster's addresses, and what the
// operator needs of Kueue (kueueconfig.Required: Pod and Job integration, the credit transformations).
func KueueConfiguration(webhookPort, healthPort, metricsPort int, certDir string) (string, error) {
	required, err := kueueconfig.Required()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
featureGates:
  VisibilityOnDemand: false
clientConnection:
  qps: 50
  burst: 100
`, kueueNamespace, healthPort, metricsPort, webhookPort, certDir) + string(required), nil
}

// startKueue runs the Kueue controller. With its own certificate management off, Kueue reads its metrics
// certificate from the fixed path /etc/kueue/metrics/certs; it runs in a private mount namespace whose /etc
// is an overlay with that path added, so the machine's /etc is never touched.
func (c *Cluster) startKueue(ctx context.Context) error {
	if c.cfg.NoKueue {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	if err := ensureNamespace(ctx, cs, kueueNamespace); err != nil {
		return err
	}
	dir := c.path("kueue")
	certs, upper, work := dir+"/certs", dir+"/etc-upper", dir+"/etc-work"
	for _, d := range []string{certs, upper + "/kueue/metrics/certs", work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errors.Wrap(err, "cannot create kueue directories")
		}
	}
	for _, f := range []struct{ from, to string }{
		{c.path("pki", "webhooks.crt"), certs + "/tls.crt"}, {c.path("pki", "webhooks.key"), certs + "/tls.key"},
		{c.path("pki", "webhooks.crt"), upper + "/kueue/metrics/certs/tls.crt"},
		{c.path("pki", "webhooks.key"), upper + "/kueue/metrics/certs/tls.key"},
	} {
		if err := copyFile(f.from, f.to); err != nil {
			return err
		}
	}
	cfgPath := dir + "/config.yaml"
	cfg, err := KueueConfiguration(c.ports.kueueWebhook, c.ports.kueueHealth, c.ports.kueueMetrics, certs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return errors.Wrap(err, "cannot write kueue configuration")
	}
	// Where Kueue's manifests and chart keep it, and where the worker reads it to check it.
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: kueueconfig.Namespace, Name: kueueconfig.ConfigMap},
		Data: map[string]string{kueueconfig.ConfigKey: cfg}}
	if _, err := cs.CoreV1().ConfigMaps(kueueconfig.Namespace).Create(ctx, configMap, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the Kueue configuration's ConfigMap")
	}
	script := fmt.Sprintf("mount -t overlay overlay -o lowerdir=/etc,upperdir=%s,workdir=%s /etc && exec %s --config=%s --kubeconfig=%s --zap-log-level=2",
		upper, work, c.bin("kueue"), cfgPath, c.Kubeconfig)
	if err := c.start(componentKueue, nil, "unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
		"sh", "-c", script); err != nil {
		return err
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.ports.kueueHealth)
	if err := c.waitFor(ctx, "kueue", 2*time.Minute, func(ctx context.Context) error { return httpOK(ctx, ready) }); err != nil {
		return err
	}
	return c.installKueueWebhooks(ctx, cs)
}

// installKueueWebhooks registers Kueue's webhooks with URLs on loopback and the local CA, converted from
// the manifests in Kueue's module.
func (c *Cluster) installKueueWebhooks(ctx context.Context, cs kubernetes.Interface) error {
	data, err := os.ReadFile(c.bin("assets/kueue-webhooks.yaml"))
	if err != nil {
		return errors.Wrap(err, "cannot read kueue webhook manifests")
	}
	ca, err := os.ReadFile(c.path("pki", "ca.crt"))
	if err != nil {
		return errors.Wrap(err, "cannot read CA")
	}
	base := "https://127.0.0.1:" + strconv.Itoa(c.ports.kueueWebhook)
	mutating, validating, err := KueueWebhooks(data, base, ca)
	if err != nil {
		return err
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create kueue mutating webhooks")
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create kueue validating webhooks")
	}
	return nil
}

// KueueWebhooks converts Kueue's webhook manifests into configurations that call base (a loopback URL)
// trusting ca, keeping only the webhooks the local Kueue serves.
func KueueWebhooks(manifests []byte, base string, ca []byte) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration, error) {
	var mutating *admissionv1.MutatingWebhookConfiguration
	var validating *admissionv1.ValidatingWebhookConfiguration
	r := utilyaml.NewYAMLReader(bufioReader(manifests))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, errors.Wrap(err, "cannot split kueue webhook manifests")
		}
		switch {
		case bytes.Contains(doc, []byte("kind: MutatingWebhookConfiguration")):
			mutating = &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, mutating); err != nil {
				return nil, nil, errors.Wrap(err, "cannot decode kueue mutating webhooks")
			}
		case bytes.Contains(doc, []byte("kind: ValidatingWebhookConfiguration")):
			validating = &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, validating); err != nil {
				return nil, nil, errors.Wrap(err, "cannot decode kueue validating webhooks")
			}
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("kueue webhook manifests lack a mutating or validating configuration")
	}
	mutating.Name, validating.Name = "kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration"
	var mws []admissionv1.MutatingWebhook
	for _, w := range mutating.Webhooks {
		if served(w.Rules) {
			w.ClientConfig = urlClientConfig(base, w.ClientConfig, ca)
			w.NamespaceSelector = withoutSystemNamespaces(w.Name, w.NamespaceSelector)
			mws = append(mws, w)
		}
	}
	var vws []admissionv1.ValidatingWebhook
	for _, w := range validating.Webhooks {
		if served(w.Rules) {
			w.ClientConfig = urlClientConfig(base, w.ClientConfig, ca)
			w.NamespaceSelector = withoutSystemNamespaces(w.Name, w.NamespaceSelector)
			vws = append(vws, w)
		}
	}
	mutating.Webhooks, validating.Webhooks = mws, vws
	return mutating, validating, nil
}

func served(rules []admissionv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, res := range r.Resources {
			if kueueWebhookResources[res] {
				return true
			}
		}
	}
	return false
}

func urlClientConfig(base string, in admissionv1.WebhookClientConfig, ca []byte) admissionv1.WebhookClientConfig {
	path := ""
	if in.Service != nil && in.Service.Path != nil {
		path = *in.Service.Path
	}
	url := base + path
	return admissionv1.WebhookClientConfig{URL: &url, CABundle: ca}
}

// withoutSystemNamespaces keeps Kueue's Pod webhooks away from kube-system and kueue-system, as Kueue's own
// kustomization does.
func withoutSystemNamespaces(name string, sel *metav1.LabelSelector) *metav1.LabelSelector {
	if name != "mpod.kb.io" && name != "vpod.kb.io" {
		return sel
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{"kube-system", kueueNamespace},
	}}}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return errors.Wrapf(err, "cannot read %s", from)
	}
	return errors.Wrapf(os.WriteFile(to, data, 0o600), "cannot write %s", to)
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }
