//go:build race

package sweep

import "testing"

// skipUnderRace skips a test of planning, in one goroutine: the
// detector slows it tenfold and finds nothing in it. make test's second
// step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: planning in one goroutine, which the detector slows tenfold and finds nothing in")
}
