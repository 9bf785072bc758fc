package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// gpuType is an accelerated InstanceType whose EX view reads once/remaining of capacity.
func gpuType(name string, once, remaining, capacity int64, phase workerv1.InstanceTypePhase) workerv1.InstanceType {
	q := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	return workerv1.InstanceType{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workerv1.InstanceTypeSpec{Acceleratable: true},
		Status: workerv1.InstanceTypeStatus{Phase: phase, Accelerator: &workerv1.CapacityView{Capacity: q(capacity), OnceMaxRequest: q(once), Remaining: q(remaining)},
			AcceleratorPartitioned: &workerv1.PartitionedView{RemainingProfiles: []workerv1.ProfileCount{{Name: "1g.10gb", Count: once}}}}}
}

func TestAggregatedInstanceTypes(t *testing.T) {
	type row struct {
		Name, Accelerator, Partitions string
		Clusters, Inactive, Winners   []string
	}
	active, draining := workerv1.InstanceTypeActive, workerv1.InstanceTypeDraining
	cases := map[string]struct {
		reason string
		states []MemberState
		want   []row
	}{
		"Tiers": {
			reason: "Two members of one type: the larger onceMaxRequest makes the first tier, capacity and remaining and profiles are summed.",
			states: []MemberState{
				{Name: "b", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 4, 8, 8, active)}},
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 2, 3, 4, active), gpuType("t4", 1, 1, 1, active)}},
			},
			want: []row{
				{Name: "gpu", Accelerator: "4/11 0/0 0/0 0/0", Partitions: "1g.10gb=6", Clusters: []string{"a", "b"}, Winners: []string{"b", "a"}},
				{Name: "t4", Accelerator: "1/1 0/0 0/0 0/0", Partitions: "1g.10gb=1", Clusters: []string{"a"}, Winners: []string{"a"}},
			},
		},
		"Unreachable": {
			reason: "An unreachable member's last-known type is listed as inactive and counts nowhere.",
			states: []MemberState{
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 2, 3, 4, active)}},
				{Name: "b", Message: "cannot read member b: connection refused", InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 4, 8, 8, active)}},
			},
			want: []row{{Name: "gpu", Accelerator: "2/3 0/0 0/0 0/0", Partitions: "1g.10gb=2", Clusters: []string{"a", "b"}, Inactive: []string{"b"}, Winners: []string{"a"}}},
		},
		"NotActive": {
			reason: "A type that is not Active in its member (draining) does not count either.",
			states: []MemberState{{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 2, 3, 4, draining)}}},
			want:   []row{{Name: "gpu", Accelerator: "0/0 0/0 0/0 0/0", Clusters: []string{"a"}, Inactive: []string{"a"}}},
		},
		"NeverAnswered": {
			reason: "A member that never answered has no types to list.",
			states: []MemberState{{Name: "a", Message: "not read yet"}},
			want:   nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []row
			for _, a := range AggregatedInstanceTypes(tc.states) {
				r := row{Name: a.Name, Accelerator: a.Status.Summary.Accelerator, Partitions: a.Status.Summary.Partitions,
					Clusters: a.Status.Clusters, Inactive: a.Status.Inactive}
				for _, tier := range a.Status.Tiers {
					r.Winners = append(r.Winners, tier.Winner)
				}
				got = append(got, r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAggregatedInstanceTypes(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	seen := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	states := []MemberState{
		{Name: "b", Message: "cannot read member b: timeout"},
		{Name: "a", Reachable: true, LastSeen: seen, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 1, 1, 1, workerv1.InstanceTypeActive)}},
	}
	want := []gatewayv1.ClusterMember{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: gatewayv1.ClusterMemberStatus{Reachable: true, LastSeen: &metav1.Time{Time: seen}, InstanceTypes: 1}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: gatewayv1.ClusterMemberStatus{Message: "cannot read member b: timeout"}},
	}
	if diff := cmp.Diff(want, Members(states)); diff != "" {
		t.Errorf("members by name, a never-seen one without LastSeen\nMembers(...): -want, +got:\n%s", diff)
	}
}
