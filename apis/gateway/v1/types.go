package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// +kubebuilder:object:root=true

// ClusterMember is one member cluster as the gateway last read it.
type ClusterMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is what the gateway knows of the member.
	Status ClusterMemberStatus `json:"status"`
}

// ClusterMemberStatus is a member's reachability.
type ClusterMemberStatus struct {
	// Reachable is true when the member answered the gateway's last read.
	Reachable bool `json:"reachable"`
	// Message says why a member is not reachable (the last read's error), or what it holds.
	Message string `json:"message,omitempty"`
	// LastSeen is when the member last answered; empty when it never did.
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
	// InstanceTypes is the number of InstanceTypes the member held when last read.
	InstanceTypes int `json:"instanceTypes"`
}

// +kubebuilder:object:root=true

// ClusterMemberList is a list of ClusterMembers.
type ClusterMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterMember `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstanceType is one member's InstanceType, named <cluster>.<instance type>.
type ClusterInstanceType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the InstanceType is in.
	Cluster string `json:"cluster"`
	// Spec and Status are the member's InstanceType's, as last read.
	Spec   workerv1.InstanceTypeSpec   `json:"spec"`
	Status workerv1.InstanceTypeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterInstanceTypeList is a list of ClusterInstanceTypes.
type ClusterInstanceTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstanceType `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstance is one member's Instance, in its namespace, named <cluster>.<instance>.
type ClusterInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the Instance is in.
	Cluster string `json:"cluster"`
	// Spec and Status are the member's Instance's, as last read.
	Spec   workerv1.InstanceSpec   `json:"spec"`
	Status workerv1.InstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterInstanceList is a list of ClusterInstances.
type ClusterInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstance `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstancePersistentVolume is one member's InstancePersistentVolume, in its namespace, named
// <cluster>.<volume>.
type ClusterInstancePersistentVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the volume is in.
	Cluster string `json:"cluster"`
	// Spec and Status are the member's volume's, as last read.
	Spec   workerv1.InstancePersistentVolumeSpec   `json:"spec"`
	Status workerv1.InstancePersistentVolumeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterInstancePersistentVolumeList is a list of ClusterInstancePersistentVolumes.
type ClusterInstancePersistentVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstancePersistentVolume `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstancePersistentVolumeType is one member's InstancePersistentVolumeType (a StorageClass as Instances'
// users see it), named <cluster>.<type>.
type ClusterInstancePersistentVolumeType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the type is in.
	Cluster string `json:"cluster"`
	// Spec is the member's type's, as last read.
	Spec workerv1.InstancePersistentVolumeTypeSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterInstancePersistentVolumeTypeList is a list of ClusterInstancePersistentVolumeTypes.
type ClusterInstancePersistentVolumeTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstancePersistentVolumeType `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstanceSSHPublicKey is one member's InstanceSSHPublicKey, in its namespace, named <cluster>.<key>: a
// name an Instance dispatched to that member can give in spec.sshPublicKey. The keys themselves are not served.
type ClusterInstanceSSHPublicKey struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the keys are in.
	Cluster string `json:"cluster"`
	// Status is the member's object's: the Secret that backs it and whether it is Ready.
	Status workerv1.CredentialStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterInstanceSSHPublicKeyList is a list of ClusterInstanceSSHPublicKeys.
type ClusterInstanceSSHPublicKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstanceSSHPublicKey `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterInstanceImagePullSecret is one member's InstanceImagePullSecret, in its namespace, named
// <cluster>.<secret>: a name an Instance dispatched to that member can give in spec.imagePullSecret. Only its
// metadata is served: the gateway reads the members' pull secrets as metadata, so it never holds their
// credentials.
type ClusterInstanceImagePullSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Cluster is the member the credentials are in.
	Cluster string `json:"cluster"`
}

// +kubebuilder:object:root=true

// ClusterInstanceImagePullSecretList is a list of ClusterInstanceImagePullSecrets.
type ClusterInstanceImagePullSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInstanceImagePullSecret `json:"items"`
}

// +kubebuilder:object:root=true

// AggregatedInstanceType is one InstanceType across the member clusters (docs/multi-cluster.md, Aggregation):
// the members that have it are its candidates, the active ones (reachable, their type Active) count.
type AggregatedInstanceType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is the aggregate.
	Status AggregatedInstanceTypeStatus `json:"status"`
}

// AggregatedInstanceTypeStatus is an InstanceType's views summed over the active members, tiered.
type AggregatedInstanceTypeStatus struct {
	// Clusters are the members that have the type, sorted.
	Clusters []string `json:"clusters"`
	// Inactive are those of Clusters that do not count: unreachable, or their type not Active.
	Inactive []string `json:"inactive,omitempty"`
	// Tiers group the active members by the deciding view's onceMaxRequest (EX, or CPU for a CPU type), the
	// largest first; each carries its winner's onceMaxRequest bundle, never a per-view maximum.
	Tiers []AggregatedTier `json:"tiers,omitempty"`

	// The views: capacity and remaining summed over the active members, onceMaxRequest from the first tier.
	Accelerator            *workerv1.CapacityView    `json:"accelerator,omitempty"`
	AcceleratorShared      *workerv1.CapacityView    `json:"acceleratorShared,omitempty"`
	AcceleratorSliced      *workerv1.CapacityView    `json:"acceleratorSliced,omitempty"`
	AcceleratorPartitioned *workerv1.PartitionedView `json:"acceleratorPartitioned,omitempty"`
	CPU                    *workerv1.CapacityView    `json:"cpu,omitempty"`

	// Summary holds the printer cells, formatted as InstanceType's are.
	Summary workerv1.InstanceTypeSummary `json:"summary,omitempty"`
}

// AggregatedTier is a group of active members with the same deciding onceMaxRequest.
type AggregatedTier struct {
	// Winner is the member the bundle is copied from: the most remaining on the deciding view, then the first
	// by name.
	Winner string `json:"winner"`
	// Clusters are the tier's members, sorted.
	Clusters []string `json:"clusters"`
	// OnceMaxRequest is the winner's onceMaxRequest of every view.
	OnceMaxRequest TierBundle `json:"onceMaxRequest"`
}

// TierBundle is one member's onceMaxRequest of every view: a request within it fits that member.
type TierBundle struct {
	Accelerator            resource.Quantity `json:"accelerator"`
	AcceleratorShared      resource.Quantity `json:"acceleratorShared"`
	AcceleratorSliced      resource.Quantity `json:"acceleratorSliced"`
	AcceleratorPartitioned resource.Quantity `json:"acceleratorPartitioned"`
	CPU                    resource.Quantity `json:"cpu"`
}

// +kubebuilder:object:root=true

// AggregatedInstanceTypeList is a list of AggregatedInstanceTypes.
type AggregatedInstanceTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AggregatedInstanceType `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &ClusterMember{}, &ClusterMemberList{}, &ClusterInstanceType{}, &ClusterInstanceTypeList{},
		&ClusterInstance{}, &ClusterInstanceList{}, &ClusterInstancePersistentVolume{}, &ClusterInstancePersistentVolumeList{},
		&ClusterInstancePersistentVolumeType{}, &ClusterInstancePersistentVolumeTypeList{},
		&ClusterInstanceSSHPublicKey{}, &ClusterInstanceSSHPublicKeyList{},
		&ClusterInstanceImagePullSecret{}, &ClusterInstanceImagePullSecretList{},
		&AggregatedInstanceType{}, &AggregatedInstanceTypeList{})
}
