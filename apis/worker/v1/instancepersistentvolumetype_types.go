package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// InstancePersistentVolumeTypeSpec is what one StorageClass offers an InstancePersistentVolume.
type InstancePersistentVolumeTypeSpec struct {
	// Provisioner is the StorageClass's provisioner (rancher.io/local-path, ebs.csi.aws.com).
	Provisioner string `json:"provisioner"`

	// Default is true for the cluster's default class: the type of a volume that names none.
	// +optional
	Default bool `json:"default,omitempty"`

	// BindingMode is Immediate (a volume is made when it is created) or WaitForFirstConsumer (when an
	// Instance first uses it, on the node its Pod runs on).
	BindingMode string `json:"bindingMode"`

	// Expandable is true when a volume of this type can grow (its capacity raised).
	// +optional
	Expandable bool `json:"expandable,omitempty"`

	// ReclaimPolicy is what happens to a volume's data when the volume is deleted: Delete or Retain.
	ReclaimPolicy string `json:"reclaimPolicy"`
}

// InstancePersistentVolumeType is one StorageClass as the users of Instances see it: a value they can give an
// InstancePersistentVolume's spec.type. The worker projects one from each StorageClass, of the same name and
// owned by it; it is read-only, and goes with its class.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=instpvtype,categories=gpustack
// +kubebuilder:printcolumn:name="PROVISIONER",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="DEFAULT",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="BINDING",type=string,JSONPath=`.spec.bindingMode`
// +kubebuilder:printcolumn:name="EXPANDABLE",type=boolean,JSONPath=`.spec.expandable`
// +kubebuilder:printcolumn:name="RECLAIM",type=string,JSONPath=`.spec.reclaimPolicy`
type InstancePersistentVolumeType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the class offers.
	Spec InstancePersistentVolumeTypeSpec `json:"spec"`
}

// InstancePersistentVolumeTypeList is a list of InstancePersistentVolumeTypes.
//
// +kubebuilder:object:root=true
type InstancePersistentVolumeTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the types.
	Items []InstancePersistentVolumeType `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &InstancePersistentVolumeType{}, &InstancePersistentVolumeTypeList{})
}
