package cardcheck_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/cardcheck"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestCardCheck(t *testing.T) { testenv.RunSuite(t, "per-card admission check suite", &suite) }

func limits(l map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range l {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// makeWorkload returns a Workload of one Pod asking l, and the status Kueue gives it once quota is reserved on
// flavor (reserved false: quota not reserved yet), with the node-devices check Pending.
func makeWorkload(name, flavor string, l map[string]string, reserved bool) (*kueue.Workload, kueue.WorkloadStatus) {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: kueue.WorkloadSpec{QueueName: "entrance", PodSets: []kueue.PodSet{{Name: "main", Count: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: limits(l), Limits: limits(l)}}}}}}}}}
	now := metav1.Now()
	st := kueue.WorkloadStatus{AdmissionChecks: []kueue.AdmissionCheckState{{Name: cardcheck.Name,
		State: kueue.CheckStatePending, LastTransitionTime: now, Message: "waiting"}}}
	if reserved {
		st.Admission = &kueue.Admission{ClusterQueue: "pool", PodSetAssignments: []kueue.PodSetAssignment{{
			Name: "main", Count: ptr.To[int32](1),
			Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"credits.gpustack.ai/nvidia": kueue.ResourceFlavorReference(flavor)}}}}
		st.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue,
			Reason: "QuotaReserved", Message: "reserved", LastTransitionTime: now}}
	}
	return wl, st
}

var whole = map[string]string{"nvidia.com/gpu": "1"}

// want is the check's state a spec reads back. Message is matched as a prefix: the rest names the demand and
// the reason, which the domain core's tests cover.
type want struct {
	State   kueue.CheckState
	Message string
	Requeue *int32
	// Event is the reason of the event on the Workload, empty when the check was left alone.
	Event string
}

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	DescribeTable("judges a Workload card by card on a flavor of one node with one A10G card, then writes nothing "+
		"once the check is no longer Pending",
		func(key string, asks map[string]string, reserved, cardHeld bool, w want) {
			rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
				Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}}
			suite.Create(rf, builders.MakeNode(key).Label("pool", key).Obj(),
				builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
			if cardHeld {
				suite.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key + "-holder"},
					Spec: corev1.PodSpec{NodeName: key, Containers: []corev1.Container{{Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			}
			wl, st := makeWorkload(key, key, asks, reserved)
			suite.Create(wl)
			wl.Status = st
			Expect(suite.Client.Status().Update(ctx, wl)).To(Succeed(), "cannot write the Workload's status as Kueue would")

			c, writes := testenv.CountWrites(suite.Client)
			events := record.NewFakeRecorder(10)
			decisions := metrics.AdmissionDecisions.WithLabelValues(string(w.State), w.Event)
			before := testutil.ToFloat64(decisions)
			r := &cardcheck.Reconciler{Client: c, Log: logr.Discard(), Recorder: events}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(suite.Client.Get(ctx, req.NamespacedName, wl)).To(Succeed())
			s := wl.Status.AdmissionChecks[0]
			got := want{State: s.State, Message: s.Message, Requeue: s.RequeueAfterSeconds}
			select {
			case e := <-events.Events:
				got.Event = strings.Fields(e)[1]
			default:
			}
			if strings.HasPrefix(got.Message, w.Message) {
				got.Message = w.Message
			}
			Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")
			if w.Event != "" {
				Expect(testutil.ToFloat64(decisions)-before).To(Equal(1.0), "decisions counted for %s/%s", w.State, w.Event)
			}

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
		},
		Entry("a whole card on a node whose one card is free is Ready, naming the node",
			"fits", whole, true, false, want{State: kueue.CheckStateReady, Message: "fits on node fits", Event: cardcheck.ReasonFits}),
		Entry("when a bound Pod holds the only card, the check asks Kueue to retry in 5 seconds and says why",
			"cardheld", whole, true, true,
			want{State: kueue.CheckStateRetry, Message: "pool flavor cardheld cannot take", Requeue: ptr.To[int32](5),
				Event: cardcheck.ReasonNoCardWithRoom}),
		Entry("a Workload that asks for no accelerator passes",
			"noaccelerator", map[string]string{"cpu": "1"}, true, false,
			want{State: kueue.CheckStateReady, Message: "asks for no accelerator", Event: cardcheck.ReasonNoAccelerator}),
		Entry("before Kueue reserves quota the check is left Pending",
			"notreserved", whole, false, false, want{State: kueue.CheckStatePending, Message: "waiting"}),
	)
})

var _ = It("tells the verdict to the Instance whose Pod the Workload was made for, too", func() {
	ctx := context.Background()
	const key = "for-instance"
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
		Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}}
	inst := builders.MakeInstance("default", key, "a10g").Accelerators(1).Obj()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key,
		Labels: map[string]string{workerv1.LabelInstance: key}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}}}
	suite.Create(rf, builders.MakeNode(key).Label("pool", key).Obj(),
		builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(), inst, pod)
	wl, st := makeWorkload(key, key, whole, true)
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
	suite.Create(wl)
	wl.Status = st
	Expect(suite.Client.Status().Update(ctx, wl)).To(Succeed(), "cannot write the Workload's status as Kueue would")

	events := record.NewFakeRecorder(10)
	r := &cardcheck.Reconciler{Client: suite.Client, Log: logr.Discard(), Recorder: events}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	Expect(err).NotTo(HaveOccurred())
	close(events.Events)
	var got []string
	for e := range events.Events {
		got = append(got, e)
	}
	Expect(got).To(Equal([]string{"Normal CardFits fits on node for-instance", "Normal CardFits fits on node for-instance"}),
		"one event on the Workload, the same on its Instance")
})

// An Instance stopped and started again makes its Pod anew under the same name, and its new Workload must not
// be held back by the old one, which Kueue may not have finished yet: the old Workload's Pod is gone, and the
// waiting Pod of that name is the new Workload's own, not a Pod of the old one in flight.
var _ = It("does not count a passed Workload in flight through a successor Pod of the same name", func(ctx context.Context) {
	const key = "successor"
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
		Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}}
	successor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}}}
	suite.Create(rf, builders.MakeNode(key).Label("pool", key).Obj(), builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(), successor)

	old, st := makeWorkload(key+"-old", key, whole, true)
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: key, UID: "uid-of-the-deleted-pod"}}
	st.AdmissionChecks[0].State, st.AdmissionChecks[0].Message = kueue.CheckStateReady, "fits on node "+key
	suite.Create(old)
	old.Status = st
	Expect(suite.Client.Status().Update(ctx, old)).To(Succeed(), "cannot write the old Workload's status as Kueue would")

	wl, st := makeWorkload(key+"-new", key, whole, true)
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: key, UID: successor.UID}}
	Expect(judgeOnce(ctx, wl, st)).To(HaveField("State", kueue.CheckStateReady), "the new Workload gets the card the old one no longer holds")
})

// passedWorkload creates a Workload that passed the check on flavor, asking one whole card, with owners.
func passedWorkload(ctx context.Context, name, flavor string, owners ...metav1.OwnerReference) *kueue.Workload {
	GinkgoHelper()
	wl, st := makeWorkload(name, flavor, whole, true)
	wl.OwnerReferences = owners
	st.AdmissionChecks[0].State, st.AdmissionChecks[0].Message = kueue.CheckStateReady, "fits"
	suite.Create(wl)
	wl.Status = st
	Expect(suite.Client.Status().Update(ctx, wl)).To(Succeed(), "cannot write the Workload's status as Kueue would")
	return wl
}

// A Workload can pass the check before its Pods exist: a member's copy of a manager's Workload (MultiKueue
// creates its Pod once the copy holds quota, labelled with the Workload's name) and a Job's (the Job makes its
// Pods once admitted). Until its Pods are bound each holds its cards in flight, so two are never given the same
// card; once bound, its Pods count on the node, once.
var _ = It("counts in flight a passed Workload whose Pods are yet to be made, and once when they are bound", func(ctx context.Context) {
	const key = "ahead"
	suite.Create(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key}, Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}},
		builders.MakeNode(key).Label("pool", key).Obj(), builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj())
	passedWorkload(ctx, key+"-copy", key)
	job := passedWorkload(ctx, key+"-job", key, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: key, UID: "uid-of-the-job"})

	wl, st := makeWorkload(key+"-1", key, whole, true)
	Expect(judgeOnce(ctx, wl, st)).To(HaveField("State", kueue.CheckStateRetry), "the copy and the Job hold both cards before their Pods exist")

	Expect(suite.Client.Delete(ctx, job)).To(Succeed())
	suite.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key + "-copy",
		Labels: map[string]string{"kueue.x-k8s.io/prebuilt-workload-name": key + "-copy"}},
		Spec: corev1.PodSpec{NodeName: key, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	wl, st = makeWorkload(key+"-2", key, whole, true)
	Expect(judgeOnce(ctx, wl, st)).To(HaveField("State", kueue.CheckStateReady), "the copy's bound Pod holds one card, counted once")
})

// judgeOnce creates the Workload with the status Kueue would write, runs the check once and returns its state.
func judgeOnce(ctx context.Context, wl *kueue.Workload, st kueue.WorkloadStatus) kueue.AdmissionCheckState {
	GinkgoHelper()
	return judgeOnceBy(ctx, &cardcheck.Reconciler{Client: suite.Client, Log: logr.Discard(), Recorder: record.NewFakeRecorder(10)}, wl, st)
}

// judgeOnceBy is judgeOnce by the check r.
func judgeOnceBy(ctx context.Context, r *cardcheck.Reconciler, wl *kueue.Workload, st kueue.WorkloadStatus) kueue.AdmissionCheckState {
	GinkgoHelper()
	suite.Create(wl)
	wl.Status = st
	Expect(suite.Client.Status().Update(ctx, wl)).To(Succeed(), "cannot write the Workload's status as Kueue would")
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	Expect(err).NotTo(HaveOccurred())
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl)).To(Succeed())
	return wl.Status.AdmissionChecks[0]
}

// twoOneCardNodes makes flavor key of two nodes, key-a and key-b, with one A10G each.
func twoOneCardNodes(key string) {
	suite.Create(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
		Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}})
	for _, n := range []string{key + "-a", key + "-b"} {
		suite.Create(builders.MakeNode(n).Label("pool", key).Obj(), builders.MakeDevices(n).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
	}
}

// A Workload of several Pods (a Job with parallelism 2) is placed Pod by Pod: each Pod's cards on one node,
// the Pods on whichever nodes have room, so two Pods of one whole card fit a flavor of two one-card nodes, and
// a third is refused naming which Pod found no room.
var _ = DescribeTable("places a Workload of several Pods Pod by Pod",
	func(key string, pods int32, w want) {
		ctx := context.Background()
		twoOneCardNodes(key)
		wl, st := makeWorkload(key, key, whole, true)
		wl.Spec.PodSets[0].Count = pods
		st.Admission.PodSetAssignments[0].Count = ptr.To(pods)
		s := judgeOnce(ctx, wl, st)
		Expect(s.State).To(Equal(w.State))
		Expect(s.Message).To(ContainSubstring(w.Message))
	},
	Entry("two Pods of a whole card, on two one-card nodes", "twopods", int32(2),
		want{State: kueue.CheckStateReady, Message: "fits on nodes twopods-a, twopods-b"}),
	Entry("three Pods: the third finds no room", "threepods", int32(3),
		want{State: kueue.CheckStateRetry, Message: "cannot take 3 Pods of 1 whole card(s) now: Pod 3 of 3: threepods-a: not enough free cards"}),
)

// The check judges a Workload only on the nodes its Pods may go to, and pins one it placed on a single node
// there (podSetUpdates with the node's hostname, which Kueue adds to the Pods' nodeSelector); a Workload in
// flight counts on the node it was pinned to.
var _ = DescribeTable("pins a Workload to the node it placed it on",
	func(key string, selector map[string]string, inflightOn string, w want, pin string) {
		ctx := context.Background()
		twoOneCardNodes(key)
		if inflightOn != "" {
			// A Workload the check passed a moment ago and pinned, whose Pod is not bound yet.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key + "-inflight"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}}}
			suite.Create(pod)
			other, st := makeWorkload(key+"-inflight", key, whole, true)
			other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
			suite.Create(other)
			st.AdmissionChecks[0].State = kueue.CheckStateReady
			st.AdmissionChecks[0].PodSetUpdates = []kueue.PodSetUpdate{{Name: "main", NodeSelector: map[string]string{corev1.LabelHostname: inflightOn}}}
			other.Status = st
			Expect(suite.Client.Status().Update(ctx, other)).To(Succeed())
		}
		wl, st := makeWorkload(key, key, whole, true)
		wl.Spec.PodSets[0].Template.Spec.NodeSelector = selector
		s := judgeOnce(ctx, wl, st)
		Expect(s.State).To(Equal(w.State))
		Expect(s.Message).To(ContainSubstring(w.Message))
		var pinned string
		for _, u := range s.PodSetUpdates {
			pinned = string(u.Name) + ":" + u.NodeSelector[corev1.LabelHostname]
		}
		Expect(pinned).To(Equal(pin), "the podSetUpdates' node")
	},
	Entry("a Workload placed on a node is pinned there", "pinfree", nil, "",
		want{State: kueue.CheckStateReady, Message: "fits on node pinfree-a"}, "main:pinfree-a"),
	Entry("a Pod that may only go to the second node is judged there", "pinselector",
		map[string]string{corev1.LabelHostname: "pinselector-b"}, "",
		want{State: kueue.CheckStateReady, Message: "fits on node pinselector-b"}, "main:pinselector-b"),
	Entry("a Pod that may go to no node of the flavor waits, saying so", "pinnowhere",
		map[string]string{corev1.LabelHostname: "elsewhere"}, "",
		want{State: kueue.CheckStateRetry, Message: "no node of the flavor matches the Pods' node selector and affinity"}, ""),
	Entry("a Workload in flight counts on the node it was pinned to (the second), so the next one goes to the first",
		"pininflight", nil, "pininflight-b",
		want{State: kueue.CheckStateReady, Message: "fits on node pininflight-a"}, "main:pininflight-a"),
)

// workload-fit-affinity=false takes the pin off: the Workload still waits for a card with room, but where it
// fits the scheduler alone picks the node.
var _ = It("does not pin a Workload it placed while workload-fit-affinity is false", func(ctx context.Context) {
	twoOneCardNodes("nopin")
	suite.Create(&workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace,
		Name: workerv1.SettingWorkloadFitAffinity}, Spec: workerv1.SettingSpec{Value: "false"}})
	wl, st := makeWorkload("nopin", "nopin", whole, true)
	s := judgeOnce(ctx, wl, st)
	Expect(s.State).To(Equal(kueue.CheckStateReady))
	Expect(s.Message).To(Equal("fits on node nopin-a (not pinned there: workload-fit-affinity is false)"))
	Expect(s.PodSetUpdates).To(BeEmpty(), "no podSetUpdates pin the Pods")
})

// A Workload judged again (after an eviction) is placed afresh: the pin of an earlier verdict, to a node whose
// card a bound Pod has taken since, does not keep it there.
var _ = It("places a Workload judged again afresh", func(ctx context.Context) {
	twoOneCardNodes("repin")
	suite.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "repin-holder"},
		Spec: corev1.PodSpec{NodeName: "repin-a", Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	wl, st := makeWorkload("repin", "repin", whole, true)
	st.AdmissionChecks[0].PodSetUpdates = []kueue.PodSetUpdate{{Name: "main", NodeSelector: map[string]string{corev1.LabelHostname: "repin-a"}}}
	s := judgeOnce(ctx, wl, st)
	Expect(s.State).To(Equal(kueue.CheckStateReady))
	Expect(s.Message).To(Equal("fits on node repin-b"))
	Expect(s.PodSetUpdates).To(ConsistOf(kueue.PodSetUpdate{Name: "main", NodeSelector: map[string]string{corev1.LabelHostname: "repin-b"}}))
})

// A manager cluster's MultiKueue copies a Workload here; this cluster never saw its Instance, so the check holds
// this cluster's gates over its Pods: a privileged one waits, refused in words the manager's Instance shows,
// until this cluster's instance-privileged-allowed is true. A Workload of this cluster's own is not judged so.
var _ = DescribeTable("holds this cluster's gates over a Workload a manager dispatched here",
	func(ctx context.Context, dispatched, allowed bool, w want) {
		const key = "dispatched"
		suite.Create(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}},
			builders.MakeNode(key).Label("pool", key).Obj(), builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
		if allowed {
			suite.Create(&workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace,
				Name: workerv1.SettingInstancePrivilegedAllowed}, Spec: workerv1.SettingSpec{Value: "true"}})
		}
		wl, st := makeWorkload(key, key, whole, true)
		wl.Spec.PodSets[0].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		if dispatched {
			wl.Labels = map[string]string{kueue.MultiKueueOriginLabel: "manager"}
		}
		s := judgeOnce(ctx, wl, st)
		got := want{State: s.State, Message: s.Message, Requeue: s.RequeueAfterSeconds}
		if strings.HasPrefix(got.Message, w.Message) {
			got.Message = w.Message
		}
		Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")
	},
	Entry("dispatched and privileged while this cluster does not allow it: refused, tried again in a minute", true, false,
		want{State: kueue.CheckStateRetry, Requeue: ptr.To[int32](60), Message: cardcheck.RefusedPrefix +
			`spec.containers[0].securityContext.privileged: Forbidden: privileged mode is not allowed: enable the "instance-privileged-allowed" setting`}),
	Entry("dispatched and privileged where this cluster allows it: judged card by card", true, true,
		want{State: kueue.CheckStateReady, Message: "fits on node dispatched"}),
	Entry("this cluster's own privileged Workload: its Instance passed this cluster's gates already", false, false,
		want{State: kueue.CheckStateReady, Message: "fits on node dispatched"}),
)
