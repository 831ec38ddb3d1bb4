package realhttp

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zeontools/herdlab/scenarios"
)

// graphTimingScenario is BenchmarkGraphCallTimingGap's: 1,000 fleet
// requests spread over a second reach front, whose call to back meets
// back's error outage (to 1.2 s) and is retried once, 1.5 s later. The
// delay is fixed, so that each retry's due time is known at the callee;
// the spread of the first attempts spreads the retries' timers as
// jitter would.
const graphTimingScenario = `name: edge-timing
duration: 10s
services:
  - name: front
    service_time: {dist: uniform, min: 0s, max: 1ns}
    calls: [{service: back, retry: {backoff: {kind: fixed, delay: 1500ms}, max_attempts: 2, timeout: 1s}}]
  - name: back
    service_time: {dist: uniform, min: 0s, max: 1ns}
    outages: [{start: 0s, duration: 1200ms, mode: error}]
workload: {target: front, requests: 1000, arrival: {kind: uniform, from: 0s, until: 1s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s}
`

// graphTimingDelay is graphTimingScenario's retry delay.
const graphTimingDelay = 1500 * time.Millisecond

// graphTimingRecorder records, at back, when each call's first attempt
// was answered and when its second arrived, by idempotency key.
type graphTimingRecorder struct {
	h        http.Handler
	mu       sync.Mutex
	answered map[string]time.Time
	arrived  map[string]time.Time
}

func (rec *graphTimingRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	key, attempt := r.Header.Get(serverKeyHeader), r.Header.Get(serverAttemptHeader)
	if attempt == "2" {
		rec.mu.Lock()
		rec.arrived[key] = at
		rec.mu.Unlock()
	}
	rec.h.ServeHTTP(w, r)
	if attempt == "1" {
		rec.mu.Lock()
		rec.answered[key] = time.Now()
		rec.mu.Unlock()
	}
}

// graphTimingRun serves graphTimingScenario, replays it, and returns
// the median and the least gap between a retry on the call edge being
// due (its first attempt's answer written, plus the delay) and its
// arrival at back, and how many retries arrived.
func graphTimingRun(tb testing.TB) (gap, earliest time.Duration, retries int) {
	sc, err := scenarios.Parse("edge-timing.yaml", []byte(graphTimingScenario))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{Server: ServerOptions{Seed: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	rec := &graphTimingRecorder{answered: map[string]time.Time{}, arrived: map[string]time.Time{}}
	err = g.Serve(func(at GraphAt, h http.Handler) (Listener, *http.Server, error) {
		ln, err := newServerListener(serverDefaultAddr, ServerDefaultMaxConns())
		if err != nil {
			return nil, nil, err
		}
		if at.Service == "back" {
			rec.h = h
			h = rec
		}
		return ln, &http.Server{Handler: h, ReadHeaderTimeout: serverDefaultReadTimeout, IdleTimeout: serverIdleTimeout}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			tb.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _, err := Replay(ctx, sc, &sc.Strategies[0], 0, DriverOptions{Target: g.URL(), MaxConns: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	if err := g.Idle(ctx); err != nil {
		tb.Fatal(err)
	}
	if run.Delivered != 1000 {
		tb.Fatalf("delivered %d of 1000", run.Delivered)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var gaps []time.Duration
	for key, at := range rec.arrived {
		if first, ok := rec.answered[key]; ok {
			gaps = append(gaps, at.Sub(first.Add(graphTimingDelay)))
		}
	}
	if len(gaps) < 900 {
		tb.Fatalf("%d retries reached back, want nearly 1000 (every first attempt meets the outage)", len(gaps))
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2], gaps[0], len(gaps)
}

// BenchmarkGraphCallTimingGap reports the median gap between a retry on
// a call edge being due and its arrival at the callee, with 1,000 calls
// retried within a second (see graphTimingRun): what the edges' retries
// (a timer a backoff, in a goroutine a call) add, beside the fleet's
// (BenchmarkDriverTimingGap). The gap includes two trips over loopback:
// the first attempt's answer back to the caller, the retry to the
// callee.
func BenchmarkGraphCallTimingGap(b *testing.B) {
	var gap time.Duration
	n, retries := 0, 0
	for b.Loop() {
		g, _, r := graphTimingRun(b)
		gap += g
		retries += r
		n++
	}
	b.ReportMetric(float64(gap.Microseconds())/float64(n), "gap-p50-µs")
	b.ReportMetric(float64(retries)/float64(n), "retries")
}

// TestGraphCallTimingGap checks that the edges' retries go when they
// are due: none early, and a median gap far below the delay. The bound
// is loose (as TestDriverTimingGap's): it catches a retry that waits
// wrongly, not a slow machine.
func TestGraphCallTimingGap(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s of wall time")
	}
	serverTestLeaks(t)
	gap, earliest, retries := graphTimingRun(t)
	t.Logf("%d retries on the edge: median gap %s, least %s", retries, gap, earliest)
	assert.GreaterOrEqual(t, earliest, time.Duration(0), "no retry comes early")
	assert.Less(t, gap, 100*time.Millisecond, "median gap at the callee")
}
