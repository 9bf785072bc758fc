// Package cachepolicy says what the worker keeps in its informer cache: every Pod of the cluster goes through
// it (the ledgers and the CPU view need them all), so each object is kept without its managedFields, and each
// Pod without what no controller of the worker reads (commands, environment, mounts, volumes, probes).
package cachepolicy

import (
	"context"
	"maps"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Options returns the worker's cache options: of Secrets only gpustack-settings, listed and watched by name
// (its role may read no other Secret by list: not the webhook's key, not Helm's release Secrets),
// NodeFeatures of its own namespace only (it writes its NodeFeatures there), managedFields dropped
// everywhere, Pods trimmed by TrimPod and Nodes by TrimNode.
func Options() cache.Options {
	system := map[string]cache.Config{workerv1.SystemNamespace: {}}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:           {Namespaces: system, Field: fields.OneTermEqualSelector("metadata.name", settings.SecretName)},
			&nfdv1alpha1.NodeFeature{}: {Namespaces: system},
			&corev1.Pod{}:              {Transform: TrimPod},
			&corev1.Node{}:             {Transform: TrimNode},
		},
	}
}

// Unwrapped is a delete event's object: the object the tombstone holds where the informer missed the deletion
// itself (toolscache.DeletedFinalStateUnknown), the object as it came otherwise.
func Unwrapped(obj any) any {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// TrimPod drops from a cached Pod what the worker never reads, keeping its metadata (labels, annotations,
// owners), its node, scheduling gates, containers' names, images, ports (a dispatched Instance's Service is
// made from them) and resources, and its status. The worker writes Pods
// only by create, delete and merge patches, so a trimmed copy never overwrites what it left out.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	pod.Spec.Volumes = nil
	trim := func(cs []corev1.Container) {
		for i := range cs {
			cs[i] = corev1.Container{Name: cs[i].Name, Image: cs[i].Image, Ports: cs[i].Ports, Resources: cs[i].Resources,
				RestartPolicy: cs[i].RestartPolicy}
		}
	}
	trim(pod.Spec.InitContainers)
	trim(pod.Spec.Containers)
	pod.Spec.EphemeralContainers = nil
	return pod, nil
}

// TrimNode drops from a cached Node what the worker never reads: its spec, images, addresses, node info,
// daemon endpoints and volumes. It keeps the metadata (labels and annotations: the node's profile), capacity,
// allocatable, conditions and phase. A kubelet's image list alone is often larger than all the rest; at
// thousands of nodes the cache would otherwise hold it for each. The worker writes Nodes only by server-side
// apply of its own fields, so a trimmed copy never overwrites what it left out.
func TrimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Node{TypeMeta: node.TypeMeta, ObjectMeta: node.ObjectMeta, Status: corev1.NodeStatus{
		Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable, Conditions: node.Status.Conditions, Phase: node.Status.Phase}}
	trimmed.ManagedFields = nil
	return trimmed, nil
}

// PodNodeName is the field Pods are listed by node with: the API server's field selector, and the index
// IndexPodsByNode keeps in the worker's cache under the same name, so a list reads alike from either.
const PodNodeName = "spec.nodeName"

// IndexPodsByNode indexes the cached Pods by the node they are bound to; the ledger and the per-card check list
// a node's Pods with it.
func IndexPodsByNode(ctx context.Context, indexer client.FieldIndexer) error {
	return errors.Wrap(indexer.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}), "cannot index Pods by node")
}

// ResourceClaimPools is the index of the cached ResourceClaims by the pools (each named after its node) this
// project's DRA drivers allocated them devices from: the ledger lists a node's claims with it.
const ResourceClaimPools = "status.allocation.devices.results.gpustackPool"

// IndexResourceClaimsByPool indexes the cached ResourceClaims by ResourceClaimPools.
func IndexResourceClaimsByPool(ctx context.Context, indexer client.FieldIndexer) error {
	return errors.Wrap(indexer.IndexField(ctx, &resourceapi.ResourceClaim{}, ResourceClaimPools, func(o client.Object) []string {
		return ResourceClaimPoolsOf(o.(*resourceapi.ResourceClaim))
	}), "cannot index ResourceClaims by pool")
}

// ResourceClaimPoolsOf returns the pools this project's DRA drivers allocated the claim devices from.
func ResourceClaimPoolsOf(rc *resourceapi.ResourceClaim) []string {
	if rc.Status.Allocation == nil {
		return nil
	}
	var pools []string
	for _, r := range rc.Status.Allocation.Devices.Results {
		if _, ours := vendors.DRADriverVendor(r.Driver); ours && !slices.Contains(pools, r.Pool) {
			pools = append(pools, r.Pool)
		}
	}
	return pools
}

// ResourceSliceNode is the field ResourceSlices are listed by node with: the API server's field selector, and
// the index IndexResourceSlicesByNode keeps in the worker's cache under the same name. This project's DRA
// drivers publish a node's cards in node-local slices of a pool named after the node.
const ResourceSliceNode = resourceapi.ResourceSliceSelectorNodeName

// IndexResourceSlicesByNode indexes the cached ResourceSlices by the node they are local to.
func IndexResourceSlicesByNode(ctx context.Context, indexer client.FieldIndexer) error {
	return errors.Wrap(indexer.IndexField(ctx, &resourceapi.ResourceSlice{}, ResourceSliceNode, func(o client.Object) []string {
		if n := ptr.Deref(o.(*resourceapi.ResourceSlice).Spec.NodeName, ""); n != "" {
			return []string{n}
		}
		return nil
	}), "cannot index ResourceSlices by node")
}

// NodeChanged passes the Node updates that change what the worker reads from a Node: its labels, annotations,
// capacity or allocatable. A kubelet's status heartbeat changes none of them; at thousands of nodes those
// heartbeats would otherwise wake every Node controller many times a second.
var NodeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Node)
	cur, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
		!apiequality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity) ||
		!apiequality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable)
}}
