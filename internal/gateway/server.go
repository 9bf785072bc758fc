package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// StateSource gives the members' states and the generation they are at.
type StateSource interface {
	States() ([]MemberState, int64)
}

// Server serves the gateway's API the way a Kubernetes API server does, read-only: discovery, get, list and
// watch, each as JSON or, when asked (kubectl get does), as a Table with the resource's columns. It serves the
// same on the unix socket and behind kube-apiserver's aggregation layer.
type Server struct {
	// Source gives what is served.
	Source StateSource
	// WatchInterval is how often a watch looks for changes.
	WatchInterval time.Duration
	// BookmarkInterval is how often a watch that asked for bookmarks (allowWatchBookmarks) is sent one when
	// nothing else was sent: the resourceVersion it has reached, to resume from without a replay of what it
	// has (DefaultBookmarkInterval when zero).
	BookmarkInterval time.Duration
	// MaxWatchesPerClient is how many watches one client (the user the front proxy names) may hold open at
	// once; one more is refused with 429 Too Many Requests (DefaultMaxWatchesPerClient when zero).
	MaxWatchesPerClient int

	watches     watchSlots
	openAPI     sync.Once
	openAPIDocs http.Handler
	openAPIErr  error

	historyOnce sync.Once
	served      *history
}

// Follow records what the source serves every WatchInterval until ctx ends, from the replica's start: the
// revisions of the changes are then when the replica saw them, and a watch from another replica's
// resourceVersion is replayed by a replica that has followed its members since before it (history). Without
// it the record follows the requests.
func (s *Server) Follow(ctx context.Context) error {
	if s.WatchInterval <= 0 {
		return errors.Errorf("the watch interval (%s) must be positive", s.WatchInterval)
	}
	h := s.history()
	for {
		// A state that cannot be recorded is answered to each request (500) and tried again here.
		_ = h.follow(s.Source)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.WatchInterval):
		}
	}
}

// history is the server's record of what it serves, made at its first request.
func (s *Server) history() *history {
	s.historyOnce.Do(func() { s.served = newHistory() })
	return s.served
}

var groupPath = "/apis/" + gatewayv1.GroupVersion.Group

// DefaultBookmarkInterval is how often a watch asking for bookmarks gets one when idle, as kube-apiserver sends
// them about every minute.
const DefaultBookmarkInterval = time.Minute

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, fmt.Sprintf("the gateway's API is read-only: %s is not allowed", r.Method))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/openapi/v3") {
		s.serveOpenAPI(w, r)
		return
	}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/apis":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group()}})
		return
	case groupPath:
		g := group()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, g)
		return
	case groupPath + "/" + gatewayv1.GroupVersion.Version:
		writeJSON(w, resourceList())
		return
	}
	res, namespace, name, ok := route(r.URL.Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	q := r.URL.Query()
	sel, err := selectorOf(q, namespace, name)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	table := wantsTable(r.Header.Get("Accept"))
	if watch := q.Get("watch"); watch == "true" || watch == "1" {
		client, most := clientOf(r.Context()), cmp.Or(s.MaxWatchesPerClient, DefaultMaxWatchesPerClient)
		if !s.watches.take(client, most) {
			// As kube-apiserver's flow control answers a client over its share: try again later.
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				fmt.Sprintf("%s holds %d watches open on the gateway, the most one client may: close one (or ask the administrator to raise --max-watches-per-client)", clientName(client), most))
			return
		}
		defer s.watches.give(client)
		s.watch(w, r, res, sel, table)
		return
	}
	all, rv, err := s.history().list(s.Source, res)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	items := sel.pick(all)
	if name != "" {
		if len(items) == 0 {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("%s.%s %q not found", res.name, gatewayv1.GroupVersion.Group, name))
			return
		}
		if table {
			writeJSON(w, tableOf(res, items, rv))
			return
		}
		writeJSON(w, json.RawMessage(items[0].encoded))
		return
	}
	if table {
		writeJSON(w, tableOf(res, items, rv))
		return
	}
	objects := make([]json.RawMessage, len(items))
	for i, it := range items {
		objects[i] = it.encoded
	}
	writeJSON(w, map[string]any{"apiVersion": gatewayv1.GroupVersion.String(), "kind": res.kind + "List",
		"metadata": metav1.ListMeta{ResourceVersion: rv}, "items": objects})
}

// clientName names a client for a refusal.
func clientName(client string) string {
	if client == "" {
		return "the unix socket's clients together"
	}
	return fmt.Sprintf("user %q", client)
}

// serveOpenAPI serves the OpenAPI v3 document, built at its first request (it never changes).
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	s.openAPI.Do(func() { s.openAPIDocs, s.openAPIErr = openAPIHandler() })
	if s.openAPIErr != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, s.openAPIErr.Error())
		return
	}
	s.openAPIDocs.ServeHTTP(w, r)
}

// route splits /apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>].
func route(path string) (apiResource, string, string, bool) {
	rest, ok := strings.CutPrefix(path, groupPath+"/"+gatewayv1.GroupVersion.Version+"/")
	if !ok {
		return apiResource{}, "", "", false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	var namespace string
	if len(parts) >= 3 && parts[0] == "namespaces" {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || len(parts) > 2 {
		return apiResource{}, "", "", false
	}
	for _, res := range resources {
		if res.name != parts[0] || (namespace != "" && !res.namespaced) {
			continue
		}
		if len(parts) == 2 {
			return res, namespace, parts[1], true
		}
		return res, namespace, "", true
	}
	return apiResource{}, "", "", false
}

// selector is what a request selects: a namespace and a name (all when empty), and its label and field
// selectors.
type selector struct {
	namespace, name string
	labels          labels.Selector
	fields          fields.Selector
}

// selectorOf reads a request's selectors, as a Kubernetes API server does: any label selector, and field
// selectors on metadata.name and metadata.namespace.
func selectorOf(q url.Values, namespace, name string) (selector, error) {
	sel := selector{namespace: namespace, name: name, labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if v := q.Get("labelSelector"); v != "" {
		if sel.labels, err = labels.Parse(v); err != nil {
			return selector{}, errors.Wrapf(err, "labelSelector %q", v)
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		if sel.fields, err = fields.ParseSelector(v); err != nil {
			return selector{}, errors.Wrapf(err, "fieldSelector %q", v)
		}
		for _, req := range sel.fields.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				return selector{}, errors.Errorf("fieldSelector %q: field label not supported: %s (metadata.name and metadata.namespace are)", v, req.Field)
			}
		}
	}
	return sel, nil
}

// pick keeps the objects the selector selects.
func (sel selector) pick(items []*entry) []*entry {
	var out []*entry
	for _, it := range items {
		if sel.matches(it) {
			out = append(out, it)
		}
	}
	return out
}

// matches reports whether the selector selects the object; nil is selected by none.
func (sel selector) matches(it *entry) bool {
	return it != nil && (sel.namespace == "" || it.meta.Namespace == sel.namespace) && (sel.name == "" || it.meta.Name == sel.name) &&
		sel.labels.Matches(labels.Set(it.meta.Labels)) &&
		sel.fields.Matches(fields.Set{"metadata.name": it.meta.Name, "metadata.namespace": it.meta.Namespace})
}

// watch streams the objects' changes as watch events until the client goes or timeoutSeconds pass, as the API
// server does: with no resourceVersion (or "0") every selected object is sent first as ADDED; with one this
// replica (or the other) gave, the changes since it are replayed (history); with one older than the history
// keeps the watch ends at once with a 410 Expired error, and the client lists again.
// An object that stops matching a selector is DELETED for that watch, one that starts matching ADDED. A watch
// that allows bookmarks gets one every BookmarkInterval it is sent nothing else.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, res apiResource, sel selector, table bool) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "this connection cannot stream")
		return
	}
	timeout := 30 * time.Minute
	if secs, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && secs > 0 {
		timeout = time.Duration(secs) * time.Second
	}
	deadline := time.After(timeout)
	h := s.history()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(kind string, it *entry) bool {
		var obj any = json.RawMessage(it.encoded)
		if table {
			obj = tableOf(res, []*entry{it}, it.meta.ResourceVersion)
		}
		return enc.Encode(map[string]any{"type": kind, "object": obj}) == nil
	}
	// fail ends the watch with an ERROR event: Expired (410) sends the client to list again, InternalError (500)
	// says the replica could not read what it serves.
	fail := func(reason metav1.StatusReason, code int32, message string) {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: reason, Code: code, Message: message}
		_ = enc.Encode(map[string]any{"type": "ERROR", "object": st})
		flusher.Flush()
	}

	from := r.URL.Query().Get("resourceVersion")
	if from == "" || from == "0" {
		items, current, err := h.list(s.Source, res)
		if err != nil {
			fail(metav1.StatusReasonInternalError, http.StatusInternalServerError, err.Error())
			return
		}
		from = current
		for _, it := range sel.pick(items) {
			if !send("ADDED", it) {
				return
			}
		}
	}
	bookmarks, bookmarkEvery, lastSent := r.URL.Query().Get("allowWatchBookmarks") == "true", cmp.Or(s.BookmarkInterval, DefaultBookmarkInterval), time.Now()
	for {
		changes, reached, ok, err := h.since(s.Source, res, from)
		if err != nil {
			fail(metav1.StatusReasonInternalError, http.StatusInternalServerError, err.Error())
			return
		}
		if !ok {
			fail(metav1.StatusReasonExpired, http.StatusGone, fmt.Sprintf("too old resource version: %s (list again)", from))
			return
		}
		for _, c := range changes {
			if kind, it := eventOf(c, sel); kind != "" {
				if !send(kind, it) {
					return
				}
				lastSent = time.Now()
			}
		}
		from = h.resourceVersion(reached)
		if bookmarks && time.Since(lastSent) >= bookmarkEvery {
			mark := map[string]any{"apiVersion": gatewayv1.GroupVersion.String(), "kind": res.kind, "metadata": map[string]string{"resourceVersion": from}}
			if enc.Encode(map[string]any{"type": "BOOKMARK", "object": mark}) != nil {
				return
			}
			lastSent = time.Now()
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-deadline:
			return
		case <-time.After(s.WatchInterval):
		}
	}
}

// eventOf is the watch event a change makes for a selector, if any: matching before and after is MODIFIED,
// only after ADDED, only before DELETED (the object as it was, at the change's revision).
func eventOf(c change, sel selector) (string, *entry) {
	before, after := sel.matches(c.prev), sel.matches(c.next)
	switch {
	case c.next == nil && before:
		return "DELETED", c.prev
	case before && after:
		return "MODIFIED", c.next
	case after:
		return "ADDED", c.next
	case before:
		// The object as it was, at the revision it stopped matching.
		gone := *c.prev
		if encoded, err := stamped(c.prev.content, &gone.meta, c.next.meta.ResourceVersion); err == nil {
			gone.encoded = encoded
		}
		return "DELETED", &gone
	}
	return "", nil
}

// tableOf is the objects as the Table kubectl asks for: the resource's columns, a row each, each row's object
// its metadata.
func tableOf(res apiResource, items []*entry, rv string) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ListMeta: metav1.ListMeta{ResourceVersion: rv},
		ColumnDefinitions: res.columns, Rows: []metav1.TableRow{}}
	for _, it := range items {
		meta, _ := json.Marshal(metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: it.meta})
		t.Rows = append(t.Rows, metav1.TableRow{Cells: it.cells, Object: runtime.RawExtension{Raw: meta}})
	}
	return t
}

// wantsTable reports whether the Accept header asks for a meta.k8s.io Table first.
func wantsTable(accept string) bool {
	first, _, _ := strings.Cut(accept, ",")
	return strings.Contains(first, "as=Table") && strings.Contains(first, "g=meta.k8s.io")
}

func group() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gatewayv1.GroupVersion.String(), Version: gatewayv1.GroupVersion.Version}
	return metav1.APIGroup{Name: gatewayv1.GroupVersion.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

func resourceList() metav1.APIResourceList {
	out := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gatewayv1.GroupVersion.String()}
	for _, res := range resources {
		out.APIResources = append(out.APIResources, metav1.APIResource{Name: res.name, SingularName: res.singular, Kind: res.kind,
			Namespaced: res.namespaced, ShortNames: res.shortNames, Verbs: metav1.Verbs{"get", "list", "watch"}, Categories: []string{"gpustack"}})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message})
}
