package embedded

import (
	"testing"

	"github.com/gpustack/gpustack-operator/test/framework/allocbudget"
)

// TestRecomputeBudget is the recompute's regression gate under `make test`: it counts what the composer's
// recompute allocates, for the full recompute and for one node's change, and fails when a count crosses its
// budget (docs/performance.md has the times, from `make bench`). A change that crosses a budget does more work
// per recompute than before, or raises the budget with the measure that justifies it. The budgets are counts of
// 2026-12-06, with the race detector and without.
func TestRecomputeBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the budgets' inventories take a few seconds to compose")
	}
	allocbudget.Check(t, "recompute", map[string]allocbudget.Case{
		"FullAt5000": {Reason: "The full recompute of 5,000 nodes.", Runs: 2,
			Run:    func(t *testing.T) func() { nodes := busy(5000); return func() { recompute(t, nodes) } },
			Budget: allocbudget.Of(69_900, 59_100)},
		"OneNodeAt500": {Reason: "One node's change among 500.", Runs: 50,
			Run: func(t *testing.T) func() { _, change := oneNodeChanges(t, busy(500)); return change }, Budget: allocbudget.Of(470, 445)},
		"OneNodeAt5000": {Reason: "One node's change costs what it costs among 500: the cluster's size does not enter it.", Runs: 50,
			Run: func(t *testing.T) func() { _, change := oneNodeChanges(t, busy(5000)); return change }, Budget: allocbudget.Of(470, 445)},
	})
}
