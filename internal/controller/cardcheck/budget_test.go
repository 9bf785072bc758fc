package cardcheck

import (
	"testing"
)

// TestVerdictBudget is the per-card check's regression gate under `make test`: it counts what a verdict's own
// work allocates (placing a Workload after those in flight, reading the nodes' cards) and fails when a count
// crosses its budget. Allocations are counted, not timed: they are the same on every machine and every run,
// where time on a shared machine is not (docs/performance.md has the times, from `make bench`). A verdict that
// walks what it need not (every node's objects, every Workload in flight against every node) allocates in
// proportion to it; a change that crosses a budget does more work per verdict than before, or raises the budget
// with the measure that justifies it.
func TestVerdictBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the budgets' flavors of thousands of nodes take a moment to build")
	}
	// budget is a count of 2026-12-06 with a margin of about a tenth, counted with the race detector (as `make
	// test` runs) or without.
	budget := func(race, plain float64) float64 {
		if raceDetector {
			return race * 1.1
		}
		return plain * 1.1
	}
	cases := map[string]struct {
		reason string
		run    func(t *testing.T) func()
		budget float64
	}{
		"PlaceAt500": {reason: "A slice placed on a flavor of 500 nodes with 100 Workloads in flight.",
			run: func(t *testing.T) func() { return decideVerdict(t, 500, 100, false) }, budget: budget(710, 710)},
		"PlaceAt5000": {reason: "A slice placed on a flavor of 5,000 nodes with 500 Workloads in flight.",
			run: func(t *testing.T) func() { return decideVerdict(t, 5000, 500, false) }, budget: budget(3_510, 3_510)},
		"RefuseAt5000": {reason: "A slice refused by a full flavor of 5,000 nodes with 500 in flight: every node tried, the refusal written.",
			run: func(t *testing.T) func() { return decideVerdict(t, 5000, 500, true) }, budget: budget(11_589, 8_573)},
		"UnchangedNodesAt5000": {reason: "Reading the cards of 5,000 nodes none of which changed since the verdict before allocates nothing.",
			run: func(t *testing.T) func() { return unchangedNodesRead(t, 5000) }, budget: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := testing.AllocsPerRun(20, tc.run(t))
			t.Logf("%s: %.0f allocations per verdict (budget %.0f)", name, got, tc.budget)
			if got > tc.budget {
				t.Errorf("%s\n%s allocates %.0f per verdict, over its budget of %.0f", tc.reason, name, got, tc.budget)
			}
		})
	}
}
