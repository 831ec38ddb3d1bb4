//go:build race

package sim

import "testing"

// raceDetector is set in a test binary built with -race.
const raceDetector = true

// skipUnderRace skips a test of one simulation (one goroutine, nothing
// for the detector to find) that the detector slows too much for make
// test's first step: make test's second step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: single-goroutine simulations, which the detector slows sevenfold and finds nothing in")
}
