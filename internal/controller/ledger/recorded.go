package ledger

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// recordedTTL is how long a recorded card list is remembered when the cache never shows it (the Pod went).
const recordedTTL = 30 * time.Second

// recordedMemo remembers the cards the ledger recorded on Pods until the worker's cache shows them. The cache
// lags the API server by a moment: a node's next rebuild, reading a Pod without the cards just recorded on it,
// would place a newer claim on those cards as if they were free and charge one card twice.
type recordedMemo struct {
	mu      sync.Mutex
	entries map[types.UID]recordedEntry
}

type recordedEntry struct {
	value string
	at    time.Time
}

// remember records the annotation value written on a Pod.
func (m *recordedMemo) remember(uid types.UID, value string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[types.UID]recordedEntry{}
	}
	m.entries[uid] = recordedEntry{value: value, at: now}
}

// overlay puts the remembered cards on the cached Pods that do not show them yet (the Pods are the caller's
// copies), and forgets what the cache shows and what is older than recordedTTL.
func (m *recordedMemo) overlay(pods []corev1.Pod, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, e := range m.entries {
		if now.Sub(e.at) > recordedTTL {
			delete(m.entries, uid)
		}
	}
	for i := range pods {
		p := &pods[i]
		e, ok := m.entries[p.UID]
		if !ok {
			continue
		}
		if p.Annotations[workerv1.AnnotationAllocated] == e.value {
			delete(m.entries, p.UID)
			continue
		}
		annotations := make(map[string]string, len(p.Annotations)+1)
		for k, v := range p.Annotations {
			annotations[k] = v
		}
		annotations[workerv1.AnnotationAllocated] = e.value
		p.Annotations = annotations
	}
}
