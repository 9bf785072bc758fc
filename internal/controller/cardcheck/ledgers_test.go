package cardcheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestLedgerMemo reads one node's cards in turn, as verdicts do while its Pods come and go, and checks each read
// against the ledger rebuilt from scratch: the memo answers only what nothing changed since.
func TestLedgerMemo(t *testing.T) {
	type read struct {
		reason  string
		devices *workerv1.Devices
		pods    []corev1.Pod
		// free is the whole free cards the read must show; memo whether it must come from the memo.
		free int
		memo bool
	}
	reads := []read{
		{reason: "A node without Pods: both cards free, rebuilt.", devices: twoCards("1"), free: 2},
		{reason: "Nothing changed: the memo's cards.", devices: twoCards("1"), free: 2, memo: true},
		{reason: "A Pod bound: one card taken, rebuilt.", devices: twoCards("1"), pods: []corev1.Pod{wholeCardPod("5", corev1.PodRunning)}, free: 1},
		{reason: "The same Pod at the same version: the memo's.", devices: twoCards("1"), pods: []corev1.Pod{wholeCardPod("5", corev1.PodRunning)}, free: 1, memo: true},
		{reason: "The Pod finished (a new version): its card is free again.", devices: twoCards("1"), pods: []corev1.Pod{wholeCardPod("6", corev1.PodSucceeded)}, free: 2},
		{reason: "The inventory changed: rebuilt.", devices: twoCards("2"), pods: []corev1.Pod{wholeCardPod("6", corev1.PodSucceeded)}, free: 2},
	}
	m := &ledgerMemo{}
	var last pools.NodeCards
	for i, r := range reads {
		got := m.cardsOf(r.devices, r.pods)
		var bound []pools.Claim
		for _, p := range r.pods {
			if p.Status.Phase == corev1.PodRunning {
				bound = append(bound, pools.PodClaims(&p)...)
			}
		}
		if diff := cmp.Diff(pools.NodeCardsOf(r.devices, bound), got); diff != "" {
			t.Errorf("%s\nread %d: cardsOf(...): -rebuilt, +memo:\n%s", r.reason, i, diff)
		}
		if freeCards(got) != r.free {
			t.Errorf("%s\nread %d: %d whole free cards, want %d", r.reason, i, freeCards(got), r.free)
		}
		shared := i > 0 && &got.Cards["nvidia"][0] == &last.Cards["nvidia"][0]
		if shared != r.memo {
			t.Errorf("%s\nread %d: from the memo %t, want %t", r.reason, i, shared, r.memo)
		}
		last = got
	}
}

// TestLedgerMemoForgets checks that a node no read asked for through a whole round is forgotten, and one read
// in every round is kept.
func TestLedgerMemoForgets(t *testing.T) {
	m := &ledgerMemo{roundSize: 4}
	other := twoCards("1")
	other.Name = "node-b"
	m.cardsOf(other, nil)
	for range 8 {
		m.cardsOf(twoCards("1"), nil)
	}
	if _, ok := m.entries["node-b"]; ok {
		t.Errorf("node-b, not read for two rounds, is still remembered")
	}
	if _, ok := m.entries["node-a"]; !ok {
		t.Errorf("node-a, read in every round, was forgotten")
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
