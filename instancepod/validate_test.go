package instancepod

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestValidate(t *testing.T) {
	withStatus := func(it *workerv1.InstanceType) *workerv1.InstanceType {
		it.Status.Accelerator = &workerv1.CapacityView{Capacity: resource.MustParse("1")}
		it.Status.CPU = &workerv1.CapacityView{Capacity: resource.MustParse("72")}
		return it
	}
	noSlicing := withStatus(a10gType())
	noSlicing.Spec.Feature = &workerv1.InstanceTypeFeature{LogicalSliced: &workerv1.LogicalSlicedFeature{MaxSize: 0}}
	mlu := withStatus(a10gType())
	mlu.Name, mlu.Spec.AcceleratorGroup, mlu.Spec.Manufacturer = "gpustack--cambricon-mlu370-linux-amd64", "cambricon-mlu370", "cambricon"
	mig := withStatus(a10gType())
	mig.Spec.Feature = &workerv1.InstanceTypeFeature{PhysicalSliced: &workerv1.PhysicalSlicedFeature{MaxSize: 7, Profiles: []string{"1g.10gb", "3g.40gb"}}}
	pinned := instance(workerv1.InstanceResources{})
	pinned.Spec.NodeName = "node-gone"
	stopped := instance(workerv1.InstanceResources{})
	stopped.Spec.Stop = true
	stopping := instance(workerv1.InstanceResources{})
	stopping.Spec.Stop, stopping.Status.Phase = true, workerv1.InstanceStopping
	cases := map[string]struct {
		reason string
		inst   *workerv1.Instance
		old    *workerv1.Instance
		facts  Facts
		want   []string
	}{
		"SlicedDemo": {reason: "Step 3's slice fits the A10G pool.",
			inst:  instance(workerv1.InstanceResources{AcceleratorSlicedMemoryPercentage: ptr.To[int32](20)}),
			facts: Facts{Type: withStatus(a10gType())}},
		"MissingNode": {reason: "A pin to a node that does not exist is refused at creation.",
			inst: pinned, facts: Facts{Type: withStatus(a10gType())}, want: []string{`spec.nodeName: Not found: "node-gone"`}},
		"MissingType": {reason: "A type that does not exist is refused.",
			inst: instance(workerv1.InstanceResources{}), want: []string{`spec.type: Not found: "t"`}},
		"StoppedIsNotJudged": {reason: "A stopped Instance may name a type that is gone: it is not starting.",
			inst: stopped},
		"StartWhileStopping": {reason: "An Instance whose Pod is still going cannot be started yet.",
			inst: instance(workerv1.InstanceResources{}), old: stopping, facts: Facts{Type: withStatus(a10gType())},
			want: []string{"spec.stop: Forbidden: can only start stopped instance"}},
		"StartStopped": {reason: "A stopped Instance starts when its type exists.",
			inst: instance(workerv1.InstanceResources{}), old: func() *workerv1.Instance {
				o := stopping.DeepCopy()
				o.Status.Phase = workerv1.InstanceStopped
				return o
			}(), facts: Facts{Type: withStatus(a10gType())}},
		"TooManyCards": {reason: "More whole cards than the pool has.",
			inst:  instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromString("2"))}),
			facts: Facts{Type: withStatus(a10gType())},
			want:  []string{"spec.resources.accelerator: Invalid value: 2: instance type gpustack--nvidia-a10g-linux-amd64 (pool nvidia-a10g) has 1 accelerators in all"}},
		"NoSlicing": {reason: "A slice on a pool whose cards do not slice.",
			inst:  instance(workerv1.InstanceResources{AcceleratorSlicedMemoryPercentage: ptr.To[int32](20)}),
			facts: Facts{Type: noSlicing}, want: []string{"spec.resources.acceleratorSlicedMemoryPercentage: Forbidden: instance type gpustack--nvidia-a10g-linux-amd64 (pool nvidia-a10g) has no logical slicing"}},
		"SliceNotEnforced": {reason: "A slice of a vendor whose slices the agent cannot enforce is refused, naming the vendor's enforcer.",
			inst:  instance(workerv1.InstanceResources{AcceleratorSlicedMemoryPercentage: ptr.To[int32](20)}),
			facts: Facts{Type: mlu}, want: []string{"spec.resources.acceleratorSlicedMemoryPercentage: Forbidden: instance type " +
				"gpustack--cambricon-mlu370-linux-amd64 (pool cambricon-mlu370) has no logical slicing: the device manager cannot " +
				"create Cambricon's sMLU profiles (cnDev), which enforce a slice's budget"}},
		"ProfileNotOffered": {reason: "A profile the pool does not offer lists the ones it does.",
			inst:  instance(workerv1.InstanceResources{AcceleratorPartitionedProfile: "7g.80gb"}),
			facts: Facts{Type: mig}, want: []string{`spec.resources.acceleratorPartitionedProfile: Unsupported value: "7g.80gb": supported values: "1g.10gb", "3g.40gb"`}},
		"ProfileWithoutPartitions": {reason: "A profile on a pool without partitioning.",
			inst:  instance(workerv1.InstanceResources{AcceleratorPartitionedProfile: "3g.40gb"}),
			facts: Facts{Type: withStatus(a10gType())}, want: []string{"offers no hardware partitions"}},
		"AcceleratorOnCPUType": {reason: "An accelerator on a CPU type.",
			inst:  instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(1))}),
			facts: Facts{Type: withStatus(genericType())}, want: []string{"accelerator request must not be specified for non-acceleratable instance type gpustack--generic-linux-amd64"}},
		"TooMuchCPU": {reason: "More CPU than the CPU pool has.",
			inst:  instance(workerv1.InstanceResources{CPU: ptr.To(resource.MustParse("100"))}),
			facts: Facts{Type: withStatus(genericType())}, want: []string{"exceeds the maximum CPU request of instance type gpustack--generic-linux-amd64"}},
		"TooMuchRAM": {reason: "More RAM than the unit RAM times the cards.",
			inst:  instance(workerv1.InstanceResources{RAM: ptr.To(resource.MustParse("65Gi"))}),
			facts: Facts{Type: withStatus(a10gType())}, want: []string{"spec.resources.ram: Invalid value: \"65Gi\": exceeds 64Gi"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := Validate(tc.inst, tc.old, tc.facts)
			if len(errs) != len(tc.want) {
				t.Fatalf("%s\nValidate(...) = %v, want %d errors: %v", tc.reason, errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tc.want[i]) {
					t.Errorf("%s\nValidate(...)[%d] = %q, want one containing %q", tc.reason, i, e.Error(), tc.want[i])
				}
			}
		})
	}
}
