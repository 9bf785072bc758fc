package cardcheck

import (
	"testing"

	"github.com/gpustack/gpustack-operator/test/framework/allocbudget"
)

// TestVerdictBudget is the per-card check's regression gate under `make test`: it counts what a verdict's own
// work allocates (placing a Workload after those in flight, reading the nodes' cards) and fails when a count
// crosses its budget (docs/performance.md has the times, from `make bench`). A verdict that walks what it need
// not (every node's objects, every Workload in flight against every node) allocates in proportion to it; a
// change that crosses a budget does more work per verdict than before, or raises the budget with the measure
// that justifies it. The budgets are counts of 2026-12-06, with the race detector and without; RefuseAt5000's of
// 2026-12-07, when the Workloads in flight stopped having their refusals written (11,589 and 8,573 before).
func TestVerdictBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the budgets' flavors of thousands of nodes take a moment to build")
	}
	allocbudget.Check(t, "verdict", map[string]allocbudget.Case{
		"PlaceAt500": {Reason: "A slice placed on a flavor of 500 nodes with 100 Workloads in flight.", Runs: 20,
			Run: func(t *testing.T) func() { return decideVerdict(t, 500, 100, false) }, Budget: allocbudget.Of(710, 710)},
		"PlaceAt5000": {Reason: "A slice placed on a flavor of 5,000 nodes with 500 Workloads in flight.", Runs: 20,
			Run: func(t *testing.T) func() { return decideVerdict(t, 5000, 500, false) }, Budget: allocbudget.Of(3_510, 3_510)},
		"RefuseAt5000": {Reason: "A slice refused by a full flavor of 5,000 nodes with 500 in flight: every node tried, its refusal written, none of theirs.", Runs: 20,
			Run: func(t *testing.T) func() { return decideVerdict(t, 5000, 500, true) }, Budget: allocbudget.Of(1_098, 1_073)},
		"UnchangedNodesAt5000": {Reason: "Reading the cards of 5,000 nodes none of which changed since the verdict before allocates nothing.", Runs: 20,
			Run: func(t *testing.T) func() { return unchangedNodesRead(t, 5000) }, Budget: 0},
	})
}
