package sweep

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestGatheringTakesThePointsInFlight: gathering a sweep's outputs from
// its records (Collect, then Merge: what herdlab sweep does when its runs
// are done) takes the memory of a point's records, whatever the number
// of points. It held every record once (about 0.2 MB a run: 634 MB for
// the 2,800 runs of scenarios/metastable.yaml, ten times what running
// them took). The peak heap of gathering 4N runs is measured against
// that of N runs; had it held every record, it would grow by at least
// the 3N records' encodings.
func TestGatheringTakesThePointsInFlight(t *testing.T) {
	skipUnderRace(t) // one goroutine gathers; the detector's shadow memory would blur the heap
	sc, err := scenarios.Parse("heavy.yaml", []byte(`
seed: 1
runs: 2
duration: 2m
server: {concurrency: 20, service_time: {dist: exponential, mean: 50ms}, queue: 100000}
workload: {requests: 5000, arrival: {kind: poisson, rate: 300}}
strategies:
  - {name: fixed, backoff: {kind: fixed, delay: 500ms}, max_attempts: 3}
  - {name: full-jitter, backoff: {kind: full-jitter, base: 100ms, cap: 1s}, max_attempts: 3}
`))
	require.NoError(t, err)
	gather := func(points int) (peak, recordBytes int64) {
		var seeds []string
		for i := range points {
			seeds = append(seeds, strconv.Itoa(i+1))
		}
		plan, err := NewPlan(context.Background(), sc, []scenarios.Vary{{Path: "seed", Values: seeds}}, "", nil)
		require.NoError(t, err)
		dir := t.TempDir()
		_, err = plan.Run(context.Background(), dir, Options{})
		require.NoError(t, err)
		recordBytes = dirBytes(t, filepath.Join(dir, "records"))

		peak = peakHeap(func() {
			rs, err := Collect(dir)
			require.NoError(t, err)
			_, err = Merge(dir, rs, "", nil)
			require.NoError(t, err)
		})
		return peak, recordBytes
	}
	const n = 10 // points of 4 runs
	small, smallBytes := gather(n)
	big, bigBytes := gather(4 * n)
	t.Logf("peak heap gathering %d runs: %.1f MB; %d runs: %.1f MB; their records: %.1f MB and %.1f MB",
		4*n, mb(small), 16*n, mb(big), mb(smallBytes), mb(bigBytes))
	require.Greater(t, bigBytes-smallBytes, int64(3<<20), "records big enough to see")
	// Holding every record, the peak grew by 22 MB here, five times
	// their encodings; gathering a point at a time, by 0-1.4 MB (the
	// index of the runs, and when the collector ran).
	assert.Less(t, big-small, bigBytes-smallBytes, "the peak grows with the points in flight, not with the runs")
}

// peakHeap returns the most heap f had allocated (live, and garbage not
// yet collected) at any moment, with the collector run after every 1%
// of growth so that the heap is about what is live.
func peakHeap(f func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapAlloc)
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, int64(ms.HeapAlloc)-base)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		n += info.Size()
	}
	return n
}

func mb(b int64) float64 { return float64(b) / 1e6 }
