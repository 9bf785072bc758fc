package cachepolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

func TestTrimPod(t *testing.T) {
	limits := corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "q"},
			Annotations:   map[string]string{"device.gpustack.ai/accelerator.allocated": `{"main":["GPU-1"]}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{
			NodeName: "node-a", SchedulingGates: []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}},
			Volumes: []corev1.Volume{{Name: "workspace"}},
			Containers: []corev1.Container{{Name: "main", Image: "ubuntu", Command: []string{"sleep"}, Env: []corev1.EnvVar{{Name: "A"}},
				Ports: []corev1.ContainerPort{{Name: "ssh", ContainerPort: 22}}, VolumeMounts: []corev1.VolumeMount{{Name: "workspace"}}, Resources: corev1.ResourceRequirements{Limits: limits}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIPs: []corev1.HostIP{{IP: "10.0.0.5"}}},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Labels: pod.Labels, Annotations: pod.Annotations},
		Spec: corev1.PodSpec{NodeName: "node-a", SchedulingGates: pod.Spec.SchedulingGates,
			Containers: []corev1.Container{{Name: "main", Image: "ubuntu", Ports: pod.Spec.Containers[0].Ports,
				Resources: corev1.ResourceRequirements{Limits: limits}}}},
		Status: pod.Status,
	}
	got, err := TrimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TrimPod(...): -want, +got:\n%s", diff)
	}
	other := &corev1.Node{}
	if got, _ := TrimPod(other); got != other {
		t.Errorf("TrimPod leaves other kinds alone")
	}
}

// TestTrimPodKeepsTheDispatchedService checks that a trimmed Pod keeps what a member's worker makes a
// dispatched Instance's Service from: the same Service as from the whole Pod.
func TestTrimPodKeepsTheDispatchedService(t *testing.T) {
	typ := builders.MakeInstanceType("cpu").Obj()
	inst := builders.MakeInstance("default", "demo", typ.Name).Obj()
	inst.Spec.Ports = []workerv1.InstancePort{{Name: "ssh", Port: 22}, {Port: 8080}}
	pod, err := instancepod.Pod(inst, typ, instancepod.Options{SSHImage: "gpustack/ssh-server:v1.3.0"})
	if err != nil {
		t.Fatal(err)
	}
	want := instancepod.DispatchedService(pod)
	trimmed, err := TrimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, instancepod.DispatchedService(trimmed.(*corev1.Pod))); want == nil || diff != "" {
		t.Errorf("DispatchedService(TrimPod(pod)): -want (from the whole Pod), +got:\n%s", diff)
	}
}

func TestTrimNode(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("2")}
	conditions := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"feature.gpustack.ai/os": "linux"},
			Annotations:   map[string]string{"gpustack.ai/cpu-name": "AMD EPYC 7R32"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.0.0/24", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: conditions, Phase: corev1.NodeRunning,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.35.0"}},
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: node.Labels, Annotations: node.Annotations},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: conditions, Phase: corev1.NodeRunning},
	}
	got, err := TrimNode(node.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TrimNode(...): -want, +got:\n%s", diff)
	}
	other := &corev1.Pod{}
	if got, _ := TrimNode(other); got != other {
		t.Errorf("TrimNode leaves other kinds alone")
	}
}

func TestNodeChanged(t *testing.T) {
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	cases := map[string]struct {
		reason string
		change func(*corev1.Node)
		want   bool
	}{
		"Heartbeat": {reason: "a heartbeat moves only the conditions", change: func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
			n.ResourceVersion = "2"
		}},
		"Label":       {reason: "a label wakes the controllers", change: func(n *corev1.Node) { n.Labels["a"] = "2" }, want: true},
		"Annotation":  {reason: "an annotation does", change: func(n *corev1.Node) { n.Annotations["c"] = "3" }, want: true},
		"Capacity":    {reason: "a capacity change does", change: func(n *corev1.Node) { n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("3") }, want: true},
		"Allocatable": {reason: "an allocatable change does", change: func(n *corev1.Node) { delete(n.Status.Allocatable, "nvidia.com/gpu") }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := NodeChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got != tc.want {
				t.Errorf("%s\nNodeChanged.Update(...): want %v, got %v", tc.reason, tc.want, got)
			}
		})
	}
}

func TestResourceClaimPoolsOf(t *testing.T) {
	result := func(driver, pool string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: pool, Device: "card-0"}
	}
	cases := map[string]struct {
		reason string
		claim  *resourceapi.ResourceClaim
		want   []string
	}{
		"Unallocated": {
			reason: "A claim not allocated yet holds no pool.",
			claim:  &resourceapi.ResourceClaim{},
		},
		"OursOnly": {
			reason: "Only the pools of this project's drivers count, each once: another driver's, or a *.gpustack.ai name that is no vendor's, are not the ledger's.",
			claim: &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
					result("nvidia.gpustack.ai", "node-a"), result("gpu.nvidia.com", "node-b"),
					result("nothing.gpustack.ai", "node-c"), result("nvidia.gpustack.ai", "node-a"),
					result("ascend.gpustack.ai", "node-d"),
				}},
			}}},
			want: []string{"node-a", "node-d"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ResourceClaimPoolsOf(tc.claim)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResourceClaimPoolsOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
