package cardcheck

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/pools"
)

// ledgerIndex keeps each node's cards as a verdict last rebuilt them from its Devices inventory and bound Pods,
// until an event of the worker's cache says one of those changed: a verdict rebuilds only the nodes that
// changed since, and reads nothing of the others. Without events (watched false: a Reconciler called without
// a manager) every read rebuilds. The cards it returns are shared; placing never changes the cards it is given.
//
// An event reaches the index a moment after the cache holds the change, so a verdict may see a Pod bound in
// the cache while the index still has its node without it. Each entry records the Pods it charged; a verdict
// that counts a Workload as no longer in flight because its Pod is bound asks for that Pod (charged), and an
// entry without it is rebuilt: the Pod is counted on its node or in flight, never neither.
type ledgerIndex struct {
	mu      sync.Mutex
	watched bool
	// gens counts each node's events; an entry is current while its gen is the node's.
	gens    map[string]uint64
	entries map[string]ledgerEntry
}

type ledgerEntry struct {
	gen   uint64
	cards pools.NodeCards
	// devices is false for a node without a Devices object; charged holds the UIDs of the Pods counted.
	devices bool
	charged map[types.UID]bool
}

// lookup returns the node's cards when they are current and charge every Pod of mustCharge, and the node's
// generation a rebuild records otherwise.
func (x *ledgerIndex) lookup(node string, mustCharge []types.UID) (ledgerEntry, uint64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	gen := x.gens[node]
	e, ok := x.entries[node]
	if !x.watched || !ok || e.gen != gen {
		return ledgerEntry{}, gen, false
	}
	for _, uid := range mustCharge {
		if !e.charged[uid] {
			return ledgerEntry{}, gen, false
		}
	}
	return e, gen, true
}

// store keeps a node's rebuilt cards, read from the cache after gen was looked up: an event since makes them
// stale.
func (x *ledgerIndex) store(node string, e ledgerEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.watched {
		return
	}
	if x.entries == nil {
		x.entries = map[string]ledgerEntry{}
	}
	x.entries[node] = e
}

// changed records an event of the node's inventory or bound Pods; gone, that the node or its inventory was
// deleted, and forgets it.
func (x *ledgerIndex) changed(node string, gone bool) {
	if node == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gens == nil {
		x.gens = map[string]uint64{}
	}
	x.gens[node]++
	if gone {
		delete(x.entries, node)
	}
}

// rebuild returns a node's cards with its ledger rebuilt from the claims of pods (those bound to it) and of the
// ResourceClaims DRA allocated cards of its pool to.
func rebuild(d *workerv1.Devices, pods []corev1.Pod, claims []resourceapi.ResourceClaim, gen uint64) ledgerEntry {
	var bound []pools.Claim
	charged := make(map[types.UID]bool, len(pods))
	for i := range pods {
		if p := &pods[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			bound = append(bound, pools.PodClaims(p)...)
			charged[p.UID] = true
		}
	}
	for i := range claims {
		bound = append(bound, pools.ResourceClaimClaims(&claims[i], d)...)
	}
	return ledgerEntry{gen: gen, cards: pools.NodeCardsOf(d, bound), devices: true, charged: charged}
}

// manufacturerLocks serialises the verdicts of Workloads that could compete for the same cards: those that
// claim a manufacturer's cards, whose nodes' cards are counted by manufacturer. Workloads of different
// manufacturers are judged at once.
type manufacturerLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// lock takes the locks of the manufacturers the Pods claim, in order (so two verdicts never wait on each
// other), and returns what releases them.
func (l *manufacturerLocks) lock(pods podClaims) (unlock func()) {
	var names []string
	for _, claims := range pods {
		for _, c := range claims {
			names = append(names, c.Manufacturer)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	held := make([]*sync.Mutex, 0, len(names))
	for _, n := range names {
		if l.locks[n] == nil {
			l.locks[n] = &sync.Mutex{}
		}
		held = append(held, l.locks[n])
	}
	l.mu.Unlock()
	for _, m := range held {
		m.Lock()
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock()
		}
	}
}

// handler returns the cache event handler that feeds the index: a Pod's events change the node it is bound
// to (before and after), a ResourceClaim's the nodes whose pools DRA allocated it cards of (before and after),
// a Devices object's its node, and a deleted Node or Devices object is forgotten. Once
// it is registered the index answers from its entries (watched).
func (x *ledgerIndex) handler() toolscache.ResourceEventHandler {
	x.mu.Lock()
	x.watched = true
	x.mu.Unlock()
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { x.onEvent(obj, false) },
		UpdateFunc: func(old, obj any) {
			if before, ok := old.(*resourceapi.ResourceClaim); ok {
				// A claim deallocated leaves the pools it held.
				x.onEvent(before, false)
			}
			before, wasPod := old.(*corev1.Pod)
			after, isPod := obj.(*corev1.Pod)
			if wasPod && isPod {
				// Most of a Pod's updates are its status (conditions, IPs, container states) with what it holds
				// unchanged: those leave its node's cards as they are.
				if !chargeChanged(before, after) {
					return
				}
				if before.Spec.NodeName != after.Spec.NodeName {
					x.changed(before.Spec.NodeName, false)
				}
			}
			x.onEvent(obj, false)
		},
		DeleteFunc: func(obj any) { x.onEvent(cachepolicy.Unwrapped(obj), true) },
	}
}

// chargeChanged reports whether an update changes what the Pod holds on a node's cards, as rebuild counts it:
// its node, whether it still runs, or its claims (its requests, the cards the ledger recorded for it, and which
// of its init containers ran).
func chargeChanged(before, after *corev1.Pod) bool {
	finished := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	return before.UID != after.UID || before.Spec.NodeName != after.Spec.NodeName || finished(before) != finished(after) ||
		!apiequality.Semantic.DeepEqual(pools.PodClaims(before), pools.PodClaims(after))
}

func (x *ledgerIndex) onEvent(obj any, deleted bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		x.changed(o.Spec.NodeName, false)
	case *resourceapi.ResourceClaim:
		for _, node := range cachepolicy.ResourceClaimPoolsOf(o) {
			x.changed(node, false)
		}
	case *workerv1.Devices:
		x.changed(o.Name, deleted)
	case *corev1.Node:
		// A Node's own changes (heartbeats, labels) leave its cards as they are; the flavor's nodes are listed
		// by label at each verdict.
		if deleted {
			x.changed(o.Name, true)
		}
	}
}
