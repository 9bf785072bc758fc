package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/pools"
	"github.com/gpustack/gpustack-operator/internal/vendors"
)

// PodFolder folds a queued Pod's slice budget into units: .sliced.units is the memory asked, as a share of
// the pool's card, in credits. The card comes from the InstanceType whose entrance the Pod queues in.
type PodFolder struct {
	// Reader reads InstanceTypes, from the cache.
	Reader client.Reader
}

// Default recomputes every slice's units, whatever the client set, preferring the memory percentage over
// MiB, and defaults the slice's compute budget to 100 %. A slice without a memory budget is left for the
// Pod rules to refuse.
func (d *PodFolder) Default(ctx context.Context, pod *corev1.Pod) error {
	queue := pod.Labels["kueue.x-k8s.io/queue-name"]
	cardMiB := int64(0)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, v := range vendors.All() {
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
						return fmt.Errorf("spec.containers[%d].resources.limits[%s.memory-mib]: %w", i, base, err)
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

// cardMemory returns the memory of one card of the pool whose entrance the queue is, in MiB.
func (d *PodFolder) cardMemory(ctx context.Context, namespace, queue string) (int64, error) {
	var types workerv1.InstanceTypeList
	if err := d.Reader.List(ctx, &types); err != nil {
		return 0, fmt.Errorf("cannot list instance types: %w", err)
	}
	for _, it := range types.Items {
		if it.Status.Entrance != queue && pools.EntranceName(it.Name) != queue {
			continue
		}
		if it.Spec.Memory == nil || it.Spec.Memory.Value() <= 0 {
			return 0, fmt.Errorf("the card memory of instance type %s is unknown, so MiB cannot be folded into units; ask for a memory percentage", it.Name)
		}
		return it.Spec.Memory.Value() >> 20, nil
	}
	return 0, fmt.Errorf("queue %s of namespace %s is the entrance of no instance type", queue, namespace)
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
