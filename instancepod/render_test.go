package instancepod

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// a10gType is the walkthrough's derived A10G type: 8 CPU / 64Gi per accelerator, 100Gi of storage.
func a10gType() *workerv1.InstanceType {
	return &workerv1.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: "gpustack--nvidia-a10g-linux-amd64"},
		Spec: workerv1.InstanceTypeSpec{Acceleratable: true, AcceleratorGroup: "nvidia-a10g", OS: "linux", Arch: "amd64",
			InstanceTypeDescriptors: workerv1.InstanceTypeDescriptors{Manufacturer: "nvidia"},
			UnitResources:           workerv1.UnitResources{CPU: resource.MustParse("8"), RAM: resource.MustParse("64Gi")},
			LocalStorage:            resource.MustParse("100Gi")},
		Status: workerv1.InstanceTypeStatus{Entrance: "gpustack-fnv64-c4680bb149644f1c"},
	}
}

func genericType() *workerv1.InstanceType {
	return &workerv1.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: "gpustack--generic-linux-amd64"},
		Spec: workerv1.InstanceTypeSpec{OS: "linux", Arch: "amd64", GeneralGroup: "generic",
			UnitResources: workerv1.UnitResources{CPU: resource.MustParse("1"), RAM: resource.MustParse("2Gi")},
			LocalStorage:  resource.MustParse("100Gi")},
	}
}

func instance(r workerv1.InstanceResources) *workerv1.Instance {
	return &workerv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo", UID: "u1"},
		Spec: workerv1.InstanceSpec{Type: "t", Image: "ubuntu:24.04", Command: []string{"sleep", "86400"}, Resources: r,
			Volume: workerv1.InstanceVolume{Ephemeral: &workerv1.EphemeralVolume{Capacity: resource.MustParse("1Gi")}}},
	}
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestResources(t *testing.T) {
	type want struct {
		res PodResources
		err string
	}
	cases := map[string]struct {
		reason     string
		inst       *workerv1.Instance
		it         *workerv1.InstanceType
		overcommit bool
		want       want
	}{
		"SlicedDemo": {
			reason: "Step 3's 20 % slice folds to 320,000 units; with overcommit the unit is the limit and one accelerator asks 100m and 128Mi.",
			inst: instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(1)),
				AcceleratorSlicedMemoryPercentage: ptr.To[int32](20), AcceleratorSlicedCoresPercentage: ptr.To[int32](100)}),
			it: a10gType(), overcommit: true,
			want: want{res: PodResources{
				Main: corev1.ResourceRequirements{
					Limits: list("cpu", "8", "memory", "64Gi", "ephemeral-storage", "15Gi", "nvidia.com/gpu.sliced", "1",
						"nvidia.com/gpu.sliced.memory-percentage", "20", "nvidia.com/gpu.sliced.cores-percentage", "100",
						"nvidia.com/gpu.sliced.units", "320000"),
					Requests: list("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1920Mi", "nvidia.com/gpu.sliced", "1",
						"nvidia.com/gpu.sliced.memory-percentage", "20", "nvidia.com/gpu.sliced.cores-percentage", "100",
						"nvidia.com/gpu.sliced.units", "320000"),
				},
				SSH: corev1.ResourceRequirements{Limits: list("device.gpustack.ai/nvidia.visibility", "1"),
					Requests: list("device.gpustack.ai/nvidia.visibility", "1")},
			}},
		},
		"TwoWholeCardsNoOvercommit": {
			reason: "Two whole cards take twice the unit, requested as asked without overcommit.",
			inst:   instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(2))}), it: a10gType(),
			want: want{res: PodResources{
				Main: corev1.ResourceRequirements{
					Limits:   list("cpu", "16", "memory", "128Gi", "ephemeral-storage", "15Gi", "nvidia.com/gpu", "2"),
					Requests: list("cpu", "16", "memory", "128Gi", "ephemeral-storage", "15Gi", "nvidia.com/gpu", "2"),
				},
				SSH: corev1.ResourceRequirements{Limits: list("device.gpustack.ai/nvidia.visibility", "2"),
					Requests: list("device.gpustack.ai/nvidia.visibility", "2")},
			}},
		},
		"CPUType": {
			reason: "A CPU type charges its unit RAM per core; the sidecar asks for nothing.",
			inst:   instance(workerv1.InstanceResources{CPU: ptr.To(resource.MustParse("4"))}), it: genericType(),
			want: want{res: PodResources{Main: corev1.ResourceRequirements{
				Limits:   list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "15Gi"),
				Requests: list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "15Gi"),
			}}},
		},
		"AcceleratorOnCPUType": {
			reason: "An accelerator on a CPU-only type is refused, naming the field and the type.",
			inst:   instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(1))}), it: genericType(),
			want: want{err: "spec.resources.accelerator: accelerator request must not be specified for non-acceleratable instance type gpustack--generic-linux-amd64"},
		},
		"Partition": {
			reason: "A partition asks the pool's partition resource and its profile key; the Pod webhook folds the units.",
			inst: instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(1)),
				AcceleratorPartitionedProfile: "3g.40gb"}), it: a10gType(),
			want: want{res: PodResources{
				Main: corev1.ResourceRequirements{
					Limits: list("cpu", "8", "memory", "64Gi", "ephemeral-storage", "15Gi", "nvidia.com/gpu.partitioned", "1",
						"nvidia.com/gpu.partitioned.mig-3g.40gb", "1"),
					Requests: list("cpu", "8", "memory", "64Gi", "ephemeral-storage", "15Gi", "nvidia.com/gpu.partitioned", "1",
						"nvidia.com/gpu.partitioned.mig-3g.40gb", "1"),
				},
				SSH: corev1.ResourceRequirements{Limits: list("device.gpustack.ai/nvidia.visibility", "1"),
					Requests: list("device.gpustack.ai/nvidia.visibility", "1")},
			}},
		},
		"MultiCardSlice": {
			reason: "A slice of two accelerators is refused.",
			inst: instance(workerv1.InstanceResources{Accelerator: ptr.To(intstr.FromInt32(2)),
				AcceleratorSlicedMemoryPercentage: ptr.To[int32](20)}), it: a10gType(),
			want: want{err: "a slice is always 1 accelerator"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Resources(tc.inst, tc.it, tc.overcommit)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Errorf("%s\nResources(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.res, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("%s\nResources(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPod(t *testing.T) {
	inst := instance(workerv1.InstanceResources{AcceleratorSlicedMemoryPercentage: ptr.To[int32](20)})
	inst.Spec.NodeName, inst.Spec.SSHPublicKey = "node-a10g", "my-key"
	inst.Spec.AdditionalVolumes = []workerv1.AdditionalVolume{
		{MountPath: "/data", Persistent: &workerv1.PersistentVolumeReference{Name: "data"}},
		{MountPath: "/etc/app", ConfigMap: &workerv1.ObjectReference{Name: "app"}, ReadOnly: true},
	}
	pod, err := Pod(inst, a10gType(), Options{Overcommit: true, SSHImage: "gpustack/ssh-server:v1.3.0", NodeHostname: "node-a10g",
		NodeFlavorLabels: map[string]string{"acceleratable.feature.gpustack.ai/nvidia-a10g.count": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Labels[workerv1.LabelQueueName]; got != "gpustack-fnv64-c4680bb149644f1c" {
		t.Errorf("The Pod queues on its type's entrance: %q", got)
	}
	wantSelector := map[string]string{"kubernetes.io/hostname": "node-a10g", "acceleratable.feature.gpustack.ai/nvidia-a10g.count": "1"}
	if diff := cmp.Diff(wantSelector, pod.Spec.NodeSelector); diff != "" {
		t.Errorf("A pin is a hostname nodeSelector plus the labels of the node's flavor: -want, +got:\n%s", diff)
	}
	var mounts []string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	if diff := cmp.Diff([]string{"/workspace", "/dev/shm", "/data", "/etc/app"}, mounts); diff != "" {
		t.Errorf("main mounts the workspace, shared memory and the additional volumes: -want, +got:\n%s", diff)
	}
	sshd := pod.Spec.Containers[1]
	var sshdMounts []string
	for _, m := range sshd.VolumeMounts {
		sshdMounts = append(sshdMounts, m.Name+":"+m.MountPath)
	}
	wantMounts := []string{"workspace:/workspace", "ssh-host-keys:/etc/ssh/ssh_host_ed25519_key", "ssh-host-keys:/etc/ssh/ssh_host_ed25519_key.pub",
		"ssh-authorized-keys:/var/run/sshd-authorized-keys"}
	if diff := cmp.Diff(wantMounts, sshdMounts); sshd.Name != SSHContainer || sshd.Image != "gpustack/ssh-server:v1.3.0" || diff != "" {
		t.Errorf("The SSH sidecar runs the setting's image with the workspace, the kept host key and the authorized keys: -want, +got mounts:\n%s", diff)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "ssh-host-keys" && (v.Secret == nil || v.Secret.SecretName != "demo-ssh-host-keys" || *v.Secret.DefaultMode != 0o600) {
			t.Errorf("The host key comes from the Instance's Secret, readable by root only: %+v", v)
		}
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("The Pod runs under the runtime's default seccomp profile: %+v", pod.Spec.SecurityContext)
	}
	if !*pod.Spec.ShareProcessNamespace || pod.Spec.HostIPC || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("The Pod shares its process namespace, not the host's IPC, without a service-account token: %+v", pod.Spec)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "dshm" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
			t.Errorf("Shared memory is a memory-backed volume: %+v", v)
		}
	}
	inst.Spec.NodeName = "node-gone"
	if _, err := Pod(inst, a10gType(), Options{}); err == nil || !strings.Contains(err.Error(), "spec.nodeName") {
		t.Errorf("A pin without the node's hostname label: error %v, want one naming spec.nodeName", err)
	}
}

func TestSidecarCapabilities(t *testing.T) {
	cases := map[string]struct {
		reason     string
		privileged bool
		want       *corev1.SecurityContext
	}{
		"Default": {
			reason: "Beside an unprivileged main the sidecar keeps the runtime's default capabilities, which Pod Security baseline admits: a session enters main's root with chroot, no SYS_ADMIN, no SYS_PTRACE.",
		},
		"PrivilegedMain": {
			reason:     "A privileged main holds every capability, so the sidecar needs SYS_PTRACE to reach its root.",
			privileged: true,
			want:       &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := instance(workerv1.InstanceResources{})
			inst.Spec.Privileged = tc.privileged
			pod, err := Pod(inst, a10gType(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.Spec.Containers[1].SecurityContext); diff != "" {
				t.Errorf("%s\nPod(...) sidecar security context: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRuntimeClass(t *testing.T) {
	cases := map[string]struct {
		reason  string
		typ     *workerv1.InstanceType
		classes map[string]bool
		want    *string
	}{
		"Exists": {reason: "An accelerated Pod names its vendor's RuntimeClass when the class exists.",
			typ: a10gType(), classes: map[string]bool{"nvidia": true}, want: ptr.To("nvidia")},
		"Missing": {reason: "A class that does not exist is not named: the Pod would be refused.",
			typ: a10gType(), classes: map[string]bool{"ascend": true}},
		"CPUType": {reason: "A CPU type's Pod names none.", typ: genericType(), classes: map[string]bool{"nvidia": true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := workerv1.InstanceResources{}
			if tc.typ.Spec.Acceleratable {
				r.Accelerator = ptr.To(intstr.FromInt32(1))
			}
			pod, err := Pod(instance(r), tc.typ, Options{RuntimeClasses: tc.classes})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.Spec.RuntimeClassName); diff != "" {
				t.Errorf("%s\nPod(...).Spec.RuntimeClassName: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestService(t *testing.T) {
	inst := instance(workerv1.InstanceResources{})
	if Service(inst) != nil {
		t.Error("An Instance without ports has no Service")
	}
	inst.Spec.Ports = []workerv1.InstancePort{{Port: 8080, Name: "http"}, {Port: 22}}
	svc := Service(inst)
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name+"/"+string(p.Protocol))
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Name != "demo" || svc.Spec.Selector[workerv1.LabelInstanceUID] != "u1" ||
		cmp.Diff([]string{"http/TCP", "port-1/TCP"}, ports) != "" {
		t.Errorf("A NodePort Service named after the Instance selects its Pod, one port per entry: %+v", svc)
	}
}

func TestDispatchedService(t *testing.T) {
	cases := map[string]struct {
		reason string
		ports  []workerv1.InstancePort
	}{
		"NoPorts": {
			reason: "a Pod whose Instance asks for no port gets no Service in the member either",
		},
		"Ports": {
			reason: "the member's Service is the one the Instance's own cluster would make, ports read back from the Pod",
			ports:  []workerv1.InstancePort{{Port: 8080, Name: "http"}, {Port: 22}, {Port: 53, Protocol: corev1.ProtocolUDP, Name: "dns"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := instance(workerv1.InstanceResources{})
			inst.Spec.Ports = tc.ports
			pod, err := Pod(inst, genericType(), Options{SSHImage: "gpustack/ssh-server:v1.3.0"})
			if err != nil {
				t.Fatal(err)
			}
			// MultiKueue's copy in the member keeps the Pod's labels and adds its origin.
			pod.Labels[kueue.MultiKueueOriginLabel] = "multikueue"
			want := Service(inst)
			if want != nil {
				want.Labels[kueue.MultiKueueOriginLabel] = "multikueue"
			}
			if diff := cmp.Diff(want, DispatchedService(pod)); diff != "" {
				t.Errorf("%s\nDispatchedService(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if DispatchedService(&corev1.Pod{}) != nil {
		t.Error("a Pod that is no Instance's gets no Service")
	}
}

func TestSharedMemory(t *testing.T) {
	cases := map[string]struct {
		reason    string
		workspace string
		volumes   []workerv1.AdditionalVolume
		// dshm: the operator adds its own memory-backed volume.
		dshm bool
	}{
		"Default": {
			reason: "main gets shared memory at /dev/shm",
			dshm:   true,
		},
		"OwnVolume": {
			reason:  "an Instance that mounts its own volume at /dev/shm keeps it: no second mount at one path",
			volumes: []workerv1.AdditionalVolume{{MountPath: SharedMemoryPath, ConfigMap: &workerv1.ObjectReference{Name: "x"}}},
		},
		"Workspace": {
			reason:    "nor one whose workspace is mounted there",
			workspace: SharedMemoryPath,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := instance(workerv1.InstanceResources{})
			inst.Spec.VolumeMount, inst.Spec.AdditionalVolumes = tc.workspace, tc.volumes
			pod, err := Pod(inst, genericType(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				if m.MountPath == SharedMemoryPath {
					got++
				}
			}
			if got != 1 {
				t.Errorf("%s\nPod(...): %d mounts at %s, want exactly one", tc.reason, got, SharedMemoryPath)
			}
			has := false
			for _, v := range pod.Spec.Volumes {
				has = has || v.Name == "dshm"
			}
			if has != tc.dshm {
				t.Errorf("%s\nPod(...): shared memory volume %v, want %v", tc.reason, has, tc.dshm)
			}
		})
	}
}

func TestHostKeysSecret(t *testing.T) {
	inst := instance(workerv1.InstanceResources{})
	secret, err := HostKeysSecret(inst)
	if err != nil {
		t.Fatal(err)
	}
	if secret.Name != "demo-ssh-host-keys" || secret.Namespace != "default" {
		t.Errorf("HostKeysSecret(...): %s/%s, want default/demo-ssh-host-keys", secret.Namespace, secret.Name)
	}
	key, err := ssh.ParsePrivateKey(secret.Data[HostKeyFile])
	if err != nil {
		t.Fatalf("HostKeysSecret(...): the private key is not one OpenSSH reads: %v", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(secret.Data[HostPublicKeyFile])
	if err != nil {
		t.Fatalf("HostKeysSecret(...): the public key is not one OpenSSH reads: %v", err)
	}
	if key.PublicKey().Type() != ssh.KeyAlgoED25519 || !bytes.Equal(key.PublicKey().Marshal(), pub.Marshal()) {
		t.Errorf("HostKeysSecret(...): an Ed25519 pair whose halves match, got %s and %s", key.PublicKey().Type(), pub.Type())
	}
	again, err := HostKeysSecret(inst)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again.Data[HostKeyFile], secret.Data[HostKeyFile]) {
		t.Error("HostKeysSecret(...): two calls made the same key; each Instance needs its own")
	}
}
