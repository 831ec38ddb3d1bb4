//go:build race

package plots

import "testing"

// skipUnderRace skips a test of many charts drawn for their content,
// whose drawing in parallel TestRenderInParallelGivesTheSameBytes and
// TestRenderGraph give the detector: it slows it tenfold and finds
// nothing more in it. make test's second step runs it without.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("runs in make test's second step, without the race detector: charts drawn for their content, which the detector slows tenfold and finds nothing more in")
}
