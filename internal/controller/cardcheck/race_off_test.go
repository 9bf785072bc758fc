//go:build !race

package cardcheck

// raceDetector reports whether the tests run with the race detector, which allocates more on its own.
const raceDetector = false
