package pools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func slice(p int64) Demand { return Demand{Family: FamilySliced, Units: p * sliceUnit} }

// fitAll places the demands one after another, as Workloads are admitted, and reports each outcome.
func fitAll(cards []Card, demands ...Demand) ([]string, []Card) {
	var outcomes []string
	for _, d := range demands {
		chosen, after, err := Fit(cards, d)
		if err != nil {
			outcomes = append(outcomes, err.Error())
			continue
		}
		outcomes = append(outcomes, "cards "+cmpString(chosen))
		cards = after
	}
	return outcomes, cards
}

func cmpString(ints []int) string {
	out := ""
	for i, n := range ints {
		if i > 0 {
			out += ","
		}
		out += FormatCount(int64(n))
	}
	return out
}

func TestFit(t *testing.T) {
	type want struct {
		outcomes  []string
		remaining []int64
	}
	cases := map[string]struct {
		reason  string
		cards   []Card
		demands []Demand
		want    want
	}{
		"TwoThirtyPercentSlices": {
			reason:  "Two 30 % slices fit one card.",
			cards:   []Card{free()},
			demands: []Demand{slice(30), slice(30)},
			want:    want{outcomes: []string{"cards 0", "cards 0"}, remaining: []int64{40 * sliceUnit}},
		},
		"TwoSixtyPercentSlices": {
			reason:  "Two 60 % slices do not fit one card; the refusal names the largest free piece.",
			cards:   []Card{free()},
			demands: []Demand{slice(60), slice(60)},
			want: want{outcomes: []string{"cards 0", "no card has room for a slice of 60%: the largest free piece is 40%"},
				remaining: []int64{40 * sliceUnit}},
		},
		"FullestCardFirst": {
			reason:  "A slice goes onto the fullest card with room, keeping the free card whole.",
			cards:   []Card{free(), sliced(50, 1), sliced(90, 1)},
			demands: []Demand{slice(30), slice(10), {Family: FamilyExclusive, Cards: 1}},
			want: want{outcomes: []string{"cards 1", "cards 2", "cards 0"},
				remaining: []int64{0, 20 * sliceUnit, 0}},
		},
		"SlotsFull": {
			reason:  "A card with every slot taken takes no slice, whatever memory it has left.",
			cards:   []Card{{Mode: workerv1.AllocationSliced, Remaining: M / 2, AllocatedSlices: 2, Slots: 2}},
			demands: []Demand{slice(10)},
			want:    want{outcomes: []string{"no card has room for a slice of 10%: the largest free piece is 0%"}, remaining: []int64{M / 2}},
		},
		"WholeCards": {
			reason:  "Whole cards take free cards only; a sliced card is not free.",
			cards:   []Card{free(), sliced(20, 1), free()},
			demands: []Demand{{Family: FamilyExclusive, Cards: 2}, {Family: FamilyExclusive, Cards: 1}},
			want: want{outcomes: []string{"cards 0,2", "not enough free cards for 1 whole card(s): 0 free"},
				remaining: []int64{0, 80 * sliceUnit, 0}},
		},
		"SharesOnDistinctCards": {
			reason:  "A shared request of 2 takes one share on each of two cards, the fullest first.",
			cards:   []Card{free(), shared(9), free()},
			demands: []Demand{{Family: FamilyShared, Cards: 2}, {Family: FamilyShared, Cards: 3}},
			want: want{outcomes: []string{"cards 0,1", "not enough cards with a free share for a share on each of 3 card(s): 2 have one"},
				remaining: []int64{9 * share, 0, M}},
		},
		"UnhealthyAndPartitioned": {
			reason:  "Unhealthy and partitioned cards take nothing.",
			cards:   []Card{{Remaining: M, Slots: 128, Unhealthy: true}, partitioned(7, 2, 1), free()},
			demands: []Demand{{Family: FamilyExclusive, Cards: 1}, slice(10)},
			want: want{outcomes: []string{"cards 2", "no card has room for a slice of 10%: the largest free piece is 0%"},
				remaining: []int64{M, M, 0}},
		},
		"UnknownFamily": {
			reason:  "A family Fit does not know is refused by name.",
			cards:   []Card{free()},
			demands: []Demand{{Family: "visibility", Cards: 1}},
			want: want{outcomes: []string{`cannot place a "visibility" request: it is not a family of whole cards, shares, slices or partitions`},
				remaining: []int64{M}},
		},
		"PartitionWithoutProfile": {
			reason:  "A partition must name its profile.",
			cards:   []Card{free()},
			demands: []Demand{{Family: FamilyPartitioned, Cards: 1}},
			want:    want{outcomes: []string{"a partition request must name its profile"}, remaining: []int64{M}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]Card(nil), tc.cards...)
			outcomes, after := fitAll(tc.cards, tc.demands...)
			got := want{outcomes: outcomes}
			for _, c := range after {
				got.remaining = append(got.remaining, c.Remaining)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nFit(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, tc.cards); diff != "" {
				t.Errorf("Fit changed the cards it was given: -before, +after:\n%s", diff)
			}
			for _, c := range after {
				if c.Remaining < 0 {
					t.Errorf("a card's ledger went below zero: %+v", c)
				}
			}
		})
	}
}

// FuzzFit places arbitrary sequences of demands on four cards: no card's ledger ever goes below zero or above
// one card, no card holds more slices than slots, and a card never mixes families.
func FuzzFit(f *testing.F) {
	f.Add([]byte{3, 30, 3, 30, 3, 60, 1, 1, 2, 2})
	f.Add([]byte{2, 4, 1, 3, 3, 100, 3, 1})
	f.Fuzz(func(t *testing.T, program []byte) {
		cards := []Card{free(), free(), {Remaining: M, Slots: 2}, {Remaining: M, Slots: 128}}
		for i := 0; i+1 < len(program); i += 2 {
			var d Demand
			switch program[i] % 3 {
			case 0:
				d = Demand{Family: FamilyExclusive, Cards: int64(program[i+1] % 5)}
			case 1:
				d = Demand{Family: FamilyShared, Cards: int64(program[i+1] % 5)}
			default:
				d = Demand{Family: FamilySliced, Units: int64(program[i+1]) * sliceUnit}
			}
			_, after, err := Fit(cards, d)
			if err != nil {
				continue
			}
			for _, c := range after {
				if c.Remaining < 0 || c.Remaining > M || c.AllocatedSlices > c.Slots {
					t.Fatalf("after %s a card is %+v", d, c)
				}
				if c.Mode == workerv1.AllocationExclusive && c.Remaining != 0 {
					t.Fatalf("an exclusive card has credits left: %+v", c)
				}
			}
			cards = after
		}
	})
}
