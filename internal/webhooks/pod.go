package webhooks

import (
	"context"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// PodFolder folds a queued Pod's slice budget and partitions into units: .sliced.units and .partitioned.units
// are the memory asked, as a share of the pool's card, in credits. The card comes from the InstanceType whose
// entrance the Pod queues in; a partition profile's memory from the nodes' inventories.
type PodFolder struct {
	// Reader reads InstanceTypes and Devices, from the cache.
	Reader client.Reader
}

// Default recomputes every slice's and partition's units, whatever the client set, preferring a slice's
// memory percentage over MiB, and defaults the slice's compute budget to 100 %. A slice without a memory
// budget is left for the Pod rules to refuse. A request for shares on N >= 2 cards is kept to nodes with at least N cards of the
// pool's group.
func (d *PodFolder) Default(ctx context.Context, pod *corev1.Pod) error {
	queue := pod.Labels[instancepod.LabelQueueName]
	cardMiB := int64(0)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, v := range vendors.All() {
			if n := value(c.Resources.Limits, v.ResourceName+".shared"); n >= 2 {
				it, err := d.typeOf(ctx, pod.Namespace, queue)
				if err != nil || it.Spec.AcceleratorGroup == "" {
					return errors.Errorf("spec.containers[%d].resources.limits[%s.shared]: cannot read the accelerator group of queue %s, so %d shares cannot be kept to one node with %d cards", i, v.ResourceName, queue, n, n)
				}
				requireCards(pod, it.Spec.AcceleratorGroup, n)
			}
			if err := d.foldPartitions(ctx, pod, c, v); err != nil {
				return errors.Wrapf(err, "spec.containers[%d].resources.limits", i)
			}
			base := v.ResourceName + ".sliced"
			limits := c.Resources.Limits
			if !has(limits, base) {
				continue
			}
			var units int64
			switch {
			case has(limits, base+".memory-percentage"):
				units = pools.SliceUnits(value(limits, base+".memory-percentage"))
			case has(limits, base+".memory-mib"):
				if cardMiB == 0 {
					var err error
					if cardMiB, err = d.cardMemory(ctx, pod.Namespace, queue); err != nil {
						return errors.Wrapf(err, "spec.containers[%d].resources.limits[%s.memory-mib]", i, base)
					}
				}
				units = min(pools.M, value(limits, base+".memory-mib")*pools.M/cardMiB)
			default:
				continue
			}
			setBoth(c, base+".units", units)
			if !has(limits, base+".cores-percentage") {
				setBoth(c, base+".cores-percentage", 100)
			}
		}
	}
	return nil
}

// foldPartitions sets the container's .partitioned.units to what its partitions cost: for each profile key
// (<base>.partitioned.<kind>-<profile>), the count asked times the profile's memory as a share of the pool's
// card. A container that asks no partition, or one of a profile no card offers, is left alone.
func (d *PodFolder) foldPartitions(ctx context.Context, pod *corev1.Pod, c *corev1.Container, v vendors.Vendor) error {
	if v.PartitionKind == "" {
		return nil
	}
	prefix := v.ResourceName + ".partitioned." + v.PartitionKind + "-"
	profiles := map[string]string{}
	for name := range c.Resources.Limits {
		if profile, ok := strings.CutPrefix(string(name), prefix); ok {
			profiles[string(name)] = profile
		}
	}
	if len(profiles) == 0 {
		return nil
	}
	it, err := d.typeOf(ctx, pod.Namespace, pod.Labels[instancepod.LabelQueueName])
	if err != nil {
		return err
	}
	var inventories workerv1.DevicesList
	if err := d.Reader.List(ctx, &inventories); err != nil {
		return errors.Wrap(err, "cannot list devices")
	}
	var units int64
	for name, profile := range profiles {
		one, ok := pools.PartitionUnits(inventories.Items, it.Spec.AcceleratorGroup, profile)
		if !ok {
			// No card offers it, so no node can place it: the Pod waits unschedulable, and the Pod rules, not
			// the fold, say what is wrong with the request.
			return nil
		}
		units += one * value(c.Resources.Limits, name)
	}
	setBoth(c, v.ResourceName+".partitioned.units", units)
	return nil
}

// cardMemory returns the memory of one card of the pool whose entrance the queue is, in MiB.
func (d *PodFolder) cardMemory(ctx context.Context, namespace, queue string) (int64, error) {
	it, err := d.typeOf(ctx, namespace, queue)
	if err != nil {
		return 0, err
	}
	if it.Spec.Memory == nil || it.Spec.Memory.Value() <= 0 {
		return 0, errors.Errorf("the card memory of instance type %s is unknown, so MiB cannot be folded into units; ask for a memory percentage", it.Name)
	}
	return it.Spec.Memory.Value() >> 20, nil
}

// typeOf returns the InstanceType whose entrance the queue is.
func (d *PodFolder) typeOf(ctx context.Context, namespace, queue string) (*workerv1.InstanceType, error) {
	var types workerv1.InstanceTypeList
	if err := d.Reader.List(ctx, &types); err != nil {
		return nil, errors.Wrap(err, "cannot list instance types")
	}
	for i := range types.Items {
		if it := &types.Items[i]; it.Status.Entrance == queue || pools.EntranceName(it.Name) == queue {
			return it, nil
		}
	}
	return nil, errors.Errorf("queue %s of namespace %s is the entrance of no instance type", queue, namespace)
}

// requireCards ANDs "the node has at least n cards of the group" into every required node-affinity term.
func requireCards(pod *corev1.Pod, group string, n int64) {
	req := corev1.NodeSelectorRequirement{Key: pools.AcceleratablePrefix + group + ".count",
		Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(n-1, 10)}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(*terms) == 0 {
		*terms = append(*terms, corev1.NodeSelectorTerm{})
	}
	// Whatever the client put under the key is replaced, so a second invocation changes nothing.
	for i := range *terms {
		t := &(*terms)[i]
		kept := t.MatchExpressions[:0]
		for _, e := range t.MatchExpressions {
			if e.Key != req.Key {
				kept = append(kept, e)
			}
		}
		t.MatchExpressions = append(kept, req)
	}
}

func has(l corev1.ResourceList, name string) bool {
	_, ok := l[corev1.ResourceName(name)]
	return ok
}

func value(l corev1.ResourceList, name string) int64 {
	q := l[corev1.ResourceName(name)]
	return q.Value()
}

// setBoth sets an extended resource's limit and request, which Kubernetes requires to be equal.
func setBoth(c *corev1.Container, name string, v int64) {
	q := *resource.NewQuantity(v, resource.DecimalSI)
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = q
	c.Resources.Requests[corev1.ResourceName(name)] = q.DeepCopy()
}
