package embedded

import (
	"testing"
)

// TestRecomputeBudget is the recompute's regression gate under `make test`: it counts what the composer's
// recompute allocates, for the full recompute and for one node's change, and fails when a count crosses its
// budget. Allocations are counted, not timed: they are the same on every machine and every run, where time on a
// shared machine is not (docs/performance.md has the times, from `make bench`). A change that crosses a budget
// does more work per recompute than before, or raises the budget with the measure that justifies it.
func TestRecomputeBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the budgets' inventories take a few seconds to compose")
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
		runs   int
		run    func(t *testing.T) func()
		budget float64
	}{
		"FullAt5000": {reason: "The full recompute of 5,000 nodes.", runs: 2,
			run:    func(t *testing.T) func() { nodes := busy(5000); return func() { recompute(t, nodes) } },
			budget: budget(69_900, 59_100)},
		"OneNodeAt500": {reason: "One node's change among 500.", runs: 50,
			run: func(t *testing.T) func() { _, change := oneNodeChanges(t, busy(500)); return change }, budget: budget(470, 445)},
		"OneNodeAt5000": {reason: "One node's change costs what it costs among 500: the cluster's size does not enter it.", runs: 50,
			run: func(t *testing.T) func() { _, change := oneNodeChanges(t, busy(5000)); return change }, budget: budget(470, 445)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := testing.AllocsPerRun(tc.runs, tc.run(t))
			t.Logf("%s: %.0f allocations per recompute (budget %.0f)", name, got, tc.budget)
			if got > tc.budget {
				t.Errorf("%s\n%s allocates %.0f per recompute, over its budget of %.0f", tc.reason, name, got, tc.budget)
			}
		})
	}
}
