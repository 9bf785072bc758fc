package deviceplugin

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/providers"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// PodBudgets reads a slice's budget from the Pods bound to the node: the oldest Pod with a container that asks
// for the sliced resource and has not started yet is the one the kubelet is allocating for, since the kubelet
// allocates a Pod's devices just before it starts its containers.
type PodBudgets struct {
	// Reader lists Pods; an uncached reader, so a Pod bound a moment ago is seen.
	Reader client.Reader
	// Node is this node's name.
	Node string
}

// Budget returns the memory and compute budget of the pending sliced container, its memory from
// .sliced.memory-mib or from .sliced.memory-percentage of the card, its compute from .sliced.cores-percentage
// (100 when not given).
func (b PodBudgets) Budget(ctx context.Context, r Resource, card providers.Device) (Budget, error) {
	var pods corev1.PodList
	if err := b.Reader.List(ctx, &pods, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", b.Node)}); err != nil {
		return Budget{}, fmt.Errorf("cannot list the Pods of node %s: %w", b.Node, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp)
	})
	base := r.Vendor.ResourceName + ".sliced"
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
			continue
		}
		for _, c := range pod.Spec.Containers {
			limits := c.Resources.Limits
			if _, ok := limits[corev1.ResourceName(base)]; !ok || started(pod, c.Name) {
				continue
			}
			budget := Budget{CoresPercent: 100}
			if q, ok := limits[corev1.ResourceName(base+".cores-percentage")]; ok {
				budget.CoresPercent = q.Value()
			}
			switch {
			case has(limits, base+".memory-percentage"):
				q := limits[corev1.ResourceName(base+".memory-percentage")]
				budget.MemoryMiB = card.MemoryMiB * q.Value() / 100
			case has(limits, base+".memory-mib"):
				q := limits[corev1.ResourceName(base+".memory-mib")]
				budget.MemoryMiB = q.Value()
			default:
				return Budget{}, fmt.Errorf("pod %s/%s container %s asks for %s without %s.memory-percentage or %s.memory-mib",
					pod.Namespace, pod.Name, c.Name, base, base, base)
			}
			return budget, nil
		}
	}
	return Budget{}, fmt.Errorf("no Pod on node %s is waiting for %s", b.Node, base)
}

func has(l corev1.ResourceList, name string) bool {
	_, ok := l[corev1.ResourceName(name)]
	return ok
}

// started reports whether the container has run, so its devices were allocated before.
func started(pod corev1.Pod, container string) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && (s.State.Running != nil || s.State.Terminated != nil || s.RestartCount > 0) {
			return true
		}
	}
	return false
}
