// Package allocbudget is the regression gates' check under `make test`: it counts what a piece of work allocates
// (testing.AllocsPerRun) and fails the test when a count crosses its budget. Allocations are counted, not timed:
// they are the same on every machine and every run, where time on a shared machine is not. Work added where it
// should not be (every node walked again, a parse or a copy per item) allocates in proportion to it.
package allocbudget

import "testing"

// Case is one gate: Run returns the work to count (its set-up is not counted), Runs how many times to run it,
// Budget the most allocations a run may make.
type Case struct {
	Reason string
	Runs   int
	Run    func(t *testing.T) func()
	Budget float64
}

// Margin is what a budget allows over the count it was set from: a tenth.
const Margin = 1.1

// Of is the budget set from a count with the race detector (as `make test-unit` runs) and one without (as the
// integration tier runs), whichever this test binary was built with, plus the margin.
func Of(race, plain float64) float64 {
	if RaceDetector {
		return race * Margin
	}
	return plain * Margin
}

// Check runs each case as a subtest and fails it when its work allocates more than its budget; unit names what
// one run is (a recompute, a verdict).
func Check(t *testing.T, unit string, cases map[string]Case) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := testing.AllocsPerRun(max(tc.Runs, 1), tc.Run(t))
			t.Logf("%s: %.0f allocations per %s (budget %.0f)", name, got, unit, tc.Budget)
			if got > tc.Budget {
				t.Errorf("%s\n%s allocates %.0f per %s, over its budget of %.0f", tc.Reason, name, got, unit, tc.Budget)
			}
		})
	}
}
