package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// InstanceTypeFlavorSpec is the hardware profile of one catalog entry. Its grouping identity is
// (generalGroup, acceleratorGroup): collapsed to the accelerator alone while CPU awareness is off, split by
// CPU key while it is on.
type InstanceTypeFlavorSpec struct {
	// Acceleratable is true for an accelerator entry and false for a CPU entry.
	Acceleratable bool `json:"acceleratable"`

	// AcceleratorGroup is the accelerator key (nvidia-a10g); empty for a CPU entry.
	// +optional
	AcceleratorGroup string `json:"acceleratorGroup,omitempty"`

	// GeneralGroup is the CPU key (amd-epyc-7r32), generic for the collapsed CPU entry, and empty for a
	// collapsed accelerator entry.
	// +optional
	GeneralGroup string `json:"generalGroup,omitempty"`

	// Manufacturer is the accelerator manufacturer, or the CPU manufacturer of a CPU entry.
	Manufacturer string `json:"manufacturer"`

	// Product is the accelerator product (NVIDIA-A10G), or the CPU model name of a CPU entry; empty when
	// unknown.
	// +optional
	Product string `json:"product,omitempty"`

	// Family is the accelerator architecture family (Ampere), when known.
	// +optional
	Family string `json:"family,omitempty"`

	// Memory is the memory of one accelerator (24Gi).
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Cores is the number of compute cores of one accelerator; empty for a CPU entry.
	// +optional
	Cores string `json:"cores,omitempty"`

	// Sliceable is true when one accelerator can be soft-sliced; empty for a CPU entry.
	// +optional
	Sliceable *bool `json:"sliceable,omitempty"`

	// Feature says how one accelerator of this entry can be divided.
	// +optional
	Feature *InstanceTypeFeature `json:"feature,omitempty"`
}

// InstanceTypeFlavor is one entry of the read-only hardware catalog the operator projects from its
// ResourceFlavors: what an administrator can reference by acceleratorGroup when authoring an InstanceType.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=instypeflavor,categories=gpustack
// +kubebuilder:printcolumn:name="GENERALGROUP",type=string,JSONPath=`.spec.generalGroup`
// +kubebuilder:printcolumn:name="ACCELERATORGROUP",type=string,JSONPath=`.spec.acceleratorGroup`
// +kubebuilder:printcolumn:name="ACCELERATABLE",type=boolean,JSONPath=`.spec.acceleratable`
// +kubebuilder:printcolumn:name="MANUFACTURER",type=string,JSONPath=`.spec.manufacturer`
// +kubebuilder:printcolumn:name="PRODUCT",type=string,JSONPath=`.spec.product`
// +kubebuilder:printcolumn:name="MEMORY",type=string,JSONPath=`.spec.memory`
// +kubebuilder:printcolumn:name="CORES",type=string,JSONPath=`.spec.cores`
// +kubebuilder:printcolumn:name="SLICEABLE",type=boolean,JSONPath=`.spec.sliceable`
type InstanceTypeFlavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the entry's hardware profile.
	Spec InstanceTypeFlavorSpec `json:"spec"`
}

// InstanceTypeFlavorList is a list of InstanceTypeFlavors.
//
// +kubebuilder:object:root=true
type InstanceTypeFlavorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the catalog entries.
	Items []InstanceTypeFlavor `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &InstanceTypeFlavor{}, &InstanceTypeFlavorList{})
}
