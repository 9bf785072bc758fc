package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// historyLimit is how many changes a replica keeps for watches to replay: a watch from an older
// resourceVersion is told to list again (410 Expired), as kube-apiserver tells one past its watch cache.
const historyLimit = 4096

// otherReplicaMargin is how far before another replica's revision a watch from it is replayed. Each replica
// reads the members itself, so it may have seen a change up to a read interval and a read timeout (5 s each by
// default) and the clocks' skew before or after the other did: the replay then sends, from further back, some
// changes the client has already (harmless: each event carries the whole object) rather than miss one.
const otherReplicaMargin = 30 * time.Second

// entry is one object as served at the revision it last changed: its metadata and wire form carry that
// revision's resourceVersion.
type entry struct {
	meta    metav1.ObjectMeta
	cells   []any
	encoded []byte
	// content is the object's JSON without a resourceVersion: what tells a change from a read alike.
	content []byte
}

// change is one object added (prev nil), modified or deleted (next nil) at a revision. A deletion's next-less
// change carries prev re-encoded at the deleting revision, as the API server sends a deleted object.
type change struct {
	rev      int64
	resource string
	prev     *entry
	next     *entry
}

// history is what a Server serves, as an API server's watch cache holds it: every resource's objects now, each
// with the revision it last changed at, and the last historyLimit changes, so a watch from a resourceVersion
// this replica gave replays what changed since. It follows its source lazily, on each request: states no
// request saw are never given a revision, so skipping them loses nothing a client could have seen.
//
// A resourceVersion is "<epoch>.<revision>": the epoch is random per start and a revision is the time, in
// microseconds, this replica saw the change (or one more than the last). A watch from this replica's
// resourceVersion replays exactly what changed after it; one from another replica's (kube-apiserver's
// aggregation layer sends each request to either) replays from otherReplicaMargin before that time. One from
// before this replica's start or its oldest kept change is refused (410), and the client lists again.
type history struct {
	mu         sync.Mutex
	now        func() time.Time
	epoch      string
	synced     bool
	generation int64
	// rev is the latest revision; first the first sync's, dropped the newest change dropped from changes.
	rev, first, dropped int64
	// current holds each resource's objects by key, and order their keys in the order the resource lists them.
	current map[string]map[string]*entry
	order   map[string][]string
	// byMember holds, for a resource each member makes alone, what each member made at which generation.
	byMember map[string]map[string]madeBy
	changes  []change
}

func newHistory() *history {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &history{now: time.Now, epoch: hex.EncodeToString(b), current: map[string]map[string]*entry{}, order: map[string][]string{},
		byMember: map[string]map[string]madeBy{}}
}

// next moves to the next revision: now, or one after the last when the clock has not moved past it.
func (h *history) next() {
	h.rev = max(h.rev+1, h.now().UnixMicro())
}

// resourceVersion is revision rev of this replica as clients see it.
func (h *history) resourceVersion(rev int64) string {
	return h.epoch + "." + strconv.FormatInt(rev, 10)
}

// list brings the history up to the source and returns a resource's objects, in its order, and the
// resourceVersion they are at.
func (h *history) list(src StateSource, res apiResource) ([]*entry, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(src); err != nil {
		return nil, "", err
	}
	out := make([]*entry, 0, len(h.order[res.name]))
	for _, key := range h.order[res.name] {
		out = append(out, h.current[res.name][key])
	}
	return out, h.resourceVersion(h.rev), nil
}

// follow brings the history up to the source.
func (h *history) follow(src StateSource) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sync(src)
}

// since brings the history up to the source and returns the resource's changes after a resourceVersion, and
// the revision they reach. ok is false when the changes after it are not all kept (it is older than this
// replica's start or its oldest change kept, or ahead of this replica's own revisions, or malformed): the
// watcher must list again.
func (h *history) since(src StateSource, res apiResource, rv string) ([]change, int64, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sync(src); err != nil {
		return nil, 0, false, err
	}
	epoch, revision, _ := strings.Cut(rv, ".")
	from, err := strconv.ParseInt(revision, 10, 64)
	switch {
	case err != nil:
		return nil, h.rev, false, nil
	case epoch != h.epoch:
		from = min(from-otherReplicaMargin.Microseconds(), h.rev)
	case from > h.rev:
		return nil, h.rev, false, nil
	}
	if from < h.first || from < h.dropped {
		return nil, h.rev, false, nil
	}
	var out []change
	for _, c := range h.changes {
		if c.rev > from && c.resource == res.name {
			out = append(out, c)
		}
	}
	return out, h.rev, true, nil
}

// sync records the source's state when its generation moved: each object whose JSON changed gets the next
// revision; h.mu is held.
func (h *history) sync(src StateSource) error {
	states, generation := src.States()
	if h.synced && generation == h.generation {
		return nil
	}
	for _, res := range resources {
		var err error
		if res.perMember {
			err = h.recordMembers(res, states)
		} else {
			err = h.record(res, res.objects(states))
		}
		if err != nil {
			return err
		}
	}
	if !h.synced {
		h.first = h.rev
	}
	h.synced, h.generation = true, generation
	if drop := len(h.changes) - historyLimit; drop > 0 {
		h.dropped = h.changes[drop-1].rev
		h.changes = append([]change(nil), h.changes[drop:]...)
	}
	return nil
}

// record compares a resource's objects now with those it holds, appending a change for each that differs.
func (h *history) record(res apiResource, items []served) error {
	old := h.current[res.name]
	now := make(map[string]*entry, len(items))
	order := make([]string, 0, len(items))
	for _, it := range items {
		key := historyKey(it.meta)
		e, err := h.put(res, key, it, old[key])
		if err != nil {
			return err
		}
		now[key], order = e, append(order, key)
	}
	for _, key := range h.order[res.name] {
		if now[key] == nil {
			if err := h.remove(res, old[key]); err != nil {
				return err
			}
		}
	}
	h.current[res.name], h.order[res.name] = now, order
	return nil
}

// madeBy are the keys of the objects a member's state made of a resource, and the state's generation.
type madeBy struct {
	generation int64
	keys       []string
}

// recordMembers is record for a resource whose objects each member's state makes alone: only the objects of a
// member whose state changed since (by its generation; one of generation 0 always) are made and compared again.
// With 20 members of 500 nodes, one member's change otherwise encodes every member's Instances again.
func (h *history) recordMembers(res apiResource, states []MemberState) error {
	old, cached := h.current[res.name], h.byMember[res.name]
	now := make(map[string]*entry, len(old))
	next := make(map[string]madeBy, len(states))
	// The order changes only when a member's keys do: a change of an object's content keeps its place.
	reorder := !h.synced
	for _, s := range states {
		c, seen := cached[s.Name]
		if seen && s.Generation != 0 && c.generation == s.Generation {
			for _, key := range c.keys {
				now[key] = old[key]
			}
			next[s.Name] = c
			continue
		}
		items := res.objects([]MemberState{s})
		made := madeBy{generation: s.Generation, keys: make([]string, 0, len(items))}
		for _, it := range items {
			key := historyKey(it.meta)
			e, err := h.put(res, key, it, old[key])
			if err != nil {
				return err
			}
			now[key], made.keys = e, append(made.keys, key)
		}
		for _, key := range c.keys {
			if now[key] == nil {
				if err := h.remove(res, old[key]); err != nil {
					return err
				}
			}
		}
		reorder = reorder || !slices.Equal(c.keys, made.keys)
		next[s.Name] = made
	}
	for name, c := range cached {
		if _, ok := next[name]; ok {
			continue
		}
		reorder = true
		for _, key := range c.keys {
			if err := h.remove(res, old[key]); err != nil {
				return err
			}
		}
	}
	h.current[res.name], h.byMember[res.name] = now, next
	if reorder {
		h.order[res.name] = listOrder(now)
	}
	return nil
}

// listOrder is the order every resource lists its objects in: by namespace, then name.
func listOrder(entries map[string]*entry) []string {
	type sortable struct{ by, key string }
	all := make([]sortable, 0, len(entries))
	for key, e := range entries {
		// NUL sorts before every character of a name: a namespace before any it is the prefix of.
		all = append(all, sortable{by: e.meta.Namespace + "\x00" + e.meta.Name, key: key})
	}
	slices.SortFunc(all, func(a, b sortable) int { return strings.Compare(a.by, b.by) })
	order := make([]string, len(all))
	for i, s := range all {
		order[i] = s.key
	}
	return order
}

// historyKey is an object's key in the history.
func historyKey(meta metav1.ObjectMeta) string {
	return meta.Namespace + "/" + meta.Name
}

// put returns the entry of an object as served now: prev when its JSON is unchanged, else a new entry at the
// next revision, whose change it appends.
func (h *history) put(res apiResource, key string, it served, prev *entry) (*entry, error) {
	content, err := json.Marshal(it.object)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot encode %s %s", res.kind, key)
	}
	if prev != nil && bytes.Equal(prev.content, content) {
		return prev, nil
	}
	h.next()
	next := &entry{meta: it.meta, cells: it.cells, content: content}
	if next.encoded, err = h.stamp(content, &next.meta); err != nil {
		return nil, errors.Wrapf(err, "cannot encode %s %s", res.kind, key)
	}
	h.changes = append(h.changes, change{rev: h.rev, resource: res.name, prev: prev, next: next})
	return next, nil
}

// remove appends the deletion of an object, re-encoded at the next revision, as the API server sends a deleted
// object.
func (h *history) remove(res apiResource, prev *entry) error {
	h.next()
	gone := &entry{meta: prev.meta, cells: prev.cells, content: prev.content}
	var err error
	if gone.encoded, err = h.stamp(prev.content, &gone.meta); err != nil {
		return errors.Wrapf(err, "cannot encode %s %s", res.kind, historyKey(prev.meta))
	}
	h.changes = append(h.changes, change{rev: h.rev, resource: res.name, prev: gone})
	return nil
}

// stamp sets the current revision's resourceVersion on an object's metadata and in its JSON.
func (h *history) stamp(content []byte, meta *metav1.ObjectMeta) ([]byte, error) {
	return stamped(content, meta, h.resourceVersion(h.rev))
}

// stamped sets resourceVersion rv on an object's metadata and returns its JSON with it.
func stamped(content []byte, meta *metav1.ObjectMeta, rv string) ([]byte, error) {
	meta.ResourceVersion = rv
	var obj map[string]any
	if err := json.Unmarshal(content, &obj); err != nil {
		return nil, err
	}
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, errors.New("the object has no metadata")
	}
	m["resourceVersion"] = rv
	return json.Marshal(obj)
}
