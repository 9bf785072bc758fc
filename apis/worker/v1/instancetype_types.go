package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// InstanceTypeSpec describes one schedulable pool: which hardware it covers (its general and accelerator
// groups, os and arch) and the size of one unit it charges. The hardware descriptors are copied from the
// matching InstanceTypeFlavor when the type is created. Every field but displayName, description and inactive
// is immutable after creation.
//
// +kubebuilder:validation:XValidation:rule="!self.acceleratable || (has(self.acceleratorGroup) && size(self.acceleratorGroup) > 0)",message="acceleratorGroup is required when acceleratable is true",fieldPath=".acceleratorGroup"
// +kubebuilder:validation:XValidation:rule="self.acceleratable || !has(self.acceleratorGroup) || size(self.acceleratorGroup) == 0",message="acceleratorGroup must be empty when acceleratable is false",fieldPath=".acceleratorGroup"
// +kubebuilder:validation:XValidation:rule="self.acceleratable || quantity(string(self.unitResources.cpu)).compareTo(quantity('1')) == 0",message="a CPU-only type must have unitResources.cpu of exactly 1",fieldPath=".unitResources.cpu"
type InstanceTypeSpec struct {
	// DisplayName is a human-friendly name shown by user interfaces.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Description explains what the pool is for.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Inactive puts the pool's ClusterQueue on Hold: nothing new is admitted, and running Instances keep
	// running.
	// +optional
	Inactive bool `json:"inactive,omitempty"`

	// Acceleratable is true for a pool of accelerators and false for a CPU-only pool.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="acceleratable is immutable"
	Acceleratable bool `json:"acceleratable"`

	// AcceleratorGroup is the accelerator key (aKey, e.g. nvidia-a10g) whose cards the pool covers. Required
	// when acceleratable is true; it names the catalog flavor gpustack--<acceleratorGroup>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="acceleratorGroup is immutable"
	// +optional
	AcceleratorGroup string `json:"acceleratorGroup,omitempty"`

	// GeneralGroup is the CPU key (gKey, e.g. amd-epyc-7r32) the pool is restricted to, or generic for any
	// CPU.
	// +kubebuilder:default=generic
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="generalGroup is immutable"
	// +optional
	GeneralGroup string `json:"generalGroup,omitempty"`

	// OS is the operating system of the pool's nodes, as in the kubernetes.io/os label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="os is immutable"
	OS string `json:"os"`

	// Arch is the CPU architecture of the pool's nodes, as in the kubernetes.io/arch label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="arch is immutable"
	Arch string `json:"arch"`

	InstanceTypeDescriptors `json:",inline"`

	// UnitResources is what one unit of the pool charges: per whole accelerator for an accelerated pool,
	// per core for a CPU pool.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="unitResources is immutable"
	UnitResources UnitResources `json:"unitResources"`

	// LocalStorage is the largest local (ephemeral) storage an Instance of this type may ask for, in Gi.
	// +kubebuilder:validation:XValidation:rule="string(self).endsWith('Gi') && quantity(string(self)).isGreaterThan(quantity('0'))",message="localStorage must be a positive quantity in Gi, e.g. 100Gi"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="localStorage is immutable"
	LocalStorage resource.Quantity `json:"localStorage"`
}

// InstanceTypeDescriptors are the hardware descriptors of a pool, copied from its catalog flavor.
type InstanceTypeDescriptors struct {
	// Manufacturer is the accelerator manufacturer (nvidia, amd, ascend, ...), or the CPU manufacturer of a
	// CPU-only pool.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="manufacturer is immutable"
	// +optional
	Manufacturer string `json:"manufacturer,omitempty"`

	// Product is the accelerator product name with spaces turned into dashes (NVIDIA-A10G).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="product is immutable"
	// +optional
	Product string `json:"product,omitempty"`

	// Family is the accelerator architecture family (Ampere), when the driver reports one.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="family is immutable"
	// +optional
	Family string `json:"family,omitempty"`

	// Memory is the memory of one accelerator (24Gi).
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="memory is immutable"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Cores is the number of compute cores of one accelerator (10240 CUDA cores on an A10G).
	// +kubebuilder:validation:Pattern=`^[0-9]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cores is immutable"
	// +optional
	Cores string `json:"cores,omitempty"`

	// Feature says how one accelerator of the pool can be divided.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="feature is immutable"
	// +optional
	Feature *InstanceTypeFeature `json:"feature,omitempty"`
}

// UnitResources is the CPU and memory charged for one unit of a pool.
type UnitResources struct {
	// CPU is the number of cores per unit: exactly 1 for a CPU-only pool, any positive whole number for an
	// accelerated pool.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isInteger() && quantity(string(self)).isGreaterThan(quantity('0'))",message="cpu must be a positive whole number of cores"
	CPU resource.Quantity `json:"cpu"`

	// RAM is the memory per unit.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="ram must be positive"
	RAM resource.Quantity `json:"ram"`
}

// InstanceTypeFeature says how one accelerator can be divided: logically (a runtime caps memory and compute)
// or physically (hardware partitions such as NVIDIA MIG).
type InstanceTypeFeature struct {
	// LogicalSliced describes soft-slicing of one accelerator.
	// +optional
	LogicalSliced *LogicalSlicedFeature `json:"logicalSliced,omitempty"`

	// PhysicalSliced describes hardware partitioning of one accelerator.
	// +optional
	PhysicalSliced *PhysicalSlicedFeature `json:"physicalSliced,omitempty"`
}

// LogicalSlicedFeature describes soft-slicing: how many slices one card takes and how budgets are given.
type LogicalSlicedFeature struct {
	// MaxSize is the number of slices one accelerator can hold; 0 means no logical slicing.
	// +kubebuilder:validation:Minimum=0
	MaxSize int32 `json:"maxSize"`

	// CoresPercentageOvercommit is true when the compute budgets of the slices on one card may add up to more
	// than 100 %.
	// +optional
	CoresPercentageOvercommit bool `json:"coresPercentageOvercommit,omitempty"`

	// MemoryPercentageStep is the granularity of a memory-percentage budget.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MemoryPercentageStep int32 `json:"memoryPercentageStep,omitempty"`
}

// PhysicalSlicedFeature describes hardware partitioning of one accelerator.
type PhysicalSlicedFeature struct {
	// MaxSize is the largest number of partitions one accelerator can hold; 0 means no partitioning.
	// +kubebuilder:validation:Minimum=0
	MaxSize int32 `json:"maxSize"`

	// Profiles are the partition profiles offered (e.g. 1g.10gb, 3g.40gb).
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Profiles []string `json:"profiles,omitempty"`
}

// InstanceTypePhase is the state of a pool, mirroring its ClusterQueue.
// +kubebuilder:validation:Enum=Active;Inactive;Draining
type InstanceTypePhase string

const (
	// InstanceTypeActive means the pool admits workloads.
	InstanceTypeActive InstanceTypePhase = "Active"
	// InstanceTypeInactive means the pool's queue is on Hold, or drained with nothing left reserved.
	InstanceTypeInactive InstanceTypePhase = "Inactive"
	// InstanceTypeDraining means the pool's queue is draining and still holds reservations.
	InstanceTypeDraining InstanceTypePhase = "Draining"
)

// ConditionReady is the type of the condition that says whether an InstanceType's pool admits work, an
// Instance runs, or the Secret behind an SSH key or pull secret is there; when it is False, its reason names
// the step that holds it.
const ConditionReady = "Ready"

// ReadyCondition is a Ready condition: True when ready, its reason the step (phase) it is at, "Pending" when
// there is none yet, and its message why. LastTransitionTime is left for meta.SetStatusCondition, which keeps
// it while the status stays the same.
func ReadyCondition(ready bool, reason, message string, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message,
		ObservedGeneration: generation}
	if ready {
		c.Status = metav1.ConditionTrue
	}
	if c.Reason == "" {
		c.Reason = "Pending"
	}
	return c
}

// CapacityView is one projection of a pool's capacity.
type CapacityView struct {
	// Capacity is the size of the view when nothing is allocated.
	Capacity resource.Quantity `json:"capacity"`

	// OnceMaxRequest is the largest single request the view can satisfy right now.
	OnceMaxRequest resource.Quantity `json:"onceMaxRequest"`

	// Remaining is what is still free.
	Remaining resource.Quantity `json:"remaining"`
}

// ProfileCount is a number of partitions of one profile.
type ProfileCount struct {
	// Name is the partition profile (3g.40gb).
	Name string `json:"name"`

	// Count is the number of partitions.
	// +kubebuilder:validation:Minimum=0
	Count int64 `json:"count"`
}

// PartitionedView is the PT view: hardware partitions, with per-profile counts.
type PartitionedView struct {
	CapacityView `json:",inline"`

	// AllocatedProfiles are the partitions in use, per profile, summed over the pool.
	// +optional
	AllocatedProfiles []ProfileCount `json:"allocatedProfiles,omitempty"`

	// RemainingProfiles are the partitions that could still be created, per profile, summed over the pool.
	// +optional
	RemainingProfiles []ProfileCount `json:"remainingProfiles,omitempty"`
}

// InstanceTypeSummary holds the preformatted cells of `kubectl get instancetype`.
type InstanceTypeSummary struct {
	// Unit is unitResources.cpu/unitResources.ram/localStorage (8/64Gi/100Gi).
	// +optional
	Unit string `json:"unit,omitempty"`

	// Accelerator is onceMaxRequest/remaining of the EX, SH, SL and PT views (1/1 1/10 100/100 0/0).
	// +optional
	Accelerator string `json:"accelerator,omitempty"`

	// CPU is onceMaxRequest/remaining of the CPU view, in cores (48/72).
	// +optional
	CPU string `json:"cpu,omitempty"`

	// Partitions is the per-profile remaining count of the PT view (3g.40gb=2,1g.10gb=7).
	// +optional
	Partitions string `json:"partitions,omitempty"`
}

// InstanceTypeStatus is the observed state of a pool: its entrance queue, its phase and its capacity in
// four accelerator views (EX whole cards, SH shares, SL slice units, PT partitions) and one CPU view.
type InstanceTypeStatus struct {
	// Phase mirrors the pool's ClusterQueue: Active, Inactive or Draining.
	// +optional
	Phase InstanceTypePhase `json:"phase,omitempty"`

	// PhaseMessage explains the phase in one line.
	// +optional
	PhaseMessage string `json:"phaseMessage,omitempty"`

	// Entrance is the name of the LocalQueue that fronts the pool in every user namespace.
	// +optional
	Entrance string `json:"entrance,omitempty"`

	// NoFlavorsSince is when the pool was first seen with no flavor left, unset while it has one. While it
	// holds work, its queue is held (new work waits) and drains what runs only once the
	// instance-type-drain-grace-period setting has passed since then: nodes that blink drain nothing.
	// +optional
	NoFlavorsSince *metav1.Time `json:"noFlavorsSince,omitempty"`

	// Accelerator is the EX view: whole free cards.
	// +optional
	Accelerator *CapacityView `json:"accelerator,omitempty"`

	// AcceleratorShared is the SH view: ownership shares, ten per card.
	// +optional
	AcceleratorShared *CapacityView `json:"acceleratorShared,omitempty"`

	// AcceleratorSliced is the SL view: slice units, one hundred per card.
	// +optional
	AcceleratorSliced *CapacityView `json:"acceleratorSliced,omitempty"`

	// AcceleratorPartitioned is the PT view: hardware partitions.
	// +optional
	AcceleratorPartitioned *PartitionedView `json:"acceleratorPartitioned,omitempty"`

	// CPU is the CPU view of a CPU-only pool, in cores.
	// +optional
	CPU *CapacityView `json:"cpu,omitempty"`

	// Summary holds the preformatted printer columns.
	// +optional
	Summary InstanceTypeSummary `json:"summary,omitempty"`

	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions report problems composing the pool.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InstanceType is a schedulable accelerator or CPU pool: a Kueue ClusterQueue of the same name, fronted by an
// entrance LocalQueue in every user namespace, with its live capacity in status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=instype,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ENTRANCE",type=string,JSONPath=`.status.entrance`
// +kubebuilder:printcolumn:name="UNIT(CPU/RAM)/STORAGE",type=string,JSONPath=`.status.summary.unit`
// +kubebuilder:printcolumn:name="ACCELERATOR(EX/SH/SL/PT)",type=string,JSONPath=`.status.summary.accelerator`
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.summary.cpu`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="PARTITIONS",type=string,JSONPath=`.status.summary.partitions`,priority=1
type InstanceType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the pool's identity and unit size.
	Spec InstanceTypeSpec `json:"spec"`

	// Status is the pool's observed capacity.
	// +optional
	Status InstanceTypeStatus `json:"status,omitempty"`
}

// InstanceTypeList is a list of InstanceTypes.
//
// +kubebuilder:object:root=true
type InstanceTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the InstanceTypes.
	Items []InstanceType `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &InstanceType{}, &InstanceTypeList{})
}
