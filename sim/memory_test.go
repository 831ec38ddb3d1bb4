//go:build !race

// Memory measured under the race detector is not the program's, and
// these runs take minutes there: make test runs this file in its second,
// plain go test.

package sim

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// peakHeap runs f and returns the most heap its objects took meanwhile,
// sampled every 200 µs, with the garbage collector kept busy so that
// garbage counts little.
func peakHeap(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	read := func() int64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	base := read()
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			if v := read() - base; v > peak.Load() {
				peak.Store(v)
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// TestEstimateCoversTheRuns compares the estimate of what a run takes with
// the heap it took, for the shipped scenarios' shapes: bursts, poisson
// arrivals, senders with workers and breakers, rate limits, occ. The
// estimate must cover the run, without being so far above that it would
// refuse what fits.
func TestEstimateCoversTheRuns(t *testing.T) {
	for _, file := range []string{"thundering-herd", "dispatcher", "circuit-breaker", "metastable", "retry-after", "aws-occ-10", "dlq-replay",
		"layered-retries", "cache-flush", "checkout", "million-chain"} {
		sc, err := scenarios.Load("../scenarios/" + file + ".yaml")
		require.NoError(t, err)
		for i := range sc.Strategies {
			st := sc.Strategies[i].Name
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			peak := peakHeap(func() {
				r, err := runOne(context.Background(), sc, i, 0, nil, 0)
				require.NoError(t, err)
				runtime.KeepAlive(r)
			})
			runtime.ReadMemStats(&after)
			// Every byte the run allocated, garbage included: at least its
			// peak, even when the run was too short for a sample.
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			n := Estimate(sc, Options{Strategies: []string{st}})
			est := n.PerRun + n.Kept
			t.Logf("%s %s: heap %.1f MB (allocated %.1f MB), estimate %.1f MB", file, st, float64(peak)/1e6, float64(allocated)/1e6, float64(est)/1e6)
			assert.GreaterOrEqual(t, est, peak, "%s %s: the estimate covers the run", file, st)
			// Within 5x of what the run allocated: the estimate bounds
			// the worst case of a shape (every request's attempts alive
			// at once, slices at twice their count), which a run of
			// poisson arrivals or a graph's few live jobs stays below.
			assert.Less(t, est, 5*max(peak, allocated)+2<<20, "%s %s: the estimate is not far above", file, st)
		}
	}
}

// TestFinishedRunsFreeTheirWorld: a finished run keeps its figures, time
// series and histogram, not its world (a million requests, the event
// list): eight runs one after another take little more than one.
func TestFinishedRunsFreeTheirWorld(t *testing.T) {
	sc := scenarioOf(t, `
name: eight
server:
  concurrency: 200
  outages: [{start: 0s, duration: 30s}]
workload: {requests: 600000}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 60s}, max_attempts: 10}
`)
	require.GreaterOrEqual(t, Estimate(sc, Options{}).PerRun, int64(bigWorld), "a world big enough to be collected at once")
	peak := func(runs int) int64 {
		sc.Runs = runs
		return peakHeap(func() {
			res, err := Run(context.Background(), sc, Options{Parallel: 1})
			require.NoError(t, err)
			runtime.KeepAlive(res)
		})
	}
	one, eight := peak(1), peak(8)
	t.Logf("peak heap: 1 run %.1f MB, 8 runs %.1f MB", float64(one)/1e6, float64(eight)/1e6)
	assert.Less(t, float64(eight), 1.3*float64(one), "8 runs peak within 1.3x of one")
	// Its waiting room holds twice as many attempts as there are
	// requests: those that timed out stay queued beside their retries.
	sc.Runs = 1
	n := Estimate(sc, Options{})
	assert.GreaterOrEqual(t, n.PerRun+n.Kept, one, "the estimate covers the run")
}
