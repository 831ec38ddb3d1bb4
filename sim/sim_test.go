package sim

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// outputs renders a result as the bytes of summary.json (engine wall
// time zeroed) and timeseries.csv.
func outputs(t testing.TB, sc *scenarios.Scenario, res *Result) (summary, series []byte) {
	t.Helper()
	for i := range res.Summary.Strategies {
		res.Summary.Strategies[i].Engine.WallS = 0
	}
	var js, ts bytes.Buffer
	require.NoError(t, results.WriteJSON(&js, res.Summary))
	require.NoError(t, results.WriteTimeseries(&ts, sc.Bucket, res.Runs))
	return js.Bytes(), ts.Bytes()
}

func TestDeterministicWhateverTheParallelism(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/thundering-herd.yaml")
	require.NoError(t, err)
	sc.Runs = 3
	sc.Workload.Requests = 5000
	sc.Server.Concurrency = 20

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var want [2][]byte
	for i, procs := range []int{1, 2, 2} {
		runtime.GOMAXPROCS(procs)
		res, err := Run(context.Background(), sc, Options{Parallel: procs})
		require.NoError(t, err)
		js, ts := outputs(t, sc, res)
		if i == 0 {
			want = [2][]byte{js, ts}
			continue
		}
		assert.Equal(t, string(want[0]), string(js), "summary.json at GOMAXPROCS %d", procs)
		assert.True(t, bytes.Equal(want[1], ts), "timeseries.csv at GOMAXPROCS %d", procs)
	}
	// A different seed gives different results: the seed is used.
	sc.Seed = 2
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	js, _ := outputs(t, sc, res)
	assert.NotEqual(t, string(want[0]), string(js))
}

func TestRunsAggregateWithConfidence(t *testing.T) {
	sc := scenario(t, 4, 100*time.Millisecond)
	sc.Runs = 5
	sc.Duration = time.Minute
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 30}
	res := simulate(t, sc)
	require.Len(t, res.Runs, 5)
	s := res.Summary.Strategies[0]
	require.NotNil(t, s.CI95)
	var sum float64
	for _, r := range res.Runs {
		sum += float64(r.Requests)
	}
	assert.InDelta(t, sum/5, s.Requests, 1e-9, "figures are means over runs")
	assert.Positive(t, s.CI95.Requests, "runs differ, so the interval has a width")
	assert.Equal(t, results.NoOutage, s.Recovery, "no outage, no recovery to count")
	assert.Zero(t, s.RecoveredRuns)
	assert.Nil(t, s.RecoveryTimeS)
}

func TestMeanCI(t *testing.T) {
	// Five values with mean 3 and standard deviation sqrt(2.5): the 95%
	// half-width is t(0.975, 4) * sd / sqrt(5) = 2.776 * 0.7071.
	m, h := meanCI([]float64{1, 2, 3, 4, 5})
	assert.Equal(t, 3.0, m)
	assert.InDelta(t, 2.7764451*0.70710678, h, 1e-6)
	m, h = meanCI([]float64{7})
	assert.Equal(t, 7.0, m)
	assert.Zero(t, h)
}

func TestUnknownStrategy(t *testing.T) {
	sc := scenario(t, 1, time.Millisecond)
	_, err := Run(context.Background(), sc, Options{Strategies: []string{"nope"}})
	assert.EqualError(t, err, `scenario test has no strategy "nope" (it has once)`)
}

func TestCancel(t *testing.T) {
	sc := scenario(t, 10, 100*time.Millisecond)
	sc.Duration = 10 * time.Hour
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 1000}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, sc, Options{})
	assert.ErrorIs(t, err, context.Canceled)
}

// randomScenario builds a small valid scenario that uses a random mix of
// every model: outages of every mode, rate limits, response loss,
// idempotency, warmup, slowdown, dispatchers, breakers, budgets and DLQ
// replay.
func randomScenario(r *rand.Rand) *scenarios.Scenario {
	sc := scenarios.Default()
	sc.Name = "random"
	sc.Seed = r.Uint64()
	sc.Duration = time.Duration(30+r.IntN(300)) * time.Second
	sc.Bucket = time.Duration(1+r.IntN(5)) * 500 * time.Millisecond
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	dur := func(max time.Duration) time.Duration { return time.Duration(r.Int64N(int64(max))) + time.Millisecond }
	dist := func(mean time.Duration) scenarios.Dist {
		switch pick(scenarios.Constant, scenarios.Exponential, scenarios.UniformDist, scenarios.Lognormal) {
		case scenarios.Constant:
			return scenarios.Dist{Kind: scenarios.Constant, Mean: mean}
		case scenarios.Exponential:
			return scenarios.Dist{Kind: scenarios.Exponential, Mean: mean}
		case scenarios.UniformDist:
			return scenarios.Dist{Kind: scenarios.UniformDist, Min: mean / 2, Max: mean * 3 / 2}
		}
		return scenarios.Dist{Kind: scenarios.Lognormal, Mean: mean, StdDev: mean / 2}
	}

	srv := &sc.Server
	srv.Concurrency = scenarios.Limit(1 + r.IntN(50))
	if r.IntN(5) == 0 {
		srv.Concurrency = scenarios.Unlimited
	}
	srv.ServiceTime = dist(dur(200 * time.Millisecond))
	if r.IntN(2) == 0 {
		srv.Queue = scenarios.Limit(r.IntN(100))
	}
	at := time.Duration(0)
	for range r.IntN(3) {
		at += dur(20 * time.Second)
		o := scenarios.Outage{Start: at, Duration: dur(30 * time.Second), Mode: pick(scenarios.Refuse, scenarios.TimeoutMode, scenarios.ErrorMode)}
		if o.Start < sc.Duration {
			srv.Outages = append(srv.Outages, o)
		}
		at = o.End()
	}
	srv.FailureProbability = r.Float64() * 0.3 * float64(r.IntN(2))
	srv.Slowdown = time.Duration(r.IntN(2)) * dur(5*time.Millisecond)
	srv.DropExpired = r.IntN(2) == 0
	if r.IntN(3) == 0 {
		srv.Warmup = scenarios.Warmup{Duration: dur(20 * time.Second), From: 0.1 + 0.9*r.Float64()}
	}
	if r.IntN(3) == 0 {
		srv.RateLimit = &scenarios.RateLimit{Rate: 1 + r.Float64()*200, Burst: 1 + r.IntN(50), Format: pick("seconds", "http-date")}
		if r.IntN(2) == 0 {
			srv.RateLimit.RetryAfter = scenarios.AutoDuration(dur(5 * time.Second))
		}
	}
	srv.ResponseLoss = r.Float64() * 0.2 * float64(r.IntN(2))
	srv.Idempotency = r.IntN(2) == 0
	if r.IntN(2) == 0 {
		d := dist(dur(50 * time.Millisecond))
		sc.Network.Latency = &d
	}

	wl := &sc.Workload
	wl.Requests = 1 + r.IntN(2000)
	switch pick(scenarios.Burst, scenarios.Poisson, scenarios.Uniform) {
	case scenarios.Burst:
		wl.Arrival = scenarios.Arrival{Kind: scenarios.Burst, At: dur(sc.Duration / 2)}
	case scenarios.Poisson:
		wl.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 1 + r.Float64()*100, Until: sc.Duration / 2,
			Schedule: []scenarios.RateStep{{From: 5 * time.Second, Until: 10 * time.Second, Rate: r.Float64() * 200}}}
		if r.IntN(2) == 0 {
			wl.Requests = 0
		}
	default:
		wl.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: dur(sc.Duration / 2)}
	}
	if r.IntN(2) == 0 {
		wl.Senders = 1 + r.IntN(20)
	}
	if r.IntN(3) == 0 {
		wl.Workers = 1 + r.IntN(5)
	}
	if r.IntN(3) == 0 {
		sc.DLQ.Replay = &scenarios.Replay{At: dur(sc.Duration), Rate: 1 + r.Float64()*100}
	}

	for i := range 1 + r.IntN(3) {
		st := scenarios.NewStrategy(fmt.Sprintf("s%d", i))
		st.Backoff.Kind = pick(scenarios.BackoffNone, scenarios.BackoffFixed, scenarios.BackoffExponential, scenarios.BackoffFullJitter,
			scenarios.BackoffEqualJitter, scenarios.BackoffDecorrelatedJitter, scenarios.BackoffProportionalJitter, scenarios.BackoffDecorrelatedJitterV2)
		st.Backoff.Delay = dur(5 * time.Second)
		st.Backoff.Base = dur(time.Second)
		st.Backoff.Cap = st.Backoff.Base + dur(30*time.Second)
		st.MaxAttempts = 1 + r.IntN(8)
		if r.IntN(4) == 0 {
			st.MaxElapsed = dur(time.Minute)
		}
		st.Timeout = dur(5 * time.Second)
		st.RetryAfter.Mode = pick("honor", "ignore", "max")
		if r.IntN(3) == 0 {
			st.Breaker = &scenarios.Breaker{Consecutive: 1 + r.IntN(10), OpenFor: dur(20 * time.Second), MinCalls: 1 + r.IntN(10),
				Canaries: 1 + r.IntN(3), OpenJitter: r.Float64() * 0.5, CountsAsAttempt: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				st.Breaker.FailureRatio = r.Float64()
				st.Breaker.Window = dur(10 * time.Second)
			}
		}
		if r.IntN(3) == 0 {
			b := scenarios.Budget{Kind: pick("tokens", "quota"), MaxTokens: 10, TokenRatio: 0.1, Capacity: 50, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}
			st.Budget = &b
		}
		sc.Strategies = append(sc.Strategies, st)
	}
	return &sc
}

func TestPropertiesOfRandomScenarios(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 11))
	n := 300
	if testing.Short() {
		n = 50
	}
	if raceDetector {
		// The detector watches the parallel runs of the first
		// scenarios; make test's second step, without it, checks 50
		// and make test-long all 300.
		n = 10
	}
	for k := range n {
		sc := randomScenario(r)
		require.NoError(t, sc.Validate(), "scenario %d", k)
		res, err := Run(context.Background(), sc, Options{})
		require.NoError(t, err, "scenario %d", k)
		for _, run := range res.Runs {
			require.Equal(t, run.Requests, run.Delivered+run.DeadLettered+run.Unfinished, "conservation, scenario %d", k)
			var attempts, byReason int64
			for _, b := range run.Series {
				for _, x := range []int64{b.Attempts, b.OK, b.NotOK, b.Delivered, b.Failed, b.Rejected, b.ShortCircuited, b.Throttled, b.TimedOut, b.Queue, b.InFlight} {
					require.GreaterOrEqual(t, x, int64(0), "scenario %d", k)
				}
				require.LessOrEqual(t, b.OK+b.NotOK, b.Attempts, "scenario %d: results of more attempts than arrived", k)
				d := b.Breakdown()
				require.Equal(t, b.Attempts, d.Succeeded+d.Rejected+d.Throttled+d.TimedOut+d.Failed+d.Unresolved, "scenario %d: breakdown", k)
				attempts += b.Attempts
			}
			for _, n := range run.DeadLetteredBy {
				byReason += n
			}
			require.Equal(t, run.Attempts, attempts, "scenario %d", k)
			last := run.Series[len(run.Series)-1]
			require.Equal(t, run.DeadLettered, last.DLQ, "scenario %d: the dead-letter queue's depth at the end", k)
			require.LessOrEqual(t, last.Delayed, run.Unfinished, "scenario %d: requests waiting for a retry at the end are unfinished", k)
			require.Equal(t, run.DeadLettered, byReason, "scenario %d", k)
			require.LessOrEqual(t, run.Processed, run.Attempts, "scenario %d", k)
			require.LessOrEqual(t, run.Duplicates, run.Processed, "scenario %d", k)
			if sc.Server.Idempotency {
				require.Zero(t, run.Duplicates, "scenario %d: idempotency stops duplicates", k)
			}
		}
		for _, s := range res.Summary.Strategies {
			for _, x := range []float64{s.Requests, s.Attempts, s.Delivered, s.DeadLettered, s.Unfinished, s.Duplicates, s.Amplification,
				s.PeakLoad, s.LatencyS.Mean, s.LatencyS.P99, s.Wasted, s.ShortCircuited} {
				require.GreaterOrEqual(t, x, 0.0, "scenario %d", k)
			}
			require.LessOrEqual(t, s.DeliveredRatio, 1.0)
			for _, p := range []*float64{s.PeakLoadRatio, s.RecoveryTimeS, s.DrainTimeS, s.CompletionTimeS} {
				if p != nil {
					require.GreaterOrEqual(t, *p, 0.0, "scenario %d", k)
				}
			}
		}
	}
}

func TestCallIsHalfACacheLine(t *testing.T) {
	assert.Equal(t, uintptr(32), unsafe.Sizeof(call{}))
}

func TestNoAllocationPerEvent(t *testing.T) {
	// A steady stream of requests through a busy server with retries:
	// ten times the horizon means ten times the events, but only the
	// few allocations of slices growing, not one per event.
	allocs := func(horizon time.Duration) (float64, int64) {
		sc := scenario(t, 10, 100*time.Millisecond)
		sc.Duration = horizon
		sc.Server.Queue = 20
		sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 95}
		sc.Strategies[0].Backoff = scenarios.Backoff{Kind: scenarios.BackoffFullJitter, Base: time.Second, Cap: 10 * time.Second, Multiplier: 2}
		sc.Strategies[0].MaxAttempts = 5
		require.NoError(t, sc.Validate())
		var events int64
		n := testing.AllocsPerRun(1, func() {
			res, err := Run(context.Background(), sc, Options{Parallel: 1})
			require.NoError(t, err)
			events = res.Runs[0].Events
		})
		return n, events
	}
	short, shortEvents := allocs(time.Minute)
	long, longEvents := allocs(10 * time.Minute)
	t.Logf("%.0f allocations for %d events; %.0f for %d", short, shortEvents, long, longEvents)
	require.Greater(t, longEvents, 9*shortEvents)
	assert.Less(t, long-short, 100.0)
}

// TestLatencyOfRunsThatDeliveredNothing: a run that delivered nothing has
// no latency; the mean over runs leaves it out instead of counting a 0.
func TestLatencyOfRunsThatDeliveredNothing(t *testing.T) {
	figs := []results.Figures{
		{Delivered: 10, LatencyS: results.Latency{Mean: 2, P99: 4}},
		{Delivered: 0},
		{Delivered: 20, LatencyS: results.Latency{Mean: 4, P99: 6}},
	}
	s := SummarizeFigures("s", figs)
	assert.InDelta(t, 3, s.LatencyS.Mean, 1e-12)
	assert.InDelta(t, 5, s.LatencyS.P99, 1e-12)
	none := SummarizeFigures("s", []results.Figures{{}, {}})
	assert.Zero(t, none.LatencyS.P99)
}

// TestRecoveredRunsLeaveNothingLeftOut: a run that left nothing to
// recover is no recovered run, and a figure that some runs lack is
// counted in runs_without.
func TestRecoveredRunsLeaveNothingLeftOut(t *testing.T) {
	zero, some := 0.0, 100.0
	ptr := func(x float64) *float64 { return &x }
	figs := []results.Figures{
		{Delivered: 5, RecoveryTimeS: ptr(4), BacklogAtOutageEnd: &some, DrainTimeS: ptr(9)},
		{Delivered: 0, RecoveryTimeS: nil, BacklogAtOutageEnd: &zero, DrainTimeS: ptr(1)},
		{Delivered: 7, RecoveryTimeS: nil, BacklogAtOutageEnd: &some},
	}
	s := SummarizeFigures("s", figs)
	assert.Equal(t, 1, s.RecoveredRuns)
	assert.Equal(t, 1, s.NothingLeftRuns)
	assert.Equal(t, results.Mixed, s.Recovery)
	assert.Equal(t, map[string]int{"recovery_time_s": 2, "drain_time_s": 1, "latency_s": 1}, s.RunsWithout)

	all := SummarizeFigures("s", []results.Figures{figs[0], figs[0]})
	assert.Equal(t, results.Recovered, all.Recovery)
	assert.Nil(t, all.RunsWithout, "every run has every figure")

	calm := SummarizeFigures("s", []results.Figures{{NoOutage: true, Delivered: 1}, {NoOutage: true, Delivered: 1}})
	assert.Equal(t, results.NoOutage, calm.Recovery)
	assert.Nil(t, calm.RecoveryTimeS)
}

func TestProgressCountsEveryUnit(t *testing.T) {
	// Each run reports ProgressUnits units in all, whatever its horizon
	// (one not a multiple of ProgressUnits included), a graph's too.
	for _, yaml := range []string{
		"duration: 15m\nworkload: {requests: 100}\nstrategies: [{name: a, backoff: {kind: fixed, delay: 1s}}, {name: b, backoff: {kind: fixed, delay: 2s}}]\n",
		"duration: 1234567us\nbucket: 1ms\nworkload: {requests: 10}\nstrategies: [{name: a, backoff: {kind: fixed, delay: 1ms}}]\n",
		"duration: 10s\nservices: [{name: api, calls: [{service: db}]}, {name: db}]\nworkload: {target: api, requests: 10}\nstrategies: [{name: a, backoff: {kind: fixed, delay: 1s}}]\n",
	} {
		sc := scenarioOf(t, "runs: 3\n"+yaml)
		var mu sync.Mutex
		units := 0
		_, err := Run(context.Background(), sc, Options{Progress: func(n int) {
			mu.Lock()
			units += n
			mu.Unlock()
		}})
		require.NoError(t, err)
		assert.Equal(t, ProgressUnits*3*len(sc.Strategies), units, yaml)
	}
}
