//go:build race

package web

import "testing"

// raceDetector is set in a test binary built with -race.
const raceDetector = true

// skipUnderRace skips a test whose point the race detector blurs or
// slows to no purpose (a process's memory measured under it): make
// test's second step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector")
}
