package v1

import (
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpustack/gpustack-operator/apis/internal/kinds"
)

// DefaultVolumeMount is where the workspace volume is mounted when spec.volumeMount is empty.
const DefaultVolumeMount = "/workspace"

// InstanceSpec is what a user launches: an image on one pool, with a workspace volume, optional extra
// volumes, an SSH sidecar and ports. While the Instance runs (spec.stop is false) only stop may change; while
// it is stopped every field but volume may be edited.
//
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || self.type == oldSelf.type",message="type is immutable while the instance runs; set spec.stop to true first",fieldPath=".type"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || self.image == oldSelf.image",message="image is immutable while the instance runs; set spec.stop to true first",fieldPath=".image"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.imagePullPolicy) == has(oldSelf.imagePullPolicy) && (!has(self.imagePullPolicy) || self.imagePullPolicy == oldSelf.imagePullPolicy))",message="imagePullPolicy is immutable while the instance runs; set spec.stop to true first",fieldPath=".imagePullPolicy"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.command) == has(oldSelf.command) && (!has(self.command) || self.command == oldSelf.command))",message="command is immutable while the instance runs; set spec.stop to true first",fieldPath=".command"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.privileged) ? self.privileged : false) == (has(oldSelf.privileged) ? oldSelf.privileged : false)",message="privileged is immutable while the instance runs; set spec.stop to true first",fieldPath=".privileged"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.ports) == has(oldSelf.ports) && (!has(self.ports) || self.ports == oldSelf.ports))",message="ports are immutable while the instance runs; set spec.stop to true first",fieldPath=".ports"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.env) == has(oldSelf.env) && (!has(self.env) || self.env == oldSelf.env))",message="env is immutable while the instance runs; set spec.stop to true first",fieldPath=".env"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.resources) == has(oldSelf.resources) && (!has(self.resources) || self.resources == oldSelf.resources))",message="resources are immutable while the instance runs; set spec.stop to true first",fieldPath=".resources"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.volumeMount) == has(oldSelf.volumeMount) && (!has(self.volumeMount) || self.volumeMount == oldSelf.volumeMount))",message="volumeMount is immutable while the instance runs; set spec.stop to true first",fieldPath=".volumeMount"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.imagePullSecret) == has(oldSelf.imagePullSecret) && (!has(self.imagePullSecret) || self.imagePullSecret == oldSelf.imagePullSecret))",message="imagePullSecret is immutable while the instance runs; set spec.stop to true first",fieldPath=".imagePullSecret"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.sshPublicKey) == has(oldSelf.sshPublicKey) && (!has(self.sshPublicKey) || self.sshPublicKey == oldSelf.sshPublicKey))",message="sshPublicKey is immutable while the instance runs; set spec.stop to true first",fieldPath=".sshPublicKey"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.nodeName) == has(oldSelf.nodeName) && (!has(self.nodeName) || self.nodeName == oldSelf.nodeName))",message="nodeName is immutable while the instance runs; set spec.stop to true first",fieldPath=".nodeName"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.stop) && oldSelf.stop) || (has(self.additionalVolumes) == has(oldSelf.additionalVolumes) && (!has(self.additionalVolumes) || self.additionalVolumes == oldSelf.additionalVolumes))",message="additionalVolumes are immutable while the instance runs; set spec.stop to true first",fieldPath=".additionalVolumes"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalVolumes) || self.additionalVolumes.all(v, v.mountPath != (has(self.volumeMount) ? self.volumeMount : '/workspace'))",message="an additional volume's mountPath must differ from spec.volumeMount",fieldPath=".additionalVolumes"
type InstanceSpec struct {
	// DisplayName is a human-friendly name shown by user interfaces.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Description explains what the Instance is for.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Type is the name of the InstanceType (the pool) the Instance queues on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`

	// Image is the container image of the workload.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// ImagePullPolicy is the workload container's pull policy.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Command replaces the image's entrypoint.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// Privileged runs the workload privileged, exposing the node's devices and kernel. Taking it requires the
	// instance-privileged-allowed setting.
	// +optional
	Privileged bool `json:"privileged,omitempty"`

	// Ports are exposed through a NodePort Service named after the Instance.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=port
	// +listMapKey=protocol
	// +optional
	Ports []InstancePort `json:"ports,omitempty"`

	// Env are environment variables of the workload container.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []InstanceEnvVar `json:"env,omitempty"`

	// Resources is what the workload asks of its pool.
	// +optional
	Resources InstanceResources `json:"resources,omitempty"`

	// Volume is the workspace volume, mounted at volumeMount. It never changes after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volume is immutable"
	Volume InstanceVolume `json:"volume"`

	// VolumeMount is the absolute path the workspace volume is mounted at.
	// +kubebuilder:default=/workspace
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="volumeMount must be an absolute path"
	// +optional
	VolumeMount string `json:"volumeMount,omitempty"`

	// AdditionalVolumes are mounted into the workload container beside the workspace.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=mountPath
	// +optional
	AdditionalVolumes []AdditionalVolume `json:"additionalVolumes,omitempty"`

	// ImagePullSecret names an InstanceImagePullSecret in the Instance's namespace, whose credentials pull the
	// image; the Pod is made once it is Ready. Whoever writes the Instance must be allowed to read its Secret.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ImagePullSecret string `json:"imagePullSecret,omitempty"`

	// SSHPublicKey names an InstanceSSHPublicKey in the Instance's namespace, whose keys the SSH sidecar
	// accepts; the Pod is made once it is Ready. Whoever writes the Instance must be allowed to read its Secret.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SSHPublicKey string `json:"sshPublicKey,omitempty"`

	// Stop stops the Instance (its Pod is deleted, its volumes kept) when true, and starts it again when set
	// back to false.
	// +optional
	Stop bool `json:"stop,omitempty"`

	// NodeName pins the Instance to one node through a kubernetes.io/hostname nodeSelector; the node must
	// exist when the Instance is created. The Pod still queues through the pool's quota.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`
}

// InstancePort is one port exposed by the Instance's Service.
type InstancePort struct {
	// Port is the container port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Protocol is TCP, UDP or SCTP.
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +kubebuilder:default=TCP
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`

	// Name names the port.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	Name string `json:"name,omitempty"`
}

// InstanceEnvVar is one environment variable of the workload container.
type InstanceEnvVar struct {
	// Name is the variable's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// Value is the variable's value.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value string `json:"value,omitempty"`
}

// InstanceResources is what an Instance asks of its pool. Missing CPU, RAM and accelerator values are
// defaulted from the type's unit resources.
//
// +kubebuilder:validation:XValidation:rule="!has(self.acceleratorPartitionedProfile) || size(self.acceleratorPartitionedProfile) == 0 || ((!has(self.acceleratorSlicedMemoryPercentage) || self.acceleratorSlicedMemoryPercentage == 0) && (!has(self.acceleratorSlicedCoresPercentage) || self.acceleratorSlicedCoresPercentage == 0))",message="a hardware partition and a logical slice percentage are mutually exclusive",fieldPath=".acceleratorPartitionedProfile"
// +kubebuilder:validation:XValidation:rule="!((has(self.acceleratorSlicedMemoryPercentage) && self.acceleratorSlicedMemoryPercentage > 0) || (has(self.acceleratorPartitionedProfile) && size(self.acceleratorPartitionedProfile) > 0)) || !has(self.accelerator) || string(self.accelerator) == '1'",message="a slice or a partition is always one accelerator: accelerator must be 1",fieldPath=".accelerator"
// +kubebuilder:validation:XValidation:rule="!has(self.accelerator) || (type(self.accelerator) == int ? (int(self.accelerator) >= 0 && int(self.accelerator) <= 1024) : (string(self.accelerator).matches('^[0-9]{1,4}$') && int(string(self.accelerator)) <= 1024))",message="accelerator must be a whole number from 0 to 1024",fieldPath=".accelerator"
type InstanceResources struct {
	// CPU is the number of cores.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// RAM is the memory.
	// +optional
	RAM *resource.Quantity `json:"ram,omitempty"`

	// LocalStorage is the local (ephemeral) storage, at most the type's localStorage.
	// +optional
	LocalStorage *resource.Quantity `json:"localStorage,omitempty"`

	// Accelerator is the number of whole accelerators; 1 for a slice or a partition. A number or a string
	// of digits ("1"), as Kubernetes quantities are often written.
	// +optional
	Accelerator *intstr.IntOrString `json:"accelerator,omitempty"`

	// AcceleratorSlicedMemoryPercentage asks for a logical slice with this share of one accelerator's memory;
	// 0 disables slicing.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	AcceleratorSlicedMemoryPercentage *int32 `json:"acceleratorSlicedMemoryPercentage,omitempty"`

	// AcceleratorSlicedCoresPercentage is the compute budget of a logical slice, as a share of one
	// accelerator's cores.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	AcceleratorSlicedCoresPercentage *int32 `json:"acceleratorSlicedCoresPercentage,omitempty"`

	// AcceleratorPartitionedProfile asks for one hardware partition of this profile (3g.40gb).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	AcceleratorPartitionedProfile string `json:"acceleratorPartitionedProfile,omitempty"`
}

// InstanceVolume is the workspace volume: exactly one of ephemeral or persistent.
//
// +kubebuilder:validation:XValidation:rule="(has(self.ephemeral) ? 1 : 0) + (has(self.persistent) ? 1 : 0) == 1",message="exactly one of ephemeral or persistent must be set"
type InstanceVolume struct {
	// Ephemeral is a volume that lives and dies with the Instance's Pod.
	// +optional
	Ephemeral *EphemeralVolume `json:"ephemeral,omitempty"`

	// Persistent names an InstancePersistentVolume in the Instance's namespace.
	// +optional
	Persistent *PersistentVolumeReference `json:"persistent,omitempty"`
}

// EphemeralVolume is a volume that lives and dies with a Pod.
type EphemeralVolume struct {
	// Capacity is the size of the volume.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="capacity must be positive"
	Capacity resource.Quantity `json:"capacity"`
}

// PersistentVolumeReference names an InstancePersistentVolume in the same namespace.
type PersistentVolumeReference struct {
	// Name is the InstancePersistentVolume's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ObjectReference names a ConfigMap or Secret in the same namespace.
type ObjectReference struct {
	// Name is the object's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AdditionalVolume is one extra mount of the workload container, with exactly one source.
//
// +kubebuilder:validation:XValidation:rule="(has(self.persistent) ? 1 : 0) + (has(self.configMap) ? 1 : 0) + (has(self.secret) ? 1 : 0) + (has(self.hostPath) ? 1 : 0) == 1",message="exactly one of persistent, configMap, secret or hostPath must be set"
type AdditionalVolume struct {
	// MountPath is the absolute, canonical path the volume is mounted at; unique among the Instance's volumes.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="mountPath must be an absolute path"
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('/') && !self.contains('//') && !self.contains('/./') && !self.contains('/../') && !self.endsWith('/.') && !self.endsWith('/..')",message="mountPath must be canonical: no trailing slash, no empty, . or .. segments"
	MountPath string `json:"mountPath"`

	// ReadOnly mounts the volume read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`

	// SubPath mounts one path inside the volume instead of its root.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="subPath must be a relative path"
	// +kubebuilder:validation:XValidation:rule="self != '..' && !self.startsWith('../') && !self.contains('/../') && !self.endsWith('/..')",message="subPath must not contain '..'"
	// +optional
	SubPath string `json:"subPath,omitempty"`

	// Persistent mounts an InstancePersistentVolume of the same namespace.
	// +optional
	Persistent *PersistentVolumeReference `json:"persistent,omitempty"`

	// ConfigMap mounts a ConfigMap of the same namespace.
	// +optional
	ConfigMap *ObjectReference `json:"configMap,omitempty"`

	// Secret mounts a Secret of the same namespace.
	// +optional
	Secret *ObjectReference `json:"secret,omitempty"`

	// HostPath mounts a path of the node. Taking it requires the instance-host-path-volume-allowed setting.
	// +optional
	HostPath *HostPathVolume `json:"hostPath,omitempty"`
}

// HostPathVolume is a path on the node.
type HostPathVolume struct {
	// Path is the absolute path on the node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="hostPath.path must be an absolute path"
	Path string `json:"path"`

	// Type is the kind of path expected, as on a Pod's hostPath volume.
	// +kubebuilder:validation:Enum="";DirectoryOrCreate;Directory;FileOrCreate;File;Socket;CharDevice;BlockDevice
	// +optional
	Type *corev1.HostPathType `json:"type,omitempty"`
}

// InstancePhase is the lifecycle phase of an Instance.
type InstancePhase string

const (
	// InstanceStarting means the Instance's Pod is queued, scheduling or starting.
	InstanceStarting InstancePhase = "Starting"
	// InstanceReady means the workload runs and is ready.
	InstanceReady InstancePhase = "Ready"
	// InstanceStopping means the Instance's Pod is being deleted after spec.stop was set.
	InstanceStopping InstancePhase = "Stopping"
	// InstanceStopped means the Instance has no Pod and keeps its volumes.
	InstanceStopped InstancePhase = "Stopped"
	// InstanceDeleting means the Instance is being deleted.
	InstanceDeleting InstancePhase = "Deleting"
	// InstanceFailed means the workload terminated with an error.
	InstanceFailed InstancePhase = "Failed"
)

// InstanceStatusPort is an exposed port with the node port it was given.
type InstanceStatusPort struct {
	InstancePort `json:",inline"`

	// NodePort is the port on every node that reaches this port.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`
}

// InstanceStatus is the observed state of an Instance.
type InstanceStatus struct {
	// Phase is Starting, Ready, Stopping, Stopped, Deleting or Failed.
	// +optional
	Phase InstancePhase `json:"phase,omitempty"`

	// PhaseMessage explains a wait or a failure in one line: quota, per-card fit, an unbound claim, an
	// unsatisfiable pin.
	// +optional
	PhaseMessage string `json:"phaseMessage,omitempty"`

	// NodeName is the node the Instance's Pod runs on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// Cluster is the member cluster that runs the Instance when a manager cluster's worker-gateway dispatched
	// it there through MultiKueue (its NodeName then stays empty: the node is the member's to know); empty for
	// an Instance that runs in its own cluster.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// AccessAddresses are the addresses the Instance can be reached at; for one a manager cluster dispatched,
	// those its member cluster gives.
	// +optional
	AccessAddresses []string `json:"accessAddresses,omitempty"`

	// HostIPs are the IPs of the node the Pod runs on.
	// +optional
	HostIPs []string `json:"hostIPs,omitempty"`

	// PodIPs are the Pod's IPs.
	// +optional
	PodIPs []string `json:"podIPs,omitempty"`

	// Ports are the exposed ports with their node ports; for an Instance a manager cluster dispatched, the node
	// ports of its Service on the member cluster that runs it.
	// +optional
	Ports []InstanceStatusPort `json:"ports,omitempty"`

	// Allocations are the accelerators the workload was given, as the device plugin recorded them.
	// +optional
	Allocations []string `json:"allocations,omitempty"`

	// Rebuilds is how many times in a row the Instance's Pod failed (its node rebooted or shut down, the kubelet
	// evicted it or refused it at admission) and was built again; back to 0 once a Pod is Ready. Each rebuild in
	// a row waits longer, from 10 seconds to at most 5 minutes.
	// +optional
	Rebuilds int32 `json:"rebuilds,omitempty"`

	// LastRebuildTime is when the Pod was last built again after it failed.
	// +optional
	LastRebuildTime *metav1.Time `json:"lastRebuildTime,omitempty"`

	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions report the Instance's progress.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Instance is a workload a user launches on a pool: one Pod queued through the pool's entrance LocalQueue,
// with a workspace volume and an SSH sidecar.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=inst,categories=gpustack
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TYPE",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="NODE",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="CLUSTER",type=string,JSONPath=`.status.cluster`,priority=1
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.phaseMessage`,priority=1
type Instance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asked for.
	Spec InstanceSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status InstanceStatus `json:"status,omitempty"`
}

// InstanceList is a list of Instances.
//
// +kubebuilder:object:root=true
type InstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Instances.
	Items []Instance `json:"items"`
}

func init() {
	kinds.Register(&SchemeBuilder, GroupVersion, &Instance{}, &InstanceList{})
}

// AcceleratorCount returns the number of accelerators asked for, 1 when none is given.
func (r InstanceResources) AcceleratorCount() (int64, error) {
	if r.Accelerator == nil {
		return 1, nil
	}
	if r.Accelerator.Type == intstr.Int {
		return int64(r.Accelerator.IntVal), nil
	}
	n, err := strconv.ParseInt(r.Accelerator.StrVal, 10, 32)
	if err != nil || n < 0 {
		return 0, errors.Errorf("spec.resources.accelerator: %q is not a whole number", r.Accelerator.StrVal)
	}
	return n, nil
}
