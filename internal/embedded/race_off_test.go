//go:build !race

package embedded

// raceDetector reports whether the tests run with the race detector, which allocates more on its own.
const raceDetector = false
