package composer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/metrics"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the one field manager the composer applies with.
const FieldManager = "gpustack-operator"

// applier writes desired objects with server-side apply, and nothing when an object already is as desired.
type applier struct {
	client client.Client
	// verified is, per object, the hash of what was desired and the resourceVersion of the object found to hold
	// it: while neither moves, the object is as desired without comparing it field by field again (which took a
	// sixth of the worker's time while hundreds of Instances started). A deleted object's entry stays: made
	// again, it has another resourceVersion; the entries are as many as the objects ever composed.
	verified map[string]verifiedAt
}

// verifiedAt is the hash of everything desired of an object (its metadata's owners included, which the
// composed-hash annotation leaves out) and the resourceVersion it was found to hold it at.
type verifiedAt struct {
	hash, version string
}

// verifiedKey names an object in the verified memo.
func verifiedKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// apply makes the object as desired. It reports whether it wrote.
func (a *applier) apply(ctx context.Context, desired *unstructured.Unstructured) (bool, error) {
	desired = desired.DeepCopy()
	hash, err := hashOf(desired)
	if err != nil {
		return false, err
	}
	annotations := desired.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workerv1.AnnotationComposedHash] = hash
	desired.SetAnnotations(annotations)

	// Read from the cache without a copy, and never changed.
	observed := &unstructured.Unstructured{}
	observed.SetGroupVersionKind(desired.GroupVersionKind())
	err = a.client.Get(ctx, client.ObjectKeyFromObject(desired), observed, client.UnsafeDisableDeepCopy)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, errors.Wrapf(err, "cannot get %s %s", desired.GetKind(), desired.GetName())
	}
	if err == nil && !composedByUs(observed) {
		return false, errors.Errorf("%s %s exists and was not made by the operator: it is left as it is; delete or rename it to "+
			"let the operator compose it", desired.GetKind(), desired.GetName())
	}
	if err == nil && observed.GetAnnotations()[workerv1.AnnotationComposedHash] == hash {
		whole, err := json.Marshal(desired.Object)
		if err != nil {
			return false, errors.Wrap(err, "cannot hash the desired object")
		}
		sum := sha256.Sum256(whole)
		key, at := verifiedKey(desired), verifiedAt{hash: hex.EncodeToString(sum[:]), version: observed.GetResourceVersion()}
		if a.verified[key] == at && at.version != "" {
			return false, nil
		}
		if contains(observed.Object, desired.Object) {
			a.verified[key] = at
			return false, nil
		}
	}
	//nolint:staticcheck // client.Apply with unstructured objects is the documented way to server-side apply them.
	if err := a.client.Patch(ctx, desired, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, errors.Wrapf(err, "cannot apply %s %s", desired.GetKind(), desired.GetName())
	}
	metrics.ComposeObjects.WithLabelValues("applied").Inc()
	return true, nil
}

// create creates the object when it does not exist and leaves an existing one alone.
func (a *applier) create(ctx context.Context, desired *unstructured.Unstructured) (bool, error) {
	observed := &unstructured.Unstructured{}
	observed.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.client.Get(ctx, client.ObjectKeyFromObject(desired), observed)
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, errors.Wrapf(err, "cannot get %s %s", desired.GetKind(), desired.GetName())
	}
	if err := a.client.Create(ctx, desired.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, errors.Wrapf(err, "cannot create %s %s", desired.GetKind(), desired.GetName())
	}
	metrics.ComposeObjects.WithLabelValues("created").Inc()
	return true, nil
}

// composedByUs reports whether the composer made the object: everything it applies carries its hash.
func composedByUs(o client.Object) bool {
	_, ok := o.GetAnnotations()[workerv1.AnnotationComposedHash]
	return ok
}

// delete deletes an object the composer no longer wants.
func (a *applier) delete(ctx context.Context, o client.Object) error {
	if o.GetDeletionTimestamp() != nil {
		return nil
	}
	if err := client.IgnoreNotFound(a.client.Delete(ctx, o)); err != nil {
		return errors.Wrapf(err, "cannot delete %s", o.GetName())
	}
	metrics.ComposeObjects.WithLabelValues("deleted").Inc()
	return nil
}

// hashOf hashes the object's labels, annotations and every top-level field but metadata and status.
func hashOf(u *unstructured.Unstructured) (string, error) {
	content := map[string]any{"labels": u.GetLabels(), "annotations": u.GetAnnotations()}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			content[k] = v
		}
	}
	data, err := json.Marshal(content)
	if err != nil {
		return "", errors.Wrap(err, "cannot hash the desired object")
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// contains reports whether observed holds every field of desired with the same value. Fields the server
// defaults, and metadata the server owns, may be present in observed only.
func contains(observed, desired map[string]any) bool {
	return containsValue(normalize(observed), normalize(desired))
}

func containsValue(observed, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			if k == "creationTimestamp" && dv == nil {
				continue
			}
			if !containsValue(o[k], dv) {
				return false
			}
		}
		return true
	case []any:
		o, ok := observed.([]any)
		if !ok || len(o) != len(d) {
			return false
		}
		for i := range d {
			if !containsValue(o[i], d[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(observed, desired)
}

// normalize round-trips a value through JSON so numbers compare alike on both sides.
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}
