package deviceplugin

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// PodBudgets reads a slice's budget from the Pods bound to the node. The kubelet allocates a Pod's devices
// when it admits the Pod, one Pod at a time and one container after the other, and the ledger recorded on
// each Pod the cards it placed it on (which GetPreferredAllocation steered the kubelet to). So the container
// allocated for asks for the resource and holds none of it yet: the kubelet's pod-resources API says which
// hold some, where PodResources names its socket; else, from the API server alone, those that have not
// started, which takes a container allocated before and still starting (its image pulling) for the one being
// allocated. Of the Pods with such a container, it is the one recorded on the card being handed out, and only
// when no Pod was recorded there, the oldest.
type PodBudgets struct {
	// Reader lists Pods; an uncached reader, so a Pod bound a moment ago is seen.
	Reader client.Reader
	// Node is this node's name.
	Node string
	// PodResources is the kubelet's pod-resources socket (PodResourcesSocket); empty asks the API server
	// alone (GPUSTACK_DEVICE_PLUGIN_IDENTIFY_BY_KUBELET=false). A kubelet that does not answer is not asked.
	PodResources string
}

// Budget returns the memory and compute budget of the pending sliced container, its memory from
// .sliced.memory-mib or from .sliced.memory-percentage of the card, its compute from .sliced.cores-percentage
// (100 when not given).
func (b PodBudgets) Budget(ctx context.Context, r Resource, card providers.Device) (Budget, error) {
	base := r.Vendor.ResourceName + ".sliced"
	pod, c, err := b.pending(ctx, base, card.UUID)
	if err != nil {
		return Budget{}, err
	}
	limits := c.Resources.Limits
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
		return Budget{}, errors.Errorf("pod %s/%s container %s asks for %s without %s.memory-percentage or %s.memory-mib",
			pod.Namespace, pod.Name, c.Name, base, base, base)
	}
	return budget, nil
}

// Profile returns the partition profile the pending partitioned container asks (the profile of its one
// <base>.partitioned.<kind>-<profile> key) and its Pod's UID, which owns the partition.
func (b PodBudgets) Profile(ctx context.Context, r Resource) (string, string, error) {
	pod, c, err := b.pending(ctx, r.Name, "")
	if err != nil {
		return "", "", err
	}
	prefix := r.Vendor.ProfilePrefix()
	var profiles []string
	for name := range c.Resources.Limits {
		if profile, ok := strings.CutPrefix(string(name), prefix); ok {
			profiles = append(profiles, profile)
		}
	}
	if len(profiles) != 1 {
		return "", "", errors.Errorf("pod %s/%s container %s asks for %s with %d profile keys (%s*); it needs exactly one",
			pod.Namespace, pod.Name, c.Name, r.Name, len(profiles), prefix)
	}
	return profiles[0], string(pod.UID), nil
}

// Cards returns the cards the ledger recorded for the pending container that asks for the resource, so the
// kubelet hands out the cards the ledger charged; none when nothing is recorded yet.
func (b PodBudgets) Cards(ctx context.Context, r Resource) []string {
	pod, c, err := b.pending(ctx, r.Name, "")
	if err != nil {
		return nil
	}
	recorded := map[string][]string{}
	_ = json.Unmarshal([]byte(pod.Annotations[workerv1.AnnotationAllocated]), &recorded)
	return recorded[c.Name]
}

// pending returns the Pod of the node with a container that asks for the resource and holds none of it yet
// (the first such container of the Pod): the oldest one recorded on card when card is given and one is, else
// the oldest.
func (b PodBudgets) pending(ctx context.Context, resourceName, card string) (*corev1.Pod, *corev1.Container, error) {
	var pods corev1.PodList
	if err := b.Reader.List(ctx, &pods, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", b.Node)}); err != nil {
		return nil, nil, errors.Wrapf(err, "cannot list the Pods of node %s", b.Node)
	}
	var kubelet KubeletHoldings
	if b.PodResources != "" {
		// Without the kubelet's answer the API server's Pods still tell, as they do with the variable off.
		kubelet, _ = ListPodResources(ctx, b.PodResources)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp)
	})
	var oldest *corev1.Pod
	var oldestContainer *corev1.Container
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if kubelet != nil && !kubelet.knows(key) {
			continue
		}
		recorded := map[string][]string{}
		_ = json.Unmarshal([]byte(pod.Annotations[workerv1.AnnotationAllocated]), &recorded)
		for j := range pod.Spec.Containers {
			c := &pod.Spec.Containers[j]
			if _, ok := c.Resources.Limits[corev1.ResourceName(resourceName)]; !ok || started(*pod, c.Name) ||
				kubelet.holds(key, c.Name, resourceName) {
				continue
			}
			if card == "" || slices.Contains(recorded[c.Name], card) {
				return pod, c, nil
			}
			if oldest == nil {
				oldest, oldestContainer = pod, c
			}
			if kubelet != nil {
				// The kubelet allocates the Pod's containers in order: a later one is not being allocated.
				break
			}
		}
	}
	if oldest != nil {
		return oldest, oldestContainer, nil
	}
	return nil, nil, errors.Errorf("no Pod on node %s is waiting for %s", b.Node, resourceName)
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
