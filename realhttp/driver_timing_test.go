//go:build !race

// The race detector slows real time down unevenly, so the timing of
// retries is gated without it: make test runs this in a second, plain go
// test.

package realhttp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDriverTimingGapMedian(t *testing.T) {
	// 1,000 senders with jittered retries: the gap between a retry's
	// planned send time and its arrival at the server has a median under
	// 2 ms (the bound), measured at the server.
	driver, server, _, stats := driverTimingRun(t)
	t.Logf("%d retries: median gap %s in the driver, %s at the server", len(stats.Retries), driver, server)
	assert.Less(t, server, 2*time.Millisecond, "median gap at the server")
}
