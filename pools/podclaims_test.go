package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestPodClaims(t *testing.T) {
	limits := func(kv ...string) corev1.ResourceRequirements {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return corev1.ResourceRequirements{Limits: l}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Annotations: map[string]string{workerv1.AnnotationAllocated: `{"main":["GPU-1"]}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Resources: limits("nvidia.com/gpu.sliced", "1", "nvidia.com/gpu.sliced.memory-percentage", "20")},
			{Name: "sshd", Resources: limits("device.gpustack.ai/nvidia.visibility", "1")},
			{Name: "helper", Resources: limits("huawei.com/npu.shared", "2", "cpu", "1")},
			{Name: "trainer", Resources: limits("amd.com/gpu", "4")},
			{Name: "cheap", Resources: limits("cambricon.com/mlu.sliced", "1", "cambricon.com/mlu.sliced.units", "1",
				"cambricon.com/mlu.sliced.memory-percentage", "50")},
		}},
	}
	want := []Claim{
		{Key: "ns/p/main", Manufacturer: "nvidia", Demand: Demand{Family: FamilySliced, Units: 320_000}, Cards: []string{"GPU-1"}},
		{Key: "ns/p/helper", Manufacturer: "ascend", Demand: Demand{Family: FamilyShared, Cards: 2}},
		{Key: "ns/p/trainer", Manufacturer: "amd", Demand: Demand{Family: FamilyExclusive, Cards: 4}},
		{Key: "ns/p/cheap", Manufacturer: "cambricon", Demand: Demand{Family: FamilySliced, Units: 800_000}},
	}
	if diff := cmp.Diff(want, PodClaims(pod)); diff != "" {
		t.Errorf("A slice folded from its percentage with its recorded card, a share, whole cards; the sidecar's visibility claims nothing; "+
			"a client's own units never undercut the slice's budget: -want, +got:\n%s", diff)
	}
}

func TestPodClaimsInitContainers(t *testing.T) {
	slice := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1"),
		"nvidia.com/gpu.sliced.memory-percentage": resource.MustParse("50")}}
	always := corev1.ContainerRestartPolicyAlways
	pod := func(status ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "prepare", Resources: slice}, {Name: "proxy", Resources: slice, RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "main", Resources: slice}}},
			Status: corev1.PodStatus{InitContainerStatuses: status}}
	}
	half := Demand{Family: FamilySliced, Units: 800_000}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		want   []string
	}{
		"Initialising": {
			reason: "before its init containers have run, the Pod holds what each of them asks beside its containers",
			pod:    pod(),
			want:   []string{"ns/p/prepare", "ns/p/proxy", "ns/p/main"},
		},
		"Initialised": {
			reason: "an init container that has run gives its slice back; a sidecar holds its own as long as the Pod",
			pod: pod(corev1.ContainerStatus{Name: "prepare", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
				corev1.ContainerStatus{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}),
			want: []string{"ns/p/proxy", "ns/p/main"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range PodClaims(tc.pod) {
				if c.Demand != half {
					t.Errorf("%s: demand %+v, want %+v", c.Key, c.Demand, half)
				}
				got = append(got, c.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPodClaims(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
