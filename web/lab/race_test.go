//go:build race

package lab

import "testing"

// skipUnderRace skips a test that compares whole simulations, run one
// after another, byte for byte: the detector slows it tenfold and finds
// nothing in it that the other tests do not run. make test's second step
// runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: simulations compared byte for byte, which the detector slows tenfold and finds nothing in")
}
