package sim

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// fuzzLimits bound a fuzzed scenario so that one run takes milliseconds.
const (
	fuzzRequests = 300
	fuzzBuckets  = 2000
	fuzzEvents   = 200_000
)

// FuzzSimulate runs the simulator on every scenario the fuzzer makes that
// Parse accepts, made small (at most fuzzRequests requests, fuzzBuckets
// buckets, two runs, a budget of fuzzEvents events a run): it must not
// panic, and every run must keep conservation (requests = delivered +
// dead-lettered + unfinished, which the engine checks itself), count
// nothing negative, and have its buckets add up to its totals.
func FuzzSimulate(f *testing.F) {
	for _, pattern := range []string{"../scenarios/*.yaml", "../scenarios/testdata/valid/*.yaml"} {
		files, err := filepath.Glob(pattern)
		require.NoError(f, err)
		for _, file := range files {
			data, err := os.ReadFile(file)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenarios.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		shrink(sc)
		if sc.Validate() != nil {
			return // made small, it is no longer valid: senders above requests, say
		}
		res, err := Run(context.Background(), sc, Options{Parallel: 1, MaxEvents: fuzzEvents, MaxMemory: 256 << 20})
		if err != nil {
			var se *scenarios.Error
			if errors.Is(err, ErrEventBudget) || errors.Is(err, ErrStuck) || errors.As(err, &se) {
				return // stopped by its limits, with a reason
			}
			t.Fatalf("run failed: %v", err)
		}
		for _, r := range res.Runs {
			checkRun(t, r)
		}
		// The outputs are written from any result without a panic.
		require.NoError(t, results.WriteJSON(io.Discard, res.Summary))
		require.NoError(t, results.WriteTimeseries(io.Discard, sc.Bucket, res.Runs))
		require.NoError(t, results.WriteTable(io.Discard, res.Summary))
	})
}

// shrink makes a scenario small enough to fuzz: few requests, senders
// and workers, few buckets, at most two runs.
func shrink(sc *scenarios.Scenario) {
	sc.Runs = min(sc.Runs, 2)
	w := &sc.Workload
	if w.Requests > fuzzRequests || (w.Arrival.Kind == scenarios.Poisson && w.Requests == 0) {
		w.Requests = fuzzRequests
	}
	w.Senders = min(w.Senders, w.Requests)
	w.Workers = min(w.Workers, w.Requests)
	if n := (sc.Duration + sc.Bucket - 1) / sc.Bucket; n > fuzzBuckets {
		sc.Bucket = (sc.Duration + fuzzBuckets - 1) / fuzzBuckets
	}
}

// checkRun checks what every run must hold.
func checkRun(t *testing.T, r *results.Run) {
	t.Helper()
	if got := r.Delivered + r.DeadLettered + r.Unfinished; got != r.Requests {
		t.Fatalf("%s: conservation: %d requests, %d delivered + dead + unfinished", r.Strategy, r.Requests, got)
	}
	for name, n := range map[string]int64{"attempts": r.Attempts, "delivered": r.Delivered, "dead": r.DeadLettered,
		"processed": r.Processed, "duplicates": r.Duplicates, "rejected": r.Rejected, "throttled": r.Throttled,
		"timed out": r.TimedOut, "lost": r.Lost, "short-circuited": r.ShortCircuited} {
		if n < 0 {
			t.Fatalf("%s: %s is %d", r.Strategy, name, n)
		}
	}
	var attempts, delivered int64
	for i, b := range r.Series {
		attempts += b.Attempts
		delivered += b.Delivered
		if b.Queue < 0 || b.InFlight < 0 || b.QueueMax < b.Queue || b.QueueMean < 0 || b.DLQ < 0 || b.Delayed < 0 {
			t.Fatalf("%s: bucket %d: %+v", r.Strategy, i, b)
		}
	}
	if attempts != r.Attempts {
		t.Fatalf("%s: the buckets hold %d attempts, the run %d", r.Strategy, attempts, r.Attempts)
	}
	if delivered != r.Delivered {
		t.Fatalf("%s: the buckets hold %d deliveries, the run %d", r.Strategy, delivered, r.Delivered)
	}
	if r.Backlog != nil && (*r.Backlog < 0 || *r.Backlog > r.Requests) {
		t.Fatalf("%s: backlog %d of %d requests", r.Strategy, *r.Backlog, r.Requests)
	}
	if r.Completion != nil && *r.Completion < 0 || r.Drain != nil && *r.Drain < 0 {
		t.Fatalf("%s: negative completion or drain", r.Strategy)
	}
}
