package webhooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// Provisions the webhooks against a real API server, in turn: self-signed behind a Service, again (the stored
// pair is kept), behind a loopback URL (the pair no longer covers the host, so a new one replaces it), with
// cert-manager (the issued Secret is used as it is; none issued is an error naming the Secret), and where no
// chart made the configurations (a chart before v0.2.0: the worker applies them whole). Each time the files in
// the certificate directory, the Secret and every webhook's CA bundle must agree, the certificate must verify
// for the hosts, and the worker must own exactly the fields it sent: of the chart's configurations, the CA
// bundles alone.
var _ = It("provisions the webhooks against a real API server, in turn", func() {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "provision"}}
	Expect(suite.Client.Create(ctx, ns)).To(Succeed())
	removeConfigurations := func() {
		_ = suite.Client.Delete(context.Background(), &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingName}})
		_ = suite.Client.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingName}})
	}
	// The configurations point the API server at a Service that does not exist here: left behind, they would
	// refuse every later create of the kinds they cover.
	DeferCleanup(removeConfigurations)
	// chart makes the configurations as the chart renders them for s: no CA bundle, written by helm; made keeps
	// them as the API server stored them.
	var made []client.Object
	chart := func(s Serving) {
		GinkgoHelper()
		removeConfigurations()
		mutating, validating := Configurations(s.clientConfig(nil))
		made = []client.Object{mutating, validating}
		for _, o := range made {
			Expect(suite.Client.Create(ctx, o, client.FieldOwner("helm"))).To(Succeed())
		}
	}
	// withoutCA returns the configurations' webhooks with their CA bundles cleared.
	withoutCA := func(mutating *admissionv1.MutatingWebhookConfiguration, validating *admissionv1.ValidatingWebhookConfiguration) any {
		m, v := mutating.DeepCopy(), validating.DeepCopy()
		for i := range m.Webhooks {
			m.Webhooks[i].ClientConfig.CABundle = nil
		}
		for i := range v.Webhooks {
			v.Webhooks[i].ClientConfig.CABundle = nil
		}
		return []any{m.Webhooks, v.Webhooks}
	}
	now := time.Now()
	service := Serving{Namespace: "provision", Service: "gpustack-worker-webhook", Secret: "gpustack-worker-webhook-tls", CertDir: GinkgoT().TempDir()}

	provision := func(s Serving, manager string) KeyPair {
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
			Expect(testenv.OwnershipDiff(live, manager, u.Object)).To(BeEmpty(),
				"the fields %s owns on %s: -sent and not owned, +owned and not sent", manager, u.GetName())
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
		configs := []admissionv1.WebhookClientConfig{}
		for _, w := range validating.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
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
		if manager == CAFieldManager {
			// Beside the CA bundles, the configurations are what the chart made.
			want := withoutCA(made[0].(*admissionv1.MutatingWebhookConfiguration), made[1].(*admissionv1.ValidatingWebhookConfiguration))
			Expect(cmp.Diff(want, withoutCA(mutating, validating))).To(BeEmpty(), "the chart's webhooks: -made, +after the worker")
		}
		return pair
	}

	chart(service)
	first := provision(service, CAFieldManager)
	if again := provision(service, CAFieldManager); again.CA == nil || string(again.CA) != string(first.CA) {
		Fail("provisioning again replaced a key pair that still covers the Service")
	}
	loopback := service
	loopback.URL, loopback.Service = "https://127.0.0.1:9443", ""
	chart(loopback)
	if moved := provision(loopback, CAFieldManager); string(moved.CA) == string(first.CA) {
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
	chart(managed)
	if got := provision(managed, CAFieldManager); cmp.Diff(issued, got) != "" {
		Fail("with cert-manager, the issued pair is not used as it is")
	}

	// A chart before v0.2.0 made no configurations: the worker applies them whole.
	removeConfigurations()
	provision(service, FieldManager)

	managed.Secret = "never-issued"
	err = Provision(ctx, suite.Client, managed, now, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "secret provision/never-issued: cert-manager issued no certificate") {
		Fail(fmt.Sprintf("with no issued Secret, want an error naming it, got %v", err))
	}
})

// The worker's own role cannot create webhook configurations: started before helm made the chart's (helm
// creates them after the Deployment), it waits for them and then writes their CA bundles; none coming is an
// error that says the chart installs them.
var _ = It("waits, as the worker's account, for the chart's configurations", func() {
	ctx := context.Background()
	roles, err := rbac.For("worker", workerv1.SystemNamespace)
	Expect(err).NotTo(HaveOccurred())
	// Its roles include one in the agents' namespace; another spec may have made both already.
	agents := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace}}
	Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, agents))).To(Succeed())
	for _, o := range roles {
		Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, o))).To(Succeed())
	}
	cfg := rest.CopyConfig(suite.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: WorkerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + workerv1.SystemNamespace, "system:authenticated"}}
	worker, err := client.New(cfg, client.Options{Scheme: suite.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	s := Serving{Namespace: workerv1.SystemNamespace, Service: "gpustack-operator-worker-webhook", Secret: "gpustack-worker-webhook-tls",
		CertDir: GinkgoT().TempDir()}
	mutating, validating := Configurations(s.clientConfig(nil))
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), mutating)
		_ = suite.Client.Delete(context.Background(), validating)
	})

	err = Provision(ctx, worker, s, time.Now(), 2*time.Second)
	Expect(err).To(MatchError(ContainSubstring("webhook configuration " + MutatingName + " is not there after 2s: the chart installs it")))

	done := make(chan error, 1)
	go func() { done <- Provision(ctx, worker, s, time.Now(), time.Minute) }()
	time.Sleep(2 * time.Second)
	for _, o := range []client.Object{mutating, validating} {
		Expect(suite.Client.Create(ctx, o, client.FieldOwner("helm"))).To(Succeed())
	}
	Eventually(done, 30*time.Second).Should(Receive(BeNil()))
	got := &admissionv1.ValidatingWebhookConfiguration{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: ValidatingName}, got)).To(Succeed())
	for _, w := range got.Webhooks {
		Expect(w.ClientConfig.CABundle).NotTo(BeEmpty(), "webhook %s's CA bundle", w.Name)
	}
})
