package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAggregate(t *testing.T) {
	// views builds an accelerated pool's views: EX onceMax/remaining of capacity, SH and SL onceMax alike.
	views := func(exOnce, exRemaining, exCapacity, shOnce, slOnce int64) Views {
		return Views{Exclusive: View{Capacity: exCapacity, OnceMaxRequest: exOnce, Remaining: exRemaining},
			Shared: View{Capacity: 10 * exCapacity, OnceMaxRequest: shOnce, Remaining: 10 * exRemaining},
			Sliced: View{Capacity: 100 * exCapacity, OnceMaxRequest: slOnce, Remaining: 100 * exRemaining}}
	}
	gpu := func(cluster string, v Views) Candidate {
		return Candidate{Cluster: cluster, Active: true, Accelerated: true, Views: v}
	}
	bundle := func(ex, sh, sl int64) Views {
		return Views{Exclusive: View{OnceMaxRequest: ex}, Shared: View{OnceMaxRequest: sh}, Sliced: View{OnceMaxRequest: sl}}
	}
	cases := map[string]struct {
		reason     string
		candidates []Candidate
		want       Aggregated
	}{
		"Tiers": {
			reason: "Clusters whose largest free node takes 4 cards form one tier, won by the one with more free cards; " +
				"its whole bundle is copied (SH 2, SL 60), not the tier's best of each view (SH 4, SL 100).",
			candidates: []Candidate{gpu("east", views(4, 4, 8, 4, 100)), gpu("west", views(4, 6, 8, 2, 60)), gpu("north", views(2, 2, 4, 2, 100))},
			want: Aggregated{
				Tiers: []Tier{{OnceMaxRequest: bundle(4, 2, 60), Winner: "west", Clusters: []string{"east", "west"}},
					{OnceMaxRequest: bundle(2, 2, 100), Winner: "north", Clusters: []string{"north"}}},
				Views: Views{Exclusive: View{Capacity: 20, OnceMaxRequest: 4, Remaining: 12}, Shared: View{Capacity: 200, OnceMaxRequest: 2, Remaining: 120},
					Sliced: View{Capacity: 2000, OnceMaxRequest: 60, Remaining: 1200}},
				Clusters: []string{"east", "north", "west"}},
		},
		"Ties": {
			reason:     "Equal remaining: the first cluster by name wins, whatever order the members were read in.",
			candidates: []Candidate{gpu("b", views(1, 1, 1, 1, 100)), gpu("a", views(1, 1, 1, 1, 50))},
			want: Aggregated{Tiers: []Tier{{OnceMaxRequest: bundle(1, 1, 50), Winner: "a", Clusters: []string{"a", "b"}}},
				Views: Views{Exclusive: View{Capacity: 2, OnceMaxRequest: 1, Remaining: 2}, Shared: View{Capacity: 20, OnceMaxRequest: 1, Remaining: 20},
					Sliced: View{Capacity: 200, OnceMaxRequest: 50, Remaining: 200}},
				Clusters: []string{"a", "b"}},
		},
		"Inactive": {
			reason: "A member that does not answer, or whose type is not Active, is listed and counts nowhere.",
			candidates: []Candidate{gpu("up", views(1, 1, 2, 1, 100)),
				{Cluster: "down", Accelerated: true, Views: views(8, 8, 8, 8, 100)}},
			want: Aggregated{Tiers: []Tier{{OnceMaxRequest: bundle(1, 1, 100), Winner: "up", Clusters: []string{"up"}}},
				Views: Views{Exclusive: View{Capacity: 2, OnceMaxRequest: 1, Remaining: 1}, Shared: View{Capacity: 20, OnceMaxRequest: 1, Remaining: 10},
					Sliced: View{Capacity: 200, OnceMaxRequest: 100, Remaining: 100}},
				Clusters: []string{"down", "up"}, Inactive: []string{"down"}},
		},
		"Partitions": {
			reason: "Partitions are summed across clusters, profile by profile.",
			candidates: []Candidate{
				gpu("a", Views{Partitioned: View{Capacity: 56, OnceMaxRequest: 1, Remaining: 52}, RemainingProfiles: map[string]int64{"1g.10gb": 52, "3g.40gb": 15}}),
				gpu("b", Views{Partitioned: View{Capacity: 7, OnceMaxRequest: 1, Remaining: 7}, RemainingProfiles: map[string]int64{"1g.10gb": 7, "3g.40gb": 2}}),
			},
			want: Aggregated{Tiers: []Tier{{OnceMaxRequest: Views{Partitioned: View{OnceMaxRequest: 1}}, Winner: "a", Clusters: []string{"a", "b"}}},
				Views:    Views{Partitioned: View{Capacity: 63, OnceMaxRequest: 1, Remaining: 59}, RemainingProfiles: map[string]int64{"1g.10gb": 59, "3g.40gb": 17}},
				Clusters: []string{"a", "b"}},
		},
		"CPUTypes": {
			reason: "A CPU type is tiered and won on its CPU view.",
			candidates: []Candidate{
				{Cluster: "a", Active: true, Views: Views{CPU: View{Capacity: 72, OnceMaxRequest: 48, Remaining: 60}}},
				{Cluster: "b", Active: true, Views: Views{CPU: View{Capacity: 16, OnceMaxRequest: 16, Remaining: 16}}},
			},
			want: Aggregated{
				Tiers: []Tier{{OnceMaxRequest: Views{CPU: View{OnceMaxRequest: 48}}, Winner: "a", Clusters: []string{"a"}},
					{OnceMaxRequest: Views{CPU: View{OnceMaxRequest: 16}}, Winner: "b", Clusters: []string{"b"}}},
				Views:    Views{CPU: View{Capacity: 88, OnceMaxRequest: 48, Remaining: 76}},
				Clusters: []string{"a", "b"}},
		},
		"NoneActive": {
			reason:     "With no active member there is nothing to offer.",
			candidates: []Candidate{{Cluster: "down", Accelerated: true, Views: views(1, 1, 1, 1, 100)}},
			want:       Aggregated{Clusters: []string{"down"}, Inactive: []string{"down"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Aggregate(tc.candidates)); diff != "" {
				t.Errorf("%s\nAggregate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
