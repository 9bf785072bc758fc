package pools

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// t4Nodes are the walkthrough's T4 nodes: one card on node-t4-a, four on node-t4-b, all free.
func t4Nodes(cardsPerNode ...int) []NodeCards {
	var out []NodeCards
	for i, n := range cardsPerNode {
		nc := NodeCards{Name: string(rune('a' + i)), Cards: map[string][]Card{}}
		for j := 0; j < n; j++ {
			nc.Cards["nvidia"] = append(nc.Cards["nvidia"], Card{ID: nc.Name + string(rune('0'+j)), Remaining: M, Slots: 128})
		}
		out = append(out, nc)
	}
	return out
}

func TestPlace(t *testing.T) {
	slice := func(pct int64) []Claim {
		return []Claim{{Key: "w", Manufacturer: "nvidia", Demand: Demand{Family: FamilySliced, Units: pct * M / 100}}}
	}
	nodes := t4Nodes(1, 4)
	var placed []string
	for i := 0; i < 5; i++ {
		name, after, err := Place(nodes, slice(60))
		if err != nil {
			t.Fatalf("60 %% slice %d of 5 on five cards: %v", i+1, err)
		}
		nodes, placed = after, append(placed, name)
	}
	if got := strings.Join(placed, ","); got != "a,b,b,b,b" {
		t.Errorf("Five 60 %% slices take one card each, first node first: %s", got)
	}
	_, _, err := Place(nodes, slice(60))
	if err == nil || !strings.Contains(err.Error(), "the largest free piece is 40%") {
		t.Errorf("A sixth 60 %% slice fits no card, and the reason names the largest free piece: %v", err)
	}
	if _, _, err := Place(nodes, slice(30)); err != nil {
		t.Errorf("A 30 %% slice still fits next to a 60 %% one: %v", err)
	}
	if _, _, err := Place(nil, slice(30)); err == nil {
		t.Error("Without nodes nothing is placed")
	}
}

// TestPlaceKeepsEveryCardWhole places 200 random slice, share and whole-card workloads, in any order, on 20
// cards over 5 nodes, as the admission check does with its inflight workloads: no card ever goes below zero
// or past its slots, and every placed workload's claims fit where they were put.
func TestPlaceKeepsEveryCardWhole(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		nodes := t4Nodes(4, 4, 4, 4, 4)
		placed := 0
		for i := 0; i < 200; i++ {
			var d Demand
			switch rng.Intn(3) {
			case 0:
				d = Demand{Family: FamilySliced, Units: int64(1+rng.Intn(100)) * M / 100}
			case 1:
				d = Demand{Family: FamilyShared, Cards: int64(1 + rng.Intn(2))}
			default:
				d = Demand{Family: FamilyExclusive, Cards: int64(1 + rng.Intn(2))}
			}
			_, after, err := Place(nodes, []Claim{{Key: "w", Manufacturer: "nvidia", Demand: d}})
			if err != nil {
				continue
			}
			placed++
			nodes = after
			for _, n := range nodes {
				for _, c := range n.Cards["nvidia"] {
					if c.Remaining < 0 || c.Remaining > M || c.AllocatedSlices > c.Slots {
						t.Fatalf("round %d, workload %d: card %s at %d credits, %d of %d slices", round, i, c.ID, c.Remaining, c.AllocatedSlices, c.Slots)
					}
					if c.Mode == workerv1.AllocationExclusive && c.Remaining != 0 {
						t.Fatalf("card %s exclusive with %d credits left", c.ID, c.Remaining)
					}
				}
			}
		}
		if placed == 0 || placed == 200 {
			t.Errorf("round %d placed %d of 200: the test should both fill the cards and be refused", round, placed)
		}
	}
}

func TestPlacePods(t *testing.T) {
	whole := func(cards int64) []Claim {
		return []Claim{{Key: "p", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: cards}}}
	}
	type want struct {
		nodes []string
		err   string
	}
	cases := map[string]struct {
		reason string
		nodes  []NodeCards
		pods   [][]Claim
		want   want
	}{
		"SpreadOverNodes": {
			reason: "two Pods of one whole card each, on two nodes of one card: one Pod on each",
			nodes:  t4Nodes(1, 1),
			pods:   [][]Claim{whole(1), whole(1)},
			want:   want{nodes: []string{"a", "b"}},
		},
		"ShareANode": {
			reason: "two Pods fit on one node of four cards, and the first node with room takes both",
			nodes:  t4Nodes(4),
			pods:   [][]Claim{whole(2), whole(2)},
			want:   want{nodes: []string{"a", "a"}},
		},
		"OnePodTooMany": {
			reason: "a third Pod finds no room once the two before took the cards, and the reason names it",
			nodes:  t4Nodes(1, 1),
			pods:   [][]Claim{whole(1), whole(1), whole(1)},
			want:   want{err: "Pod 3 of 3: "},
		},
		"PodNeedsOneNode": {
			reason: "one Pod's cards are on one node: two cards on two nodes of one card do not make a Pod of two",
			nodes:  t4Nodes(1, 1),
			pods:   [][]Claim{whole(2)},
			want:   want{err: "a: "},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, after, err := PlacePods(tc.nodes, tc.pods, nil)
			// FitPods places as PlacePods does, without the reason.
			fitNames, fitAfter, ok := FitPods(tc.nodes, tc.pods, nil)
			if ok != (err == nil) {
				t.Errorf("%s\nFitPods(...) ok %t, PlacePods(...) error %v", tc.reason, ok, err)
			}
			if diff := cmp.Diff(got, fitNames); ok && diff != "" {
				t.Errorf("%s\nFitPods(...) places otherwise than PlacePods(...): -PlacePods, +FitPods:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(after, fitAfter); ok && diff != "" {
				t.Errorf("%s\nFitPods(...) leaves the nodes otherwise than PlacePods(...): -PlacePods, +FitPods:\n%s", tc.reason, diff)
			}
			if tc.want.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.want.err) {
					t.Errorf("%s\nPlacePods(...): error %v, want one starting %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nPlacePods(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.nodes, got); diff != "" {
				t.Errorf("%s\nPlacePods(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlaceRefusal checks the reasons of a refusal: each node's, in the nodes' order, and on a flavor of many
// full nodes only the first few and how many more, so a Workload's message stays short at any size.
func TestPlaceRefusal(t *testing.T) {
	whole := []Claim{{Key: "p", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: 2}}}
	cases := map[string]struct {
		reason string
		nodes  int
		want   string
	}{
		"TwoNodes": {
			reason: "two one-card nodes: both reasons, in order",
			nodes:  2,
			want:   "a: not enough free cards for 2 whole card(s): 1 free; b: not enough free cards for 2 whole card(s): 1 free",
		},
		"ManyNodes": {
			reason: "twelve one-card nodes: the first five reasons and a count of the rest",
			nodes:  12,
			want: "a: not enough free cards for 2 whole card(s): 1 free; b: not enough free cards for 2 whole card(s): 1 free; " +
				"c: not enough free cards for 2 whole card(s): 1 free; d: not enough free cards for 2 whole card(s): 1 free; " +
				"e: not enough free cards for 2 whole card(s): 1 free; 7 more node(s) have no room either",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			per := make([]int, tc.nodes)
			for i := range per {
				per[i] = 1
			}
			_, _, err := Place(t4Nodes(per...), whole)
			if err == nil {
				t.Fatalf("%s\nPlace(...): no error, want %q", tc.reason, tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("%s\nPlace(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlaceLeavesItsInput checks that placing returns new cards and never changes the nodes it was given: the
// per-card check shares them between verdicts.
func TestPlaceLeavesItsInput(t *testing.T) {
	nodes := t4Nodes(2, 2)
	before := t4Nodes(2, 2)
	claims := []Claim{
		{Key: "p", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: 1}},
		{Key: "p", Manufacturer: "nvidia", Demand: Demand{Family: FamilySliced, Units: M / 2}},
	}
	name, after, err := Place(nodes, claims)
	if err != nil || name != "a" {
		t.Fatalf("Place(...) = %q, %v; want node a", name, err)
	}
	if diff := cmp.Diff(before, nodes); diff != "" {
		t.Errorf("Place(...) changed its input: -before, +after:\n%s", diff)
	}
	if diff := cmp.Diff(before[1], after[1]); diff != "" {
		t.Errorf("Place(...) changed a node it did not place on: -before, +after:\n%s", diff)
	}
	if after[0].Cards["nvidia"][0].Mode != workerv1.AllocationExclusive || after[0].Cards["nvidia"][1].Remaining != M/2 {
		t.Errorf("Place(...) = %+v, want the first card taken whole and half of the second", after[0].Cards["nvidia"])
	}
}

// TestPlaceSelectors checks that a claim with selectors takes only the cards whose DRA devices match them, and
// leaves the others as they were.
func TestPlaceSelectors(t *testing.T) {
	// The test's selectors name the one device each matches.
	byName := func(_, _, device string, selectors []string) bool {
		for _, s := range selectors {
			if s != device {
				return false
			}
		}
		return true
	}
	nodes := func(held ...string) []NodeCards {
		out := t4Nodes(2, 2)
		for i := range out {
			out[i].Inventory = &workerv1.Devices{Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{Manufacturer: "nvidia",
				Accelerators: []workerv1.Accelerator{{Index: 0}, {Index: 1}}}}}}
			for j, c := range out[i].Cards["nvidia"] {
				if slices.Contains(held, c.ID) {
					out[i].Cards["nvidia"][j].Mode, out[i].Cards["nvidia"][j].Remaining = workerv1.AllocationExclusive, 0
				}
			}
		}
		return out
	}
	card := func(selectors ...string) []Claim {
		return []Claim{{Key: "p/card", Manufacturer: "nvidia", Demand: Demand{Family: FamilyExclusive, Cards: 1}, Selectors: selectors}}
	}
	type want struct {
		nodes []string
		taken []string // the IDs of the cards held after the placement
		err   string
	}
	cases := map[string]struct {
		reason  string
		nodes   []NodeCards
		pods    [][]Claim
		selects DeviceSelector
		want    want
	}{
		"MatchingCardsOnly": {
			reason:  "two Pods that each want card-1 go to two nodes, though node a has a second free card",
			nodes:   nodes(),
			pods:    [][]Claim{card("card-1"), card("card-1")},
			selects: byName,
			want:    want{nodes: []string{"a", "b"}, taken: []string{"a1", "b1"}},
		},
		"WithoutSelectors": {
			reason:  "a claim without selectors takes any free card, first in order",
			nodes:   nodes(),
			pods:    [][]Claim{card(), card()},
			selects: byName,
			want:    want{nodes: []string{"a", "a"}, taken: []string{"a0", "a1"}},
		},
		"NothingKnown": {
			reason: "where nothing is known of the cards' devices, the selectors cannot be read and every card may be taken",
			nodes:  nodes(),
			pods:   [][]Claim{card("card-1"), card("card-1")},
			want:   want{nodes: []string{"a", "a"}, taken: []string{"a0", "a1"}},
		},
		"NoCardMatches": {
			reason:  "a claim no card matches fits nowhere, and says so",
			nodes:   nodes(),
			pods:    [][]Claim{card("card-7")},
			selects: byName,
			want:    want{err: "a: no nvidia card matches the selectors of p/card (card-7)"},
		},
		"MatchingCardsHeld": {
			reason:  "the matching cards are held: free cards that do not match are no room",
			nodes:   nodes("a1", "b1"),
			pods:    [][]Claim{card("card-1")},
			selects: byName,
			want:    want{err: "a: on the nvidia cards that match the selectors of p/card: "},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, after, err := PlacePods(tc.nodes, tc.pods, tc.selects)
			fitNames, _, ok := FitPods(tc.nodes, tc.pods, tc.selects)
			if ok != (err == nil) || (ok && !slices.Equal(got, fitNames)) {
				t.Errorf("%s\nFitPods(...) = %v, %t; PlacePods(...) = %v, %v", tc.reason, fitNames, ok, got, err)
			}
			if tc.want.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.want.err) {
					t.Errorf("%s\nPlacePods(...): error %v, want one starting %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nPlacePods(...): %v", tc.reason, err)
			}
			var taken []string
			for _, n := range after {
				for _, c := range n.Cards["nvidia"] {
					if c.Mode == workerv1.AllocationExclusive {
						taken = append(taken, c.ID)
					}
					if c.Unhealthy {
						t.Errorf("%s\nPlacePods(...) left card %s of node %s marked unhealthy", tc.reason, c.ID, n.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.want, want{nodes: got, taken: taken}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPlacePods(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
