package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// PersistentAccessMode is how an InstancePersistentVolume may be attached.
// +kubebuilder:validation:Enum=RWO;RWX;ROX;RWOP
type PersistentAccessMode string

const (
	// ReadWriteOnce attaches read-write to one node.
	ReadWriteOnce PersistentAccessMode = "RWO"
	// ReadWriteMany attaches read-write to many nodes.
	ReadWriteMany PersistentAccessMode = "RWX"
	// ReadOnlyMany attaches read-only to many nodes.
	ReadOnlyMany PersistentAccessMode = "ROX"
	// ReadWriteOncePod attaches read-write to one Pod.
	ReadWriteOncePod PersistentAccessMode = "RWOP"
)

// InstancePersistentVolumeSpec is the storage an Instance can keep across stops: a PersistentVolumeClaim of
// the same name.
type InstancePersistentVolumeSpec struct {
	// Type is the StorageClass of the claim; empty uses the cluster's default class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	// +optional
	Type string `json:"type,omitempty"`

	// Capacity is the requested size; it may grow but never shrink.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="capacity must be positive"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="capacity may not shrink"
	Capacity resource.Quantity `json:"capacity"`

	// AccessMode is RWO, RWX, ROX or RWOP.
	// +kubebuilder:default=RWO
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="accessMode is immutable"
	// +optional
	AccessMode PersistentAccessMode `json:"accessMode,omitempty"`
}

// InstancePersistentVolumeStatus is the observed state of the claim.
type InstancePersistentVolumeStatus struct {
	// Phase is the claim's phase: Pending, Bound or Lost.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Volume is the name of the PersistentVolume bound to the claim.
	// +optional
	Volume string `json:"volume,omitempty"`

	// Message says why a claim not bound yet cannot be provisioned: a type that names no
	// InstancePersistentVolumeType, or no type where none is the default.
	// +optional
	Message string `json:"message,omitempty"`
}

// InstancePersistentVolume is a volume in a user namespace that Instances mount as their workspace or as an
// additional volume.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=instpv,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TYPE",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="CAPACITY",type=string,JSONPath=`.spec.capacity`
// +kubebuilder:printcolumn:name="ACCESS",type=string,JSONPath=`.spec.accessMode`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.message`,priority=1
type InstancePersistentVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested storage.
	Spec InstancePersistentVolumeSpec `json:"spec"`

	// Status is the claim's observed state.
	// +optional
	Status InstancePersistentVolumeStatus `json:"status,omitempty"`
}

// InstancePersistentVolumeList is a list of InstancePersistentVolumes.
//
// +kubebuilder:object:root=true
type InstancePersistentVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the volumes.
	Items []InstancePersistentVolume `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &InstancePersistentVolume{}, &InstancePersistentVolumeList{})
}
