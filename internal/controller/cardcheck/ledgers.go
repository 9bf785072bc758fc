package cardcheck

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// ledgerMemo keeps each node's cards as a verdict last rebuilt them from its Devices inventory and bound Pods,
// keyed by the versions of those: a verdict rebuilds only the nodes whose inventory or Pods changed since, not
// every node of the flavor. The cards it returns are shared; placing never changes the cards it is given.
type ledgerMemo struct {
	mu      sync.Mutex
	entries map[string]ledgerEntry
	// reads counts the reads of this round; a node not read for a whole round (gone from the cluster, or of a
	// flavor no Workload asked for since) is forgotten when the next begins. roundSize is a round's reads,
	// ledgerRound when 0.
	reads, round, roundSize int
}

type ledgerEntry struct {
	inputs string
	cards  pools.NodeCards
	round  int
}

// ledgerRound is how many reads a round of the memo lasts.
const ledgerRound = 1 << 16

// cardsOf returns the node's cards with its ledger rebuilt from the claims of pods (those bound to it), from the
// memo when neither d nor the Pods changed since they were last rebuilt.
func (m *ledgerMemo) cardsOf(d *workerv1.Devices, pods []corev1.Pod) pools.NodeCards {
	inputs := ledgerInputs(d, pods)
	m.mu.Lock()
	e, ok := m.entries[d.Name]
	if ok && e.inputs == inputs {
		e.round = m.round
		m.entries[d.Name] = e
		m.read()
		m.mu.Unlock()
		return e.cards
	}
	m.mu.Unlock()
	var bound []pools.Claim
	for i := range pods {
		if p := &pods[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			bound = append(bound, pools.PodClaims(p)...)
		}
	}
	cards := pools.NodeCardsOf(d, bound)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]ledgerEntry{}
	}
	m.entries[d.Name] = ledgerEntry{inputs: inputs, cards: cards, round: m.round}
	m.read()
	return cards
}

// read counts one read, and begins a new round after ledgerRound of them, forgetting the nodes the last
// round did not read. The caller holds mu.
func (m *ledgerMemo) read() {
	size := m.roundSize
	if size == 0 {
		size = ledgerRound
	}
	if m.reads++; m.reads < size {
		return
	}
	for name, e := range m.entries {
		if e.round < m.round {
			delete(m.entries, name)
		}
	}
	m.reads, m.round = 0, m.round+1
}

// ledgerInputs names the versions a node's cards are rebuilt from: its Devices object's and each Pod's (the
// phase and the resources a Pod claims change only with its resourceVersion), in an order of their own.
func ledgerInputs(d *workerv1.Devices, pods []corev1.Pod) string {
	keys := make([]string, 0, len(pods)+1)
	for i := range pods {
		keys = append(keys, string(pods[i].UID)+"@"+pods[i].ResourceVersion)
	}
	slices.Sort(keys)
	return string(d.UID) + "@" + d.ResourceVersion + ";" + strings.Join(keys, ",")
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
