package realhttp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// TestServerDropsCancelledHedges: 5 requests at once to a server that
// serves one at a time for 100 ms, each hedged after 50 ms with cancel.
// The queue holds the first copies of requests 2-5, then the 5 hedges;
// each request's first copy wins, and its hedge, cancelled by the
// sender, must leave the queue unserved, as in the simulator. The last
// hedge alone is served: it is next in the queue when its request's
// winner is answered, and the freed slot takes it before the sender can
// hang up on it. The simulator does the same, with no network latency
// in the same instant (the slot is taken before the answer is sent): 6
// processed, 1 duplicate. Without the drop all 5 hedges were served: 10
// processed, 5 duplicates.
func TestServerDropsCancelledHedges(t *testing.T) {
	serverTestLeaks(t)
	sc, err := scenarios.Parse("hedge.yaml", []byte(`
name: hedge-cancel
duration: 3s
server: {concurrency: 1, service_time: {dist: constant, mean: 100ms}}
workload: {requests: 5, arrival: {kind: burst, at: 0s}}
strategies:
  - {name: h, backoff: {kind: none}, max_attempts: 1, timeout: 2s, hedge: {delay: 50ms, max: 1, cancel: true}}
`))
	require.NoError(t, err)

	res, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	simRun := res.Runs[0]
	require.Equal(t, int64(5), simRun.Delivered)
	require.Equal(t, int64(5), simRun.Hedges)
	require.Equal(t, int64(6), simRun.Processed, "the simulator serves the last hedge alone")
	require.Equal(t, int64(1), simRun.Duplicates)

	s := serverTestStart(t, sc, ServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _, err := Replay(ctx, sc, &sc.Strategies[0], 0, DriverOptions{Target: s.URL()})
	require.NoError(t, err)
	assert.Equal(t, int64(5), run.Delivered)
	assert.Equal(t, int64(5), run.Hedges)
	assert.Zero(t, run.HedgeWins, "each request's first copy wins")
	// The losers left in the queue are served (or not) after the run:
	// wait until the server is idle (5 x 100 ms at most).
	var st ServerStats
	require.Eventually(t, func() bool {
		st = s.Stats()
		return st.Queued == 0 && st.InFlight == 0
	}, 5*time.Second, 10*time.Millisecond, "the server's queue empties")
	t.Logf("real: processed %d, duplicates %d; simulated: processed %d, duplicates %d", st.Processed, st.Duplicates, simRun.Processed, simRun.Duplicates)
	assert.LessOrEqual(t, st.Processed, simRun.Processed, "the cancelled hedges left the queue unserved")
	assert.LessOrEqual(t, st.Duplicates, simRun.Duplicates)
	assert.GreaterOrEqual(t, st.Processed, simRun.Processed-1, "every winner was served")
}
