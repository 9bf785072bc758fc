package webhooks

import (
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
)

// FieldManager is the field manager the worker applies whole webhook configurations with, where the chart
// rendered none (before v0.2.0).
const FieldManager = "gpustack-operator"

// Serving says how the API server reaches the worker's webhooks and where their key pair lives.
type Serving struct {
	// Namespace is the worker's namespace, where the Service and the Secret are.
	Namespace string
	// Service is the Service in front of the webhooks (port 443); empty when URL is set.
	Service string
	// URL is the webhooks' base URL (https://127.0.0.1:9443), for an API server that reaches the worker
	// directly rather than through a Service.
	URL string
	// Secret holds tls.crt, tls.key and ca.crt: issued by cert-manager, or self-signed and stored by the worker.
	Secret string
	// CertManager says cert-manager issues the Secret: the worker waits for it rather than signing one.
	CertManager bool
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
	// APIServices are the chart's APIServices that send an aggregated API of the worker to Service (on a port
	// of its own): the worker keeps their caBundle as it keeps the webhooks'. None with URL.
	APIServices []string
}

// Hosts returns the names the serving certificate must cover: the Service's DNS names, or the URL's host.
func (s Serving) Hosts() ([]string, error) {
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return nil, errors.Errorf("webhook URL %q: want https://HOST[:PORT]", s.URL)
		}
		return []string{u.Hostname()}, nil
	}
	if s.Service == "" || s.Namespace == "" {
		return nil, errors.New("the webhooks need a Service and its namespace, or a URL")
	}
	return []string{s.Service + "." + s.Namespace + ".svc", s.Service + "." + s.Namespace + ".svc.cluster.local"}, nil
}

// clientConfig returns how the API server calls the webhook at path.
func (s Serving) clientConfig(ca []byte) func(path string) admissionv1.WebhookClientConfig {
	return func(path string) admissionv1.WebhookClientConfig {
		if s.URL != "" {
			return admissionv1.WebhookClientConfig{URL: ptr.To(s.URL + path), CABundle: ca}
		}
		return admissionv1.WebhookClientConfig{CABundle: ca, Service: &admissionv1.ServiceReference{
			Namespace: s.Namespace, Name: s.Service, Path: ptr.To(path), Port: ptr.To[int32](443)}}
	}
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;patch,resourceNames=gpustack-worker-mutation;gpustack-worker-validation
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=get;update,resourceNames=gpustack-worker-webhook-tls

// CAFieldManager is the field manager the worker writes the webhooks' caBundle with: the configurations are
// the chart's, and the CA bundle is the only field of theirs the worker owns.
const CAFieldManager = "gpustack-operator-webhook-ca"

// Provision makes the webhooks reachable before the manager starts: it takes the key pair from the Secret
// when that covers the hosts, and otherwise self-signs one and stores it there, so that restarts and replicas
// share it (with cert-manager, it waits up to timeout for the issued Secret instead); it writes the pair into
// CertDir and the CA into each webhook of the chart's two configurations. A configuration that is not there
// (a chart older than v0.2.0 rendered none, and its role lets the worker make them) is applied whole.
func Provision(ctx context.Context, c client.Client, s Serving, now time.Time, timeout time.Duration) error {
	hosts, err := s.Hosts()
	if err != nil {
		return err
	}
	pair, err := keyPair(ctx, c, s, hosts, now, timeout)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.CertDir, 0o700); err != nil {
		return errors.Wrap(err, "cannot create the webhook certificate directory")
	}
	for name, data := range map[string][]byte{"tls.crt": pair.Cert, "tls.key": pair.Key} {
		if err := os.WriteFile(filepath.Join(s.CertDir, name), data, 0o600); err != nil {
			return errors.Wrapf(err, "cannot write the webhook's %s", name)
		}
	}
	mutating, validating := Configurations(s.clientConfig(pair.CA))
	mutating.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"}
	validating.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"}
	for _, o := range []client.Object{mutating, validating} {
		chartMade, err := chartMade(ctx, c, o, timeout)
		if err != nil {
			return err
		}
		if !chartMade {
			continue
		}
		if err := applyCA(ctx, c, o, pair.CA); err != nil {
			return err
		}
	}
	return provisionAPIServices(ctx, c, s.APIServices, pair.CA, timeout)
}

// ProvisionAPIServer is Provision for a server of aggregated APIs alone, with no webhooks (the worker-gateway):
// it returns the key pair to serve, taken as Provision takes it (so that restarts and replicas share it), and
// writes its CA into each of s.APIServices that does not carry it yet. CertDir is not used.
func ProvisionAPIServer(ctx context.Context, c client.Client, s Serving, now time.Time, timeout time.Duration) (KeyPair, error) {
	hosts, err := s.Hosts()
	if err != nil {
		return KeyPair{}, err
	}
	pair, err := keyPair(ctx, c, s, hosts, now, timeout)
	if err != nil {
		return KeyPair{}, err
	}
	return pair, provisionAPIServices(ctx, c, s.APIServices, pair.CA, timeout)
}

// chartMade reports whether the chart made the configuration. One that is not there is applied whole where
// the worker's role allows it (a chart before v0.2.0); where it does not (this chart's role), the chart has not
// made it yet (helm creates webhook configurations after Deployments), and it is waited for up to timeout.
func chartMade(ctx context.Context, c client.Client, o client.Object, timeout time.Duration) (bool, error) {
	live := o.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, errors.Wrapf(err, "cannot get webhook configuration %s", o.GetName())
	}
	err = applyWhole(ctx, c, o)
	if !apierrors.IsForbidden(err) {
		return false, errors.Wrapf(err, "cannot apply webhook configuration %s", o.GetName())
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, false, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		return err == nil, client.IgnoreNotFound(err)
	})
	return true, errors.Wrapf(err, "webhook configuration %s is not there after %s: the chart installs it (helm upgrade brings it back)", o.GetName(), timeout)
}

// webhookNames returns the names of a configuration's webhooks.
func webhookNames(o client.Object) []string {
	var names []string
	switch cfg := o.(type) {
	case *admissionv1.MutatingWebhookConfiguration:
		for _, w := range cfg.Webhooks {
			names = append(names, w.Name)
		}
	case *admissionv1.ValidatingWebhookConfiguration:
		for _, w := range cfg.Webhooks {
			names = append(names, w.Name)
		}
	}
	return names
}

// applyCA writes ca into the caBundle of each webhook of the configuration, and nothing else.
func applyCA(ctx context.Context, c client.Client, o client.Object, ca []byte) error {
	var entries []any
	for _, name := range webhookNames(o) {
		entries = append(entries, map[string]any{"name": name, "clientConfig": map[string]any{"caBundle": base64.StdEncoding.EncodeToString(ca)}})
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": o.GetName()}, "webhooks": entries}}
	//nolint:staticcheck // client.Apply with an unstructured object is the documented way to server-side apply it.
	err := c.Patch(ctx, u, client.Apply, client.FieldOwner(CAFieldManager), client.ForceOwnership)
	return errors.Wrapf(err, "cannot write the CA bundle into webhook configuration %s", o.GetName())
}

// applyWhole applies a whole configuration, as the worker did before the chart rendered them.
func applyWhole(ctx context.Context, c client.Client, o client.Object) error {
	o.SetLabels(map[string]string{"app.kubernetes.io/part-of": "gpustack-operator"})
	u, err := scheme.ForApply(o)
	if err != nil {
		return err
	}
	//nolint:staticcheck // as in applyCA.
	return c.Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// keyPair returns the Secret's key pair when it covers the hosts; otherwise a new self-signed one, stored in
// the Secret, or, with cert-manager, the pair cert-manager issues within timeout.
func keyPair(ctx context.Context, c client.Client, s Serving, hosts []string, now time.Time, timeout time.Duration) (KeyPair, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Secret}
	var pair KeyPair
	if s.CertManager {
		err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			secret := &corev1.Secret{}
			if err := c.Get(ctx, key, secret); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			pair = pairOf(secret)
			return pair.Covers(hosts, now), nil
		})
		if err != nil {
			return KeyPair{}, errors.Wrapf(err, "secret %s/%s: cert-manager issued no certificate for %v within %s", s.Namespace, s.Secret, hosts, timeout)
		}
		return pair, nil
	}
	secret := &corev1.Secret{}
	err := c.Get(ctx, key, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return KeyPair{}, errors.Wrapf(err, "cannot get secret %s/%s", s.Namespace, s.Secret)
	}
	stored := err == nil
	if stored && pairOf(secret).Covers(hosts, now) {
		return pairOf(secret), nil
	}
	if pair, err = SelfSigned(hosts, now); err != nil {
		return KeyPair{}, err
	}
	data := map[string][]byte{"ca.crt": pair.CA, "tls.crt": pair.Cert, "tls.key": pair.Key}
	if !stored {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Secret,
			Labels: map[string]string{"app.kubernetes.io/part-of": "gpustack-operator"}}, Type: corev1.SecretTypeTLS, Data: data}
		// Another replica may have stored its pair first: use that one, so every replica serves the same CA.
		err := c.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			return keyPair(ctx, c, s, hosts, now, timeout)
		}
		if err != nil {
			return KeyPair{}, errors.Wrapf(err, "cannot create secret %s/%s", s.Namespace, s.Secret)
		}
		return pair, nil
	}
	secret.Data = data
	if err := c.Update(ctx, secret); err != nil {
		return KeyPair{}, errors.Wrapf(err, "cannot update secret %s/%s", s.Namespace, s.Secret)
	}
	return pair, nil
}

// pairOf reads a key pair from a Secret in the layout cert-manager writes.
func pairOf(secret *corev1.Secret) KeyPair {
	return KeyPair{CA: secret.Data["ca.crt"], Cert: secret.Data["tls.crt"], Key: secret.Data["tls.key"]}
}
