package testenv

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// OwnershipDiff compares the fields a manager owns on a live object, two levels deep ("spec.nodeLabels",
// "metadata.labels"), with the fields of the object it applied, and returns what differs, "" when nothing
// does: a test's proof that a server-side apply owns only the fields it means to, never a field the API
// server defaulted. A field the API server keeps whole (an atomic struct, such as a binding's roleRef) is
// owned whole. The object's identity (apiVersion, kind, metadata.name and namespace) is nobody's.
func OwnershipDiff(live client.Object, manager string, sent map[string]any) string {
	owned, whole := map[string]bool{}, map[string]bool{}
	for _, mf := range live.GetManagedFields() {
		if mf.Manager != manager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			return "cannot read the managed fields: " + err.Error()
		}
		for top, sub := range fields {
			top = strings.TrimPrefix(top, "f:")
			children, _ := sub.(map[string]any)
			if len(children) == 0 {
				whole[top] = true
			}
			for child := range children {
				if strings.HasPrefix(child, "f:") {
					owned[top+"."+strings.TrimPrefix(child, "f:")] = true
				}
			}
		}
	}
	want := map[string]bool{}
	for top, sub := range sent {
		if top == "apiVersion" || top == "kind" {
			continue
		}
		children, _ := sub.(map[string]any)
		for child := range children {
			if top == "metadata" && (child == "name" || child == "namespace") {
				continue
			}
			want[top+"."+child] = true
			if whole[top] {
				owned[top+"."+child] = true
			}
		}
	}
	var diff []string
	for _, p := range sortedSet(want) {
		if !owned[p] {
			diff = append(diff, "-"+p)
		}
	}
	for _, p := range sortedSet(owned) {
		if !want[p] {
			diff = append(diff, "+"+p)
		}
	}
	return strings.Join(diff, " ")
}

// ZeroPaths returns the fields of an object to apply, two levels deep, that hold nothing: null, "", {} or [].
// A typed struct converted whole sends its zero values (metadata.creationTimestamp: null, an empty
// cohortName) and its field manager then owns them.
func ZeroPaths(o map[string]any) []string {
	set := map[string]bool{}
	for top, sub := range o {
		children, _ := sub.(map[string]any)
		for child, v := range children {
			switch v := v.(type) {
			case nil:
				set[top+"."+child] = true
			case string:
				set[top+"."+child] = v == ""
			case map[string]any:
				set[top+"."+child] = len(v) == 0
			case []any:
				set[top+"."+child] = len(v) == 0
			}
		}
	}
	for k, zero := range set {
		if !zero {
			delete(set, k)
		}
	}
	return sortedSet(set)
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RecordApplies wraps c so that every object server-side applied through it is kept, as it was sent, for
// OwnershipDiff and ZeroPaths; applied returns them in order.
func RecordApplies(c client.WithWatch) (wrapped client.WithWatch, applied func() []*unstructured.Unstructured) {
	var mu sync.Mutex
	var sent []*unstructured.Unstructured
	wrapped = interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if u, ok := o.(*unstructured.Unstructured); ok && p.Type() == types.ApplyPatchType {
				mu.Lock()
				sent = append(sent, u.DeepCopy())
				mu.Unlock()
			}
			return c.Patch(ctx, o, p, opts...)
		},
	})
	return wrapped, func() []*unstructured.Unstructured {
		mu.Lock()
		defer mu.Unlock()
		return append([]*unstructured.Unstructured(nil), sent...)
	}
}
