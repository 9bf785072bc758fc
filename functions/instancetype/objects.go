package instancetype

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/pools"
)

// NodeDevicesCheck is the AdmissionCheck that guards every accelerated pool against fragmentation.
const NodeDevicesCheck = "gpustack-node-devices"

// PoolOf returns the pool an InstanceType covers.
func PoolOf(spec workerv1.InstanceTypeSpec) pools.Pool {
	general := spec.GeneralGroup
	if general == "" {
		general = pools.Generic
	}
	return pools.Pool{GeneralGroup: general, AcceleratorGroup: spec.AcceleratorGroup, OS: spec.OS, Arch: spec.Arch}
}

// unboundedCPU is the cpu quota of an accelerated queue. Such a queue judges credits only, but Kueue's default
// quotaCheckStrategy (BlockUndeclared, which the operator keeps: see kueueconfig.ExcludeResourcePrefixes)
// refuses a Workload asking for a resource its queue does not cover; an accelerated workload's CPU is
// therefore covered, without a bound the pool's nodes could reach.
var unboundedCPU = resource.MustParse("1M")

// ClusterQueue returns the pool's queue: isolated (no cohort), covering the manufacturer's credits with
// cards x M per flavor for an accelerated pool (and an unbounded cpu), or cpu with the flavors' cores for a
// CPU pool.
func ClusterQueue(in *xrs.InstanceTypePoolSpec) *kueuev1beta2.ClusterQueue {
	pool := PoolOf(in.Type)
	labels := map[string]string{
		workerv1.LabelOS: in.Type.OS, workerv1.LabelArch: in.Type.Arch,
		workerv1.LabelAcceleratable: "false", workerv1.LabelResourceType: workerv1.ResourceTypeInstTypes,
	}
	covered := corev1.ResourceCPU
	if in.Type.Acceleratable {
		labels[workerv1.LabelAcceleratable] = "true"
		labels[workerv1.AcceleratablePrefix+in.Type.AcceleratorGroup] = "true"
		covered = corev1.ResourceName("credits.gpustack.ai/" + pools.ManufacturerOf(in.Type.AcceleratorGroup))
	}
	if pool.GeneralGroup != pools.Generic {
		labels[workerv1.GeneralPrefix+pool.GeneralGroup] = "true"
	}
	coveredResources := []corev1.ResourceName{covered}
	if in.Type.Acceleratable {
		coveredResources = append(coveredResources, corev1.ResourceCPU)
	}
	var flavors []kueuev1beta2.FlavorQuotas
	for _, f := range in.Flavors {
		if !pool.Matches(f) {
			continue
		}
		quota := resource.NewQuantity(f.Capacity(), resource.DecimalSI)
		if f.Accelerated() {
			quota = resource.NewQuantity(f.Capacity()*pools.M, resource.DecimalSI)
		}
		quotas := []kueuev1beta2.ResourceQuota{{Name: covered, NominalQuota: *quota}}
		if in.Type.Acceleratable {
			quotas = append(quotas, kueuev1beta2.ResourceQuota{Name: corev1.ResourceCPU, NominalQuota: unboundedCPU})
		}
		flavors = append(flavors, kueuev1beta2.FlavorQuotas{Name: kueuev1beta2.ResourceFlavorReference(f.Name), Resources: quotas})
	}
	cq := &kueuev1beta2.ClusterQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: kueuev1beta2.SchemeGroupVersion.String(), Kind: "ClusterQueue"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Labels: labels},
		Spec: kueuev1beta2.ClusterQueueSpec{
			// Every namespace may use the queue (through its entrance LocalQueue). Not an empty selector: the
			// function protocol's JSON omits {} and Kueue reads a missing selector as no namespace at all.
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpExists},
			}},
		},
	}
	if len(flavors) > 0 {
		cq.Spec.ResourceGroups = []kueuev1beta2.ResourceGroup{{
			CoveredResources: coveredResources, Flavors: flavors,
		}}
	}
	if in.Type.Acceleratable && in.Settings.DerivedFromNode && in.Settings.NodeDevicesCheckActive {
		cq.Spec.AdmissionChecksStrategy = &kueuev1beta2.AdmissionChecksStrategy{
			AdmissionChecks: []kueuev1beta2.AdmissionCheckStrategyRule{{Name: NodeDevicesCheck}},
		}
	}
	// A queue the system stops because its pool lost its flavors says so in its drain bookkeeping.
	switch {
	case in.Deleting:
		cq.Spec.StopPolicy = ptr.To(kueuev1beta2.HoldAndDrain)
	case drainingEmpty(in):
		stopForWantOfFlavors(cq, workerv1.MigrationDraining, kueuev1beta2.HoldAndDrain)
	case holdingEmpty(in):
		stopForWantOfFlavors(cq, workerv1.MigrationHolding, kueuev1beta2.Hold)
	case in.Type.Inactive:
		cq.Spec.StopPolicy = ptr.To(kueuev1beta2.Hold)
	case emptyPlan(in):
		cq.Spec.StopPolicy = ptr.To(kueuev1beta2.Hold)
		cq.Annotations = map[string]string{workerv1.AnnotationEmptyPlanHold: "true"}
	}
	return cq
}

// stopForWantOfFlavors stops a queue whose pool lost its flavors with policy, and records the phase and the
// policy in the queue's drain bookkeeping annotations.
func stopForWantOfFlavors(cq *kueuev1beta2.ClusterQueue, phase string, policy kueuev1beta2.StopPolicy) {
	cq.Spec.StopPolicy = ptr.To(policy)
	cq.Annotations = map[string]string{workerv1.AnnotationMigrationPhase: phase, workerv1.AnnotationMigrationStopPolicy: string(policy)}
}

// phase is the type's phase and its message, as the ClusterQueue's stop policy and reservations make it.
func phase(in *xrs.InstanceTypePoolSpec) (workerv1.InstanceTypePhase, string) {
	switch {
	case in.Deleting && in.ReservingWorkloads > 0:
		return workerv1.InstanceTypeDraining, fmt.Sprintf("the type is being deleted: its queue drains %d workload(s)", in.ReservingWorkloads)
	case in.Deleting:
		return workerv1.InstanceTypeInactive, "the type is being deleted: its queue is drained and goes"
	case drainingEmpty(in):
		return workerv1.InstanceTypeDraining, fmt.Sprintf("the pool has no flavors left: its queue drains %d workload(s)", in.ReservingWorkloads)
	case holdingEmpty(in):
		at, _ := DrainAt(in)
		return workerv1.InstanceTypeInactive, fmt.Sprintf("the pool has no flavors left since %s: new work waits, and its queue drains %d workload(s) at %s unless they come back",
			NoFlavorsSince(in).UTC().Format(time.RFC3339), in.ReservingWorkloads, at.UTC().Format(time.RFC3339))
	case in.Type.Inactive:
		return workerv1.InstanceTypeInactive, "spec.inactive holds the queue"
	case emptyPlan(in):
		return workerv1.InstanceTypeInactive, "the pool has no flavors yet: its new queue has no resource groups and is held until a node of the pool is ready"
	}
	return workerv1.InstanceTypeActive, ""
}

// LocalQueue returns the pool's entrance in one namespace.
func LocalQueue(pool, namespace string) *kueuev1beta2.LocalQueue {
	return &kueuev1beta2.LocalQueue{
		TypeMeta: metav1.TypeMeta{APIVersion: kueuev1beta2.SchemeGroupVersion.String(), Kind: "LocalQueue"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pools.EntranceName(pool),
			Annotations: map[string]string{workerv1.AnnotationQueue: pool}},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(pool)},
	}
}

// Views projects the pool's views from the flavors and nodes of in.
func Views(in *xrs.InstanceTypePoolSpec) pools.Views {
	expanded := pools.Expand(in.Nodes)
	nodes := make(map[string]pools.Node, len(expanded))
	for _, n := range expanded {
		nodes[n.Name] = n
	}
	return pools.PoolViews(PoolOf(in.Type), in.Flavors, nodes)
}

// Status returns the InstanceType's status: phase, entrance and the views of its pool.
func Status(in *xrs.InstanceTypePoolSpec) workerv1.InstanceTypeStatus {
	return statusWith(in, Views(in))
}

// statusWith is Status for a pool whose views are v.
func statusWith(in *xrs.InstanceTypePoolSpec, v pools.Views) workerv1.InstanceTypeStatus {
	st := workerv1.InstanceTypeStatus{Entrance: pools.EntranceName(in.Name), ObservedGeneration: in.Generation}
	st.Phase, st.PhaseMessage = phase(in)
	st.NoFlavorsSince = NoFlavorsSince(in)
	if in.Type.Acceleratable {
		st.Accelerator, st.AcceleratorShared, st.AcceleratorSliced = view(v.Exclusive), view(v.Shared), view(v.Sliced)
		st.AcceleratorPartitioned = &workerv1.PartitionedView{CapacityView: *view(v.Partitioned)}
		for _, p := range sortedProfiles(v.RemainingProfiles) {
			st.AcceleratorPartitioned.RemainingProfiles = append(st.AcceleratorPartitioned.RemainingProfiles,
				workerv1.ProfileCount{Name: p, Count: v.RemainingProfiles[p]})
		}
	} else {
		st.CPU = view(v.CPU)
	}
	it := workerv1.InstanceType{Spec: in.Type, Status: st}
	it.Summarize()
	return it.Status
}

func view(v pools.View) *workerv1.CapacityView {
	return &workerv1.CapacityView{
		Capacity:       *resource.NewQuantity(v.Capacity, resource.DecimalSI),
		OnceMaxRequest: *resource.NewQuantity(v.OnceMaxRequest, resource.DecimalSI),
		Remaining:      *resource.NewQuantity(v.Remaining, resource.DecimalSI),
	}
}
