package webhooks

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"net"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// serveWebhooks provisions the webhooks at a loopback port and serves them from a manager, as the worker does,
// until the spec ends; the API server then calls them for every write they cover.
func serveWebhooks() {
	GinkgoHelper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	s := Serving{Namespace: "default", URL: "https://127.0.0.1:" + strconv.Itoa(port), Secret: "served-webhook-tls", CertDir: GinkgoT().TempDir()}
	Expect(Provision(ctx, suite.Client, s, time.Now(), 10*time.Second)).To(Succeed())
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingName}})
		_ = suite.Client.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingName}})
		_ = suite.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.Secret}})
	})
	mgr, err := ctrl.NewManager(suite.Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: s.CertDir})})
	Expect(err).NotTo(HaveOccurred())
	Expect(Setup(mgr)).To(Succeed())
	testenv.RunUntilCleanup(mgr.Start)
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).WithTimeout(30 * time.Second).Should(Succeed())
}

func limits(kv ...string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.ResourceRequirements{Limits: l}
}

func units(c corev1.Container) int64 {
	q := c.Resources.Limits["nvidia.com/gpu.sliced.units"]
	return q.Value()
}

// The webhooks as the API server calls them: the fold covers what Kueue charges (init containers, a Job's
// template) whatever units the client wrote, and only the worker writes which cards a Pod holds.
var _ = Describe("the webhooks served to a real API server", Ordered, func() {
	queued := map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName("h100")}
	// Eighty per cent of a card, claimed to cost one credit.
	cheap := limits("nvidia.com/gpu.sliced", "1", "nvidia.com/gpu.sliced.memory-percentage", "80", "nvidia.com/gpu.sliced.units", "1")
	BeforeAll(serveWebhooks)
	create := func(ctx context.Context, c client.Client, o client.Object) error {
		err := c.Create(ctx, o)
		if err == nil {
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), o, client.GracePeriodSeconds(0)) })
		}
		return err
	}

	It("folds an init container's slice budget into units, as Kueue charges init containers too", func(ctx context.Context) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "init-slice", Labels: queued},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "prepare", Image: "busybox", Resources: cheap}},
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		Expect(create(ctx, suite.Client, pod)).To(Succeed())
		Expect(units(pod.Spec.InitContainers[0])).To(Equal(pools.SliceUnits(80)))
	})

	It("folds a queued Job's Pod template, which is what Kueue charges a Job by", func(ctx context.Context) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job-slice", Labels: queued},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: cheap}}}}}}
		Expect(create(ctx, suite.Client, job)).To(Succeed())
		Expect(units(job.Spec.Template.Spec.Containers[0])).To(Equal(pools.SliceUnits(80)))
	})

	It("leaves a Pod and a Job sent to another team's queue alone: the API server does not call the worker", func(ctx context.Context) {
		other := map[string]string{"kueue.x-k8s.io/queue-name": "team-b-queue"}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other-queue", Labels: other},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: cheap}}}}
		Expect(create(ctx, suite.Client, pod)).To(Succeed())
		Expect(units(pod.Spec.Containers[0])).To(Equal(int64(1)), "the units as the client wrote them")
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other-queue-job", Labels: other},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: cheap}}}}}}
		Expect(create(ctx, suite.Client, job)).To(Succeed())
		Expect(units(job.Spec.Template.Spec.Containers[0])).To(Equal(int64(1)), "the units as the client wrote them")
	})

	It("leaves no way to change a Pod's units after its create: the API server refuses the update", func(ctx context.Context) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "update-slice", Labels: queued},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: cheap}}}}
		Expect(create(ctx, suite.Client, pod)).To(Succeed())
		pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu.sliced.units"] = resource.MustParse("1")
		pod.Spec.Containers[0].Resources.Requests["nvidia.com/gpu.sliced.units"] = resource.MustParse("1")
		Expect(suite.Client.Update(ctx, pod)).NotTo(Succeed())
	})

	It("lets only the worker write which cards a Pod holds", func(ctx context.Context) {
		// The worker as its service account, with its generated roles.
		roles, err := rbac.For("worker", workerv1.SystemNamespace)
		Expect(err).NotTo(HaveOccurred())
		agents := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace}}
		Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, agents))).To(Succeed())
		// Another spec may have made them already.
		for _, o := range roles {
			Expect(client.IgnoreAlreadyExists(create(ctx, suite.Client, o))).To(Succeed())
		}
		workerCfg := rest.CopyConfig(suite.Config)
		workerCfg.Impersonate = rest.ImpersonationConfig{UserName: WorkerUser}
		worker, err := client.New(workerCfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		cards := map[string]string{workerv1.AnnotationAllocated: `{"main":["GPU-1"]}`}

		forged := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "forged", Annotations: cards},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		err = create(ctx, suite.Client, forged)
		Expect(err).To(MatchError(ContainSubstring("metadata.annotations[" + workerv1.AnnotationAllocated + "]: Forbidden: only the operator's worker")))

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		Expect(create(ctx, suite.Client, pod)).To(Succeed())
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Annotations = cards
		Expect(suite.Client.Patch(ctx, pod, patch)).To(MatchError(ContainSubstring("only the operator's worker")), "a Pod's owner records cards")
		Expect(worker.Patch(ctx, pod, patch)).To(Succeed(), "the worker records cards")

		patch = client.MergeFrom(pod.DeepCopy())
		pod.Annotations["team"] = "a"
		Expect(suite.Client.Patch(ctx, pod, patch)).To(Succeed(), "another annotation is anyone's to write")
		patch = client.MergeFrom(pod.DeepCopy())
		delete(pod.Annotations, workerv1.AnnotationAllocated)
		Expect(suite.Client.Patch(ctx, pod, patch)).To(MatchError(ContainSubstring("only the operator's worker")), "a Pod's owner drops the record")
	})

	It("lets an Instance use only the Secrets its writer may read", func(ctx context.Context) {
		h100Pool()
		// alice may write Instances in default and read one Secret there, by name.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{workerv1.GroupVersion.Group}, Resources: []string{"instances"}, Verbs: []string{"create", "update", "get"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"alice-key"}},
		}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "alice"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
		Expect(create(ctx, suite.Client, role)).To(Succeed())
		Expect(create(ctx, suite.Client, binding)).To(Succeed())
		aliceCfg := rest.CopyConfig(suite.Config)
		aliceCfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		alice, err := client.New(aliceCfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		typ := "gpustack--nvidia-h100-80gb-hbm3-linux-amd64"

		theirs := builders.MakeInstance("default", "borrowed-key", typ).Accelerators(1).Obj()
		theirs.Spec.SSHPublicKey = "bob-key"
		theirs.Spec.AdditionalVolumes = []workerv1.AdditionalVolume{{MountPath: "/creds", Secret: &workerv1.ObjectReference{Name: "bob-creds"}}}
		Expect(create(ctx, alice, theirs)).To(MatchError(SatisfyAll(
			ContainSubstring("spec.sshPublicKey: Forbidden: alice may not read Secret default/bob-key"),
			ContainSubstring("spec.additionalVolumes[0].secret.name: Forbidden: alice may not read Secret default/bob-creds"))))

		own := builders.MakeInstance("default", "own-key", typ).Accelerators(1).Obj()
		own.Spec.SSHPublicKey = "alice-key"
		Expect(create(ctx, alice, own)).To(Succeed(), "alice's own Secret")
		own.Spec.Stop = true
		Expect(alice.Update(ctx, own)).To(Succeed(), "stopped, its pull secret may change")
		own.Spec.ImagePullSecret = "bob-pull"
		Expect(alice.Update(ctx, own)).To(MatchError(ContainSubstring("spec.imagePullSecret: Forbidden: alice may not read Secret default/bob-pull")),
			"a Secret an update adds is asked about too")
	})
})
