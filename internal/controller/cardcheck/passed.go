package cardcheck

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// passedTTL is how long a verdict is remembered when the cache never shows it: the Workload was deleted, or
// evicted and reset before the cache caught up. Counting it that long only holds another Workload back.
const passedTTL = 30 * time.Second

// passedMemo remembers the Workloads this check let through until the worker's cache shows them so. The
// cache lags the API server by a moment; a verdict missing from it would let the next Workload onto the same
// card. Reading every Workload from the API server instead cost each verdict a list of them all.
type passedMemo struct {
	mu      sync.Mutex
	entries map[types.UID]passedEntry
}

type passedEntry struct {
	wl *kueue.Workload
	at time.Time
}

// remember records a Workload the check let through, as it was written.
func (m *passedMemo) remember(wl *kueue.Workload, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[types.UID]passedEntry{}
	}
	m.entries[wl.UID] = passedEntry{wl: wl, at: now}
}

// missing returns the remembered Workloads the cached list does not yet show as let through, and forgets
// those it does and those older than passedTTL.
func (m *passedMemo) missing(cached []kueue.Workload, now time.Time) []*kueue.Workload {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return nil
	}
	byUID := make(map[types.UID]*kueue.Workload, len(cached))
	for i := range cached {
		byUID[cached[i].UID] = &cached[i]
	}
	var out []*kueue.Workload
	for uid, e := range m.entries {
		if now.Sub(e.at) > passedTTL {
			delete(m.entries, uid)
			continue
		}
		if wl, ok := byUID[uid]; ok {
			if s := checkState(wl); s != nil && s.State == kueue.CheckStateReady {
				delete(m.entries, uid)
				continue
			}
		}
		out = append(out, e.wl)
	}
	return out
}
