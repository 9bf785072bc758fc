// Package builders makes API objects for tests in a readable chain, as Kueue's test wrappers do:
//
//	builders.MakeInstanceType("a10g-12c128g").Accelerated("nvidia-a10g").Unit("12", "128Gi").Obj()
package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// InstanceTypeWrapper builds an InstanceType.
type InstanceTypeWrapper struct{ workerv1.InstanceType }

// MakeInstanceType starts a generic CPU type on linux/amd64 with a 1 CPU / 2Gi unit and 100Gi of storage.
func MakeInstanceType(name string) *InstanceTypeWrapper {
	return &InstanceTypeWrapper{workerv1.InstanceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: workerv1.GroupVersion.String(), Kind: "InstanceType"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: workerv1.InstanceTypeSpec{
			OS: "linux", Arch: "amd64", GeneralGroup: "generic",
			UnitResources: workerv1.UnitResources{CPU: resource.MustParse("1"), RAM: resource.MustParse("2Gi")},
			LocalStorage:  resource.MustParse("100Gi"),
		},
	}}
}

// Accelerated makes the type a pool of the accelerator group.
func (w *InstanceTypeWrapper) Accelerated(group string) *InstanceTypeWrapper {
	w.Spec.Acceleratable = true
	w.Spec.AcceleratorGroup = group
	return w
}

// General restricts the type to a CPU key.
func (w *InstanceTypeWrapper) General(group string) *InstanceTypeWrapper {
	w.Spec.GeneralGroup = group
	return w
}

// Unit sets the unit resources.
func (w *InstanceTypeWrapper) Unit(cpu, ram string) *InstanceTypeWrapper {
	w.Spec.UnitResources = workerv1.UnitResources{CPU: resource.MustParse(cpu), RAM: resource.MustParse(ram)}
	return w
}

// LocalStorage sets the type's local storage.
func (w *InstanceTypeWrapper) LocalStorage(q string) *InstanceTypeWrapper {
	w.Spec.LocalStorage = resource.MustParse(q)
	return w
}

// Platform sets os and arch.
func (w *InstanceTypeWrapper) Platform(os, arch string) *InstanceTypeWrapper {
	w.Spec.OS, w.Spec.Arch = os, arch
	return w
}

// DisplayName sets the display name.
func (w *InstanceTypeWrapper) DisplayName(n string) *InstanceTypeWrapper {
	w.Spec.DisplayName = n
	return w
}

// Inactive sets spec.inactive: an administrator's Hold.
func (w *InstanceTypeWrapper) Inactive() *InstanceTypeWrapper {
	w.Spec.Inactive = true
	return w
}

// Obj returns the InstanceType.
func (w *InstanceTypeWrapper) Obj() *workerv1.InstanceType { return w.DeepCopy() }

// InstanceWrapper builds an Instance.
type InstanceWrapper struct{ workerv1.Instance }

// MakeInstance starts an Instance of the type with a 1Gi ephemeral workspace running ubuntu:24.04.
func MakeInstance(namespace, name, typ string) *InstanceWrapper {
	return &InstanceWrapper{workerv1.Instance{
		TypeMeta:   metav1.TypeMeta{APIVersion: workerv1.GroupVersion.String(), Kind: "Instance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: workerv1.InstanceSpec{
			Type: typ, Image: "ubuntu:24.04", Command: []string{"sleep", "86400"},
			Volume: workerv1.InstanceVolume{Ephemeral: &workerv1.EphemeralVolume{Capacity: resource.MustParse("1Gi")}},
		},
	}}
}

// Accelerators asks for n whole accelerators.
func (w *InstanceWrapper) Accelerators(n int32) *InstanceWrapper {
	w.Spec.Resources.Accelerator = ptr.To(intstr.FromInt32(n))
	return w
}

// CPU asks for cpu cores (a quantity).
func (w *InstanceWrapper) CPU(cpu string) *InstanceWrapper {
	w.Spec.Resources.CPU = ptr.To(resource.MustParse(cpu))
	return w
}

// Slice asks for one accelerator sliced to the memory and cores percentages.
func (w *InstanceWrapper) Slice(memoryPercent, coresPercent int32) *InstanceWrapper {
	w.Spec.Resources.Accelerator = ptr.To(intstr.FromInt32(1))
	w.Spec.Resources.AcceleratorSlicedMemoryPercentage = ptr.To(memoryPercent)
	w.Spec.Resources.AcceleratorSlicedCoresPercentage = ptr.To(coresPercent)
	return w
}

// Partition asks for one hardware partition of the profile.
func (w *InstanceWrapper) Partition(profile string) *InstanceWrapper {
	w.Spec.Resources.Accelerator = ptr.To(intstr.FromInt32(1))
	w.Spec.Resources.AcceleratorPartitionedProfile = profile
	return w
}

// PersistentWorkspace replaces the ephemeral workspace with an InstancePersistentVolume.
func (w *InstanceWrapper) PersistentWorkspace(name string) *InstanceWrapper {
	w.Spec.Volume = workerv1.InstanceVolume{Persistent: &workerv1.PersistentVolumeReference{Name: name}}
	return w
}

// SSHPublicKey names the InstanceSSHPublicKey whose keys the Instance's sidecar accepts.
func (w *InstanceWrapper) SSHPublicKey(name string) *InstanceWrapper {
	w.Spec.SSHPublicKey = name
	return w
}

// ImagePullSecret names the InstanceImagePullSecret that pulls the Instance's image.
func (w *InstanceWrapper) ImagePullSecret(name string) *InstanceWrapper {
	w.Spec.ImagePullSecret = name
	return w
}

// VolumeMount sets the workspace mount path.
func (w *InstanceWrapper) VolumeMount(path string) *InstanceWrapper {
	w.Spec.VolumeMount = path
	return w
}

// Volume adds an additional volume.
func (w *InstanceWrapper) Volume(v workerv1.AdditionalVolume) *InstanceWrapper {
	w.Spec.AdditionalVolumes = append(w.Spec.AdditionalVolumes, v)
	return w
}

// Port adds an exposed TCP port.
func (w *InstanceWrapper) Port(port int32, name string) *InstanceWrapper {
	w.Spec.Ports = append(w.Spec.Ports, workerv1.InstancePort{Port: port, Name: name, Protocol: corev1.ProtocolTCP})
	return w
}

// NodeName pins the Instance to a node.
func (w *InstanceWrapper) NodeName(n string) *InstanceWrapper {
	w.Spec.NodeName = n
	return w
}

// Privileged asks for a privileged workload.
func (w *InstanceWrapper) Privileged() *InstanceWrapper {
	w.Spec.Privileged = true
	return w
}

// Stopped sets spec.stop.
func (w *InstanceWrapper) Stopped(stop bool) *InstanceWrapper {
	w.Spec.Stop = stop
	return w
}

// Obj returns the Instance.
func (w *InstanceWrapper) Obj() *workerv1.Instance { return w.DeepCopy() }

// PersistentVolume returns an additional volume mounting an InstancePersistentVolume.
func PersistentVolume(mountPath, name string) workerv1.AdditionalVolume {
	return workerv1.AdditionalVolume{MountPath: mountPath, Persistent: &workerv1.PersistentVolumeReference{Name: name}}
}

// ConfigMapVolume returns an additional volume mounting a ConfigMap.
func ConfigMapVolume(mountPath, name string) workerv1.AdditionalVolume {
	return workerv1.AdditionalVolume{MountPath: mountPath, ConfigMap: &workerv1.ObjectReference{Name: name}}
}

// HostPathVolume returns an additional volume mounting a node path.
func HostPathVolume(mountPath, path string) workerv1.AdditionalVolume {
	return workerv1.AdditionalVolume{MountPath: mountPath, HostPath: &workerv1.HostPathVolume{
		Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}
}
