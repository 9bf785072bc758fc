package instancepod

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// PodResources are the resources of an Instance Pod's two containers.
type PodResources struct {
	// Main is the workload's: CPU, RAM, local storage and its accelerator request.
	Main corev1.ResourceRequirements
	// SSH is the sidecar's: visibility of main's cards, nothing charged.
	SSH corev1.ResourceRequirements
}

// Overcommitted requests per unit when instance-general-resources-overcommit is on: a CPU type's core asks
// 800m and 128Mi; an accelerated type's accelerator asks 100m and 128Mi; storage asks an eighth.
var (
	generalUnitCPU     = resource.MustParse("800m")
	acceleratedUnitCPU = resource.MustParse("100m")
	unitRAM            = resource.MustParse("128Mi")
)

// Resources returns the containers' resources: CPU and RAM from the Instance or the type's units (per
// accelerator on an accelerated type, per core on a CPU type), local storage, and the accelerator request of
// its family: whole cards, partitions of a profile, or one slice with its units folded from the memory
// percentage.
func Resources(inst *workerv1.Instance, it *workerv1.InstanceType, overcommit bool) (PodResources, error) {
	r := inst.Spec.Resources
	var out PodResources
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	sshLimits := corev1.ResourceList{}
	count, err := r.AcceleratorCount()
	if err != nil {
		return out, err
	}
	cpu, ram := it.Spec.UnitResources.CPU.DeepCopy(), it.Spec.UnitResources.RAM.DeepCopy()
	switch {
	case it.Spec.Acceleratable:
		if count < 1 {
			return out, errors.Errorf("spec.resources.accelerator: an accelerated type needs at least 1 accelerator, got %d", count)
		}
		cpu, ram = scale(cpu, count), scale(ram, count)
		v, err := Vendor(it)
		if err != nil {
			return out, err
		}
		base := v.ResourceName
		switch {
		case r.AcceleratorPartitionedProfile != "":
			if v.PartitionKind == "" {
				return out, errors.Errorf("spec.resources.acceleratorPartitionedProfile: %s accelerators have no hardware partitions", v.Key)
			}
			// The Pod webhook folds the profile into .partitioned.units from the pool's inventory.
			set(limits, base+".partitioned", count)
			set(limits, v.ProfilePrefix()+r.AcceleratorPartitionedProfile, count)
		case r.AcceleratorSlicedMemoryPercentage != nil && *r.AcceleratorSlicedMemoryPercentage > 0:
			if count != 1 {
				return out, errors.Errorf("spec.resources.accelerator: a slice is always 1 accelerator, got %d", count)
			}
			mem := int64(*r.AcceleratorSlicedMemoryPercentage)
			cores := int64(100)
			if r.AcceleratorSlicedCoresPercentage != nil && *r.AcceleratorSlicedCoresPercentage > 0 {
				cores = int64(*r.AcceleratorSlicedCoresPercentage)
			}
			set(limits, base+".sliced", 1)
			set(limits, base+".sliced.memory-percentage", mem)
			set(limits, base+".sliced.cores-percentage", cores)
			set(limits, base+".sliced.units", pools.SliceUnits(mem))
		default:
			if r.AcceleratorSlicedCoresPercentage != nil && *r.AcceleratorSlicedCoresPercentage > 0 {
				return out, errors.New("spec.resources.acceleratorSlicedCoresPercentage: a cores budget needs acceleratorSlicedMemoryPercentage")
			}
			set(limits, base, count)
		}
		set(sshLimits, "device.gpustack.ai/"+v.Key+".visibility", count)
	case r.Accelerator != nil && count > 0:
		return out, errors.Errorf("spec.resources.accelerator: accelerator request must not be specified for non-acceleratable instance type %s", it.Name)
	default:
		count = 1
		if r.CPU != nil {
			count = r.CPU.Value()
		}
		cpu, ram = scale(cpu, count), scale(ram, count)
	}
	if r.CPU != nil {
		cpu = r.CPU.DeepCopy()
	}
	if r.RAM != nil {
		ram = r.RAM.DeepCopy()
	}
	storage := DefaultLocalStorage.DeepCopy()
	if it.Spec.LocalStorage.Cmp(storage) < 0 {
		storage = it.Spec.LocalStorage.DeepCopy()
	}
	if r.LocalStorage != nil {
		storage = r.LocalStorage.DeepCopy()
	}
	limits[corev1.ResourceCPU], limits[corev1.ResourceMemory], limits[corev1.ResourceEphemeralStorage] = cpu, ram, storage
	for k, v := range limits {
		requests[k] = v.DeepCopy()
	}
	if overcommit {
		unitCPU, units := generalUnitCPU, count
		if it.Spec.Acceleratable {
			unitCPU = acceleratedUnitCPU
		}
		requests[corev1.ResourceCPU] = minQ(scale(unitCPU, units), cpu)
		requests[corev1.ResourceMemory] = minQ(scale(unitRAM, units), ram)
		eighth := resource.NewQuantity(storage.Value()/8, resource.BinarySI)
		requests[corev1.ResourceEphemeralStorage] = *eighth
	}
	out.Main = corev1.ResourceRequirements{Limits: limits, Requests: requests}
	if len(sshLimits) > 0 {
		out.SSH = corev1.ResourceRequirements{Limits: sshLimits, Requests: sshLimits.DeepCopy()}
	}
	return out, nil
}

func set(l corev1.ResourceList, name string, v int64) {
	l[corev1.ResourceName(name)] = *resource.NewQuantity(v, resource.DecimalSI)
}

func scale(q resource.Quantity, n int64) resource.Quantity {
	out := resource.NewMilliQuantity(q.MilliValue()*n, q.Format)
	return *out
}

func minQ(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}
