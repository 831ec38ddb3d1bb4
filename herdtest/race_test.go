//go:build race

package herdtest

import "testing"

// skipUnderRace skips a test of reproducibility (the same bytes at
// GOMAXPROCS 1 and 2), which has nothing for the race detector to find
// that the other tests do not exercise, and which it slows fourfold (a
// minute and a half): make test's second step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: byte-for-byte reproducibility, which the detector slows fourfold")
}
