package scheme

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ForApply returns a typed object as a server-side apply should send it: without its status (which belongs to
// the object's controller) and without the nulls a typed struct carries (metadata.creationTimestamp), so the
// field manager owns only the fields the object sets. The object must carry its TypeMeta.
func ForApply(o runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, errors.Wrap(err, "cannot convert the object to apply")
	}
	delete(m, "status")
	dropNulls(m)
	return &unstructured.Unstructured{Object: m}, nil
}

// dropNulls removes the null fields of a map and of the maps it holds, in lists too.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if child == nil {
				delete(v, k)
				continue
			}
			dropNulls(child)
		}
	case []any:
		for _, child := range v {
			dropNulls(child)
		}
	}
}
