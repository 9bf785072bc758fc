package instance_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/controller/instance"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestInstance(t *testing.T) { testenv.RunSuite(t, "instance controller suite", &suite) }

// reconcileOnce runs one reconcile of the Instance and returns the Instance and its Pod (nil when none) as
// they stand after it, with the events it recorded.
func reconcileOnce(inst *workerv1.Instance) (*workerv1.Instance, *corev1.Pod, []string) {
	GinkgoHelper()
	events := record.NewFakeRecorder(10)
	_, got, pod := reconcileWith(&instance.Reconciler{Client: suite.Client, Recorder: events}, inst)
	close(events.Events)
	var recorded []string
	for e := range events.Events {
		recorded = append(recorded, e)
	}
	return got, pod, recorded
}

// reconcileWith runs one reconcile of the Instance by r and returns its result, and the Instance and its Pod
// (nil when none) as they stand after it; the Pod is deleted when the spec ends.
func reconcileWith(r *instance.Reconciler, inst *workerv1.Instance) (reconcile.Result, *workerv1.Instance, *corev1.Pod) {
	GinkgoHelper()
	ctx := context.Background()
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(inst)})
	Expect(err).NotTo(HaveOccurred())
	got, pod := &workerv1.Instance{}, &corev1.Pod{}
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(inst), got)).To(Succeed())
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(inst), pod); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Get of the Pod: %v", err)
		return res, got, nil
	}
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), pod) })
	return res, got, pod
}

var _ = DescribeTable("holds an Instance, before creating its Pod, only while its queue drains, and never writes its spec",
	func(policy kueue.StopPolicy, wantHeld bool) {
		name := "drain-" + strings.ToLower(string(policy))
		typ := builders.MakeInstanceType(name).Obj()
		cq := builders.MakeClusterQueue(typ.Name).StopPolicy(policy).Obj()
		inst := builders.MakeInstance("default", name, typ.Name).Obj()
		suite.Create(typ, cq, inst)

		got, pod, events := reconcileOnce(inst)
		Expect(got.Spec.Stop).To(BeFalse(), "spec.stop is the user's: the system never sets it for a queue that drains")
		if wantHeld {
			Expect(pod).To(BeNil(), "a held Instance has no Pod")
			Expect(got.Status.Phase).To(Equal(workerv1.InstanceStopped))
			Expect(got.Status.PhaseMessage).To(ContainSubstring("the queue of instance type drain-holdanddrain drains (HoldAndDrain); the Instance starts again by itself"))
			Expect(events).To(ContainElement(ContainSubstring("QueueDrains held: the queue of instance type drain-holdanddrain drains")))

			// The pool's nodes are back: the queue admits again, and the Instance starts with no one acting.
			cq := &kueue.ClusterQueue{}
			Expect(suite.Client.Get(context.Background(), client.ObjectKey{Name: typ.Name}, cq)).To(Succeed())
			cq.Spec.StopPolicy = nil
			Expect(suite.Client.Update(context.Background(), cq)).To(Succeed())
			got, pod, _ = reconcileOnce(inst)
			Expect(got.Spec.Stop).To(BeFalse(), "spec.stop")
			Expect(pod).NotTo(BeNil(), "the Instance's Pod, once its queue admits again")
			Expect(got.Status.Phase).To(Equal(workerv1.InstanceStarting))
			return
		}
		Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	},
	Entry("HoldAndDrain: the queue drains, so the Instance waits with no Pod and says why", kueue.HoldAndDrain, true),
	Entry("Hold: an administrator's hold (spec.inactive) stops nothing; the Pod queues", kueue.Hold, false),
	Entry("None: the Pod queues", kueue.None, false),
)

var _ = It("stops an Instance whose type is being deleted, writing spec.stop as the walkthrough's Step 4 shows", func() {
	typ := builders.MakeInstanceType("drain-deleted").Obj()
	typ.Finalizers = []string{"test.gpustack.ai/keep"}
	inst := builders.MakeInstance("default", "drain-deleted", typ.Name).Obj()
	suite.Create(typ, inst)
	DeferCleanup(func() {
		typ.Finalizers = nil
		_ = suite.Client.Update(context.Background(), typ)
	})
	Expect(suite.Client.Delete(context.Background(), typ)).To(Succeed())
	Expect(suite.Client.Get(context.Background(), client.ObjectKeyFromObject(typ), typ)).To(Succeed())

	got, pod, events := reconcileOnce(inst)
	Expect(got.Spec.Stop).To(BeTrue(), "spec.stop")
	Expect(pod).To(BeNil(), "a stopped Instance has no Pod")
	Expect(events).To(ContainElement(ContainSubstring("Drained stopped: instance type drain-deleted is being deleted or is gone")))
})

// The walkthrough's pinned-demo: node-t4-b holds the T4 pool's 4-card flavor, and the pool's 1-card flavor,
// listed first, must not be assigned to it.
var _ = It("pins an Instance with its node's hostname and the labels of the pool's flavor that holds the node", func() {
	const t4 = "acceleratable.feature.gpustack.ai/nvidia-tesla-t4"
	typ := builders.MakeInstanceType("pin-t4").Obj()
	oneCard := builders.MakeResourceFlavor("pin-t4-1d").NodeLabel(t4, "true").NodeLabel(t4+".count", "1").Obj()
	fourCards := builders.MakeResourceFlavor("pin-t4-4d").NodeLabel(t4, "true").NodeLabel(t4+".count", "4").Obj()
	cq := builders.MakeClusterQueue(typ.Name).Flavor(oneCard.Name).Flavor(fourCards.Name).Obj()
	node := builders.MakeNode("pin-node-t4-b").Label(corev1.LabelHostname, "t4-b.example").Label(t4, "true").Label(t4+".count", "4").Obj()
	inst := builders.MakeInstance("default", "pinned", typ.Name).NodeName(node.Name).Obj()
	suite.Create(typ, oneCard, fourCards, cq, node, inst)

	_, pod, _ := reconcileOnce(inst)
	Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	Expect(pod.Spec.NodeSelector).To(Equal(map[string]string{
		corev1.LabelHostname: "t4-b.example", t4: "true", t4 + ".count": "4",
	}), "the Pod's nodeSelector: the node's own hostname label and its flavor's labels")
})

// startInstance creates an Instance of that name on a CPU type of the same name, reconciles it once and
// returns it with the Pod that reconcile created.
func startInstance(name string) (*workerv1.Instance, *corev1.Pod) {
	GinkgoHelper()
	typ := builders.MakeInstanceType(name).Obj()
	inst := builders.MakeInstance("default", name, typ.Name).Obj()
	suite.Create(typ, inst)
	_, pod, _ := reconcileOnce(inst)
	Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	return inst, pod
}

// createSettings creates the Setting objects, deleted when the spec ends.
func createSettings(values map[string]string) {
	GinkgoHelper()
	for name, value := range values {
		suite.Create(&workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name},
			Spec: workerv1.SettingSpec{Value: value}})
	}
}

// refuse plays the kubelet refusing the Instance's Pod at admission, as it does when a device plugin cannot
// give what Kueue admitted.
func refuse(pod *corev1.Pod) {
	GinkgoHelper()
	pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, "UnexpectedAdmissionError"
	pod.Status.Message = "Allocate failed due to not enough shared cards on the node"
	Expect(suite.Client.Status().Update(context.Background(), pod)).To(Succeed())
}

var _ = Describe("a Pod that failed", func() {
	ctx := context.Background()

	It("is rebuilt when the kubelet refused it at admission (UnexpectedAdmissionError), serving the same SSH host key", func() {
		inst, pod := startInstance("rebuild")
		hostKey := func() []byte {
			GinkgoHelper()
			s := &corev1.Secret{}
			Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: instancepod.HostKeysSecretName(inst)}, s)).To(Succeed())
			Expect(s.OwnerReferences).To(ContainElement(HaveField("UID", inst.UID)), "the Instance owns its host keys")
			return s.Data[instancepod.HostKeyFile]
		}
		first := hostKey()
		Expect(first).NotTo(BeEmpty())
		refuse(pod)

		got, gone, events := reconcileOnce(inst)
		Expect(gone).To(BeNil(), "the refused Pod is deleted")
		Expect(events).To(ContainElement(HavePrefix("Warning PodRebuilt the Pod failed (UnexpectedAdmissionError: Allocate failed")))
		Expect(got.Status.PhaseMessage).To(SatisfyAll(HavePrefix("the Pod failed (UnexpectedAdmissionError"), HaveSuffix("); building it again")))
		Expect(got.Status.Rebuilds).To(Equal(int32(1)), "status.rebuilds")
		_, again, _ := reconcileOnce(inst)
		Expect(again).NotTo(BeNil(), "a new Pod")
		Expect(again.UID).NotTo(Equal(pod.UID), "the new Pod is another Pod")
		Expect(hostKey()).To(Equal(first), "the new Pod serves the host key clients already trust")
	})

	It("is rebuilt at any age, each rebuild in a row after a longer wait, and a Ready Pod ends the run", func() {
		inst, pod := startInstance("node-shutdown")
		now := time.Now().Add(24 * time.Hour).Truncate(time.Second)
		r := &instance.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10), Now: func() time.Time { return now }}
		reconcileAt := func() (reconcile.Result, *workerv1.Instance, *corev1.Pod) {
			GinkgoHelper()
			return reconcileWith(r, inst)
		}
		shutDown := func(p *corev1.Pod) {
			GinkgoHelper()
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Terminated"
			p.Status.Message = "Pod was terminated in response to imminent node shutdown."
			Expect(suite.Client.Status().Update(ctx, p)).To(Succeed())
		}

		shutDown(pod)
		_, got, p := reconcileAt()
		Expect(p).To(BeNil(), "a day old, the first failure is rebuilt at once")
		Expect(got.Status.Rebuilds).To(Equal(int32(1)))
		_, _, p = reconcileAt()
		Expect(p).NotTo(BeNil(), "the new Pod")

		shutDown(p)
		now = now.Add(4 * time.Second)
		res, got, again := reconcileAt()
		Expect(again).NotTo(BeNil(), "the second failure in a row waits")
		Expect(res.RequeueAfter).To(Equal(6*time.Second), "the rest of the 10 s wait")
		Expect(got.Status.Phase).To(Equal(workerv1.InstanceStarting))
		Expect(got.Status.PhaseMessage).To(Equal("the Pod failed (Terminated: Pod was terminated in response to imminent node shutdown.); building it again in 6s"))

		now = now.Add(6 * time.Second)
		_, got, p = reconcileAt()
		Expect(p).To(BeNil(), "rebuilt once the wait is over")
		Expect(got.Status.Rebuilds).To(Equal(int32(2)))
		_, _, p = reconcileAt()
		Expect(p).NotTo(BeNil(), "the new Pod")

		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		Expect(suite.Client.Status().Update(ctx, p)).To(Succeed())
		_, got, _ = reconcileAt()
		Expect(got.Status.Phase).To(Equal(workerv1.InstanceReady))
		Expect(got.Status.Rebuilds).To(BeZero(), "a Ready Pod ends the run of rebuilds")
		Expect(got.Status.LastRebuildTime).To(BeNil())
	})
})

var _ = DescribeTable("RebuildBackoff waits 10 s after a first rebuild, doubling up to 5 minutes",
	func(rebuilds int32, want time.Duration) {
		Expect(instance.RebuildBackoff(rebuilds)).To(Equal(want))
	},
	Entry("none before: at once", int32(0), time.Duration(0)),
	Entry("one before", int32(1), 10*time.Second),
	Entry("two before", int32(2), 20*time.Second),
	Entry("five before", int32(5), 160*time.Second),
	Entry("six before: capped", int32(6), 5*time.Minute),
	Entry("many before: capped, no overflow", int32(1000), 5*time.Minute),
)

// The settings instance-access-static-address and instance-access-wildcard-dns decide the addresses; the device
// plugin's record on the Pod gives the cards.
var _ = DescribeTable("fills accessAddresses and allocations from the running Pod",
	func(settings map[string]string, wantAddresses []string) {
		createSettings(settings)
		inst, pod := startInstance("reach")
		pod.Annotations = map[string]string{"device.gpustack.ai/accelerator.allocated": `{"main":["GPU-2","GPU-1"]}`}
		Expect(suite.Client.Update(context.Background(), pod)).To(Succeed())
		pod.Status.HostIP, pod.Status.HostIPs = "10.0.0.5", []corev1.HostIP{{IP: "10.0.0.5"}}
		Expect(suite.Client.Status().Update(context.Background(), pod)).To(Succeed())

		got, _, _ := reconcileOnce(inst)
		Expect(got.Status.AccessAddresses).To(Equal(wantAddresses), "accessAddresses")
		Expect(got.Status.Allocations).To(BeEmpty(), "a CPU Instance's Pod claims no card, whatever is recorded")
	},
	Entry("neither setting: the host IPs", map[string]string{}, []string{"10.0.0.5"}),
	Entry("a wildcard DNS names the host IP", map[string]string{workerv1.SettingInstanceAccessWildcardDNS: "nip.io"}, []string{"10.0.0.5.nip.io"}),
	Entry("a static address wins", map[string]string{workerv1.SettingInstanceAccessStaticAddress: "gpu.example.com",
		workerv1.SettingInstanceAccessWildcardDNS: "nip.io"}, []string{"gpu.example.com"}),
)

var _ = It("pulls the built-in SSH sidecar as container-registry, container-namespace, image-pull-secrets and image-pull-policy say", func() {
	createSettings(map[string]string{
		workerv1.SettingContainerRegistry: "mirror.example.com", workerv1.SettingContainerNamespace: "gpustack-mirror",
		workerv1.SettingImagePullSecrets: "mirror-a, mirror-b", workerv1.SettingImagePullPolicy: "Always",
	})
	inst, pod := startInstance("mirrored")
	Expect(pod.Spec.Containers[1].Image).To(Equal("mirror.example.com/gpustack-mirror/ssh-server:v1.3.0"))
	Expect(pod.Spec.Containers[1].ImagePullPolicy).To(Equal(corev1.PullAlways))
	Expect(pod.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "mirror-a"}, {Name: "mirror-b"}}))
	Expect(pod.Spec.Containers[0].Image).To(Equal(inst.Spec.Image), "the Instance's own image is its author's")
})

// container-registry-auth gives each Instance a pull Secret of the credential for the registry its SSH sidecar
// is pulled from (container-registry's, else the sidecar image's own), made before the Pod, owned by the
// Instance and listed in the Pod's pull secrets; a changed credential makes a new Secret for the next Pod.
var _ = DescribeTable("makes each Instance a pull Secret of container-registry-auth",
	func(name string, values map[string]string, wantSecret, wantConfig string) {
		ctx := context.Background()
		createSettings(values)
		inst, pod := startInstance(name)
		Expect(pod.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: wantSecret}}), "the Pod's pull secrets")
		secret := &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: wantSecret}, secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		Expect(secret.Data).To(Equal(map[string][]byte{corev1.DockerConfigJsonKey: []byte(wantConfig)}), "the Secret's content")
		Expect(secret.OwnerReferences).To(ConsistOf(SatisfyAll(HaveField("UID", inst.UID), HaveField("Controller", HaveValue(BeTrue())))),
			"the Instance owns its pull Secret")

		// The credential changes: the next Pod pulls with a new Secret, and the old one is left as it was.
		rotated := &workerv1.Setting{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: workerv1.SettingContainerRegistryAuth}, rotated)).To(Succeed())
		rotated.Spec.Value = "robot:rotated"
		Expect(suite.Client.Update(ctx, rotated)).To(Succeed())
		Expect(suite.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
		}).Should(BeTrue(), "the first Pod is gone")
		_, next, _ := reconcileOnce(inst)
		Expect(next).NotTo(BeNil(), "the next Pod")
		Expect(next.Spec.ImagePullSecrets).To(HaveExactElements(HaveField("Name", Not(Equal(wantSecret)))), "the next Pod's pull secret")
		again := &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: next.Spec.ImagePullSecrets[0].Name}, again)).To(Succeed())
		Expect(string(again.Data[corev1.DockerConfigJsonKey])).To(ContainSubstring(`"password":"rotated"`))
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(secret), again)).To(Succeed())
		Expect(again.Data).To(Equal(secret.Data), "the first Pod's Secret is kept")
	},
	Entry("seeded without container-registry: the sidecar image's own registry, Docker Hub as the kubelet names it",
		"registry-auth-hub", map[string]string{workerv1.SettingContainerRegistryAuth: "robot:s3cret"},
		"registry-auth-hub-registry-500d1ff3",
		`{"auths":{"docker.io":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
	Entry("with container-registry: that registry",
		"registry-auth-mirror", map[string]string{workerv1.SettingContainerRegistryAuth: "robot:s3cret",
			workerv1.SettingContainerRegistry: "mirror.example.com:5000"},
		"registry-auth-mirror-registry-d46c774f",
		`{"auths":{"mirror.example.com:5000":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
)

// A member makes the pull Secret of its own container-registry-auth that a dispatched Instance's Pod lists,
// owned by the Pod; one the Pod does not list (the manager's credential is another) it does not make.
var _ = DescribeTable("gives a dispatched Instance's Pod the pull Secret of container-registry-auth it lists",
	func(name, memberAuth, listed string, want bool) {
		ctx := context.Background()
		createSettings(map[string]string{workerv1.SettingContainerRegistryAuth: memberAuth})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Labels: map[string]string{workerv1.LabelInstance: name, kueue.MultiKueueOriginLabel: "multikueue"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: instancepod.MainContainer, Image: "busybox"},
				{Name: instancepod.SSHContainer, Image: "gpustack/ssh-server:v1.3.0"}},
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: listed}}}}
		suite.Create(pod)
		r := &instance.DispatchedReconciler{Client: suite.Client}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		err = suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: listed}, secret)
		if !want {
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Secret: %v", err)
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(secret.Data).To(Equal(map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"docker.io":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`)}))
		Expect(secret.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)))
	},
	Entry("the member's credential is the one the Pod lists", "dispatched-auth", "robot:s3cret", "dispatched-auth-registry-500d1ff3", true),
	Entry("the Pod lists another credential's Secret", "dispatched-other", "robot:rotated", "dispatched-other-registry-500d1ff3", false),
)

// A Pod a manager's MultiKueue created here for one of its Instances gets its host-keys Secret made here, owned
// by the Pod; a Pod of an Instance of this cluster, or one that is no Instance's, gets none from it.
var _ = DescribeTable("gives a dispatched Instance's Pod its host-keys Secret",
	func(name string, labels map[string]string, want bool) {
		ctx := context.Background()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		suite.Create(pod)
		r := &instance.DispatchedReconciler{Client: suite.Client}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		err = suite.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-ssh-host-keys"}, secret)
		if !want {
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Secret: %v", err)
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(secret.Data).To(HaveKey(instancepod.HostKeyFile))
		Expect(secret.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)))
		// Again: the Secret there is kept, its key unchanged.
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		Expect(err).NotTo(HaveOccurred())
		again := &corev1.Secret{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(secret), again)).To(Succeed())
		Expect(again.Data).To(Equal(secret.Data))
	},
	Entry("dispatched from a manager", "dispatched", map[string]string{workerv1.LabelInstance: "dispatched", kueue.MultiKueueOriginLabel: "multikueue"}, true),
	Entry("an Instance's Pod of this cluster", "local", map[string]string{workerv1.LabelInstance: "local"}, false),
	Entry("a dispatched Pod that is no Instance's", "bare", map[string]string{kueue.MultiKueueOriginLabel: "multikueue"}, false),
)

// dispatchedPod is the Pod a manager's MultiKueue makes in this cluster for its Instance of the name (whose UID
// there is u-manager), asking for an SSH port.
func dispatchedPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
		Labels: map[string]string{workerv1.LabelInstance: name, workerv1.LabelInstanceUID: "u-manager",
			kueue.MultiKueueOriginLabel: "multikueue"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: instancepod.MainContainer, Image: "busybox",
			Ports: []corev1.ContainerPort{{Name: "ssh", ContainerPort: 22}}}}}}
}

// A dispatched Instance's Pod that asks for ports gets, in the member, the NodePort Service its own cluster would
// make, owned by the Pod, noting where the Instance is reached here: the member's access addresses for the
// Pod's node (none before it has one) and the node ports, which the manager's worker-gateway passes on.
var _ = It("gives a dispatched Instance's Pod its Service, noting where the Instance is reached", func(ctx context.Context) {
	createSettings(map[string]string{workerv1.SettingInstanceAccessWildcardDNS: "nip.io"})
	pod := dispatchedPod("dispatched-ports")
	suite.Create(pod)
	r := &instance.DispatchedReconciler{Client: suite.Client}
	access := func() (*corev1.Service, instancepod.Access) {
		GinkgoHelper()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		Expect(err).NotTo(HaveOccurred())
		svc := &corev1.Service{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), svc)).To(Succeed())
		var a instancepod.Access
		Expect(json.Unmarshal([]byte(svc.Annotations[workerv1.AnnotationInstanceAccess]), &a)).To(Succeed())
		return svc, a
	}
	svc, a := access()
	Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
	Expect(svc.Spec.Selector).To(Equal(map[string]string{workerv1.LabelInstance: "dispatched-ports", workerv1.LabelInstanceUID: "u-manager"}))
	Expect(svc.Labels).To(HaveKeyWithValue(kueue.MultiKueueOriginLabel, "multikueue"), "the manager's gateway lists it by its origin")
	Expect(svc.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)))
	Expect(svc.Spec.Ports).To(HaveLen(1))
	nodePort := svc.Spec.Ports[0].NodePort
	Expect(nodePort).NotTo(BeZero())
	Expect(a).To(Equal(instancepod.Access{Ports: []workerv1.InstanceStatusPort{{InstancePort: workerv1.InstancePort{
		Name: "ssh", Port: 22, Protocol: corev1.ProtocolTCP}, NodePort: nodePort}}}), "no address before the Pod has a node")

	pod.Status.HostIP, pod.Status.HostIPs = "10.1.2.3", []corev1.HostIP{{IP: "10.1.2.3"}}
	Expect(suite.Client.Status().Update(ctx, pod)).To(Succeed())
	again, a := access()
	Expect(a.Addresses).To(Equal([]string{"10.1.2.3.nip.io"}), "the member's settings give the address")
	Expect(again.Spec.Ports[0].NodePort).To(Equal(nodePort), "the Service is kept, its node port too")
})

// An accelerated Instance's Pod names its vendor's RuntimeClass once the class exists on the cluster (the chart
// makes those of the runtimes that inject drivers or devices), and none before.
var _ = It("names the vendor's RuntimeClass in an accelerated Pod when the class exists", func(ctx context.Context) {
	typ := builders.MakeInstanceType("rc-a10g").Accelerated("nvidia-a10g").Unit("8", "64Gi").LocalStorage("100Gi").Obj()
	before := builders.MakeInstance("default", "rc-before", typ.Name).Accelerators(1).Obj()
	suite.Create(typ, before)
	_, pod, _ := reconcileOnce(before)
	Expect(pod).NotTo(BeNil())
	Expect(pod.Spec.RuntimeClassName).To(BeNil(), "no RuntimeClass nvidia yet")

	suite.Create(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"})
	after := builders.MakeInstance("default", "rc-after", typ.Name).Accelerators(1).Obj()
	suite.Create(after)
	_, pod, _ = reconcileOnce(after)
	Expect(pod).NotTo(BeNil())
	Expect(pod.Spec.RuntimeClassName).To(HaveValue(Equal("nvidia")))
})

var _ = It("rebuilds an admitted Pod whose node selector no node matches any more, after a grace, and never one that waits for room", func() {
	ctx := context.Background()
	typ := builders.MakeInstanceType("stranded").Obj()
	node := builders.MakeNode("stranded-node").Label(corev1.LabelHostname, "stranded.example").Obj()
	inst := builders.MakeInstance("default", "stranded", typ.Name).NodeName(node.Name).Obj()
	suite.Create(typ, node, inst)
	_, pod, _ := reconcileOnce(inst)
	Expect(pod).NotTo(BeNil(), "the Instance's Pod")
	Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue(corev1.LabelHostname, "stranded.example"))
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Spec.SchedulingGates = nil // admitted
		Expect(suite.Client.Update(ctx, pod)).To(Succeed())
	}
	start := time.Now().Truncate(time.Second)
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu.", LastTransitionTime: metav1.NewTime(start)}}
	Expect(suite.Client.Status().Update(ctx, pod)).To(Succeed())

	events := record.NewFakeRecorder(10)
	now := start
	r := &instance.Reconciler{Client: suite.Client, Recorder: events, Now: func() time.Time { return now }}
	reconcileAt := func(at time.Time) (reconcile.Result, *workerv1.Instance, *corev1.Pod) {
		GinkgoHelper()
		now = at
		return reconcileWith(r, inst)
	}

	res, got, p := reconcileAt(start.Add(time.Hour))
	Expect(p).NotTo(BeNil(), "a Pod that waits for room on a node its selector matches is left to wait, however long")
	Expect(p.UID).To(Equal(pod.UID))
	Expect(res.RequeueAfter).To(Equal(instance.StrandedGrace), "looked at again: node labels wake no Instance")
	Expect(got.Status.PhaseMessage).To(Equal("unschedulable: 0/1 nodes are available: 1 Insufficient cpu."))

	// The node's labels change after admission: the Pod's selector now matches no node.
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
	node.Labels[corev1.LabelHostname] = "renamed.example"
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
	seen := start.Add(time.Hour + 10*time.Second)
	res, _, p = reconcileAt(seen)
	Expect(p).NotTo(BeNil(), "a Pod first seen matching no node is kept: labels that blink come back")
	Expect(res.RequeueAfter).To(Equal(instance.StrandedGrace), "looked at again when the grace is over")
	res, _, p = reconcileAt(seen.Add(20 * time.Second))
	Expect(p).NotTo(BeNil(), "within the grace the Pod is kept")
	Expect(res.RequeueAfter).To(Equal(instance.StrandedGrace-20*time.Second), "the rest of the grace")

	_, got, p = reconcileAt(seen.Add(instance.StrandedGrace))
	Expect(p).To(BeNil(), "a Pod stranded past the grace is deleted")
	Expect(got.Spec.Stop).To(BeFalse(), "spec.stop")
	Expect(got.Status.Rebuilds).To(Equal(int32(1)), "status.rebuilds")
	Expect(got.Status.PhaseMessage).To(Equal("the Pod cannot be scheduled: its node selector matches no node (the node labels it was admitted by changed); building it again"))
	Expect(events.Events).To(Receive(HavePrefix("Warning PodRebuilt the Pod cannot be scheduled: its node selector matches no node")))

	_, _, p = reconcileAt(seen.Add(instance.StrandedGrace))
	Expect(p).NotTo(BeNil(), "the new Pod")
	Expect(p.UID).NotTo(Equal(pod.UID))
	Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(corev1.LabelHostname, "renamed.example"), "built for the node as it is now")
})

var _ = It("makes no Pod until the InstanceSSHPublicKey and InstanceImagePullSecret it names are Ready, and says which it waits for", func() {
	ctx := context.Background()
	typ := builders.MakeInstanceType("credentials").Obj()
	inst := builders.MakeInstance("default", "credentials", typ.Name).SSHPublicKey("credentials-key").ImagePullSecret("credentials-pull").Obj()
	suite.Create(typ, inst)

	got, pod, _ := reconcileOnce(inst)
	Expect(pod).To(BeNil(), "no Pod while the key is missing")
	Expect(got.Status.PhaseMessage).To(Equal("waiting for InstanceSSHPublicKey credentials-key: none of that name in namespace default"))

	key := &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "credentials-key"},
		Spec: workerv1.InstanceSSHPublicKeySpec{Data: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM9lYKVqf7WXLbWEPV8YJK8sA83WLCy436PBqvlKmDkc user@host"}}
	pull := &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "credentials-pull"},
		Spec: workerv1.InstanceImagePullSecretSpec{Registry: "docker.io", Username: "robot", Password: "s3cret"}}
	suite.Create(key, pull)
	key.Status.Conditions = []metav1.Condition{workerv1.ReadyCondition(true, workerv1.ReasonSecretCreated, "Secret credentials-key was made from the spec", key.Generation)}
	key.Status.Conditions[0].LastTransitionTime = metav1.Now()
	Expect(suite.Client.Status().Update(ctx, key)).To(Succeed())
	pull.Status.Conditions = []metav1.Condition{workerv1.ReadyCondition(false, workerv1.ReasonInvalidSpec, "a made-up reason", pull.Generation)}
	pull.Status.Conditions[0].LastTransitionTime = metav1.Now()
	Expect(suite.Client.Status().Update(ctx, pull)).To(Succeed())

	got, pod, _ = reconcileOnce(inst)
	Expect(pod).To(BeNil(), "no Pod while the pull secret is not Ready")
	Expect(got.Status.PhaseMessage).To(Equal("waiting for InstanceImagePullSecret credentials-pull: a made-up reason"))

	pull.Status.Conditions = []metav1.Condition{workerv1.ReadyCondition(true, workerv1.ReasonSecretCreated, "Secret credentials-pull was made from the spec", pull.Generation)}
	pull.Status.Conditions[0].LastTransitionTime = metav1.Now()
	Expect(suite.Client.Status().Update(ctx, pull)).To(Succeed())
	_, pod, _ = reconcileOnce(inst)
	Expect(pod).NotTo(BeNil(), "the Pod, once both are Ready")
	Expect(pod.Spec.ImagePullSecrets).To(ContainElement(corev1.LocalObjectReference{Name: "credentials-pull"}))
})
