package webhooks

import (
	"context"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
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

// Default folds the Pod's containers and init containers (fold says how).
func (d *PodFolder) Default(ctx context.Context, pod *corev1.Pod) error {
	return fold(ctx, d.Reader, pod.Namespace, pod.Labels[workerv1.LabelQueueName], &pod.Spec, "spec")
}

// JobFolder folds a queued Job's Pod template as PodFolder folds a Pod: Kueue charges a Job by its template,
// and the Job's Pods, which do not queue themselves, never reach PodFolder.
type JobFolder struct {
	// Reader reads InstanceTypes and Devices, from the cache.
	Reader client.Reader
}

// Default folds the Job's Pod template (fold says how).
func (d *JobFolder) Default(ctx context.Context, job *batchv1.Job) error {
	return fold(ctx, d.Reader, job.Namespace, job.Labels[workerv1.LabelQueueName], &job.Spec.Template.Spec, "spec.template.spec")
}

// fold recomputes the units of every slice and partition a Pod spec's containers and init containers ask,
// whatever the client set, preferring a slice's memory percentage over MiB, and defaults the slice's compute
// budget to 100 %. Init containers count as Kueue counts them (the largest of them against the sum of the
// rest), so a budget in one cannot be charged nothing. A slice without a memory budget is left for the Pod
// rules to refuse. A request for shares on N >= 2 cards is kept to nodes with at least N cards of the pool's
// group. path is where spec is in the object, for the messages.
func fold(ctx context.Context, r client.Reader, namespace, queue string, spec *corev1.PodSpec, path string) error {
	d := folder{reader: r, namespace: namespace, queue: queue}
	for _, list := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range list.containers {
			if err := d.container(ctx, spec, &list.containers[i]); err != nil {
				return errors.Wrapf(err, "%s.%s[%d].resources.limits", path, list.field, i)
			}
		}
	}
	return nil
}

// folder folds the containers of one Pod spec, reading the pool's card once.
type folder struct {
	reader           client.Reader
	namespace, queue string
	cardMiB          int64
}

func (d *folder) container(ctx context.Context, spec *corev1.PodSpec, c *corev1.Container) error {
	for _, v := range vendors.All() {
		if n := value(c.Resources.Limits, v.ResourceName+".shared"); n >= 2 {
			it, err := d.typeOf(ctx)
			if err != nil || it.Spec.AcceleratorGroup == "" {
				return errors.Errorf("%s.shared: cannot read the accelerator group of queue %s, so %d shares cannot be kept to one node with %d cards", v.ResourceName, d.queue, n, n)
			}
			requireCards(spec, it.Spec.AcceleratorGroup, n)
		}
		if err := d.foldPartitions(ctx, c, v); err != nil {
			return err
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
			if d.cardMiB == 0 {
				var err error
				if d.cardMiB, err = d.cardMemory(ctx); err != nil {
					return errors.Wrapf(err, "%s.memory-mib", base)
				}
			}
			units = min(pools.M, value(limits, base+".memory-mib")*pools.M/d.cardMiB)
		default:
			continue
		}
		setBoth(c, base+".units", units)
		if !has(limits, base+".cores-percentage") {
			setBoth(c, base+".cores-percentage", 100)
		}
	}
	return nil
}

// foldPartitions sets the container's .partitioned.units to what its partitions cost: for each profile key
// (<base>.partitioned.<kind>-<profile>), the count asked times the profile's memory as a share of the pool's
// card. A container that asks no partition, or one of a profile no card offers, is left alone.
func (d *folder) foldPartitions(ctx context.Context, c *corev1.Container, v vendors.Vendor) error {
	if v.PartitionKind == "" {
		return nil
	}
	prefix := v.ProfilePrefix()
	profiles := map[string]string{}
	for name := range c.Resources.Limits {
		if profile, ok := strings.CutPrefix(string(name), prefix); ok {
			profiles[string(name)] = profile
		}
	}
	if len(profiles) == 0 {
		return nil
	}
	it, err := d.typeOf(ctx)
	if err != nil {
		return err
	}
	var inventories workerv1.DevicesList
	if err := d.reader.List(ctx, &inventories); err != nil {
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
func (d *folder) cardMemory(ctx context.Context) (int64, error) {
	it, err := d.typeOf(ctx)
	if err != nil {
		return 0, err
	}
	if it.Spec.Memory == nil || it.Spec.Memory.Value() <= 0 {
		return 0, errors.Errorf("the card memory of instance type %s is unknown, so MiB cannot be folded into units; ask for a memory percentage", it.Name)
	}
	return it.Spec.Memory.Value() >> 20, nil
}

// typeOf returns the InstanceType whose entrance the queue is.
func (d *folder) typeOf(ctx context.Context) (*workerv1.InstanceType, error) {
	var types workerv1.InstanceTypeList
	if err := d.reader.List(ctx, &types); err != nil {
		return nil, errors.Wrap(err, "cannot list instance types")
	}
	for i := range types.Items {
		if it := &types.Items[i]; it.Status.Entrance == d.queue || pools.EntranceName(it.Name) == d.queue {
			return it, nil
		}
	}
	return nil, errors.Errorf("queue %s of namespace %s is the entrance of no instance type", d.queue, d.namespace)
}

// requireCards ANDs "the node has at least n cards of the group" into every required node-affinity term.
func requireCards(spec *corev1.PodSpec, group string, n int64) {
	req := corev1.NodeSelectorRequirement{Key: workerv1.AcceleratablePrefix + group + ".count",
		Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(n-1, 10)}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
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
