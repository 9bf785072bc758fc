package gateway

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// benchMembers and benchNodes are the size the issue asks the gateway to be measured at: 20 member clusters of
// 500 nodes each.
const benchMembers, benchNodes = 20, 500

// benchState is what a member of benchNodes nodes answers: 20 InstanceTypes with their views, an Instance per
// node (running, with its node, addresses, ports and cards) and a persistent volume per ten nodes.
func benchState(member int) MemberState {
	s := MemberState{Name: fmt.Sprintf("member-%02d", member), Reachable: true, LastSeen: time.Unix(0, 0)}
	view := func(capacity, once, remaining int64) *workerv1.CapacityView {
		return &workerv1.CapacityView{Capacity: *resource.NewQuantity(capacity, resource.DecimalSI),
			OnceMaxRequest: *resource.NewQuantity(once, resource.DecimalSI), Remaining: *resource.NewQuantity(remaining, resource.DecimalSI)}
	}
	for t := range 20 {
		it := workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpustack--product-%02d-linux-amd64", t)},
			Spec: workerv1.InstanceTypeSpec{AcceleratorGroup: fmt.Sprintf("product-%02d", t)},
			Status: workerv1.InstanceTypeStatus{Phase: workerv1.InstanceTypeActive, Entrance: fmt.Sprintf("gpustack-entrance-%02d", t),
				Accelerator: view(200, 8, int64(100+member)), AcceleratorShared: view(2000, 80, 1000),
				AcceleratorSliced: view(20000, 100, 10000), CPU: view(1600, 64, 800)}}
		s.InstanceTypes = append(s.InstanceTypes, it)
	}
	for n := range benchNodes {
		inst := workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", n%10), Name: fmt.Sprintf("instance-%04d", n),
			Labels: map[string]string{"app": "web"}},
			Spec: workerv1.InstanceSpec{Type: s.InstanceTypes[n%20].Name, Image: "ubuntu:24.04",
				Ports: []workerv1.InstancePort{{Name: "ssh", Port: 22}}},
			Status: workerv1.InstanceStatus{Phase: workerv1.InstanceReady, NodeName: fmt.Sprintf("node-%04d", n),
				HostIPs: []string{fmt.Sprintf("10.0.%d.%d", n/250, n%250)}, AccessAddresses: []string{fmt.Sprintf("10.0.%d.%d", n/250, n%250)},
				Ports:       []workerv1.InstanceStatusPort{{InstancePort: workerv1.InstancePort{Name: "ssh", Port: 22, Protocol: corev1.ProtocolTCP}, NodePort: 30022}},
				Allocations: []string{fmt.Sprintf("GPU-%d-0", n)}}}
		s.Instances = append(s.Instances, inst)
		if n%10 == 0 {
			s.PersistentVolumes = append(s.PersistentVolumes, workerv1.InstancePersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: fmt.Sprintf("data-%04d", n)}})
		}
	}
	return s
}

// BenchmarkMemberChange measures, for 20 members of 500 nodes each, the gateway's part of the time from a
// member's change to the aggregated view: what it does once a member's read returned with one InstanceType's
// view changed (keep the state, bring what it serves up to date) until a list of aggregatedinstancetypes
// answers with the change.
// The member's read itself and the read interval come on top (see docs/performance.md). It reports the heap the
// gateway holds for what it serves (the members' states and the served history) as MB-held.
func BenchmarkMemberChange(b *testing.B) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := &Gateway{members: map[string]*member{}}
	for m := range benchMembers {
		state := benchState(m)
		g.members[state.Name] = &member{state: state, read: true}
	}
	s := &Server{Source: g}
	h := s.history()
	var aggregated apiResource
	for _, r := range resources {
		if r.name == "aggregatedinstancetypes" {
			aggregated = r
		}
	}
	if err := h.follow(g); err != nil {
		b.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// A card taken on one member: its type's whole-card view has one card less (or more, every other time).
		m := g.members[fmt.Sprintf("member-%02d", i%benchMembers)]
		next := m.state
		next.InstanceTypes = append([]workerv1.InstanceType(nil), m.state.InstanceTypes...)
		changed := next.InstanceTypes[i%20].DeepCopy()
		changed.Status.Accelerator.Remaining.Add(*resource.NewQuantity(int64(1-2*(i/benchMembers%2)), resource.DecimalSI))
		next.InstanceTypes[i%20] = *changed
		g.mu.Lock()
		g.record(m, next)
		g.mu.Unlock()
		from := h.rev
		items, _, err := h.list(g, aggregated)
		if err != nil || len(items) != 20 || h.changes[len(h.changes)-1].rev == from {
			b.Fatalf("the aggregated view: %d types, no change recorded, %v", len(items), err)
		}
		i++
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB-held")
}
