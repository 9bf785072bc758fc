package allocbudget

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOf(t *testing.T) {
	cases := map[string]struct {
		reason      string
		race, plain float64
		want        float64
	}{
		"RaceOrPlain": {reason: "The count of the binary's own kind, with its margin.", race: 200, plain: 100,
			want: map[bool]float64{true: 220, false: 110}[RaceDetector]},
		"Nothing": {reason: "A budget of nothing stays nothing: no margin over zero allocations.", race: 0, plain: 0, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Of(tc.race, tc.plain)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
				t.Errorf("%s\nOf(%v, %v): -want, +got:\n%s", tc.reason, tc.race, tc.plain, diff)
			}
		})
	}
}

// TestCheckCountsTheWork runs Check on work of two allocations a run (the slice's room made by the warm-up run)
// against a budget of two: a Check that counted its own set-up or the warm-up would fail it.
func TestCheckCountsTheWork(t *testing.T) {
	sink := [][]byte{}
	Check(t, "call", map[string]Case{
		"WithinBudget": {Reason: "Two allocations a run against a budget of two.", Runs: 10, Budget: 2,
			Run: func(*testing.T) func() {
				return func() { sink = append(sink[:0], make([]byte, 64)); sink = append(sink, make([]byte, 64)) }
			}},
	})
}
