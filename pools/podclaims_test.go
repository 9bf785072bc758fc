package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			Annotations: map[string]string{AnnotationAllocated: `{"main":["GPU-1"]}`}},
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
