package pools

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// twoA10G is a node with two sliceable A10G cards.
func twoA10G() *workerv1.Devices {
	card := func(id string, index int32) workerv1.Accelerator {
		return workerv1.Accelerator{ID: id, Index: index, Status: workerv1.AcceleratorStatus{
			LogicalSliced: &workerv1.LogicalSlicedCapability{Count: 128, CoresPercentageOvercommit: true}}}
	}
	return &workerv1.Devices{Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{ID: "g", Manufacturer: "nvidia",
		Accelerators: []workerv1.Accelerator{card("A", 0), card("B", 1)}}}}}
}

func TestLedger(t *testing.T) {
	slice := func(key string, units int64, cards ...string) Claim {
		return Claim{Key: key, Manufacturer: "nvidia", Demand: Demand{Family: FamilySliced, Units: units}, Cards: cards}
	}
	whole := func(key string, n int64, cards ...string) Claim {
		return Claim{Key: key, Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: n}, Cards: cards}
	}
	entry := func(id string, index int32, mode workerv1.AllocationMode, remaining int64, slices int32) workerv1.AcceleratorAllocation {
		return workerv1.AcceleratorAllocation{ID: id, Index: index, Mode: mode, Allocated: M - remaining, Remaining: remaining, AllocatedSlices: slices}
	}
	type want struct {
		cards    []workerv1.AcceleratorAllocation
		placed   map[string][]string
		problems []string
	}
	cases := map[string]struct {
		reason string
		claims []Claim
		want   want
	}{
		"Empty": {
			reason: "Without claims every card is free.",
			want:   want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, 0, M, 0), entry("B", 1, 0, M, 0)}, placed: map[string][]string{}},
		},
		"SlicesShareACardWholeTakesTheOther": {
			reason: "Two 30 % slices share the first card; a whole card takes the free one.",
			claims: []Claim{slice("a", 480_000), slice("b", 480_000), whole("c", 1)},
			want: want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, workerv1.AllocationSliced, 640_000, 2),
				entry("B", 1, workerv1.AllocationExclusive, 0, 0)},
				placed: map[string][]string{"a": {"A"}, "b": {"A"}, "c": {"B"}}},
		},
		"PlacedBeforeKeepsItsCard": {
			reason: "A claim placed before keeps its card, so a new slice goes onto that card, the fullest.",
			claims: []Claim{slice("a", 960_000, "B"), slice("b", 320_000)},
			want: want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, 0, M, 0), entry("B", 1, workerv1.AllocationSliced, 320_000, 2)},
				placed: map[string][]string{"a": {"B"}, "b": {"B"}}},
		},
		"RecordedFirst": {
			reason: "A new claim older than one already placed does not take its card: placed claims are charged first.",
			claims: []Claim{whole("new", 1), whole("placed", 1, "A")},
			want: want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, workerv1.AllocationExclusive, 0, 0),
				entry("B", 1, workerv1.AllocationExclusive, 0, 0)},
				placed: map[string][]string{"placed": {"A"}, "new": {"B"}}},
		},
		"NoRoom": {
			reason: "Two 60 % slices need two cards; a third is not charged and is reported with the largest free piece.",
			claims: []Claim{slice("a", 960_000), slice("b", 960_000), slice("c", 960_000)},
			want: want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, workerv1.AllocationSliced, 640_000, 1),
				entry("B", 1, workerv1.AllocationSliced, 640_000, 1)},
				placed: map[string][]string{"a": {"A"}, "b": {"B"}}, problems: []string{"c: no card has room for a slice of 60%"}},
		},
		"ResourceClaimNamedOnItsCard": {
			reason: "A card allocated to a ResourceClaim is held whole and names the claim; a container's slice goes to the other card.",
			claims: []Claim{{Key: "ResourceClaim ns/rc", Manufacturer: "nvidia", ResourceClaim: "ns/rc",
				Demand: Demand{Family: FamilyExclusive, Cards: 1}, Cards: []string{"A"}}, slice("s", 160_000)},
			want: want{cards: []workerv1.AcceleratorAllocation{
				{ID: "A", Index: 0, Mode: workerv1.AllocationExclusive, Allocated: M, ResourceClaims: []string{"ns/rc"}},
				entry("B", 1, workerv1.AllocationSliced, M-160_000, 1)},
				placed: map[string][]string{"ResourceClaim ns/rc": {"A"}, "s": {"B"}}},
		},
		"CardGone": {
			reason: "A claim on a card the node no longer has is reported, not charged.",
			claims: []Claim{whole("a", 1, "Z")},
			want: want{cards: []workerv1.AcceleratorAllocation{entry("A", 0, 0, M, 0), entry("B", 1, 0, M, 0)},
				placed: map[string][]string{}, problems: []string{"a: its cards [Z] are not all on the node"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, placed, problems := Ledger(twoA10G(), tc.claims)
			if diff := cmp.Diff(tc.want.cards, st.Groups[0].Accelerators); diff != "" {
				t.Errorf("%s\nLedger(...) cards: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.placed, placed); diff != "" {
				t.Errorf("%s\nLedger(...) placement: -want, +got:\n%s", tc.reason, diff)
			}
			if len(problems) != len(tc.want.problems) {
				t.Fatalf("%s\nLedger(...) problems: %v, want %v", tc.reason, problems, tc.want.problems)
			}
			for i, p := range problems {
				if !strings.Contains(p.Error(), tc.want.problems[i]) {
					t.Errorf("%s\nLedger(...) problem %q, want one containing %q", tc.reason, p, tc.want.problems[i])
				}
			}
		})
	}
}
