package composer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// cpuPod is a Pod of one container requesting cpu, bound to node ("": not bound), in a phase.
func cpuPod(uid, node, cpu string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: uid, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

// TestCPUIndex feeds Pod events to the index as the worker's cache would and checks, after each, the nodes'
// sums and whether the composer is brought back: only when a sum changed.
func TestCPUIndex(t *testing.T) {
	type step struct {
		reason      string
		event       func(h toolscache.ResourceEventHandler)
		wantChanged bool
		want        map[string]int64
	}
	steps := []step{
		{reason: "A Pod not bound yet counts nowhere.",
			event: func(h toolscache.ResourceEventHandler) { h.OnAdd(cpuPod("a", "", "500m", corev1.PodPending), false) },
			want:  map[string]int64{}},
		{reason: "Bound, it counts on its node.",
			event: func(h toolscache.ResourceEventHandler) {
				h.OnUpdate(cpuPod("a", "", "500m", corev1.PodPending), cpuPod("a", "node-1", "500m", corev1.PodPending))
			},
			wantChanged: true, want: map[string]int64{"node-1": 500}},
		{reason: "Running: its status changed, the sums did not, and the composer is left alone.",
			event: func(h toolscache.ResourceEventHandler) {
				h.OnUpdate(cpuPod("a", "node-1", "500m", corev1.PodPending), cpuPod("a", "node-1", "500m", corev1.PodRunning))
			},
			want: map[string]int64{"node-1": 500}},
		{reason: "A second Pod on the node adds to it.",
			event:       func(h toolscache.ResourceEventHandler) { h.OnAdd(cpuPod("b", "node-1", "2", corev1.PodRunning), false) },
			wantChanged: true, want: map[string]int64{"node-1": 2500}},
		{reason: "A bound Pod of no CPU request changes nothing.",
			event: func(h toolscache.ResourceEventHandler) { h.OnAdd(cpuPod("c", "node-2", "0", corev1.PodRunning), false) },
			want:  map[string]int64{"node-1": 2500}},
		{reason: "A finished Pod gives its CPU back.",
			event: func(h toolscache.ResourceEventHandler) {
				h.OnUpdate(cpuPod("b", "node-1", "2", corev1.PodRunning), cpuPod("b", "node-1", "2", corev1.PodSucceeded))
			},
			wantChanged: true, want: map[string]int64{"node-1": 500}},
		{reason: "A Pod's resize moves the sum.",
			event: func(h toolscache.ResourceEventHandler) {
				h.OnUpdate(cpuPod("a", "node-1", "500m", corev1.PodRunning), cpuPod("a", "node-1", "1500m", corev1.PodRunning))
			},
			wantChanged: true, want: map[string]int64{"node-1": 1500}},
		{reason: "A deletion the cache learnt of late (a tombstone) gives it back, and the node is forgotten.",
			event: func(h toolscache.ResourceEventHandler) {
				h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "default/a", Obj: cpuPod("a", "node-1", "1500m", corev1.PodRunning)})
			},
			wantChanged: true, want: map[string]int64{}},
	}
	x := &cpuIndex{}
	if _, ok := x.sums(); ok {
		t.Fatalf("sums() answered before the index was fed by events")
	}
	changed := false
	h := x.handler(func() { changed = true })
	x.watch(func() bool { return true })
	for i, s := range steps {
		changed = false
		s.event(h)
		if changed != s.wantChanged {
			t.Errorf("%s\nstep %d: composer brought back %t, want %t", s.reason, i, changed, s.wantChanged)
		}
		got, ok := x.sums()
		if !ok {
			t.Fatalf("%s\nstep %d: sums() did not answer once synced", s.reason, i)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s\nstep %d: sums(): -want, +got:\n%s", s.reason, i, diff)
		}
	}
}
