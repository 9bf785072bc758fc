//go:build race

package allocbudget

// RaceDetector reports whether the binary runs with the race detector, which allocates more on its own.
const RaceDetector = true
