package scheme

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForApply(t *testing.T) {
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}},
	}
	got, err := ForApply(ds)
	if err != nil {
		t.Fatal(err)
	}
	// The typed struct's nulls (spec.selector, the template's containers and creationTimestamp) and its status
	// go; an empty emptyDir, which means something, stays.
	want := map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"namespace": "ns", "name": "agent"},
		"spec": map[string]any{
			"updateStrategy": map[string]any{},
			"template": map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
				"volumes": []any{map[string]any{"name": "scratch", "emptyDir": map[string]any{}}},
			}},
		},
	}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("ForApply(...): -want, +got:\n%s", diff)
	}
}
