//go:build !race

package sim

// raceDetector is set in a test binary built with -race.
const raceDetector = false
