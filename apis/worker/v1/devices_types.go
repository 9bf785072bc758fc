package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// CreditsPerAccelerator is the number of credits one whole accelerator is worth (M). A share is a tenth of it,
// a slice unit a hundredth, so all arithmetic stays in integers.
const CreditsPerAccelerator int64 = 1_600_000

// DevicesSpec is a node's accelerator inventory, as its device manager detected it.
type DevicesSpec struct {
	// Groups are the node's accelerators, one group per product.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=id
	// +optional
	Groups []DeviceGroup `json:"groups,omitempty"`

	// Interfaces are the node's network interfaces usable for RDMA.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Interfaces []NetworkInterface `json:"interfaces,omitempty"`
}

// DeviceGroup is the accelerators of one product on one node.
type DeviceGroup struct {
	// ID identifies the group on the node (the product part of the accelerator key).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ID string `json:"id"`

	// Manufacturer is one of nvidia, amd, ascend, cambricon, hygon, iluvatar, metax, mthreads, thead.
	// +kubebuilder:validation:Enum=nvidia;amd;ascend;cambricon;hygon;iluvatar;metax;mthreads;thead
	Manufacturer string `json:"manufacturer"`

	// Name is the product name as the driver reports it (NVIDIA A10G).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Name string `json:"name,omitempty"`

	// Memory is the memory of one accelerator in MiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Memory int64 `json:"memory,omitempty"`

	// Cores is the number of compute cores of one accelerator.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Cores int64 `json:"cores,omitempty"`

	// DriverVersion is the kernel driver's version.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`

	// RuntimeVersion is the compute runtime's version (CUDA 13.0).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	RuntimeVersion string `json:"runtimeVersion,omitempty"`

	// ComputeCapability is the accelerator's compute capability (8.6).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ComputeCapability string `json:"computeCapability,omitempty"`

	// Family is the architecture family (Ampere).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Family string `json:"family,omitempty"`

	// Accelerators are the group's cards.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=id
	// +optional
	Accelerators []Accelerator `json:"accelerators,omitempty"`
}

// Accelerator is one card.
type Accelerator struct {
	// ID is the card's UUID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id"`

	// Index is the card's index on the node.
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// PhysicalIndexes are the indexes of the physical chips behind a logical card, when they differ.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	PhysicalIndexes []int32 `json:"physicalIndexes,omitempty"`

	// Topology is the card's place in the node's interconnect (its PCI bus ID or NUMA node).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Topology string `json:"topology,omitempty"`

	// Status is the card's health and how it can be divided.
	// +optional
	Status AcceleratorStatus `json:"status,omitempty"`
}

// AcceleratorStatus is a card's health and how it can be divided.
type AcceleratorStatus struct {
	// Unhealthy is true when the card cannot take work.
	// +optional
	Unhealthy bool `json:"unhealthy,omitempty"`

	// LogicalSliced is the card's soft-slicing capability.
	// +optional
	LogicalSliced *LogicalSlicedCapability `json:"logicalSliced,omitempty"`

	// PhysicalSliced is the card's hardware partitioning capability; present only while the card is in a
	// partitioning mode.
	// +optional
	PhysicalSliced *PhysicalSlicedCapability `json:"physicalSliced,omitempty"`
}

// LogicalSlicedCapability is how many soft slices one card takes.
type LogicalSlicedCapability struct {
	// Count is the number of slices the card can hold.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// CoresPercentageOvercommit is true when compute budgets may add up to more than 100 %.
	// +optional
	CoresPercentageOvercommit bool `json:"coresPercentageOvercommit,omitempty"`
}

// PhysicalSlicedCapability is a card's hardware partitioning capability.
type PhysicalSlicedCapability struct {
	// Count is the largest number of partitions the card can hold.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// Profiles are the partition profiles the card offers.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Profiles []PartitionProfile `json:"profiles,omitempty"`
}

// PartitionProfile is one hardware partition shape.
type PartitionProfile struct {
	// Name is the profile (3g.40gb).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// MemoryMiB is the partition's memory.
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMib"`

	// ComputeSlices is the number of compute slices the partition takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ComputeSlices int32 `json:"computeSlices,omitempty"`

	// MemorySlices is the number of memory slices the partition takes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemorySlices int32 `json:"memorySlices,omitempty"`

	// Count is how many partitions of this profile one empty card holds.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// Placements are the legal start positions of the profile on the card.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Placements []int32 `json:"placements,omitempty"`
}

// NetworkInterface is a network interface usable for RDMA.
type NetworkInterface struct {
	// Name is the interface name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// RDMA is true when the interface supports RDMA.
	// +optional
	RDMA bool `json:"rdma,omitempty"`
}

// AllocationMode is how a card is used right now.
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=4
type AllocationMode int32

const (
	// AllocationNone means the card is free.
	AllocationNone AllocationMode = 0
	// AllocationExclusive means one workload owns the whole card.
	AllocationExclusive AllocationMode = 1
	// AllocationShared means the card is handed out in shares (a tenth each).
	AllocationShared AllocationMode = 2
	// AllocationSliced means the card carries soft slices.
	AllocationSliced AllocationMode = 3
	// AllocationPartitioned means the card carries hardware partitions.
	AllocationPartitioned AllocationMode = 4
)

// DevicesStatus is the node's ledger: what each card has given out and what it has left, in credits.
type DevicesStatus struct {
	// Groups mirror spec.groups with each card's allocation.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=id
	// +optional
	Groups []GroupAllocation `json:"groups,omitempty"`
}

// GroupAllocation is the ledger of one device group.
type GroupAllocation struct {
	// ID is the group's ID in spec.groups.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ID string `json:"id"`

	// Manufacturer is the group's manufacturer.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Manufacturer string `json:"manufacturer,omitempty"`

	// Accelerators are the cards' allocations.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=id
	// +optional
	Accelerators []AcceleratorAllocation `json:"accelerators,omitempty"`
}

// AcceleratorAllocation is one card's ledger entry. A free card has mode 0 and remaining 1600000.
type AcceleratorAllocation struct {
	// ID is the card's UUID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id"`

	// Index is the card's index on the node.
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// Mode is 0 free, 1 exclusive, 2 shared, 3 sliced or 4 partitioned.
	Mode AllocationMode `json:"mode"`

	// Allocated is the credits given out.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1600000
	// +optional
	Allocated int64 `json:"allocated,omitempty"`

	// Remaining is the credits still free.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1600000
	Remaining int64 `json:"remaining"`

	// AllocatedSlices is the number of soft slices on the card.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AllocatedSlices int32 `json:"allocatedSlices,omitempty"`

	// AllocatedProfiles are the partitions in use, per profile.
	// +optional
	AllocatedProfiles []ProfileCount `json:"allocatedProfiles,omitempty"`

	// RemainingProfiles are the partitions that could still be created, per profile.
	// +optional
	RemainingProfiles []ProfileCount `json:"remainingProfiles,omitempty"`

	// ResourceClaims are the ResourceClaims (namespace/name) the card is allocated to through Dynamic Resource
	// Allocation. The device plugins list such a card unhealthy, so no container is granted it besides.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +listType=set
	// +optional
	ResourceClaims []string `json:"resourceClaims,omitempty"`
}

// Devices is one node's accelerator inventory (spec, written by its device manager) and ledger (status). It is
// cluster-scoped and named after its node.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=devs,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="GROUPS",type=string,JSONPath=`.spec.groups[*].id`,priority=1
// +kubebuilder:printcolumn:name="MANUFACTURERS",type=string,JSONPath=`.spec.groups[*].manufacturer`,priority=1
type Devices struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the node's inventory.
	// +optional
	Spec DevicesSpec `json:"spec,omitempty"`

	// Status is the node's ledger.
	// +optional
	Status DevicesStatus `json:"status,omitempty"`
}

// DevicesList is a list of Devices.
//
// +kubebuilder:object:root=true
type DevicesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Devices.
	Items []Devices `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &Devices{}, &DevicesList{})
}
