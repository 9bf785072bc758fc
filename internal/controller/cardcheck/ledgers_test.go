package cardcheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// twoCards is a node's inventory of two NVIDIA cards, at a resourceVersion.
func twoCards(rv string) *workerv1.Devices {
	return &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "d", ResourceVersion: rv},
		Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{ID: "t4", Manufacturer: "nvidia",
			Accelerators: []workerv1.Accelerator{{ID: "GPU-0", Index: 0}, {ID: "GPU-1", Index: 1}}}}}}
}

// wholeCardPod is a Pod bound to node-a that holds one whole card, at a resourceVersion and phase.
func wholeCardPod(rv string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "p", ResourceVersion: rv},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

// allocatedClaim is a ResourceClaim allocated the device of node-a's nvidia pool; not allocated without one.
func allocatedClaim(device string) *resourceapi.ResourceClaim {
	rc := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rc", UID: "rc"}}
	if device != "" {
		rc.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "card", Driver: "nvidia.gpustack.ai", Pool: "node-a", Device: device}}}}
	}
	return rc
}

// freeCards counts a node's whole free cards.
func freeCards(n pools.NodeCards) int {
	free := 0
	for _, c := range n.Cards["nvidia"] {
		if c.Remaining == pools.M {
			free++
		}
	}
	return free
}

// TestLedgerIndex feeds one node's events to the index as the worker's cache would, between reads of its
// cards, and checks each read: the index answers only while no event touched the node since its cards were
// rebuilt, and while they charge every Pod the verdict knows bound there.
func TestLedgerIndex(t *testing.T) {
	pod := wholeCardPod("5", corev1.PodRunning)
	unbound := wholeCardPod("4", corev1.PodPending)
	unbound.Spec.NodeName = ""
	otherNode := wholeCardPod("5", corev1.PodRunning)
	otherNode.Spec.NodeName, otherNode.UID = "node-b", "q"
	type step struct {
		reason string
		// event is fed before the read; rebuildWith, when set, rebuilds the node's cards with these Pods after a
		// miss (storeLate: after one more event, as a verdict that read the cache just before it).
		event      func(x *ledgerIndex, h toolscache.ResourceEventHandler)
		mustCharge []types.UID
		wantHit    bool
		// wantFree is the whole free cards a hit shows.
		wantFree    int
		rebuildWith []corev1.Pod
		// rebuildClaims are the allocated ResourceClaims a rebuild counts too.
		rebuildClaims []resourceapi.ResourceClaim
		storeLate     bool
	}
	steps := []step{
		{reason: "Nothing read yet: a miss, rebuilt without Pods.", rebuildWith: []corev1.Pod{}},
		{reason: "Nothing changed: a hit, both cards free.", wantHit: true, wantFree: 2},
		{reason: "A Pod is bound to the node: a miss, rebuilt with it.",
			event:       func(_ *ledgerIndex, h toolscache.ResourceEventHandler) { h.OnUpdate(&unbound, &pod) },
			rebuildWith: []corev1.Pod{pod}},
		{reason: "A hit with one card taken.", wantHit: true, wantFree: 1},
		{reason: "A verdict that knows the Pod bound there: still a hit, it is charged.", mustCharge: []types.UID{"p"}, wantHit: true, wantFree: 1},
		{reason: "A verdict that knows another Pod bound there, which the cards do not charge: a miss.", mustCharge: []types.UID{"r"},
			rebuildWith: []corev1.Pod{pod}},
		{reason: "A Pod of another node changes: still a hit.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) { h.OnAdd(&otherNode, false) }, wantHit: true, wantFree: 1},
		{reason: "The Node's heartbeat: still a hit.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
				h.OnUpdate(n, n)
			}, wantHit: true, wantFree: 1},
		{reason: "The Pod's status changes without changing what it holds (its IP, a condition): still a hit, nothing rebuilt.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				ready := pod.DeepCopy()
				ready.ResourceVersion, ready.Status.PodIP = "6", "10.0.0.9"
				ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				h.OnUpdate(&pod, ready)
			}, wantHit: true, wantFree: 1},
		{reason: "The Pod finished; the verdict read the cache just before the event and rebuilt after it: its cards are stale, a miss.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				finished := pod.DeepCopy()
				finished.ResourceVersion, finished.Status.Phase = "7", corev1.PodSucceeded
				h.OnUpdate(&pod, finished)
			},
			rebuildWith: []corev1.Pod{pod}, storeLate: true},
		{reason: "So the next read misses too, and rebuilds from what the cache holds now.", rebuildWith: []corev1.Pod{}},
		{reason: "Then hits, both cards free.", wantHit: true, wantFree: 2},
		{reason: "DRA allocates a ResourceClaim a card of the node's pool: a miss, rebuilt with it.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				h.OnUpdate(allocatedClaim(""), allocatedClaim("card-0"))
			},
			rebuildWith: []corev1.Pod{}, rebuildClaims: []resourceapi.ResourceClaim{*allocatedClaim("card-0")}},
		{reason: "A hit with the claim's card taken.", wantHit: true, wantFree: 1},
		{reason: "The claim is deallocated: the pool it held changes, a miss.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				h.OnUpdate(allocatedClaim("card-0"), allocatedClaim(""))
			},
			rebuildWith: []corev1.Pod{}},
		{reason: "Both cards free again.", wantHit: true, wantFree: 2},
		{reason: "The inventory is deleted: forgotten, a miss.",
			event: func(_ *ledgerIndex, h toolscache.ResourceEventHandler) {
				h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "node-a", Obj: twoCards("1")})
			}},
	}
	x := &ledgerIndex{}
	h := x.handler()
	for i, s := range steps {
		if s.event != nil {
			s.event(x, h)
		}
		e, gen, hit := x.lookup("node-a", s.mustCharge)
		if hit != s.wantHit {
			t.Fatalf("%s\nstep %d: lookup(...) hit %t, want %t", s.reason, i, hit, s.wantHit)
		}
		if hit && freeCards(e.cards) != s.wantFree {
			t.Errorf("%s\nstep %d: %d whole free cards, want %d", s.reason, i, freeCards(e.cards), s.wantFree)
		}
		if !hit && s.rebuildWith != nil {
			e := rebuild(twoCards("1"), s.rebuildWith, s.rebuildClaims, gen)
			if s.storeLate {
				x.changed("node-a", false)
			}
			x.store("node-a", e)
		}
	}
}

// TestLedgerIndexUnwatched checks that an index no events feed never answers: a Reconciler called without a
// manager rebuilds every node at every verdict.
func TestLedgerIndexUnwatched(t *testing.T) {
	x := &ledgerIndex{}
	x.store("node-a", rebuild(twoCards("1"), nil, nil, 0))
	if _, _, hit := x.lookup("node-a", nil); hit {
		t.Errorf("lookup(...) answered from an index without events")
	}
}

// TestRebuild checks a rebuilt node against the ledger of its running Pods: a finished Pod's card is free and
// it is not charged.
func TestRebuild(t *testing.T) {
	running, done := wholeCardPod("1", corev1.PodRunning), wholeCardPod("1", corev1.PodSucceeded)
	done.UID = "done"
	claim := allocatedClaim("card-1")
	e := rebuild(twoCards("1"), []corev1.Pod{running, done}, []resourceapi.ResourceClaim{*claim}, 7)
	want := ledgerEntry{gen: 7, cards: pools.NodeCardsOf(twoCards("1"),
		append(pools.PodClaims(&running), pools.ResourceClaimClaims(claim, twoCards("1"))...)), devices: true,
		charged: map[types.UID]bool{"p": true}}
	if diff := cmp.Diff(want, e, cmp.AllowUnexported(ledgerEntry{})); diff != "" {
		t.Errorf("rebuild(...): -want, +got:\n%s", diff)
	}
}

// TestManufacturerLocks checks that a verdict holds the locks of the manufacturers its Workload claims, and only
// those.
func TestManufacturerLocks(t *testing.T) {
	var l manufacturerLocks
	claims := func(mfrs ...string) []pools.Claim {
		var out []pools.Claim
		for _, m := range mfrs {
			out = append(out, pools.Claim{Manufacturer: m})
		}
		return out
	}
	unlock := l.lock(podClaims{claims("nvidia"), claims("nvidia", "amd")})
	held := func(mfr string) bool {
		m := l.locks[mfr]
		if m == nil || m.TryLock() {
			if m != nil {
				m.Unlock()
			}
			return false
		}
		return true
	}
	if !held("nvidia") || !held("amd") {
		t.Errorf("a Workload claiming NVIDIA and AMD cards holds both locks: nvidia %t, amd %t", held("nvidia"), held("amd"))
	}
	if held("ascend") {
		t.Errorf("a Workload that claims no Ascend card holds its lock")
	}
	unlock()
	if held("nvidia") || held("amd") {
		t.Errorf("the locks are released: nvidia %t, amd %t", held("nvidia"), held("amd"))
	}
}
