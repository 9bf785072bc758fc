package cardcheck

import (
	"slices"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/pools"
)

// A verdict places the judged Workload on its flavor's nodes after the Workloads in flight, first fit in the
// nodes' name order, on the nodes each Workload's Pods may go to.

// nodeFilter says which nodes a Workload's Pods may go to: those every Pod's nodeSelector and required node
// affinity allow. hostname is the node they are pinned to by kubernetes.io/hostname, "" when they are not (or
// not all to one), so a Workload in flight is found on its node without trying every node of the flavor.
type nodeFilter struct {
	affinities []nodeaffinity.RequiredNodeAffinity
	hostname   string
}

// filterOf returns the filter of the Pods, each Pod's affinity parsed once.
func filterOf(pods map[kueue.PodSetReference]*corev1.Pod) nodeFilter {
	var f nodeFilter
	first := true
	for _, pod := range pods {
		f.affinities = append(f.affinities, nodeaffinity.GetRequiredNodeAffinity(pod))
		h := pod.Spec.NodeSelector[corev1.LabelHostname]
		if first {
			f.hostname, first = h, false
		} else if h != f.hostname {
			f.hostname = ""
		}
	}
	return f
}

// allows reports whether every Pod may be scheduled on the node.
func (f nodeFilter) allows(n *corev1.Node) bool {
	for _, a := range f.affinities {
		if match, err := a.Match(n); err != nil || !match {
			return false
		}
	}
	return true
}

// flavorNodes are the managed nodes of one flavor as one verdict counts them: each node's cards in name order,
// replaced (never changed: the cards are shared between verdicts) as the Workloads in flight and the judged one
// are placed, the Node objects by name, and what tells which cards a request's selectors match (nil: any).
type flavorNodes struct {
	cards   []pools.NodeCards
	objects map[string]*corev1.Node
	selects pools.DeviceSelector
	// byHostname indexes the nodes by their kubernetes.io/hostname label, made the first time a node's name is
	// not its hostname.
	byHostname map[string][]int
}

// withHostname returns the indexes of the nodes labelled with the hostname: the node of that name, found by
// its place in name order, when its label says so (the usual case), else those the index holds.
func (f *flavorNodes) withHostname(h string) []int {
	i, found := slices.BinarySearchFunc(f.cards, h, func(n pools.NodeCards, name string) int { return strings.Compare(n.Name, name) })
	if found && f.objects[h].Labels[corev1.LabelHostname] == h {
		return []int{i}
	}
	if f.byHostname == nil {
		f.byHostname = map[string][]int{}
		for j, n := range f.cards {
			if v := f.objects[n.Name].Labels[corev1.LabelHostname]; v != "" {
				f.byHostname[v] = append(f.byHostname[v], j)
			}
		}
	}
	return f.byHostname[h]
}

// place places the Pods on the nodes the filter allows, first fit in name order, and keeps the nodes as they
// are after them; where they do not fit, the nodes stay as they were and the error says why. It returns the
// node of each Pod.
func (f *flavorNodes) place(filter nodeFilter, pods podClaims) ([]string, error) {
	return f.placeAs(filter, pods, true)
}

// count places the Pods as place does, without asking why they do not fit: a Workload in flight, counted before
// the one judged, whose refusal on a full flavor would be written and thrown away.
func (f *flavorNodes) count(filter nodeFilter, pods podClaims) {
	_, _ = f.placeAs(filter, pods, false)
}

// errNoFit is count's refusal, which nobody reads.
var errNoFit = errors.New("the Pods fit on no node")

// fit places the Pods on the nodes: with the reason they do not fit where explain (pools.PlacePods), without
// otherwise (pools.FitPods).
func fit(nodes []pools.NodeCards, pods podClaims, selects pools.DeviceSelector, explain bool) ([]string, []pools.NodeCards, error) {
	if explain {
		return pools.PlacePods(nodes, pods, selects)
	}
	placed, after, ok := pools.FitPods(nodes, pods, selects)
	if !ok {
		return nil, nil, errNoFit
	}
	return placed, after, nil
}

// placeAs is place, saying why the Pods do not fit only where explain.
func (f *flavorNodes) placeAs(filter nodeFilter, pods podClaims, explain bool) ([]string, error) {
	var subset []pools.NodeCards
	var index []int
	try := func(i int) {
		if filter.allows(f.objects[f.cards[i].Name]) {
			subset, index = append(subset, f.cards[i]), append(index, i)
		}
	}
	if filter.hostname != "" {
		candidates := f.withHostname(filter.hostname)
		subset, index = make([]pools.NodeCards, 0, len(candidates)), make([]int, 0, len(candidates))
		for _, i := range candidates {
			try(i)
		}
	} else {
		subset, index = make([]pools.NodeCards, 0, len(f.cards)), make([]int, 0, len(f.cards))
		for i := range f.cards {
			try(i)
		}
	}
	if len(subset) == 0 && len(f.cards) > 0 {
		return nil, errors.New("no node of the flavor matches the Pods' node selector and affinity")
	}
	placed, after, err := fit(subset, pods, f.selects, explain)
	if err != nil {
		return nil, err
	}
	for j, i := range index {
		f.cards[i] = after[j]
	}
	return placed, nil
}

// decide places the Pods on the flavor's nodes after the Workloads in flight, each where it was pinned or
// wherever it fits first (one that fits nowhere is not counted), and returns the node of each Pod.
func decide(f *flavorNodes, inflight []*kueue.Workload, memo *inflightMemo, specsOf func(*kueue.Workload) claimSpecs,
	templates map[kueue.PodSetReference]*corev1.Pod, pods podClaims) ([]string, error) {
	for _, other := range inflight {
		claims, filter := memo.of(other, specsOf)
		f.count(filter, claims)
	}
	return f.place(filterOf(templates), pods)
}

// inflightMemo keeps each Workload in flight's claims and node filter as they were parsed from its Pod sets and
// pin, by its resourceVersion: a verdict counts every Workload in flight on its flavor, and parsing hundreds of
// them again would cost each verdict more than placing them. A Workload not asked for during sweepEvery reads
// is forgotten.
type inflightMemo struct {
	mu      sync.Mutex
	entries map[types.UID]inflightEntry
	reads   int
}

type inflightEntry struct {
	version string
	pods    podClaims
	filter  nodeFilter
	used    bool
}

// sweepEvery is how many reads pass between forgetting the Workloads not read since the sweep before.
const sweepEvery = 1 << 14

// of returns the Workload's claims and filter, from the memo while its version is the one they were parsed
// from (a ResourceClaimTemplate's spec does not change: specsOf is read once a version).
func (m *inflightMemo) of(wl *kueue.Workload, specsOf func(*kueue.Workload) claimSpecs) (podClaims, nodeFilter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[types.UID]inflightEntry{}
	}
	if m.reads++; m.reads >= sweepEvery {
		for uid, e := range m.entries {
			if !e.used {
				delete(m.entries, uid)
				continue
			}
			e.used = false
			m.entries[uid] = e
		}
		m.reads = 0
	}
	e, ok := m.entries[wl.UID]
	if !ok || e.version != wl.ResourceVersion || wl.ResourceVersion == "" {
		specs := specsOf(wl)
		e = inflightEntry{version: wl.ResourceVersion, pods: workloadPods(wl, specs), filter: filterOf(acceleratedTemplates(wl, true, specs))}
	}
	e.used = true
	m.entries[wl.UID] = e
	return e.pods, e.filter
}
