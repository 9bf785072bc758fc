package settingsapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/internal/settingsapi"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
	"github.com/gpustack/gpustack-operator/test/framework/ports"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestSettingsAPI(t *testing.T) { testenv.RunSuite(t, "settings API suite", &suite) }

var settingsResource = settingsv1.GroupVersion.WithResource("settings")

// served is the settings API server under test, answering as the identities it is given: an administrator
// whom RBAC lets do anything with Settings, a reader who may only read them, and nobody (no credentials).
type served struct {
	host  string
	ca    []byte
	admin string
	read  string
}

// as is a client of the served API with the bearer token (none: anonymous).
func (s served) as(token string) dynamic.NamespaceableResourceInterface {
	GinkgoHelper()
	c, err := dynamic.NewForConfig(s.config(token))
	Expect(err).NotTo(HaveOccurred())
	return c.Resource(settingsResource)
}

func (s served) config(token string) *rest.Config {
	return &rest.Config{Host: s.host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.ca}}
}

// serve starts the server against the suite's API server, with its stored Settings made as the worker makes
// them at start, and the identities it is called as; everything stops when the spec ends.
func serve() served {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	_, err := settings.Ensure(ctx, suite.Client, func(string) string { return "" })
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(suite.Client.DeleteAllOf(context.Background(), &workerv1.Setting{}, client.InNamespace(workerv1.SystemNamespace))).To(Succeed())
	})

	dir := GinkgoT().TempDir()
	pair, err := webhooks.SelfSigned([]string{"127.0.0.1"}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pair.Cert, 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pair.Key, 0o600)).To(Succeed())
	kubeconfig := filepath.Join(dir, "kubeconfig")
	Expect(clientcmd.WriteToFile(adminKubeconfig(suite.Config), kubeconfig)).To(Succeed())

	free, err := ports.Free(1)
	Expect(err).NotTo(HaveOccurred())
	port := free[0]
	server := &settingsapi.Server{Port: port, CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		Kubeconfig: kubeconfig, Storage: &settingsapi.REST{Client: suite.Client}}
	done := make(chan error, 1)
	go func() { done <- server.Start(ctx) }()
	DeferCleanup(func() { cancel(); Eventually(done, time.Minute).Should(Receive()) })
	Eventually(func() error { return server.Ready(nil) }, time.Minute, 100*time.Millisecond).Should(Succeed())

	return served{host: "https://127.0.0.1:" + strconv.Itoa(port), ca: pair.CA,
		admin: identity(ctx, "settings-admin", []string{"*"}),
		read:  identity(ctx, "settings-reader", []string{"get", "list", "watch"})}
}

// identity makes a ServiceAccount that RBAC lets do verbs on Settings in gpustack-system, and returns a token of it.
func identity(ctx context.Context, name string, verbs []string) string {
	GinkgoHelper()
	ns := workerv1.SystemNamespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{settingsv1.GroupVersion.Group}, Resources: []string{"settings"}, Verbs: verbs}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	for _, o := range []client.Object{sa, role, binding} {
		Expect(suite.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(suite.Client.Delete(context.Background(), o))).To(Succeed()) })
	}
	cs, err := kubernetes.NewForConfig(suite.Config)
	Expect(err).NotTo(HaveOccurred())
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return token.Status.Token
}

// adminKubeconfig is the kubeconfig of the suite's administrator, which the server delegates with.
func adminKubeconfig(cfg *rest.Config) clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return *kc
}

// stored is the stored Setting's value.
func stored(name string) string {
	GinkgoHelper()
	s := &workerv1.Setting{}
	Expect(suite.Client.Get(context.Background(), client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: name}, s)).To(Succeed())
	return s.Spec.Value
}

const privileged = workerv1.SettingInstancePrivilegedAllowed

var _ = Describe("settings.gpustack.ai/v1", Ordered, func() {
	var s served
	var ctx context.Context
	BeforeAll(func() { s, ctx = serve(), context.Background() })

	It("lists one Setting of each, with its value in effect and no spec", func() {
		list, err := s.as(s.read).Namespace(workerv1.SystemNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(len(workerv1.SettingDefinitions)))
		got, err := s.as(s.read).Namespace(workerv1.SystemNamespace).Get(ctx, privileged, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.GetAPIVersion()).To(Equal("settings.gpustack.ai/v1"))
		Expect(got.Object).NotTo(HaveKey("spec"), "spec.value is write-only")
		Expect(got.Object["status"]).To(Equal(map[string]any{"value": "false", "default": "false", "editable": true,
			"sensitive": false, "description": "allow new Instances to take spec.privileged"}))
	})

	It("writes a patched value into the stored Setting, and returns it to its default on an empty one", func() {
		got, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
			[]byte(`{"spec":{"value":"true"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Object["status"]).To(HaveKeyWithValue("value", "true"))
		Expect(got.Object).NotTo(HaveKey("spec"))
		Expect(stored(privileged)).To(Equal("true"))

		_, err = s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"team":"infra"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(stored(privileged)).To(Equal("true"), "a patch without a value keeps the value")

		_, err = s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
			[]byte(`{"spec":{"value":""}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(stored(privileged)).To(Equal(""))
	})

	It("takes a server-side apply", func() {
		cfg := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "settings.gpustack.ai/v1", "kind": "Setting",
			"metadata": map[string]any{"name": workerv1.SettingInstanceAccessWildcardDNS, "namespace": workerv1.SystemNamespace},
			"spec":     map[string]any{"value": "nip.io"}}}
		got, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Apply(ctx, workerv1.SettingInstanceAccessWildcardDNS, cfg,
			metav1.ApplyOptions{FieldManager: "settings-test", Force: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Object["status"]).To(HaveKeyWithValue("value", "nip.io"))
		Expect(stored(workerv1.SettingInstanceAccessWildcardDNS)).To(Equal("nip.io"))
	})

	It("takes a sensitive value, reads it back as (sensitive), and refuses a bad one without quoting it", func() {
		const auth = workerv1.SettingContainerRegistryAuth
		got, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, auth, types.MergePatchType,
			[]byte(`{"spec":{"value":"robot:s3cret"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			_, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(context.Background(), auth, types.MergePatchType,
				[]byte(`{"spec":{"value":""}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
		})
		Expect(got.Object).NotTo(HaveKey("spec"))
		Expect(got.Object["status"]).To(SatisfyAll(HaveKeyWithValue("value", settingsv1.SensitiveValue), HaveKeyWithValue("sensitive", true)))
		Expect(stored(auth)).To(Equal("robot:s3cret"), "the stored Setting holds the credential")
		read, err := s.as(s.read).Namespace(workerv1.SystemNamespace).Get(ctx, auth, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Object["status"]).To(HaveKeyWithValue("value", settingsv1.SensitiveValue), "a reader never sees it")

		_, err = s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, auth, types.MergePatchType,
			[]byte(`{"spec":{"value":"hunter2"}}`), metav1.PatchOptions{})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(SatisfyAll(ContainSubstring(`spec.value: Invalid value: "(sensitive)"`),
			ContainSubstring("want <username>:<password> with a non-empty username"), Not(ContainSubstring("hunter2")))))
		Expect(stored(auth)).To(Equal("robot:s3cret"), "a refused value changes nothing")
	})

	DescribeTable("refuses what the reference refuses",
		func(call func() error, is func(error) bool, message string) {
			err := call()
			Expect(is(err)).To(BeTrue(), "%v", err)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a value the setting refuses", func() error {
			_, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
				[]byte(`{"spec":{"value":"maybe"}}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsInvalid, `spec.value: Invalid value: "maybe"`),
		Entry("a create", func() error {
			_, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "settings.gpustack.ai/v1", "kind": "Setting", "metadata": map[string]any{"name": "x"}}}, metav1.CreateOptions{})
			return err
		}, apierrors.IsMethodNotSupported, "not allow"),
		Entry("a delete", func() error {
			return s.as(s.admin).Namespace(workerv1.SystemNamespace).Delete(ctx, privileged, metav1.DeleteOptions{})
		}, apierrors.IsMethodNotSupported, "not allow"),
		Entry("a patch by a reader", func() error {
			_, err := s.as(s.read).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
				[]byte(`{"spec":{"value":"true"}}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsForbidden, `cannot patch resource "settings" in API group "settings.gpustack.ai"`),
		Entry("a read by nobody", func() error {
			_, err := s.as("").Namespace(workerv1.SystemNamespace).Get(ctx, privileged, metav1.GetOptions{})
			return err
		}, apierrors.IsForbidden, `User "system:anonymous" cannot get resource "settings"`),
		Entry("a setting that does not exist", func() error {
			_, err := s.as(s.read).Namespace(workerv1.SystemNamespace).Get(ctx, "no-such-setting", metav1.GetOptions{})
			return err
		}, apierrors.IsNotFound, `settings.settings.gpustack.ai "no-such-setting" not found`),
		Entry("a stale resourceVersion", func() error {
			_, err := s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, privileged, types.MergePatchType,
				[]byte(`{"metadata":{"resourceVersion":"1"},"spec":{"value":"true"}}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsConflict, "the object has been modified"),
	)

	It("watches: a patch is a MODIFIED event with the new value", func() {
		list, err := s.as(s.read).Namespace(workerv1.SystemNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		w, err := s.as(s.read).Namespace(workerv1.SystemNamespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(),
			FieldSelector: "metadata.name=" + workerv1.SettingWorkloadFitAffinity})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		_, err = s.as(s.admin).Namespace(workerv1.SystemNamespace).Patch(ctx, workerv1.SettingWorkloadFitAffinity, types.MergePatchType,
			[]byte(`{"spec":{"value":"false"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		var e watch.Event
		Eventually(w.ResultChan(), 30*time.Second).Should(Receive(&e))
		Expect(e.Type).To(Equal(watch.Modified))
		u := e.Object.(*unstructured.Unstructured)
		Expect(u.GetName()).To(Equal(workerv1.SettingWorkloadFitAffinity))
		Expect(u.Object["status"]).To(HaveKeyWithValue("value", "false"))
	})

	It("answers kubectl get with its columns, and publishes its schema for kubectl explain", func() {
		c, err := rest.HTTPClientFor(s.config(s.read))
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+"/apis/settings.gpustack.ai/v1/namespaces/gpustack-system/settings", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		table := &metav1.Table{}
		Expect(getJSON(c, req, table)).To(Succeed())
		var names []string
		for _, col := range table.ColumnDefinitions {
			names = append(names, col.Name)
		}
		Expect(names).To(Equal([]string{"Name", "Value", "Default", "Description"}))
		Expect(table.Rows).To(HaveLen(len(workerv1.SettingDefinitions)))

		req, err = http.NewRequestWithContext(ctx, http.MethodGet, s.host+"/openapi/v3/apis/settings.gpustack.ai/v1", nil)
		Expect(err).NotTo(HaveOccurred())
		doc := map[string]any{}
		Expect(getJSON(c, req, &doc)).To(Succeed())
		Expect(doc).To(HaveKeyWithValue("components", HaveKeyWithValue("schemas",
			HaveKey("ai.gpustack.settings.v1.SettingStatus"))))
	})
})
