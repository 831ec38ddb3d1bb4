//go:build race

package main

import "testing"

// skipUnderRace skips a test that runs whole scenarios through the
// command one after another, whose parallel runs, charts and progress
// the detector watches in the other tests: it would slow them tenfold
// for nothing to find. make test's second step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: whole scenarios through the command, which the detector slows tenfold and finds nothing in that the other tests do not run")
}
