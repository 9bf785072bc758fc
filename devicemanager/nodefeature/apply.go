// Package nodefeature writes the operator's per-node NodeFeatures, the objects nfd-master turns into a Node's
// labels.
package nodefeature

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Apply writes the NodeFeature name of node in the operator's namespace, labelled for NFD with the node it
// describes and part of partOf; nothing when its spec is already spec.
func Apply(ctx context.Context, c client.Client, name, node, partOf string, spec nfdv1alpha1.NodeFeatureSpec) error {
	nf := &nfdv1alpha1.NodeFeature{}
	key := client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: name}
	err := c.Get(ctx, key, nf)
	if apierrors.IsNotFound(err) {
		nf = &nfdv1alpha1.NodeFeature{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				nfdv1alpha1.NodeFeatureObjNodeNameLabel: node,
				"app.kubernetes.io/part-of":             partOf,
			}},
			Spec: spec,
		}
		// Made a moment ago and not read back yet (reads may come from a watch): the next round compares.
		return errors.Wrapf(client.IgnoreAlreadyExists(c.Create(ctx, nf)), "cannot create NodeFeature %s", name)
	}
	if err != nil {
		return errors.Wrapf(err, "cannot get NodeFeature %s", name)
	}
	// Semantic equality counts an empty map as a missing one, as the API server stores them.
	if apiequality.Semantic.DeepEqual(nf.Spec, spec) {
		return nil
	}
	before := nf.DeepCopy()
	nf.Spec = spec
	// A merge patch, not an update: the object read may be a moment old (a watch's); its spec is the writer's own.
	return errors.Wrapf(c.Patch(ctx, nf, client.MergeFrom(before)), "cannot patch NodeFeature %s", name)
}
