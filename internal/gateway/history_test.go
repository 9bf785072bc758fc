package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// changing serves states a test sets, each set a new generation.
type changing struct {
	mu         sync.Mutex
	states     []MemberState
	generation int64
}

func (c *changing) States() ([]MemberState, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states, c.generation
}

// instances makes member a hold Instances, each "name" or "name:phase", labelled app=web when phase is empty.
func (c *changing) instances(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var items []workerv1.Instance
	for _, n := range names {
		inst := workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: n, Labels: map[string]string{"app": "web"}}}
		if name, phase, ok := strings.Cut(n, ":"); ok {
			inst.Name, inst.Labels, inst.Status.Phase = name, nil, workerv1.InstancePhase(phase)
		}
		items = append(items, inst)
	}
	c.states = []MemberState{{Name: "a", Reachable: true, Instances: items}}
	c.generation++
}

// TestServerWatch checks a watch's events from each kind of resourceVersion: what changed between a list and
// the watch is replayed, with the revisions of the changes. Before the change, member a's Instances take the
// first revisions and its clustermembers entry the next.
func TestServerWatch(t *testing.T) {
	type args struct {
		before, after []string
		// rv is the watch's resourceVersion; "list" is the one a list answered before the change.
		rv, labelSelector string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"FromList": {
			reason: "A watch from a list's resourceVersion replays what changed since, and nothing else.",
			args:   args{before: []string{"x", "y"}, after: []string{"x:Ready", "y", "z"}, rv: "list"},
			want:   []string{"MODIFIED a.x e.4", "ADDED a.z e.5"},
		},
		"FromNothing": {
			reason: "A watch without a resourceVersion sends every object as ADDED, at the revision it last changed.",
			args:   args{before: []string{"x"}, after: []string{"x", "y"}},
			want:   []string{"ADDED a.x e.1", "ADDED a.y e.3"},
		},
		"Deleted": {
			reason: "An object gone is DELETED, at the revision it went.",
			args:   args{before: []string{"x", "y"}, after: []string{"y"}, rv: "list"},
			want:   []string{"DELETED a.x e.4"},
		},
		"LeavesSelector": {
			reason: "An object whose labels stop matching the selector is DELETED for that watch; one that starts matching ADDED.",
			args:   args{before: []string{"x", "y:Ready"}, after: []string{"x:Ready", "y"}, rv: "list", labelSelector: "app=web"},
			want:   []string{"DELETED a.x e.4", "ADDED a.y e.5"},
		},
		"OtherReplica": {
			reason: "A resourceVersion of another replica from before this one started is refused with 410, so the client lists again.",
			args:   args{before: []string{"x"}, after: []string{"x"}, rv: "f00d.1"},
			want:   []string{"ERROR Expired 410"},
		},
		"Ahead": {
			reason: "A revision this replica has not reached is refused too.",
			args:   args{before: []string{"x"}, after: []string{"x"}, rv: "e.99"},
			want:   []string{"ERROR Expired 410"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &changing{}
			src.instances(tc.args.before...)
			s := testServer(src)
			srv := httptest.NewServer(s)
			defer srv.Close()
			base := srv.URL + "/apis/gateway.gpustack.ai/v1/clusterinstances"
			var list struct {
				Metadata metav1.ListMeta `json:"metadata"`
			}
			get(t, base, &list)
			src.instances(tc.args.after...)
			rv := tc.args.rv
			if rv == "list" {
				rv = list.Metadata.ResourceVersion
			}
			q := url.Values{"watch": {"true"}, "timeoutSeconds": {"1"}, "resourceVersion": {rv}, "labelSelector": {tc.args.labelSelector}}
			got := events(t, base+"?"+q.Encode())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nwatch(%s): -want, +got:\n%s", tc.reason, q.Encode(), diff)
			}
		})
	}
}

func get(t *testing.T, u string, into any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// events reads a watch to its end, each event as "TYPE name resourceVersion" or "ERROR reason code".
func events(t *testing.T, u string) []string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	var out []string
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Reason   string            `json:"reason"`
				Code     int               `json:"code"`
			} `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return out
		}
		if ev.Type == "ERROR" {
			out = append(out, fmt.Sprintf("ERROR %s %d", ev.Object.Reason, ev.Object.Code))
			continue
		}
		out = append(out, ev.Type+" "+ev.Object.Metadata.Name+" "+ev.Object.Metadata.ResourceVersion)
	}
}

// A watch from a revision whose changes the history no longer keeps must list again.
func TestHistoryExpires(t *testing.T) {
	src, h := &changing{}, newHistory()
	res, _, _, _ := route("/apis/gateway.gpustack.ai/v1/clusterinstances")
	for i := 0; i < historyLimit+10; i++ {
		src.instances(fmt.Sprintf("x:%d", i))
		if _, _, err := h.list(src, res); err != nil {
			t.Fatalf("list: %v", err)
		}
	}
	if _, _, ok, _ := h.since(src, res, h.resourceVersion(h.first)); ok {
		t.Errorf("since(the first revision) after %d changes: want expired, got ok", historyLimit+10)
	}
	changes, _, ok, _ := h.since(src, res, h.resourceVersion(h.rev-1))
	if diff := cmp.Diff([]bool{true, true}, []bool{ok, len(changes) == 1}); diff != "" {
		t.Errorf("since(the revision before the last): want the last change, -want, +got:\n%s", diff)
	}
}

// A watch from another replica's resourceVersion, whose revision is the time that replica saw its last change,
// replays this replica's changes from otherReplicaMargin before it: a change both saw a little apart in time is
// sent (again, at worst), never lost.
func TestHistoryOtherReplica(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clock := start
	src, h := &changing{}, newHistory()
	h.now = func() time.Time { return clock }
	res, _, _, _ := route("/apis/gateway.gpustack.ai/v1/clusterinstances")
	src.instances("x")
	if _, _, err := h.list(src, res); err != nil {
		t.Fatalf("list: %v", err)
	}
	clock = start.Add(time.Minute)
	src.instances("x:Ready")
	if _, _, err := h.list(src, res); err != nil {
		t.Fatalf("list: %v", err)
	}
	other := func(at time.Duration) string { return fmt.Sprintf("f00d.%d", start.Add(at).UnixMicro()) }
	cases := map[string]struct {
		reason string
		rv     string
		want   []string
	}{
		"SawItSooner": {
			reason: "The other replica saw the change 10 s sooner (its revision is after it here): sent again.",
			rv:     other(50 * time.Second),
			want:   []string{"a.x Ready"},
		},
		"SawItLater": {
			reason: "The other replica had not seen it yet 10 s after it was seen here: sent.",
			rv:     other(70 * time.Second),
			want:   []string{"a.x Ready"},
		},
		"LongAfter": {
			reason: "Well past the change: nothing to replay, the watch follows from now.",
			rv:     other(5 * time.Minute),
			want:   nil,
		},
		"BeforeThisReplica": {
			reason: "From before this replica started: it cannot know what changed then; list again.",
			rv:     other(-time.Minute),
			want:   []string{"expired"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changes, _, ok, err := h.since(src, res, tc.rv)
			if err != nil {
				t.Fatalf("since(%s): %v", tc.rv, err)
			}
			var got []string
			if !ok {
				got = append(got, "expired")
			}
			for _, c := range changes {
				var inst workerv1.Instance
				if err := json.Unmarshal(c.next.content, &inst); err != nil {
					t.Fatal(err)
				}
				got = append(got, c.next.meta.Name+" "+string(inst.Status.Phase))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nsince(%s): -want, +got:\n%s", tc.reason, tc.rv, diff)
			}
		})
	}
}

// A quiet watch that allows bookmarks gets one every BookmarkInterval, at the resourceVersion it has reached;
// one that does not allow them gets nothing.
func TestServerWatchBookmarks(t *testing.T) {
	src := &changing{}
	src.instances("x")
	s := testServer(src)
	s.BookmarkInterval = 300 * time.Millisecond
	srv := httptest.NewServer(s)
	defer srv.Close()
	base := srv.URL + "/apis/gateway.gpustack.ai/v1/clusterinstances"
	var list struct {
		Metadata metav1.ListMeta `json:"metadata"`
	}
	get(t, base, &list)
	for _, allow := range []string{"true", "false"} {
		q := url.Values{"watch": {"true"}, "timeoutSeconds": {"1"}, "resourceVersion": {list.Metadata.ResourceVersion}, "allowWatchBookmarks": {allow}}
		got := events(t, base+"?"+q.Encode())
		bookmarked := len(got) >= 2 && !slices.ContainsFunc(got, func(e string) bool { return e != "BOOKMARK  e.2" })
		if (allow == "true" && !bookmarked) || (allow == "false" && len(got) > 0) {
			t.Errorf("watch(allowWatchBookmarks=%s) of 1 s, bookmarks every 300 ms: want BOOKMARKs at e.2 only when allowed, got %v", allow, got)
		}
	}
}

// TestHistoryMembersIsTheFullRecord holds the per-member path (only a changed member's objects made and compared
// again) to the full one on random sequences of member changes: after every step, each per-member resource
// lists what its objects function makes of all states, and the step's changes are exactly the objects whose
// JSON differs from the step before (added, modified or deleted).
func TestHistoryMembersIsTheFullRecord(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	src := &changing{}
	h := newHistory()
	members := map[string]*MemberState{}
	var generation int64
	bump := func(s *MemberState) {
		generation++
		s.Generation = generation
	}
	listed := func(res apiResource) map[string]string {
		out := map[string]string{}
		for _, it := range res.objects(src.states) {
			b, err := json.Marshal(it.object)
			if err != nil {
				t.Fatal(err)
			}
			out[historyKey(it.meta)] = string(b)
		}
		return out
	}
	before := map[string]map[string]string{}
	for step := range 300 {
		name := fmt.Sprintf("m%d", rnd.IntN(4))
		s := members[name]
		switch op := rnd.IntN(6); {
		case s == nil:
			s = &MemberState{Name: name, Reachable: true, InstanceTypes: []workerv1.InstanceType{{ObjectMeta: metav1.ObjectMeta{Name: "t"}}}}
			members[name] = s
			bump(s)
		case op == 0:
			delete(members, name)
			generation++
		case op == 1:
			s.Instances = append(s.Instances, workerv1.Instance{ObjectMeta: metav1.ObjectMeta{
				Namespace: fmt.Sprintf("ns-%d", rnd.IntN(3)), Name: fmt.Sprintf("i%d", rnd.IntN(8))}})
			s.Instances = slices.CompactFunc(s.Instances, func(a, b workerv1.Instance) bool { return a.Namespace == b.Namespace && a.Name == b.Name })
			bump(s)
		case op == 2 && len(s.Instances) > 0:
			s.Instances = slices.Delete(slices.Clone(s.Instances), 0, 1)
			bump(s)
		case op == 3 && len(s.Instances) > 0:
			s.Instances = slices.Clone(s.Instances)
			s.Instances[rnd.IntN(len(s.Instances))].Status.Phase = workerv1.InstancePhase(fmt.Sprintf("P%d", step))
			bump(s)
		default:
			// Something only another resource serves (or nothing) changed: the same generation for this one.
			generation++
		}
		src.states = src.states[:0:0]
		for _, n := range slices.Sorted(maps.Keys(members)) {
			src.states = append(src.states, *members[n])
		}
		src.generation = generation
		from := len(h.changes)
		if err := h.follow(src); err != nil {
			t.Fatal(err)
		}
		for _, res := range resources {
			if !res.perMember {
				continue
			}
			now := listed(res)
			var got []string
			for _, key := range h.order[res.name] {
				got = append(got, key+"="+string(h.current[res.name][key].content))
			}
			var want []string
			for _, it := range res.objects(src.states) {
				key := historyKey(it.meta)
				want = append(want, key+"="+now[key])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d, %s: the list, -full, +per member:\n%s", step, res.name, diff)
			}
			changed := map[string]bool{}
			for _, c := range h.changes[from:] {
				if c.resource != res.name {
					continue
				}
				if c.next != nil {
					changed[historyKey(c.next.meta)] = true
				} else {
					changed[historyKey(c.prev.meta)] = true
				}
			}
			differs := map[string]bool{}
			for key, v := range now {
				if before[res.name][key] != v {
					differs[key] = true
				}
			}
			for key := range before[res.name] {
				if _, ok := now[key]; !ok {
					differs[key] = true
				}
			}
			if diff := cmp.Diff(differs, changed, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("step %d, %s: the changes, -objects whose JSON differs, +recorded:\n%s", step, res.name, diff)
			}
			before[res.name] = now
		}
	}
}
