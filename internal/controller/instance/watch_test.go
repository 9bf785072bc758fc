package instance

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestTypeChanged(t *testing.T) {
	base := &workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: "t4", Generation: 1},
		Status: workerv1.InstanceTypeStatus{Phase: "Active", Entrance: "lq-1",
			Accelerator: &workerv1.CapacityView{Remaining: resource.MustParse("4")}}}
	cases := map[string]struct {
		reason string
		change func(*workerv1.InstanceType)
		want   bool
	}{
		"Views":    {reason: "a change of the views alone (every admission) enqueues no Instance", change: func(it *workerv1.InstanceType) { it.Status.Accelerator.Remaining = resource.MustParse("3") }},
		"Spec":     {reason: "a spec change does", change: func(it *workerv1.InstanceType) { it.Generation = 2 }, want: true},
		"Entrance": {reason: "a new queue does", change: func(it *workerv1.InstanceType) { it.Status.Entrance = "lq-2" }, want: true},
		"Phase":    {reason: "a phase change does", change: func(it *workerv1.InstanceType) { it.Status.Phase = "Inactive" }, want: true},
		"Deleting": {reason: "deletion does", change: func(it *workerv1.InstanceType) { it.DeletionTimestamp = &metav1.Time{} }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := typeChanged(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got != tc.want {
				t.Errorf("%s\ntypeChanged(...): want %v, got %v", tc.reason, tc.want, got)
			}
		})
	}
}
