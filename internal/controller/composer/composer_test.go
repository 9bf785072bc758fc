package composer_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

var suite testenv.EnvtestSuite

func TestComposer(t *testing.T) { testenv.RunSuite(t, "composer controller suite", &suite) }

// profiledNodes returns the inventory's nodes as the cluster shows them once the profiler, the device managers
// and NFD have done their part: Nodes with the general.* and acceleratable.* labels, and Devices inventories.
func profiledNodes(file string) []client.Object {
	GinkgoHelper()
	inv, err := simulated.Load(testenv.Path("examples", "clusters", file))
	Expect(err).NotTo(HaveOccurred())
	var out []client.Object
	for _, n := range inv.Nodes {
		devices, err := simulated.New(n).Detect(context.Background())
		Expect(err).NotTo(HaveOccurred())
		labels := map[string]string{corev1.LabelOSStable: n.OS, corev1.LabelArchStable: n.Arch}
		for k, v := range pools.WorkerLabels(n.CPU.Vendor, n.CPU.Model, n.CPU.Family, n.CPU.ID, n.CPU.Cores, "true") {
			labels[k] = v
		}
		for k, v := range providers.NodeLabels(devices) {
			labels[k] = v
		}
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels,
			Annotations: map[string]string{workerv1.AnnotationCPUName: n.CPU.Model}}})
		if len(devices) > 0 {
			out = append(out, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: providers.DevicesSpec(devices)})
		}
	}
	return out
}

// chain is what a case reads back of the cluster after a recompute.
type chain struct {
	ResourceFlavors []string
	ClusterQueues   []string
	LocalQueues     []string
	// Types are the InstanceTypes' names and their status columns, as `kubectl get instancetype` shows them.
	Types [][]string
}

func observe() chain {
	GinkgoHelper()
	ctx := context.Background()
	var got chain
	rfs, cqs, lqs, its := &kueue.ResourceFlavorList{}, &kueue.ClusterQueueList{}, &kueue.LocalQueueList{}, &workerv1.InstanceTypeList{}
	for _, l := range []client.ObjectList{rfs, cqs, lqs, its} {
		Expect(suite.Client.List(ctx, l)).To(Succeed())
	}
	for _, o := range rfs.Items {
		got.ResourceFlavors = append(got.ResourceFlavors, o.Name)
	}
	for _, o := range cqs.Items {
		got.ClusterQueues = append(got.ClusterQueues, o.Name)
	}
	for _, o := range lqs.Items {
		got.LocalQueues = append(got.LocalQueues, o.Namespace+"/"+o.Name)
	}
	got.Types = [][]string{walkthrough.Step1Types[0]}
	for _, it := range its.Items {
		s := it.Status.Summary
		got.Types = append(got.Types, []string{it.Name, it.Labels[workerv1.LabelQueueEntrance], s.Unit, s.Accelerator, s.CPU, string(it.Status.Phase)})
	}
	for _, s := range [][]string{got.ResourceFlavors, got.ClusterQueues, got.LocalQueues} {
		sort.Strings(s)
	}
	return got
}

// Recomputes the chain of the walkthrough's four nodes (Step 1), then with node-a10g taken out of its pools
// (Step 2), checking what the composer wrote; each converged recompute must write nothing.
var _ = It("composes the walkthrough's Steps 1 and 2, and writes nothing once converged", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	c, writes := testenv.CountWrites(suite.Client)
	r := &composer.Reconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	recompute := func(step string) {
		GinkgoHelper()
		writes.Reset()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
		Expect(err).NotTo(HaveOccurred(), step)
	}
	entrances := []string{}
	for _, row := range walkthrough.Step1Types[1:] {
		entrances = append(entrances, "default/"+row[1])
	}
	sort.Strings(entrances)
	step1 := chain{
		ResourceFlavors: []string{"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
			"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
			"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
			"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c"},
		ClusterQueues: []string{"gpustack--generic-linux-amd64", "gpustack--nvidia-a10g-linux-amd64", "gpustack--nvidia-tesla-t4-linux-amd64"},
		LocalQueues:   entrances,
		Types:         walkthrough.Step1Types,
	}

	// The first recompute creates the derived types; the next gives them their pools and status.
	recompute("step 1")
	recompute("step 1, derived types")
	Expect(cmp.Diff(step1, observe())).To(BeEmpty(), "Step 1: Reconcile(...): -want, +got")
	// The metrics show the same views as the status: the T4 pool's 4/5 whole cards and 4/50 shares.
	t4 := walkthrough.Step1Types[3][0]
	Expect(gauge(metrics.PoolRemaining, t4, metrics.ViewExclusive)).To(Equal(5.0))
	Expect(gauge(metrics.PoolOnceMax, t4, metrics.ViewExclusive)).To(Equal(4.0))
	Expect(gauge(metrics.PoolRemaining, t4, metrics.ViewShared)).To(Equal(50.0))
	Expect(gauge(metrics.PoolRemaining, walkthrough.Step1Types[2][0], metrics.ViewExclusive)).To(Equal(1.0))
	for _, row := range walkthrough.Step1Types[1:] {
		Expect(readyOf(row[0])).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Active")),
			"the Ready condition of %s", row[0])
	}
	applied := testutil.ToFloat64(metrics.ComposeObjects.WithLabelValues("applied"))
	recompute("step 1, converged")
	Expect(writes.List()).To(BeEmpty(), "Step 1: a converged Reconcile(...) wrote")
	Expect(testutil.ToFloat64(metrics.ComposeObjects.WithLabelValues("applied"))).To(Equal(applied), "objects applied by a converged recompute")

	node := &corev1.Node{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "node-a10g"}, node)).To(Succeed())
	node.Labels[workerv1.LabelManaged] = "false"
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
	recompute("step 2")
	step2 := step1
	step2.ResourceFlavors = []string{"gpustack--amd-epyc-7r13-linux-amd64-16c",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
		"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
		"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c"}
	step2.Types = [][]string{walkthrough.Step1Types[0],
		{"gpustack--generic-linux-amd64", "gpustack-fnv64-3b93966fd73eb9ec", "1/2Gi/100Gi", "0/0 0/0 0/0 0/0", "48/68", "Active"},
		{"gpustack--nvidia-a10g-linux-amd64", "gpustack-fnv64-c4680bb149644f1c", "8/64Gi/100Gi", "0/0 0/0 0/0 0/0", "0/0", "Active"},
		walkthrough.Step1Types[3]}
	Expect(cmp.Diff(step2, observe())).To(BeEmpty(), "Step 2: Reconcile(...): -want, +got")
	Expect(gauge(metrics.PoolRemaining, walkthrough.Step1Types[2][0], metrics.ViewExclusive)).To(Equal(0.0),
		"the A10G pool's whole cards once its node is out")
	recompute("step 2, converged")
	Expect(writes.List()).To(BeEmpty(), "Step 2: a converged Reconcile(...) wrote")
})

// The composer remembers each object it found as desired, by the object's resourceVersion, so a converged
// recompute does not compare every object field by field again; an object edited since has another version,
// and is compared and put back.
var _ = It("puts back a composed object edited by hand after it was found as desired", func(ctx context.Context) {
	suite.Create(profiledNodes("walkthrough.yaml")...)
	c, writes := testenv.CountWrites(suite.Client)
	r := &composer.Reconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	for range 3 {
		recomputeWith(r)
	}
	const name = "gpustack--nvidia-tesla-t4-linux-amd64"
	cq := &kueue.ClusterQueue{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
	want := cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota.DeepCopy()
	cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse("999")
	Expect(suite.Client.Update(ctx, cq)).To(Succeed(), "cannot edit the ClusterQueue by hand")

	writes.Reset()
	recomputeWith(r)
	Expect(writes.List()).NotTo(BeEmpty(), "the recompute after the edit wrote nothing")
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
	Expect(cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota.Cmp(want)).To(BeZero(),
		"the edited quota is put back: %s, want %s", cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota.String(), want.String())
	writes.Reset()
	recomputeWith(r)
	Expect(writes.List()).To(BeEmpty(), "a converged recompute after the repair wrote")
})

// recomputeWith runs one recompute of the chain and returns its result, failing the spec on an error.
func recomputeWith(r *composer.Reconciler) reconcile.Result {
	GinkgoHelper()
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
	Expect(err).NotTo(HaveOccurred())
	return res
}

// readyOf returns an InstanceType's Ready condition.
func readyOf(name string) metav1.Condition {
	GinkgoHelper()
	it := &workerv1.InstanceType{}
	Expect(suite.Client.Get(context.Background(), client.ObjectKey{Name: name}, it)).To(Succeed())
	c := apimeta.FindStatusCondition(it.Status.Conditions, workerv1.ConditionReady)
	Expect(c).NotTo(BeNil(), "InstanceType %s has no Ready condition", name)
	return *c
}

// gauge reads one view's gauge of an InstanceType.
func gauge(g *prometheus.GaugeVec, instanceType, view string) float64 {
	return testutil.ToFloat64(g.WithLabelValues(instanceType, view))
}

// cleanChain removes what a spec composed, so the next one starts from an empty chain: without Kueue or the
// composer running, nothing else would release the InstanceTypes' finalizers.
func cleanChain() {
	ctx := context.Background()
	its := &workerv1.InstanceTypeList{}
	Expect(suite.Client.List(ctx, its)).To(Succeed())
	for i := range its.Items {
		if controllerutil.RemoveFinalizer(&its.Items[i], workerv1.FinalizerControlled) {
			Expect(suite.Client.Update(ctx, &its.Items[i])).To(Succeed())
		}
	}
	for _, o := range []client.Object{&workerv1.InstanceType{}, &workerv1.InstanceTypeFlavor{}, &kueue.ClusterQueue{}, &kueue.ResourceFlavor{}} {
		Expect(suite.Client.DeleteAllOf(ctx, o)).To(Succeed())
	}
	Expect(suite.Client.DeleteAllOf(ctx, &kueue.LocalQueue{}, client.InNamespace("default"))).To(Succeed())
}

var _ = AfterEach(cleanChain)

var _ = Describe("a recompute that meets what it cannot write", func() {
	ctx := context.Background()
	chain := reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}}
	var (
		r      *composer.Reconciler
		events *record.FakeRecorder
	)
	BeforeEach(func() {
		suite.Create(profiledNodes("walkthrough.yaml")...)
		events = record.NewFakeRecorder(100)
		r = &composer.Reconciler{Client: suite.Client, Recorder: events}
	})

	It("leaves an object of a composed name that it did not make as it is, says so, and composes the rest", func() {
		theirs := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "gpustack--amd-epyc-7r13-linux-amd64-16c",
			Labels: map[string]string{"owner": "someone"}}}
		suite.Create(theirs)
		_, err := r.Reconcile(ctx, chain)
		Expect(err).To(MatchError(ContainSubstring("ResourceFlavor gpustack--amd-epyc-7r13-linux-amd64-16c exists and was not made by the operator")))

		got := &kueue.ResourceFlavor{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
		Expect(got.Labels).To(Equal(map[string]string{"owner": "someone"}), "their flavor's labels")
		Expect(got.Spec.NodeLabels).To(BeEmpty(), "their flavor's node labels")
		Expect(observe().ClusterQueues).To(ConsistOf(walkthrough.Step1Types[1][0], walkthrough.Step1Types[2][0], walkthrough.Step1Types[3][0]),
			"the three pools are composed all the same")
	})

	It("goes on past a type whose queue it cannot write, and keeps that type's entrances", func() {
		theirs := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "team-pool"}}
		entrance := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pools.EntranceName("team-pool"),
			Annotations: map[string]string{workerv1.AnnotationQueue: "team-pool", workerv1.AnnotationComposedHash: "from-before"}},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "team-pool"}}
		suite.Create(theirs, entrance, builders.MakeInstanceType("team-pool").Obj())
		_, err := r.Reconcile(ctx, chain)
		Expect(err).To(MatchError(ContainSubstring("ClusterQueue team-pool exists and was not made by the operator")))

		got := observe()
		Expect(got.ClusterQueues).To(ContainElements(walkthrough.Step1Types[1][0], walkthrough.Step1Types[2][0], walkthrough.Step1Types[3][0]),
			"the other pools are composed")
		Expect(got.LocalQueues).To(ContainElement("default/"+pools.EntranceName("team-pool")), "the failed type's entrance is kept")
		Expect(readyOf("team-pool")).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", composer.ReasonComposeFailed),
			HaveField("Message", ContainSubstring("ClusterQueue team-pool exists and was not made by the operator"))))
		Expect(events.Events).To(Receive(ContainSubstring("ComposeFailed")))
		cq := &kueue.ClusterQueue{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(theirs), cq)).To(Succeed())
		Expect(cq.Spec.ResourceGroups).To(BeEmpty(), "their ClusterQueue is left as it is")
	})

	It("keeps the entrances of a type whose composition fails", func() {
		broken := builders.MakeInstanceType("broken").Obj()
		broken.Spec.Acceleratable, broken.Spec.AcceleratorGroup = true, "acme-x1"
		entrance := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pools.EntranceName("broken"),
			Annotations: map[string]string{workerv1.AnnotationQueue: "broken", workerv1.AnnotationComposedHash: "from-before"}},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "broken"}}
		suite.Create(broken, entrance)
		_, err := r.Reconcile(ctx, chain)
		Expect(err).NotTo(HaveOccurred(), "a type's own bad spec is its event, not the recompute's error")
		Expect(observe().LocalQueues).To(ContainElement("default/" + pools.EntranceName("broken")))
		Expect(readyOf("broken")).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", composer.ReasonComposeFailed),
			HaveField("Message", ContainSubstring("acme-x1"))))
		Expect(events.Events).To(Receive(ContainSubstring("ComposeFailed")))

		_, err = r.Reconcile(ctx, chain)
		Expect(err).NotTo(HaveOccurred())
		Expect(events.Events).NotTo(Receive(ContainSubstring("ComposeFailed")), "a failure that has not changed is not told again")
	})
})

// Deletes the A10G type while its queue still reserves quota for a Workload, and plays Kueue's part by hand
// (the queue's status and its resource-in-use finalizer): the queue holds and drains, the type reads
// Draining, then Inactive once nothing is reserved, and goes with its queue.
var _ = It("retires a deleted type through HoldAndDrain: Draining, then Inactive, then gone with its queue", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	events := record.NewFakeRecorder(100)
	r := &composer.Reconciler{Client: suite.Client, Recorder: events}
	recompute := func() { GinkgoHelper(); recomputeWith(r) }
	recompute()
	recompute()
	name := walkthrough.Step1Types[2][0]
	const kueueFinalizer = "kueue.x-k8s.io/resource-in-use"
	cq := &kueue.ClusterQueue{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
	controllerutil.AddFinalizer(cq, kueueFinalizer)
	Expect(suite.Client.Update(ctx, cq)).To(Succeed())
	cq.Status.ReservingWorkloads = 1
	Expect(suite.Client.Status().Update(ctx, cq)).To(Succeed())
	setReserving := func(n int32) {
		GinkgoHelper()
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		cq.Status.ReservingWorkloads = n
		Expect(suite.Client.Status().Update(ctx, cq)).To(Succeed())
	}
	phase := func() (workerv1.InstanceTypePhase, string) {
		GinkgoHelper()
		it := &workerv1.InstanceType{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, it)).To(Succeed())
		return it.Status.Phase, readyOf(name).Reason
	}

	Expect(suite.Client.Delete(ctx, &workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	recompute()
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
	Expect(cq.Spec.StopPolicy).To(HaveValue(Equal(kueue.HoldAndDrain)), "the queue of a deleted type holds and drains")
	Expect(cq.DeletionTimestamp).NotTo(BeNil(), "the queue is deleted once, Kueue's finalizer keeps it while it drains")
	Expect(events.Events).To(Receive(Equal("Normal Draining the type is being deleted: its ClusterQueue holds and drains 1 workload(s), then goes")))
	p, reason := phase()
	Expect(p).To(Equal(workerv1.InstanceTypeDraining))
	Expect(reason).To(Equal(string(workerv1.InstanceTypeDraining)), "the Ready condition's reason")

	setReserving(0)
	recompute()
	p, _ = phase()
	Expect(p).To(Equal(workerv1.InstanceTypeInactive), "nothing reserved: the type is Inactive until its queue goes")

	controllerutil.RemoveFinalizer(cq, kueueFinalizer)
	Expect(suite.Client.Update(ctx, cq)).To(Succeed())
	recompute()
	err := suite.Client.Get(ctx, client.ObjectKey{Name: name}, &workerv1.InstanceType{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the type goes with its queue: Get says %v", err)
})

// Takes node-a10g out of its pools while the A10G queue reserves a Workload: the pool is held (Hold) for the
// grace period, with the reconcile coming back when it ends, and drains (HoldAndDrain) only then; its node back,
// the pool is Active with no stop policy.
var _ = It("holds a pool that lost its flavors for the grace period before it drains", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := &composer.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(100), Now: func() time.Time { return now }}
	recompute := func() reconcile.Result { GinkgoHelper(); return recomputeWith(r) }
	recompute()
	recompute()
	name := walkthrough.Step1Types[2][0]
	cq := &kueue.ClusterQueue{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
	cq.Status.ReservingWorkloads = 1
	Expect(suite.Client.Status().Update(ctx, cq)).To(Succeed())
	setManaged := func(v string) { GinkgoHelper(); setNodeManaged(ctx, "node-a10g", v) }
	state := func() (string, workerv1.InstanceTypePhase, string) {
		GinkgoHelper()
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		it := &workerv1.InstanceType{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, it)).To(Succeed())
		policy, since := "", ""
		if cq.Spec.StopPolicy != nil {
			policy = string(*cq.Spec.StopPolicy)
		}
		if it.Status.NoFlavorsSince != nil {
			since = it.Status.NoFlavorsSince.UTC().Format(time.RFC3339)
		}
		return policy, it.Status.Phase, since
	}

	// migration is the queue's drain bookkeeping as state() last read it.
	migration := func() string {
		return cq.Annotations[workerv1.AnnotationMigrationPhase] + "/" + cq.Annotations[workerv1.AnnotationMigrationStopPolicy]
	}

	setManaged("false")
	res := recompute()
	policy, phase, since := state()
	Expect([]string{policy, string(phase), since}).To(Equal([]string{"Hold", "Inactive", "2026-12-01T10:00:00Z"}),
		"the pool with no flavor is held, since now")
	Expect(migration()).To(Equal("Holding/Hold"), "the queue says the system holds it for want of flavors")
	Expect(res.RequeueAfter).To(Equal(5*time.Minute), "the composer comes back when the grace ends")

	now = now.Add(5*time.Minute - time.Second)
	res = recompute()
	policy, _, since = state()
	Expect([]string{policy, since}).To(Equal([]string{"Hold", "2026-12-01T10:00:00Z"}), "within the grace, still held since the same time")
	Expect(res.RequeueAfter).To(Equal(time.Second))

	now = now.Add(time.Second)
	Expect(recompute().RequeueAfter).To(BeZero(), "nothing more to wait for")
	policy, phase, _ = state()
	Expect([]string{policy, string(phase)}).To(Equal([]string{"HoldAndDrain", "Draining"}), "the grace over, the queue drains")
	Expect(migration()).To(Equal("Draining/HoldAndDrain"))

	setManaged("true")
	recompute()
	policy, phase, since = state()
	Expect([]string{policy, string(phase), since}).To(Equal([]string{"None", "Active", ""}), "the node back, the pool runs on (Kueue defaults the stop policy to None)")
	Expect(migration()).To(Equal("/"), "the bookkeeping goes with the stop")
})

// An authored A10G type made while node-a10g is out of every pool: its new queue has no groups and starts on the
// empty-plan hold (Inactive), let go once the node brings its flavor; a queue that has started reads Active with
// no groups when the node leaves again, as the walkthrough's A10G pool does.
var _ = It("holds a new queue with no groups until a flavor fills them", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	r := &composer.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(100)}
	recompute := func() { GinkgoHelper(); recomputeWith(r) }
	setManaged := func(v string) { GinkgoHelper(); setNodeManaged(ctx, "node-a10g", v) }
	const name = "a10g-12c128g"
	// state is the queue's stop policy, its empty-plan marker, and the type's phase and message.
	state := func() []string {
		GinkgoHelper()
		cq := &kueue.ClusterQueue{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, cq)).To(Succeed())
		it := &workerv1.InstanceType{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, it)).To(Succeed())
		policy := "None"
		if cq.Spec.StopPolicy != nil {
			policy = string(*cq.Spec.StopPolicy)
		}
		return []string{policy, cq.Annotations[workerv1.AnnotationEmptyPlanHold], string(it.Status.Phase), it.Status.PhaseMessage}
	}

	setManaged("false")
	recompute()
	suite.Create(builders.MakeInstanceType(name).Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi").Obj())
	recompute()
	Expect(state()).To(Equal([]string{"Hold", "true", "Inactive",
		"the pool has no flavors yet: its new queue has no resource groups and is held until a node of the pool is ready"}))
	recompute()
	Expect(state()).To(Equal([]string{"Hold", "true", "Inactive",
		"the pool has no flavors yet: its new queue has no resource groups and is held until a node of the pool is ready"}), "still held on the next recompute")

	setManaged("true")
	recompute()
	Expect(state()).To(Equal([]string{"None", "", "Active", ""}), "the flavor fills the groups: the hold and its marker go")

	setManaged("false")
	recompute()
	Expect(state()).To(Equal([]string{"None", "", "Active", ""}), "a started queue is not held again when its flavors go")
})

// node-cpu claims two billion T4 cards through a label no inventory backs: it is left out of every pool, with an
// event naming the label, and the T4 pool's quota stays what its inventoried cards give.
var _ = It("leaves out a node whose card count its Devices inventory does not back", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	events := record.NewFakeRecorder(100)
	r := &composer.Reconciler{Client: suite.Client, Recorder: events}
	recompute := func() { GinkgoHelper(); recomputeWith(r) }
	recompute()
	recompute()
	t4 := walkthrough.Step1Types[3][0]
	quotas := func() string {
		GinkgoHelper()
		cq := &kueue.ClusterQueue{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: t4}, cq)).To(Succeed())
		var out []string
		for _, rg := range cq.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				for _, q := range f.Resources {
					out = append(out, string(f.Name)+"="+string(q.Name)+":"+q.NominalQuota.String())
				}
			}
		}
		return strings.Join(out, " ")
	}
	before := quotas()

	node := &corev1.Node{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "node-cpu"}, node)).To(Succeed())
	node.Labels[workerv1.AcceleratablePrefix+"nvidia-tesla-t4"] = "true"
	node.Labels[workerv1.AcceleratablePrefix+"nvidia-tesla-t4.count"] = "2000000000"
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
	recompute()
	Expect(quotas()).To(Equal(before), "the T4 pool's quota")
	Expect(events.Events).To(Receive(Equal("Warning InventoryDisagrees node node-cpu: label acceleratable.feature.gpustack.ai/nvidia-tesla-t4.count=2000000000 claims cards, and the node has no Devices inventory; the node is left out of every pool")))
	generic := &workerv1.InstanceType{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: walkthrough.Step1Types[1][0]}, generic)).To(Succeed())
	Expect(generic.Status.Summary.CPU).To(Equal("48/56"), "the generic pool without node-cpu's 16 cores")
})

// A Pod on node-cpu (16 cores) whose main container asks 1 CPU, behind a native sidecar asking 2 and an init
// container asking 8: the scheduler counts 10 (the init container runs beside the sidecar started before it),
// and so does the generic pool's CPU view, 72 cores free before, 62 after (71 counting its containers alone).
var _ = It("counts a Pod's CPU as the scheduler does: sidecars and the init containers' peak", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	r := &composer.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(100)}
	recompute := func() { GinkgoHelper(); recomputeWith(r) }
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	generic := func() string {
		GinkgoHelper()
		it := &workerv1.InstanceType{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: walkthrough.Step1Types[1][0]}, it)).To(Succeed())
		return it.Status.Summary.CPU
	}
	recompute()
	recompute()
	Expect(generic()).To(Equal("48/72"))

	suite.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "with-sidecar"},
		Spec: corev1.PodSpec{NodeName: "node-cpu",
			InitContainers: []corev1.Container{
				{Name: "sidecar", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: cpu("2")},
				{Name: "setup", Image: "busybox", Resources: cpu("8")},
			},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: cpu("1")}}}})
	recompute()
	Expect(generic()).To(Equal("48/62"), "node-cpu's 16 cores less the Pod's 10")
})

// Runs the composer in a manager, as the worker does, through a client whose every third write fails with a
// Conflict or a 500: the workqueue retries with backoff, and the chain converges to the walkthrough's Step 1
// all the same, no write lost.
var _ = It("converges through injected conflicts and server errors", func() {
	suite.Create(profiledNodes("walkthrough.yaml")...)
	var faults *testenv.Faults
	mgr, err := ctrl.NewManager(suite.Config, ctrl.Options{
		Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, o)
			if err != nil {
				return nil, err
			}
			var fc client.WithWatch
			fc, faults = testenv.InjectFaults(c, 3)
			return fc, nil
		},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&composer.Reconciler{Client: mgr.GetClient(), Recorder: record.NewFakeRecorder(1000)}).SetupWithManager(mgr)).To(Succeed())
	// Stopped before the chain is cleaned: a running composer would compose it again.
	stop := testenv.RunUntilCleanup(mgr.Start)

	entrances := []string{}
	for _, row := range walkthrough.Step1Types[1:] {
		entrances = append(entrances, "default/"+row[1])
	}
	sort.Strings(entrances)
	Eventually(func(g Gomega) {
		got := observe()
		g.Expect(got.Types).To(Equal(walkthrough.Step1Types), "the InstanceTypes")
		g.Expect(got.LocalQueues).To(Equal(entrances), "the entrances")
		g.Expect(got.ClusterQueues).To(HaveLen(3), "the pools' queues")
		g.Expect(got.ResourceFlavors).To(HaveLen(7), "the flavors")
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	Expect(faults.Injected()).To(BeNumerically(">", 5), "writes that failed on purpose")
	stop()
})

// Reads the managedFields of every object after the composer's first apply: it sends no empty field, and its
// field manager owns exactly the fields it sent (two levels deep), so no zero value and no field the API server
// or Kueue defaulted is its.
var _ = It("owns exactly the fields it applies", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	c, applied := testenv.RecordApplies(suite.Client)
	r := &composer.Reconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	for range 2 {
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
		Expect(err).NotTo(HaveOccurred())
	}
	kinds := map[string]bool{}
	for _, desired := range applied() {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(desired), live)).To(Succeed())
		Expect(testenv.ZeroPaths(desired.Object)).To(BeEmpty(), "empty fields sent with %s %s", desired.GetKind(), desired.GetName())
		Expect(testenv.OwnershipDiff(live, composer.FieldManager, desired.Object)).To(BeEmpty(),
			"the fields %s owns on %s %s: -sent and not owned, +owned and not sent", composer.FieldManager, desired.GetKind(), desired.GetName())
		kinds[desired.GetKind()] = true
	}
	Expect(kinds).To(HaveLen(4), "applied kinds: %v", kinds)
})

// Deletes a type while Kueue's CRDs are gone (played by a client that answers NoKindMatch for ClusterQueues):
// its finalizer is released, so the type goes instead of waiting forever for a queue that cannot exist.
var _ = It("releases a deleted type when Kueue's CRDs are gone", func() {
	ctx := context.Background()
	it := builders.MakeInstanceType("no-kueue").Obj()
	it.Finalizers = []string{workerv1.FinalizerControlled}
	suite.Create(it)
	Expect(suite.Client.Delete(ctx, it)).To(Succeed())
	c := interceptor.NewClient(suite.Client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(*kueue.ClusterQueue); ok {
				return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: kueue.SchemeGroupVersion.Group, Kind: "ClusterQueue"}}
			}
			return c.Get(ctx, key, o, opts...)
		},
	})
	r := &composer.Reconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	_, _ = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
	err := suite.Client.Get(ctx, client.ObjectKeyFromObject(it), &workerv1.InstanceType{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deleted type is gone: Get says %v", err)
})

// A type written with a feature field set to false (as a manifest may spell out, and as the flavors function
// writes it for a vendor without compute overcommit) gets its finalizer, is composed, and is released when
// deleted: the finalizer is patched alone, as a whole-object update would drop the false field and the
// immutable feature would refuse it.
var _ = It("composes and releases a type whose feature spells out a false field", func() {
	ctx := context.Background()
	suite.Create(profiledNodes("walkthrough.yaml")...)
	r := &composer.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(100)}
	recompute := func() {
		GinkgoHelper()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}})
		Expect(err).NotTo(HaveOccurred())
	}
	recompute()
	derived := &unstructured.Unstructured{}
	derived.SetGroupVersionKind(workerv1.GroupVersion.WithKind("InstanceType"))
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: walkthrough.Step1Types[2][0]}, derived)).To(Succeed())
	authored := &unstructured.Unstructured{Object: map[string]any{"apiVersion": derived.GetAPIVersion(), "kind": derived.GetKind(),
		"metadata": map[string]any{"name": "a10g-no-overcommit"}, "spec": derived.Object["spec"]}}
	Expect(unstructured.SetNestedField(authored.Object, false, "spec", "feature", "logicalSliced", "coresPercentageOvercommit")).To(Succeed())
	Expect(suite.Client.Create(ctx, authored)).To(Succeed())

	recompute()
	it := &workerv1.InstanceType{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "a10g-no-overcommit"}, it)).To(Succeed())
	Expect(it.Finalizers).To(ContainElement(workerv1.FinalizerControlled))
	Expect(readyOf("a10g-no-overcommit").Reason).NotTo(Equal("ComposeFailed"), readyOf("a10g-no-overcommit").Message)
	Expect(it.Status.Phase).To(Equal(workerv1.InstanceTypeActive))

	Expect(suite.Client.Delete(ctx, it)).To(Succeed())
	recompute()
	recompute()
	err := suite.Client.Get(ctx, client.ObjectKey{Name: "a10g-no-overcommit"}, &workerv1.InstanceType{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the type goes with its queue: Get says %v", err)
})

// setNodeManaged sets the gpustack.ai/managed label of the named node to v, as NFD would from its worker
// NodeFeature.
func setNodeManaged(ctx context.Context, name, v string) {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	node.Labels[workerv1.LabelManaged] = v
	Expect(suite.Client.Update(ctx, node)).To(Succeed())
}
