package pools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// h100MIG is a node of n H100 80GB cards in MIG mode, with the profiles NVML reports for them.
func h100MIG(n int) *workerv1.Devices {
	profile := func(name string, mib int64, compute, memory, count int32, starts ...int32) workerv1.PartitionProfile {
		return workerv1.PartitionProfile{Name: name, MemoryMiB: mib, ComputeSlices: compute, MemorySlices: memory,
			Count: count, Placements: starts}
	}
	profiles := []workerv1.PartitionProfile{
		profile("1g.10gb", 10240, 1, 1, 7, 0, 1, 2, 3, 4, 5, 6),
		profile("1g.20gb", 20480, 1, 2, 4, 0, 2, 4, 6),
		profile("2g.20gb", 20480, 2, 2, 3, 0, 2, 4),
		profile("3g.40gb", 40960, 3, 4, 2, 0, 4),
		profile("4g.40gb", 40960, 4, 4, 1, 0),
		profile("7g.80gb", 81920, 7, 8, 1, 0),
	}
	g := workerv1.DeviceGroup{ID: "g", Manufacturer: "nvidia", Name: "NVIDIA H100 80GB HBM3", Memory: 81920}
	for i := 0; i < n; i++ {
		g.Accelerators = append(g.Accelerators, workerv1.Accelerator{ID: fmt.Sprintf("GPU-%d", i), Index: int32(i),
			Status: workerv1.AcceleratorStatus{PhysicalSliced: &workerv1.PhysicalSlicedCapability{Count: 7, Profiles: profiles}}})
	}
	return &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: "node-h100"}, Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{g}}}
}

func partition(key, profile string, cards ...string) Claim {
	return Claim{Key: key, Manufacturer: "nvidia", Demand: Demand{Family: FamilyPartitioned, Profile: profile, Cards: 1}, Cards: cards}
}

// counts renders a ledger entry's profile counts as "name=n" pairs.
func counts(pc []workerv1.ProfileCount) string {
	var out []string
	for _, p := range pc {
		out = append(out, fmt.Sprintf("%s=%d", p.Name, p.Count))
	}
	return strings.Join(out, " ")
}

func TestLedgerPartitions(t *testing.T) {
	type card struct {
		Mode      workerv1.AllocationMode
		Remaining int64
		Allocated string
		Free      string
	}
	free := func() card {
		return card{Remaining: M, Free: "1g.10gb=7 1g.20gb=4 2g.20gb=3 3g.40gb=2 4g.40gb=1 7g.80gb=1"}
	}
	cases := map[string]struct {
		reason   string
		cards    int
		claims   []Claim
		want     []card
		problems []string
	}{
		"OneHalf": {
			reason: "A 3g.40gb takes half the card's memory slices: what is left is counted by legal placement, so " +
				"the 4g.40gb (only at slice 0) and the 7g.80gb are gone while a second 3g.40gb still fits at slice 4.",
			cards:  2,
			claims: []Claim{partition("p", "3g.40gb")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: M / 2, Allocated: "3g.40gb=1",
				Free: "1g.10gb=3 1g.20gb=2 2g.20gb=1 3g.40gb=1 4g.40gb=0 7g.80gb=0"}, free()},
		},
		"FullestFirst": {
			reason: "A second partition goes onto the card that already holds one, which keeps the other card whole.",
			cards:  2,
			claims: []Claim{partition("a", "3g.40gb"), partition("b", "1g.10gb")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: M/2 - M/8, Allocated: "1g.10gb=1 3g.40gb=1",
				Free: "1g.10gb=2 1g.20gb=1 2g.20gb=0 3g.40gb=0 4g.40gb=0 7g.80gb=0"}, free()},
		},
		"RecordedStayPut": {
			reason: "A partition the ledger placed before stays on its card, even when another card is fuller.",
			cards:  2,
			claims: []Claim{partition("a", "3g.40gb", "GPU-1"), partition("b", "1g.10gb", "GPU-0")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: M - M/8, Allocated: "1g.10gb=1",
				Free: "1g.10gb=6 1g.20gb=3 2g.20gb=2 3g.40gb=1 4g.40gb=0 7g.80gb=0"},
				{Mode: workerv1.AllocationPartitioned, Remaining: M / 2, Allocated: "3g.40gb=1",
					Free: "1g.10gb=3 1g.20gb=2 2g.20gb=1 3g.40gb=1 4g.40gb=0 7g.80gb=0"}},
		},
		"LastPlacementRace": {
			reason: "Two 4g.40gb partitions race for the one placement of a single card: one gets it, the other is " +
				"refused with what is still free.",
			cards:  1,
			claims: []Claim{partition("first", "4g.40gb"), partition("second", "4g.40gb")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: M / 2, Allocated: "4g.40gb=1",
				Free: "1g.10gb=3 1g.20gb=2 2g.20gb=1 3g.40gb=1 4g.40gb=0 7g.80gb=0"}},
			problems: []string{"second: no card has a free placement for 1 4g.40gb partition(s): free placements " +
				"1g.10gb 3, 1g.20gb 2, 2g.20gb 1, 3g.40gb 1, 4g.40gb 0, 7g.80gb 0"},
		},
		"ConstrainedFirst": {
			reason: "A 4g.40gb (only at slice 0) and then a 3g.40gb (at 0 or 4) fit one card together, the " +
				"3g.40gb at slice 4, and the card reads full.",
			cards:  1,
			claims: []Claim{partition("b", "4g.40gb", "GPU-0"), partition("a", "3g.40gb", "GPU-0")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: 0, Allocated: "3g.40gb=1 4g.40gb=1",
				Free: "1g.10gb=0 1g.20gb=0 2g.20gb=0 3g.40gb=0 4g.40gb=0 7g.80gb=0"}},
		},
		"HeldFirst": {
			reason: "A 3g.40gb made first sits at slice 0, where a 4g.40gb would have to go: the card refuses the " +
				"4g.40gb though half of it is free, as the hardware does.",
			cards:  1,
			claims: []Claim{partition("a", "3g.40gb", "GPU-0"), partition("b", "4g.40gb")},
			want: []card{{Mode: workerv1.AllocationPartitioned, Remaining: M / 2, Allocated: "3g.40gb=1",
				Free: "1g.10gb=3 1g.20gb=2 2g.20gb=1 3g.40gb=1 4g.40gb=0 7g.80gb=0"}},
			problems: []string{"b: no card has a free placement for 1 4g.40gb partition(s): free placements " +
				"1g.10gb 3, 1g.20gb 2, 2g.20gb 1, 3g.40gb 1, 4g.40gb 0, 7g.80gb 0"},
		},
		"WholeCardsNeverTakePartitions": {
			reason:   "A card in MIG mode offers only partitions: a whole-card claim finds no free card.",
			cards:    1,
			claims:   []Claim{{Key: "whole", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: 1}}},
			want:     []card{free()},
			problems: []string{"whole: not enough free cards for 1 whole card(s): 0 free"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, _, errs := Ledger(h100MIG(tc.cards), tc.claims)
			var got []card
			for _, a := range st.Groups[0].Accelerators {
				got = append(got, card{Mode: a.Mode, Remaining: a.Remaining, Allocated: counts(a.AllocatedProfiles), Free: counts(a.RemainingProfiles)})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nLedger(...): -want, +got:\n%s", tc.reason, diff)
			}
			var problems []string
			for _, e := range errs {
				problems = append(problems, e.Error())
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("%s\nLedger(...) problems: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPartitionKeysAndViews checks the partitions' example of docs/architecture.md (Partitions): eight H100s, one 3g.40gb in use.
func TestPartitionKeysAndViews(t *testing.T) {
	d := h100MIG(8)
	st, _, errs := Ledger(d, []Claim{partition("p", "3g.40gb")})
	if len(errs) > 0 {
		t.Fatalf("Ledger(...): %v", errs)
	}
	d.Status = st
	wantKeys := map[string]int64{
		"nvidia.com/gpu.partitioned.units":       8 * M,
		"nvidia.com/gpu.partitioned.mig-1g.10gb": 52, "nvidia.com/gpu.partitioned.mig-1g.20gb": 30,
		"nvidia.com/gpu.partitioned.mig-2g.20gb": 22, "nvidia.com/gpu.partitioned.mig-3g.40gb": 16,
		"nvidia.com/gpu.partitioned.mig-4g.40gb": 7, "nvidia.com/gpu.partitioned.mig-7g.80gb": 7,
	}
	if diff := cmp.Diff(wantKeys, PartitionCounting(d)); diff != "" {
		t.Errorf("the per-profile key is the partitions held plus those still possible\nPartitionCounting(...): -want, +got:\n%s", diff)
	}
	var cards []Card
	for _, a := range d.Spec.Groups[0].Accelerators {
		cards = append(cards, LedgerCards(d)[a.ID])
	}
	var tokens int64
	for _, c := range cards {
		tokens += PartitionTokens(c)
	}
	if tokens != 53 {
		t.Errorf("the pool key is the partitions held plus each card's most still possible\nPartitionTokens(...) summed = %d, want 53", tokens)
	}
	s := Summarize(cards)
	want := CardSummary{PartitionCapacity: 56, PartitionsFree: 52, PartitionAvailable: true, RemainingProfiles: map[string]int64{
		"1g.10gb": 52, "1g.20gb": 30, "2g.20gb": 22, "3g.40gb": 15, "4g.40gb": 7, "7g.80gb": 7}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("PT reads 1/52 of 56 with one 3g.40gb in use\nSummarize(...): -want, +got:\n%s", diff)
	}
}

func TestPodClaimsPartitions(t *testing.T) {
	q := resource.MustParse
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"nvidia.com/gpu.partitioned": q("2"), "nvidia.com/gpu.partitioned.mig-3g.40gb": q("2"),
			"nvidia.com/gpu.partitioned.units": q("1600000")}},
	}}}}
	want := []Claim{{Key: "ns/p/main", Manufacturer: "nvidia", Demand: Demand{Family: FamilyPartitioned, Profile: "3g.40gb", Cards: 2}}}
	if diff := cmp.Diff(want, PodClaims(pod)); diff != "" {
		t.Errorf("a partition's profile and count come from its per-profile key\nPodClaims(...): -want, +got:\n%s", diff)
	}
}
