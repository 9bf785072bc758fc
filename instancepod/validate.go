package instancepod

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Facts are what the Instance rules need to know beyond the Instance: its type (nil when there is none) and
// whether the node it pins exists.
type Facts struct {
	Type       *workerv1.InstanceType
	NodeExists bool
}

// Validate checks an Instance against its pool, the rules a schema cannot check: the type and the pinned node
// exist, the request is one the pool can serve (a slice only where cards slice, a profile the pool offers, no
// more whole cards than the pool has, no accelerator on a CPU type, CPU and RAM within the type). old is the
// Instance before an update, nil on create; a running Instance is not re-judged, since its spec cannot change.
func Validate(inst, old *workerv1.Instance, f Facts) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	starting := old == nil || old.Spec.Stop && !inst.Spec.Stop
	if old != nil && old.Spec.Stop && !inst.Spec.Stop && old.Status.Phase != "" && old.Status.Phase != workerv1.InstanceStopped {
		// Its Pod is still going: starting now would race the stop.
		return field.ErrorList{field.Forbidden(spec.Child("stop"), "can only start stopped instance")}
	}
	if inst.Spec.Stop || !starting && old.Spec.Type == inst.Spec.Type && old.Spec.NodeName == inst.Spec.NodeName {
		return nil
	}
	if inst.Spec.NodeName != "" && !f.NodeExists {
		errs = append(errs, field.NotFound(spec.Child("nodeName"), inst.Spec.NodeName))
	}
	it := f.Type
	if it == nil {
		return append(errs, field.NotFound(spec.Child("type"), inst.Spec.Type))
	}
	res := spec.Child("resources")
	r := inst.Spec.Resources
	count, err := r.AcceleratorCount()
	if err != nil {
		return append(errs, field.Invalid(res.Child("accelerator"), r.Accelerator.String(), err.Error()))
	}
	sliced := r.AcceleratorSlicedMemoryPercentage != nil && *r.AcceleratorSlicedMemoryPercentage > 0
	if !it.Spec.Acceleratable {
		return append(errs, validateCPUType(inst, it, count, sliced, res)...)
	}
	pool := fmt.Sprintf("instance type %s (pool %s)", it.Name, it.Spec.AcceleratorGroup)
	switch {
	case r.AcceleratorPartitionedProfile != "":
		offered := partitionProfiles(it)
		if len(offered) == 0 {
			errs = append(errs, field.Forbidden(res.Child("acceleratorPartitionedProfile"), pool+" offers no hardware partitions"))
		} else if !contains(offered, r.AcceleratorPartitionedProfile) {
			errs = append(errs, field.NotSupported(res.Child("acceleratorPartitionedProfile"), r.AcceleratorPartitionedProfile, offered))
		}
	case sliced:
		if !slices(it) {
			msg := pool + " has no logical slicing"
			if v, err := Vendor(it); err == nil && v.SliceGap != "" {
				msg += ": " + v.SliceGap
			}
			errs = append(errs, field.Forbidden(res.Child("acceleratorSlicedMemoryPercentage"), msg))
		}
	default:
		if capacity := it.Status.Accelerator; capacity != nil && count > capacity.Capacity.Value() {
			errs = append(errs, field.Invalid(res.Child("accelerator"), count,
				fmt.Sprintf("%s has %d accelerators in all", pool, capacity.Capacity.Value())))
		}
	}
	return append(errs, unitBounds(inst, it, max(1, count), res)...)
}

// unitBounds checks RAM against unit RAM × units and local storage against the type's.
func unitBounds(inst *workerv1.Instance, it *workerv1.InstanceType, units int64, res *field.Path) field.ErrorList {
	var errs field.ErrorList
	r := inst.Spec.Resources
	if r.RAM != nil {
		limit := scale(it.Spec.UnitResources.RAM, units)
		if r.RAM.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(res.Child("ram"), r.RAM.String(),
				fmt.Sprintf("exceeds %s, the unit RAM of instance type %s times %d", limit.String(), it.Name, units)))
		}
	}
	if r.LocalStorage != nil && r.LocalStorage.Cmp(it.Spec.LocalStorage) > 0 {
		errs = append(errs, field.Invalid(res.Child("localStorage"), r.LocalStorage.String(),
			fmt.Sprintf("exceeds the local storage of instance type %s (%s)", it.Name, it.Spec.LocalStorage.String())))
	}
	return errs
}

func cpuCount(inst *workerv1.Instance) int64 {
	if inst.Spec.Resources.CPU == nil {
		return 1
	}
	return inst.Spec.Resources.CPU.Value()
}

// slices reports whether the type's cards slice logically: its descriptor says so, or, without one, its
// manufacturer slices.
func slices(it *workerv1.InstanceType) bool {
	if f := it.Spec.Feature; f != nil && f.LogicalSliced != nil {
		return f.LogicalSliced.MaxSize > 0
	}
	v, err := Vendor(it)
	return err == nil && v.SlicesPerCard > 0
}

// partitionProfiles lists the hardware partition profiles the type's pool offers.
func partitionProfiles(it *workerv1.InstanceType) []string {
	var out []string
	if f := it.Spec.Feature; f != nil && f.PhysicalSliced != nil {
		out = append(out, f.PhysicalSliced.Profiles...)
	}
	if p := it.Status.AcceleratorPartitioned; p != nil {
		for _, c := range p.RemainingProfiles {
			if !contains(out, c.Name) {
				out = append(out, c.Name)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// validateCPUType checks an Instance of a CPU type: no accelerator of any kind, CPU within the type's largest
// node, and the unit bounds.
func validateCPUType(inst *workerv1.Instance, it *workerv1.InstanceType, count int64, sliced bool, res *field.Path) field.ErrorList {
	var errs field.ErrorList
	r := inst.Spec.Resources
	if r.Accelerator != nil && count > 0 || sliced || r.AcceleratorPartitionedProfile != "" {
		errs = append(errs, field.Forbidden(res.Child("accelerator"),
			fmt.Sprintf("accelerator request must not be specified for non-acceleratable instance type %s", it.Name)))
	}
	if r.CPU != nil && it.Status.CPU != nil && r.CPU.Cmp(it.Status.CPU.Capacity) > 0 {
		errs = append(errs, field.Invalid(res.Child("cpu"), r.CPU.String(),
			fmt.Sprintf("exceeds the maximum CPU request of instance type %s (%s)", it.Name, it.Status.CPU.Capacity.String())))
	}
	return append(errs, unitBounds(inst, it, max(1, cpuCount(inst)), res)...)
}
