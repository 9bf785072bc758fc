package webhooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// Provisions the webhooks against a real API server, in turn: self-signed behind a Service,
// again (the stored pair is kept), behind a loopback URL (the pair no longer covers the host, so a new one
// replaces it), and with cert-manager (the issued Secret is used as it is; none issued is an error naming the
// Secret). Each time the files in the certificate directory, the Secret and both configurations' CA bundles
// must agree, and the certificate must verify for the hosts.
var _ = It("provisions the webhooks against a real API server, in turn", func() {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "provision"}}
	Expect(suite.Client.Create(ctx, ns)).To(Succeed())
	// The configurations point the API server at a Service that does not exist here: left behind, they would
	// refuse every later create of the kinds they cover.
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingName}})
		_ = suite.Client.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingName}})
	})
	now := time.Now()
	service := Serving{Namespace: "provision", Service: "gpustack-worker-webhook", Secret: "gpustack-worker-webhook-tls", CertDir: GinkgoT().TempDir()}

	provision := func(s Serving) KeyPair {
		GinkgoHelper()
		c, applied := testenv.RecordApplies(suite.Client)
		Expect(Provision(ctx, c, s, now, 2*time.Second)).To(Succeed())
		sent := applied()
		Expect(sent).To(HaveLen(2), "the two webhook configurations are applied")
		for _, u := range sent {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(u.GroupVersionKind())
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(u), live)).To(Succeed())
			Expect(testenv.ZeroPaths(u.Object)).To(BeEmpty(), "empty fields sent with %s", u.GetName())
			Expect(testenv.OwnershipDiff(live, FieldManager, u.Object)).To(BeEmpty(),
				"the fields %s owns on %s: -sent and not owned, +owned and not sent", FieldManager, u.GetName())
		}
		secret := &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Secret}, secret)).To(Succeed())
		pair := KeyPair{CA: secret.Data["ca.crt"], Cert: secret.Data["tls.crt"], Key: secret.Data["tls.key"]}
		hosts, _ := s.Hosts()
		if !pair.Covers(hosts, now) {
			Fail(fmt.Sprintf("the stored certificate does not verify for %v", hosts))
		}
		for name, want := range map[string][]byte{"tls.crt": pair.Cert, "tls.key": pair.Key} {
			got, err := os.ReadFile(filepath.Join(s.CertDir, name))
			if err != nil || string(got) != string(want) {
				Fail(fmt.Sprintf("%s in the certificate directory differs from the Secret's (%v)", name, err))
			}
		}
		mutating := &admissionv1.MutatingWebhookConfiguration{}
		validating := &admissionv1.ValidatingWebhookConfiguration{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: MutatingName}, mutating)).To(Succeed())
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: ValidatingName}, validating)).To(Succeed())
		configs := []admissionv1.WebhookClientConfig{validating.Webhooks[0].ClientConfig}
		for _, w := range mutating.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
		for _, cc := range configs {
			if string(cc.CABundle) != string(pair.CA) {
				Fail("a webhook's CA bundle is not the Secret's CA")
			}
			if got, want := cc.URL != nil, s.URL != ""; got != want {
				Fail(fmt.Sprintf("webhook reached by URL: %v, want %v", got, want))
			}
		}
		return pair
	}

	first := provision(service)
	if again := provision(service); again.CA == nil || string(again.CA) != string(first.CA) {
		Fail("provisioning again replaced a key pair that still covers the Service")
	}
	loopback := service
	loopback.URL, loopback.Service = "https://127.0.0.1:9443", ""
	if moved := provision(loopback); string(moved.CA) == string(first.CA) {
		Fail("a pair that does not cover 127.0.0.1 was kept")
	}

	issued, err := SelfSigned([]string{"gpustack-worker-webhook.provision.svc", "gpustack-worker-webhook.provision.svc.cluster.local"}, now)
	Expect(err).NotTo(HaveOccurred())
	managed := service
	managed.CertManager, managed.Secret = true, "issued-by-cert-manager"
	if err := suite.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "provision", Name: managed.Secret}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": issued.CA, "tls.crt": issued.Cert, "tls.key": issued.Key}}); err != nil {
		Expect(err).NotTo(HaveOccurred())
	}
	if got := provision(managed); cmp.Diff(issued, got) != "" {
		Fail("with cert-manager, the issued pair is not used as it is")
	}
	managed.Secret = "never-issued"
	err = Provision(ctx, suite.Client, managed, now, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "secret provision/never-issued: cert-manager issued no certificate") {
		Fail(fmt.Sprintf("with no issued Secret, want an error naming it, got %v", err))
	}
})
