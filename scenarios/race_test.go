//go:build race

package scenarios

import "testing"

// skipUnderRace skips a test that parses and checks in one goroutine
// (nothing for the race detector to find, which slows it fivefold and
// more): make test's second step runs it without the detector.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: one goroutine, nothing for it to find")
}
