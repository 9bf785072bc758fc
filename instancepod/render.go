// Package instancepod turns an Instance into the Pod that runs it: plain functions over the Instance, its
// InstanceType and the settings that shape it, with no client inside, so the Instance controller, the dry
// run and the tests render the same Pod.
package instancepod

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Container names of an Instance's Pod.
const (
	MainContainer = "main"
	SSHContainer  = "sshd"
)

// DefaultLocalStorage is an Instance's local storage when it asks for none, capped at what its type offers.
var DefaultLocalStorage = resource.MustParse("15Gi")

// Options are the settings and facts outside the Instance and its type that shape the Pod.
type Options struct {
	// Overcommit is instance-general-resources-overcommit: the type's units become limits, and the requests
	// are scaled down.
	Overcommit bool
	// SSHImage is instance-ssh-server-image.
	SSHImage string
	// BuiltIn is how the built-in images (SSHImage) are pulled.
	BuiltIn BuiltInImages
	// NodeHostname is the kubernetes.io/hostname label of the node the Instance pins, read from the Node.
	NodeHostname string
	// NodeFlavorLabels are the nodeLabels of the pool's flavor that holds the pinned node (FlavorLabelsOf):
	// the Pod asks them too, so that Kueue assigns that flavor.
	NodeFlavorLabels map[string]string
	// RuntimeClasses are the RuntimeClasses that exist: an accelerated Pod names its vendor's when it is one of
	// them (a Pod naming a missing class is refused).
	RuntimeClasses map[string]bool
}

// Pod renders the Instance's Pod, or says which field of the Instance the type cannot serve.
func Pod(inst *workerv1.Instance, it *workerv1.InstanceType, o Options) (*corev1.Pod, error) {
	res, err := Resources(inst, it, o.Overcommit)
	if err != nil {
		return nil, err
	}
	mount := inst.Spec.VolumeMount
	if mount == "" {
		mount = workerv1.DefaultVolumeMount
	}
	volumes, mounts := volumes(inst, mount)
	env := []corev1.EnvVar{}
	for _, e := range inst.Spec.Env {
		env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	var ports []corev1.ContainerPort
	for _, p := range inst.Spec.Ports {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: p.Protocol})
	}
	pullPolicy := inst.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	main := corev1.Container{
		Name: MainContainer, Image: inst.Spec.Image, ImagePullPolicy: pullPolicy, Command: inst.Spec.Command,
		Env: env, Ports: ports, Resources: res.Main, VolumeMounts: mounts,
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), Privileged: ptr.To(inst.Spec.Privileged)},
	}
	sshd := corev1.Container{
		Name: SSHContainer, Image: o.BuiltIn.Image(o.SSHImage), ImagePullPolicy: o.BuiltIn.pullPolicy(), Stdin: true, TTY: true,
		Env:       []corev1.EnvVar{{Name: "VOLUME_MOUNT_PATH", Value: mount}},
		Resources: res.SSH,
		// An SSH session enters main's root through the shared process namespace (/proc/<pid>/root, chroot), so
		// every mount of main is seen, with the runtime's default capabilities: the kernel lets a root process
		// into another's root when its capabilities cover the other's (sshsidecar says how). A privileged main
		// holds every capability, so only then the sidecar needs SYS_PTRACE to reach it.
		SecurityContext: sidecarSecurity(inst.Spec.Privileged),
		VolumeMounts:    []corev1.VolumeMount{{Name: "workspace", MountPath: mount}},
	}
	keys, keyMounts := hostKeys(inst)
	volumes = append(volumes, keys)
	sshd.VolumeMounts = append(sshd.VolumeMounts, keyMounts...)
	if inst.Spec.SSHPublicKey != "" {
		volumes = append(volumes, corev1.Volume{Name: "ssh-authorized-keys", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: inst.Spec.SSHPublicKey, DefaultMode: ptr.To[int32](0o600)}}})
		sshd.VolumeMounts = append(sshd.VolumeMounts, corev1.VolumeMount{Name: "ssh-authorized-keys",
			MountPath: "/var/run/sshd-authorized-keys", ReadOnly: true})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: inst.Namespace, Name: inst.Name,
			Labels: map[string]string{
				workerv1.LabelQueueName: entrance(it), workerv1.LabelInstance: inst.Name, workerv1.LabelInstanceUID: string(inst.UID),
			},
		},
		Spec: corev1.PodSpec{
			Containers:            []corev1.Container{main, sshd},
			Volumes:               volumes,
			ShareProcessNamespace: ptr.To(true),
			// No host IPC namespace, for any vendor: what vendor guides ask --ipc=host for (NCCL, RCCL and HCCL
			// between a Pod's processes, PyTorch's DataLoader workers) is a large /dev/shm, which main gets as a
			// memory-backed volume, without sharing the host's System V IPC and shared memory with every process
			// on the node. Only NVIDIA MPS clients reach a host daemon that way, and the operator slices without MPS.
			// The container runtime's default seccomp profile; a privileged main container runs unconfined anyway.
			SecurityContext:              &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			RestartPolicy:                corev1.RestartPolicyAlways,
		},
	}
	if inst.Spec.ImagePullSecret != "" {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: inst.Spec.ImagePullSecret}}
	}
	for _, s := range o.BuiltIn.PullSecrets {
		if s != inst.Spec.ImagePullSecret {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
	}
	if s := o.BuiltIn.AuthSecretName(inst, o.SSHImage); s != "" {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if it.Spec.Acceleratable {
		if v, err := Vendor(it); err == nil && v.RuntimeClass != "" && o.RuntimeClasses[v.RuntimeClass] {
			pod.Spec.RuntimeClassName = ptr.To(v.RuntimeClass)
		}
	}
	if inst.Spec.NodeName != "" {
		if o.NodeHostname == "" {
			return nil, errors.Errorf("spec.nodeName: node %q has no kubernetes.io/hostname label to pin to", inst.Spec.NodeName)
		}
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: o.NodeHostname}
		for k, v := range o.NodeFlavorLabels {
			pod.Spec.NodeSelector[k] = v
		}
	}
	return pod, nil
}

// sidecarSecurity is the SSH sidecar's security context: the runtime's default capabilities, and SYS_PTRACE
// beside a privileged main.
func sidecarSecurity(privileged bool) *corev1.SecurityContext {
	if !privileged {
		return nil
	}
	return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}}
}

// entrance is the type's entrance LocalQueue.
func entrance(it *workerv1.InstanceType) string {
	if it.Status.Entrance != "" {
		return it.Status.Entrance
	}
	return pools.EntranceName(it.Name)
}

// SharedMemoryPath is where main gets a memory-backed volume: the POSIX shared memory its processes exchange
// data through, which counts against main's memory.
const SharedMemoryPath = "/dev/shm"

// sharedMemoryFree reports whether no volume of the Instance is mounted at SharedMemoryPath already.
func sharedMemoryFree(inst *workerv1.Instance, workspace string) bool {
	if workspace == SharedMemoryPath {
		return false
	}
	for _, v := range inst.Spec.AdditionalVolumes {
		if v.MountPath == SharedMemoryPath {
			return false
		}
	}
	return true
}

// volumes returns the Pod's volumes and main's mounts: the workspace, shared memory and the additional volumes.
func volumes(inst *workerv1.Instance, mount string) ([]corev1.Volume, []corev1.VolumeMount) {
	workspace := corev1.Volume{Name: "workspace"}
	switch v := inst.Spec.Volume; {
	case v.Persistent != nil:
		workspace.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Persistent.Name}}
	case v.Ephemeral != nil:
		workspace.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(v.Ephemeral.Capacity)}}
	default:
		workspace.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	vols := []corev1.Volume{workspace}
	mounts := []corev1.VolumeMount{{Name: "workspace", MountPath: mount}}
	if sharedMemoryFree(inst, mount) {
		vols = append(vols, corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "dshm", MountPath: SharedMemoryPath})
	}
	for i, a := range inst.Spec.AdditionalVolumes {
		name := "volume-" + strconv.Itoa(i)
		v := corev1.Volume{Name: name}
		switch {
		case a.Persistent != nil:
			v.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: a.Persistent.Name, ReadOnly: a.ReadOnly}}
		case a.ConfigMap != nil:
			v.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: a.ConfigMap.Name}}}
		case a.Secret != nil:
			v.VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: a.Secret.Name}}
		case a.HostPath != nil:
			v.VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: a.HostPath.Path, Type: a.HostPath.Type}}
		}
		vols = append(vols, v)
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: a.MountPath, ReadOnly: a.ReadOnly, SubPath: a.SubPath})
	}
	return vols, mounts
}

// Vendor returns the manufacturer of an accelerated type: its descriptor, else its accelerator group's
// manufacturer prefix (nvidia-a10g).
func Vendor(it *workerv1.InstanceType) (vendors.Vendor, error) {
	name := it.Spec.Manufacturer
	if name == "" {
		name, _, _ = strings.Cut(it.Spec.AcceleratorGroup, "-")
	}
	v, ok := vendors.Lookup(name)
	if !ok {
		return vendors.Vendor{}, errors.Errorf("instance type %s: no known manufacturer for accelerator group %q", it.Name, it.Spec.AcceleratorGroup)
	}
	return v, nil
}

// Service renders the NodePort Service that exposes an Instance's ports, nil when it asks for none. It has the
// Pod's name and selects the Pod of this incarnation of the Instance.
func Service(inst *workerv1.Instance) *corev1.Service {
	labels := map[string]string{workerv1.LabelInstance: inst.Name, workerv1.LabelInstanceUID: string(inst.UID)}
	return service(inst.Namespace, inst.Name, labels, inst.Spec.Ports)
}

// DispatchedService renders, in a member cluster, the Service of an Instance whose Pod a manager cluster
// dispatched there (the Instance itself stays on the manager): the Service Service renders for it, its ports
// read from the Pod's main container, labelled with the Pod's MultiKueue origin so the manager's gateway finds
// it; nil when the Pod is no Instance's or exposes no port.
func DispatchedService(pod *corev1.Pod) *corev1.Service {
	name, uid := pod.Labels[workerv1.LabelInstance], pod.Labels[workerv1.LabelInstanceUID]
	if name == "" {
		return nil
	}
	var ports []workerv1.InstancePort
	for _, c := range pod.Spec.Containers {
		if c.Name != MainContainer {
			continue
		}
		for _, p := range c.Ports {
			ports = append(ports, workerv1.InstancePort{Port: p.ContainerPort, Protocol: p.Protocol, Name: p.Name})
		}
	}
	labels := map[string]string{workerv1.LabelInstance: name, workerv1.LabelInstanceUID: uid}
	svc := service(pod.Namespace, name, labels, ports)
	if svc != nil {
		svc.Labels[kueue.MultiKueueOriginLabel] = pod.Labels[kueue.MultiKueueOriginLabel]
	}
	return svc
}

// service renders a NodePort Service named name that selects the Pods of labels and exposes ports (an unnamed
// port named after its index, TCP unless it says otherwise), nil for no ports.
func service(namespace, name string, labels map[string]string, ports []workerv1.InstancePort) *corev1.Service {
	if len(ports) == 0 {
		return nil
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: maps.Clone(labels)},
	}
	for i, p := range ports {
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("port-%d", i)
		}
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: name, Port: p.Port, Protocol: protocol})
	}
	return svc
}
