package setting_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/setting"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestSetting(t *testing.T) { testenv.RunSuite(t, "setting controller suite", &suite) }

func makeSetting(name, value string) *workerv1.Setting {
	return &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name},
		Spec: workerv1.SettingSpec{Value: value}}
}

func makeSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: settings.SecretName},
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// want is what a spec reads back: the Setting's status and the Secret's keys.
type want struct {
	Status workerv1.SettingStatus
	Secret map[string]string
}

const (
	aware     = workerv1.SettingInstanceTypeAwareCPUManufacturer
	awareDesc = "split pools, queues and the catalog by CPU key; ResourceFlavors never change"
)

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	DescribeTable("writes the Setting's status and its key of the Secret, then nothing on a converged second reconcile",
		func(objects []client.Object, name string, w want) {
			suite.Create(objects...)
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), makeSecret(nil)) })
			c, writes := testenv.CountWrites(suite.Client)
			events := record.NewFakeRecorder(10)
			r := &setting.Reconciler{Client: c, Recorder: events}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: name}}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			s, secret := &workerv1.Setting{}, &corev1.Secret{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, s)).To(Succeed())
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSecret(nil)), secret)).To(Succeed())
			got := want{Status: s.Status, Secret: map[string]string{}}
			for k, v := range secret.Data {
				got.Secret[k] = string(v)
			}
			Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")
			Expect(events.Events).To(Receive(Equal(fmt.Sprintf("Normal SettingChanged %s is now %q (was unset; default %q)",
				name, w.Status.Value, w.Status.Default))), "the Setting's event")

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
			Expect(events.Events).NotTo(Receive(), "an event from a reconcile that changed nothing")
		},
		Entry("a Setting's value becomes its effective value, and the Secret is created with that key alone",
			[]client.Object{makeSetting(aware, "true")}, aware,
			want{Status: workerv1.SettingStatus{Value: "true", Default: "false", Description: awareDesc, Editable: true},
				Secret: map[string]string{aware: "true"}}),
		Entry("an empty value restores the default, and the Secret says so",
			[]client.Object{makeSetting(workerv1.SettingImagePullPolicy, "")}, workerv1.SettingImagePullPolicy,
			want{Status: workerv1.SettingStatus{Value: "IfNotPresent", Default: "IfNotPresent",
				Description: "pull policy of built-in images", Editable: true},
				Secret: map[string]string{workerv1.SettingImagePullPolicy: "IfNotPresent"}}),
		Entry("only this Setting's key of the Secret changes; an administrator's other keys stay",
			[]client.Object{makeSecret(map[string]string{aware: "false", "node-management-manual": "true"}), makeSetting(aware, "true")},
			aware,
			want{Status: workerv1.SettingStatus{Value: "true", Default: "false", Description: awareDesc, Editable: true},
				Secret: map[string]string{aware: "true", "node-management-manual": "true"}}),
	)

	It("takes a Setting deleted before its reconcile as no error, and writes nothing", func() {
		c, writes := testenv.CountWrites(suite.Client)
		r := &setting.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10)}
		req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: "container-registry"}}
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(writes.List()).To(BeEmpty())
	})
})

// A sensitive Setting's event, which more people read than read Settings, says that it changed and not what to;
// its value is in effect and kept in the gpustack-settings Secret as any other.
var _ = It("records a sensitive Setting's change without its value", func() {
	ctx := context.Background()
	const name = workerv1.SettingContainerRegistryAuth
	suite.Create(makeSetting(name, "robot:s3cret"))
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), makeSecret(nil)) })
	events := record.NewFakeRecorder(10)
	r := &setting.Reconciler{Client: suite.Client, Recorder: events}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: name}})
	Expect(err).NotTo(HaveOccurred())
	Expect(events.Events).To(Receive(Equal("Normal SettingChanged container-registry-auth changed; its value is sensitive and not shown")))
	s, secret := &workerv1.Setting{}, &corev1.Secret{}
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSetting(name, "")), s)).To(Succeed())
	Expect(s.Status).To(Equal(workerv1.SettingStatus{Value: "robot:s3cret", Editable: true, Sensitive: true,
		Description: "username:password for the registry the built-in images are pulled from; the worker makes each Instance a pull Secret of it"}))
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSecret(nil)), secret)).To(Succeed())
	Expect(secret.Data).To(HaveKeyWithValue(name, []byte("robot:s3cret")))
})

// The worker's start-up (settings.Ensure) takes the Secret's value for a Setting that has not changed since its
// status took its value in (an administrator edited the Secret and restarted the worker), and keeps a Setting
// edited while the worker was down, writing it into the Secret.
var _ = DescribeTable("settings.Ensure at start-up",
	func(specValue, statusValue, secretValue, want string) {
		ctx := context.Background()
		s := makeSetting(aware, specValue)
		suite.Create(s, makeSecret(map[string]string{aware: secretValue}))
		s.Status = workerv1.SettingStatus{Value: statusValue, Default: "false", Description: awareDesc, Editable: true}
		Expect(suite.Client.Status().Update(ctx, s)).To(Succeed(), "the status the last sync wrote")
		Expect(settings.Ensure(ctx, suite.Client, noEnv)).To(BeEmpty(), "problems at start-up")
		DeferCleanup(func() {
			for _, d := range workerv1.SettingDefinitions {
				_ = suite.Client.Delete(context.Background(), makeSetting(d.Name, ""))
			}
		})
		got, secret := &workerv1.Setting{}, &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSecret(nil)), secret)).To(Succeed())
		Expect([]string{got.Spec.Value, got.Status.Value, string(secret.Data[aware])}).To(Equal([]string{want, want, want}),
			"the Setting's value, its status and the Secret's key")
	},
	Entry("the Secret edited while the worker was down wins", "false", "false", "true", "true"),
	Entry("the Setting edited while the worker was down wins, and the Secret follows", "true", "false", "false", "true"),
	Entry("both in step: nothing changes", "true", "true", "true", "true"),
)

// noEnv is an environment without variables: nothing seeds a Setting.
func noEnv(string) string { return "" }

// The worker's GPUSTACK_<SETTING> variables seed the Settings it creates at start-up: a valid value is the new
// Setting's, the gpustack-settings Secret's still wins, a Setting that exists keeps its own, and an invalid
// value is reported while the Setting starts at its default.
var _ = DescribeTable("settings.Ensure seeds new Settings from the worker's environment",
	func(existing, secretValue, envValue, want string, problem string) {
		ctx := context.Background()
		if existing != "" {
			suite.Create(makeSetting(aware, existing))
		}
		if secretValue != "" {
			suite.Create(makeSecret(map[string]string{aware: secretValue}))
		}
		DeferCleanup(func() {
			for _, d := range workerv1.SettingDefinitions {
				_ = suite.Client.Delete(context.Background(), makeSetting(d.Name, ""))
			}
			_ = suite.Client.Delete(context.Background(), makeSecret(nil))
		})
		env := func(k string) string {
			if k == "GPUSTACK_INSTANCE_TYPE_AWARE_CPU_MANUFACTURER" {
				return envValue
			}
			return ""
		}
		problems, err := settings.Ensure(ctx, suite.Client, env)
		Expect(err).NotTo(HaveOccurred())
		if problem == "" {
			Expect(problems).To(BeEmpty())
		} else {
			Expect(problems).To(ConsistOf(ContainSubstring(problem)))
		}
		got := &workerv1.Setting{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSetting(aware, "")), got)).To(Succeed())
		Expect(got.Status.Value).To(Equal(want), "the Setting's effective value")
	},
	Entry("a new Setting takes the variable's value", "", "", "true", "true", ""),
	Entry("the Secret wins over the variable", "", "false", "true", "false", ""),
	Entry("a Setting that exists keeps its value", "false", "", "true", "false", ""),
	Entry("an invalid value is reported, and the default holds", "", "", "maybe", "false",
		`GPUSTACK_INSTANCE_TYPE_AWARE_CPU_MANUFACTURER="maybe"`),
)

// A worker newer than its CRDs (Helm leaves crds/ as they were on upgrade) starts: the Setting the old CRD does
// not know is left out with a problem that names it and the fix, and every other Setting is made.
var _ = It("settings.Ensure starts on a Setting CRD older than the worker", func() {
	ctx := context.Background()
	const newest = workerv1.SettingInstanceTypeDrainGracePeriod
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "settings.worker.gpustack.ai"}, crd)).To(Succeed())
	current := crd.DeepCopy()
	rules := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations
	Expect(rules[0].Rule).To(ContainSubstring("'" + newest + "', "))
	rules[0].Rule = strings.Replace(rules[0].Rule, "'"+newest+"', ", "", 1)
	Expect(suite.Client.Update(ctx, crd)).To(Succeed())
	DeferCleanup(func() {
		ctx := context.Background()
		for _, d := range workerv1.SettingDefinitions {
			_ = suite.Client.Delete(ctx, makeSetting(d.Name, ""))
		}
		_ = suite.Client.Delete(ctx, makeSecret(nil))
		Eventually(func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(current), crd); err != nil {
				return err
			}
			crd.Spec = current.Spec
			return suite.Client.Update(ctx, crd)
		}).Should(Succeed())
	})
	// The API server takes the older rule in a moment after the update.
	Eventually(func() bool {
		s := makeSetting(newest, "")
		err := suite.Client.Create(ctx, s)
		if err == nil {
			_ = suite.Client.Delete(ctx, s)
		}
		return apierrors.IsInvalid(err)
	}).Should(BeTrue(), "the older CRD refuses %s", newest)

	problems, err := settings.Ensure(ctx, suite.Client, noEnv)
	Expect(err).NotTo(HaveOccurred())
	Expect(problems).To(HaveLen(1))
	Expect(problems[0]).To(And(ContainSubstring("cannot create Setting "+newest), ContainSubstring("kubectl apply")))
	list := &workerv1.SettingList{}
	Expect(suite.Client.List(ctx, list, client.InNamespace(workerv1.SystemNamespace))).To(Succeed())
	Expect(list.Items).To(HaveLen(len(workerv1.SettingDefinitions) - 1))
})

// A key of the gpustack-settings Secret that the Setting's rules refuse is reported, and the Setting keeps its
// value: one bad edit of the Secret does not stop the worker.
var _ = It("settings.Ensure reports a Secret's value the Setting refuses", func() {
	ctx := context.Background()
	suite.Create(makeSetting(aware, "true"), makeSecret(map[string]string{aware: "maybe"}))
	DeferCleanup(func() {
		for _, d := range workerv1.SettingDefinitions {
			_ = suite.Client.Delete(context.Background(), makeSetting(d.Name, ""))
		}
		_ = suite.Client.Delete(context.Background(), makeSecret(nil))
	})
	problems, err := settings.Ensure(ctx, suite.Client, noEnv)
	Expect(err).NotTo(HaveOccurred())
	Expect(problems).To(ConsistOf(ContainSubstring("cannot copy the gpustack-settings Secret's " + aware)))
	got := &workerv1.Setting{}
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSetting(aware, "")), got)).To(Succeed())
	Expect(got.Spec.Value).To(Equal("true"))
})
