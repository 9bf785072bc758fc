package cardcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// The benchmarks measure a verdict's own work on one flavor of many nodes with eight A10G cards each, as the
// scale harness's largest run has it (5,000 nodes, 40,000 cards, 500 Instances in flight): reading the nodes'
// cards, counting the Workloads in flight and placing the Workload. `make bench` runs them; the numbers are in
// docs/performance.md.

const benchCards = 8

// benchNodeName names the i-th node of a benchmark's flavor, in name order.
func benchNodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// halfCardLimits are a half-card slice's limits, the harness's Instance.
var halfCardLimits = corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1"),
	"nvidia.com/gpu.sliced.units": *resource.NewQuantity(pools.M/2, resource.DecimalSI)}

// benchFlavor returns n nodes' cards (every card free, or every card taken) and their Node objects.
func benchFlavor(n int, full bool) *flavorNodes {
	nodes := make([]pools.NodeCards, 0, n)
	objects := make(map[string]*corev1.Node, n)
	for i := range n {
		name := benchNodeName(i)
		cards := make([]pools.Card, benchCards)
		for j := range cards {
			cards[j] = pools.Card{ID: fmt.Sprintf("%s-%d", name, j), Remaining: pools.M, Slots: 4}
			if full {
				cards[j].Mode, cards[j].Remaining = workerv1.AllocationExclusive, 0
			}
		}
		nodes = append(nodes, pools.NodeCards{Name: name, Cards: map[string][]pools.Card{"nvidia": cards}})
		objects[name] = builders.MakeNode(name).Label(corev1.LabelHostname, name).Obj()
	}
	return &flavorNodes{cards: nodes, objects: objects}
}

// benchWorkload is a Workload of one Pod asking a half-card slice; pinnedTo, when set, is the node an earlier
// verdict pinned it to.
func benchWorkload(name, pinnedTo string) *kueue.Workload {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), ResourceVersion: "1"},
		Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: halfCardLimits}}}}}}}}}
	wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: Name, State: kueue.CheckStateReady}}
	if pinnedTo != "" {
		wl.Status.AdmissionChecks[0].PodSetUpdates = []kueue.PodSetUpdate{{Name: "main", NodeSelector: map[string]string{corev1.LabelHostname: pinnedTo}}}
	}
	wl.Status.Admission = &kueue.Admission{PodSetAssignments: []kueue.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1)}}}
	return wl
}

// BenchmarkDecide places a half-card slice after the Workloads in flight, each pinned to a node of its own:
// on a flavor with room (the Workload fits on the first node after those in flight), and on a full one (no node
// takes it, so every node is tried and the reason written).
func BenchmarkDecide(b *testing.B) {
	for _, size := range []struct{ nodes, inflight int }{{500, 100}, {5000, 500}} {
		for _, full := range []bool{false, true} {
			b.Run(fmt.Sprintf("nodes=%d/inflight=%d/full=%t", size.nodes, size.inflight, full), func(b *testing.B) {
				verdict := decideVerdict(b, size.nodes, size.inflight, full)
				b.ReportAllocs()
				for b.Loop() {
					verdict()
				}
			})
		}
	}
}

// decideVerdict returns one verdict's placement of a half-card slice on a flavor of n nodes (every card free, or
// every card taken) after inflight Workloads, each pinned to a node of its own; it fails tb when the verdict is
// not the one the flavor calls for (a place with room, a refusal when full).
func decideVerdict(tb testing.TB, n, inflightCount int, full bool) func() {
	nodes := benchFlavor(n, full)
	var inflight []*kueue.Workload
	for i := range inflightCount {
		inflight = append(inflight, benchWorkload(fmt.Sprintf("inflight-%d", i), benchNodeName(i)))
	}
	wl := benchWorkload("judged", "")
	templates, pods := acceleratedTemplates(wl, false, nil), workloadPods(wl, nil)
	var memo inflightMemo
	return func() {
		f := &flavorNodes{cards: slices.Clone(nodes.cards), objects: nodes.objects}
		if _, err := decide(f, inflight, &memo, func(*kueue.Workload) claimSpecs { return nil }, templates, pods); (err != nil) != full {
			tb.Fatalf("decide(...): %v, want an error only on the full flavor", err)
		}
	}
}

// BenchmarkNodeCards reads the cards of every node of a flavor whose nodes did not change since the verdict
// before, each with four bound Pods of a half-card slice, two of which the verdict knows bound there.
func BenchmarkNodeCards(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			read := unchangedNodesRead(b, n)
			b.ReportAllocs()
			for b.Loop() {
				read()
			}
		})
	}
}

// unchangedNodesRead returns a read of every node's cards from an index that holds them all, none changed since,
// each node with four bound Pods of a half-card slice, two of which the reader knows bound there; it fails tb
// when a node misses the index.
func unchangedNodesRead(tb testing.TB, n int) func() {
	x := &ledgerIndex{}
	x.handler()
	mustCharge := map[string][]types.UID{}
	for i := range n {
		name := benchNodeName(i)
		d := builders.MakeDevices(name).Cards("nvidia", "NVIDIA A10G", 24576, benchCards).Obj()
		var pods []corev1.Pod
		for j := range 4 {
			uid := types.UID(fmt.Sprintf("%s-%d", name, j))
			pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uid), UID: uid},
				Spec:   corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: halfCardLimits}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			if j < 2 {
				mustCharge[name] = append(mustCharge[name], uid)
			}
		}
		x.store(name, rebuild(d, pods, nil, 0))
	}
	names := make([]string, n)
	for i := range names {
		names[i] = benchNodeName(i)
	}
	return func() {
		for _, name := range names {
			if _, _, hit := x.lookup(name, mustCharge[name]); !hit {
				tb.Fatalf("node %s: a miss, want a hit", name)
			}
		}
	}
}

// BenchmarkDecideSelected places a whole card whose request selects the last card of a node by its index,
// evaluated with the upstream CEL library on each card's device, after no Workload in flight: on a flavor with
// room (the first node's last card) and with a selector no card matches (every node and card tried, the
// refusal written).
func BenchmarkDecideSelected(b *testing.B) {
	for _, n := range []int{500, 5000} {
		for _, full := range []bool{false, true} {
			b.Run(fmt.Sprintf("nodes=%d/nomatch=%t", n, full), func(b *testing.B) {
				verdict := selectedVerdict(b, n, full)
				b.ReportAllocs()
				for b.Loop() {
					verdict()
				}
			})
		}
	}
}

// selectedVerdict returns one verdict's placement of a card selected by index on a flavor of n nodes, each
// card's device published with its index; nomatch selects an index no card has. It fails tb when the verdict
// is not the one the selector calls for.
func selectedVerdict(tb testing.TB, n int, nomatch bool) func() {
	nodes := benchFlavor(n, false)
	inventory := builders.MakeDevices("any").Cards("nvidia", "NVIDIA A10G", 24576, benchCards).Obj()
	devices := map[string]publishedDevice{}
	for i := range benchCards {
		name := pools.DRADevice(int32(i))
		devices[name] = publishedDevice{version: "1", Device: resourceapi.Device{Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"index": {IntValue: ptr.To(int64(i))}}}}
	}
	for i := range nodes.cards {
		nodes.cards[i].Inventory = inventory
	}
	// As the check's own deviceSelector, the slices' devices already listed: every verdict after the first reads
	// the memo, as the verdicts of a Workload that waits do.
	ctx := context.Background()
	var memo selectionMemo
	nodes.selects = func(node, _, device string, selectors []string) bool {
		return memo.matches(ctx, selectionKey{node: node, driver: "nvidia.gpustack.ai", device: device, selectors: strings.Join(selectors, "\n")},
			devices[device], selectors)
	}
	want := benchCards - 1
	if nomatch {
		want = benchCards
	}
	pods := podClaims{{{Key: "default/judged/main/0/gpu/card", Manufacturer: "nvidia", Demand: pools.Demand{Family: pools.FamilyExclusive, Cards: 1},
		Selectors: []string{fmt.Sprintf(`device.attributes["nvidia.gpustack.ai"].index == %d`, want)}}}}
	templates := acceleratedTemplates(benchWorkload("judged", ""), false, nil)
	var inflight inflightMemo
	return func() {
		f := &flavorNodes{cards: slices.Clone(nodes.cards), objects: nodes.objects, selects: nodes.selects}
		if _, err := decide(f, nil, &inflight, func(*kueue.Workload) claimSpecs { return nil }, templates, pods); (err != nil) != nomatch {
			tb.Fatalf("decide(...): %v, want an error only where no card matches", err)
		}
	}
}
