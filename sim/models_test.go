package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// These tests pin each model of the simulator on a small case: exact
// counts and times where the model is deterministic, statistical bounds
// at a fixed seed where it is random.

// model returns a scenario for the model tests: scenario's, with a
// constant service time s, c slots (0: unlimited), a one-minute horizon
// and a burst of n requests at 0.
func model(t *testing.T, c int, s time.Duration, n int) *scenarios.Scenario {
	t.Helper()
	sc := scenario(t, max(c, 1), s)
	if c == 0 {
		sc.Server.Concurrency = scenarios.Unlimited
	}
	sc.Server.ServiceTime = scenarios.Dist{Kind: scenarios.Constant, Mean: s}
	sc.Duration = time.Minute
	sc.Workload = scenarios.Workload{Requests: n, Arrival: scenarios.Arrival{Kind: scenarios.Burst}}
	return sc
}

// fixed makes the scenario's strategy retry after a fixed delay, up to
// attempts attempts (0: unlimited).
func fixed(sc *scenarios.Scenario, delay time.Duration, attempts int) {
	sc.Strategies[0].Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: delay}
	sc.Strategies[0].MaxAttempts = attempts
}

// run1 simulates sc and returns its only run.
func run1(t *testing.T, sc *scenarios.Scenario) *results.Run {
	t.Helper()
	res := simulate(t, sc)
	require.Len(t, res.Runs, 1)
	return res.Runs[0]
}

// nonzero returns the buckets of run where field is not 0, by index.
func nonzero(run *results.Run, field func(b results.Bucket) int64) map[int]int64 {
	m := map[int]int64{}
	for i, b := range run.Series {
		if x := field(b); x != 0 {
			m[i] = x
		}
	}
	return m
}

func attempts(b results.Bucket) int64  { return b.Attempts }
func failed(b results.Bucket) int64    { return b.Failed }
func delivered(b results.Bucket) int64 { return b.Delivered }
func timedOut(b results.Bucket) int64  { return b.TimedOut }

// sumBuckets adds field over buckets [from, to).
func sumBuckets(run *results.Run, from, to int, field func(b results.Bucket) int64) int64 {
	var n int64
	for _, b := range run.Series[from:to] {
		n += field(b)
	}
	return n
}

// every returns a map of the buckets from, from+step, ... below to, each
// holding n.
func every(from, to, step int, n int64) map[int]int64 {
	m := map[int]int64{}
	for i := from; i < to; i += step {
		m[i] = n
	}
	return m
}

// ---- 1. Outage modes ----

func TestModelOutageRefuseFailsAtOnceAndIsRetried(t *testing.T) {
	// 10 requests against a server that refuses for 10 s, retrying every
	// second: attempts at 0, 1, ..., 9 are refused at once, the one at 10
	// is served (100 ms).
	sc := model(t, 0, 100*time.Millisecond, 10)
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 10 * time.Second, Mode: scenarios.Refuse}}
	fixed(sc, time.Second, 0)
	run := run1(t, sc)

	assert.Equal(t, every(0, 11, 1, 10), nonzero(run, attempts))
	assert.Equal(t, every(0, 10, 1, 10), nonzero(run, failed), "each refusal is a failure in its bucket")
	assert.Equal(t, map[int]int64{10: 10}, nonzero(run, delivered))
	assert.Equal(t, int64(110), run.Attempts)
	assert.Equal(t, int64(10), run.Delivered)
	assert.Zero(t, run.TimedOut, "a refusal is not a timeout")
	assert.Zero(t, run.Rejected, "a refusal is not a full queue")
	assert.Zero(t, run.Processed-run.Delivered, "refused attempts are not processed")
	require.NotNil(t, run.Completion)
	assert.Equal(t, 10*time.Second+100*time.Millisecond, *run.Completion)
}

func TestModelOutageModesGiveTheirOutcomes(t *testing.T) {
	// Each mode's failure is the outcome it says: with retry_on holding
	// only that outcome the request is retried, and with retry_on
	// holding only the other ones it is dead-lettered not_retryable
	// after one attempt.
	tests := []struct {
		mode    string
		outcome string
		others  []string
	}{
		{scenarios.Refuse, "refused", []string{"timeout", "5xx", "reset", "429"}},
		{scenarios.ErrorMode, "5xx", []string{"refused", "timeout", "reset", "429"}},
		{scenarios.TimeoutMode, "timeout", []string{"refused", "5xx", "reset", "429"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			for _, retried := range []bool{true, false} {
				sc := model(t, 0, 100*time.Millisecond, 5)
				sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: tt.mode}}
				fixed(sc, time.Second, 3)
				sc.Strategies[0].Timeout = 2 * time.Second
				sc.Strategies[0].RetryOn = tt.others
				if retried {
					sc.Strategies[0].RetryOn = []string{tt.outcome}
				}
				run := run1(t, sc)
				if retried {
					assert.Equal(t, int64(15), run.Attempts, "retry_on [%s]", tt.outcome)
					assert.Equal(t, map[string]int64{"max_attempts": 5}, run.DeadLetteredBy)
				} else {
					assert.Equal(t, int64(5), run.Attempts, "retry_on %v", tt.others)
					assert.Equal(t, map[string]int64{"not_retryable": 5}, run.DeadLetteredBy)
				}
				if tt.mode == scenarios.TimeoutMode {
					assert.Equal(t, run.Attempts, run.TimedOut)
				} else {
					assert.Zero(t, run.TimedOut)
				}
				assert.Zero(t, run.Rejected)
				assert.Zero(t, run.Processed)
			}
		})
	}
}

func TestModelOutageErrorIsAFast503(t *testing.T) {
	// Error mode answers at once, like refuse: with a 1 s fixed backoff
	// the attempts land every second, and none times out.
	sc := model(t, 0, 100*time.Millisecond, 7)
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 5 * time.Second, Mode: scenarios.ErrorMode}}
	fixed(sc, time.Second, 0)
	sc.Strategies[0].Timeout = 30 * time.Second
	run := run1(t, sc)
	assert.Equal(t, every(0, 6, 1, 7), nonzero(run, attempts))
	assert.Equal(t, every(0, 5, 1, 7), nonzero(run, failed))
	assert.Equal(t, map[int]int64{5: 7}, nonzero(run, delivered))
	assert.Zero(t, run.TimedOut)
	assert.Zero(t, run.Rejected, "an outage's 503 is not a full queue")
}

func TestModelOutageTimeoutWaitsForTheSenderTimeout(t *testing.T) {
	// No answer during the outage: each attempt is given up after the 2 s
	// timeout, and the retry comes 1 s later: attempts at 0, 3, 6, 9 time
	// out (at 2, 5, 8, 11), the one at 12 is served.
	sc := model(t, 0, 100*time.Millisecond, 4)
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 10 * time.Second, Mode: scenarios.TimeoutMode}}
	fixed(sc, time.Second, 0)
	sc.Strategies[0].Timeout = 2 * time.Second
	run := run1(t, sc)

	assert.Equal(t, every(0, 13, 3, 4), nonzero(run, attempts))
	assert.Equal(t, every(2, 12, 3, 4), nonzero(run, timedOut), "given up at 2, 5, 8, 11")
	assert.Equal(t, every(2, 12, 3, 4), nonzero(run, failed))
	assert.Equal(t, map[int]int64{12: 4}, nonzero(run, delivered))
	assert.Equal(t, int64(16), run.TimedOut)
	assert.Equal(t, int64(4), run.Delivered)
	assert.Zero(t, run.Rejected)
	assert.Zero(t, run.Wasted, "nothing was processed during the outage")
	require.NotNil(t, run.Completion)
	assert.Equal(t, 12*time.Second+100*time.Millisecond, *run.Completion)
	assert.InDelta(t, 4*12.1, run.LatencySum, 1e-9)
}

// ---- 2. Concurrency and queue ----

func TestModelConcurrencyAndQueue(t *testing.T) {
	// A burst of 20 against 5 slots serving 1.5 s each, no retries.
	tests := []struct {
		name        string
		concurrency int // 0: unlimited
		queue       scenarios.Limit
		served      int64
	}{
		{"no queue", 5, 0, 5},
		{"queue 3", 5, 3, 8},
		{"unlimited queue", 5, scenarios.Unlimited, 20},
		{"unlimited concurrency", 0, 0, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := model(t, tt.concurrency, 1500*time.Millisecond, 20)
			sc.Server.Queue = tt.queue
			run := run1(t, sc)
			rejected := 20 - tt.served
			assert.Equal(t, tt.served, run.Delivered)
			assert.Equal(t, tt.served, run.Processed)
			assert.Equal(t, rejected, run.Rejected)
			assert.Equal(t, rejected, run.Series[0].Rejected)
			assert.Equal(t, rejected, run.Series[0].Failed, "a rejection is a failure")
			assert.Equal(t, rejected, run.DeadLetteredBy["max_attempts"])
			assert.Equal(t, int64(20), run.Series[0].Attempts)
			inService := min(tt.served, 20)
			if tt.concurrency > 0 {
				inService = min(inService, int64(tt.concurrency))
			}
			assert.Equal(t, inService, run.Series[0].InFlight, "in service at 1 s")
			assert.Equal(t, tt.served-inService, run.Series[0].Queue, "queued at 1 s")
		})
	}
}

func TestModelQueuedWorkStartsAsSlotsFree(t *testing.T) {
	// 5 slots, queue 3, 1.5 s service: 5 served from 0 to 1.5 s, the 3
	// queued from 1.5 s to 3 s.
	sc := model(t, 5, 1500*time.Millisecond, 20)
	sc.Server.Queue = 3
	run := run1(t, sc)
	assert.Equal(t, map[int]int64{1: 5, 3: 3}, nonzero(run, delivered))
	assert.Equal(t, int64(3), run.Series[1].InFlight, "the queued three in service at 2 s")
	assert.Zero(t, run.Series[1].Queue)
	require.NotNil(t, run.Completion)
	assert.Equal(t, 3*time.Second, *run.Completion)
}

// ---- 3. Random failures ----

func TestModelFailureProbability(t *testing.T) {
	const n = 20_000
	for _, p := range []float64{0.05, 0.3} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			sc := model(t, 0, 10*time.Millisecond, n)
			sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 10 * time.Second}
			sc.Server.FailureProbability = p
			run := run1(t, sc)
			got := float64(run.DeadLettered) / n
			sigma := math.Sqrt(p * (1 - p) / n)
			assert.InDelta(t, p, got, 4*sigma, "share of 503s")
			assert.Equal(t, int64(n), run.Attempts)
			assert.Equal(t, run.DeadLettered, sumBuckets(run, 0, len(run.Series), failed))
			assert.Equal(t, run.Delivered, run.Processed, "a random 503 is not processed")
			assert.Zero(t, run.Rejected, "a random 503 is not a full queue")
		})
	}
}

// ---- 4. Warmup ----

func TestModelWarmupRampsCapacity(t *testing.T) {
	// 100 slots serving 1 s each; the server is down for 10 s; at 10 s a
	// burst of 3000 arrives. With a 10 s warmup from 0.2, capacity grows
	// from 20 to 100 between 10 s and 20 s.
	build := func(warm bool) *results.Run {
		sc := model(t, 100, time.Second, 3000)
		sc.Workload.Arrival.At = 10 * time.Second
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 10 * time.Second, Mode: scenarios.Refuse}}
		if warm {
			sc.Server.Warmup = scenarios.Warmup{Duration: 10 * time.Second, From: 0.2}
		}
		return run1(t, sc)
	}
	cold, warm := build(false), build(true)

	// Without warmup every slot is busy from the start.
	for i := 10; i < 35; i++ {
		require.Equal(t, int64(100), cold.Series[i].InFlight, "no warmup: in service at %ds", i+1)
	}
	// With it, about 27 are in service at 11 s (capacity at 10.9 s: 20 +
	// 0.8 * 9), more each second, and all 100 from 20 s while work is
	// queued.
	in := func(i int) int64 { return warm.Series[i].InFlight }
	assert.InDelta(t, 27, in(10), 1, "in service at 11 s")
	for i := 11; i < 20; i++ {
		want := 20 + 0.8*float64(10*(i-10)+9) // capacity at i+0.9 s
		assert.InDelta(t, want, float64(in(i)), 1, "in service at %ds", i+1)
		assert.Greater(t, in(i), in(i-1), "capacity grows during the warmup")
	}
	assert.Less(t, in(18), int64(100))
	for i := 20; i < 30; i++ {
		require.Equal(t, int64(100), in(i), "warmup over: in service at %ds", i+1)
	}
	// Throughput over the warmup follows the ramp: the requests started
	// in [i, i+1) s are the capacity at i+0.9 s, 27 + 35 + ... + 99 = 630
	// in [10 s, 20 s), instead of 1000.
	cw, ww := sumBuckets(cold, 11, 21, delivered), sumBuckets(warm, 11, 21, delivered)
	assert.Equal(t, int64(1000), cw)
	assert.InDelta(t, 630, ww, 10)
	t.Logf("delivered 11..21 s: %d without warmup, %d with", cw, ww)
}

// ---- 5. Rate limit and Retry-After ----

func TestModelRateLimitThrottles(t *testing.T) {
	// A bucket of 5 tokens refilled at 10/s: a burst of 20 gets 5 tokens,
	// 15 answers 429.
	sc := model(t, 0, 100*time.Millisecond, 20)
	sc.Server.RateLimit = &scenarios.RateLimit{Rate: 10, Burst: 5, Format: "seconds"}
	run := run1(t, sc)
	assert.Equal(t, int64(15), run.Throttled)
	assert.Equal(t, int64(15), run.Series[0].Throttled)
	assert.Equal(t, int64(15), run.Series[0].Failed)
	assert.Equal(t, int64(5), run.Delivered)
	assert.Zero(t, run.Rejected)
	assert.Equal(t, int64(15), run.DeadLetteredBy["max_attempts"])

	// The tokens refill at the rate: uniform arrivals at 20/s for 10 s
	// get 5 + 10 * 10 tokens (give or take one at the end).
	sc = model(t, 0, 100*time.Millisecond, 200)
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 10 * time.Second}
	sc.Server.RateLimit = &scenarios.RateLimit{Rate: 10, Burst: 5, Format: "seconds"}
	run = run1(t, sc)
	assert.InDelta(t, 105, run.Delivered, 1)
	assert.Equal(t, int64(200), run.Delivered+run.Throttled)
}

func TestModelRetryAfterModes(t *testing.T) {
	// One token a second, burst 1: of two requests at 0 the second is
	// throttled with Retry-After 3 s. Buckets are 100 ms wide.
	tests := []struct {
		mode    string
		backoff time.Duration
		next    int // bucket of the throttled request's second attempt
	}{
		{"honor", time.Second, 30},
		{"ignore", time.Second, 10},
		{"max", time.Second, 30},
		{"max", 5 * time.Second, 50},
		{"honor", 5 * time.Second, 30},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/backoff=%s", tt.mode, tt.backoff), func(t *testing.T) {
			sc := model(t, 0, 100*time.Millisecond, 2)
			sc.Duration = 10 * time.Second
			sc.Bucket = 100 * time.Millisecond
			sc.Server.RateLimit = &scenarios.RateLimit{Rate: 1, Burst: 1, RetryAfter: scenarios.AutoDuration(3 * time.Second), Format: "seconds"}
			fixed(sc, tt.backoff, 2)
			sc.Strategies[0].RetryAfter.Mode = tt.mode
			run := run1(t, sc)
			assert.Equal(t, map[int]int64{0: 2, tt.next: 1}, nonzero(run, attempts))
			assert.Equal(t, int64(1), run.Throttled)
			assert.Equal(t, int64(2), run.Delivered)
		})
	}
}

func TestModelRetryAfterAuto(t *testing.T) {
	// auto: the hint is the time until a token is free, rounded up to
	// whole seconds. Rate 0.5/s, burst 1, buckets of 100 ms.
	tests := []struct {
		name   string
		second time.Duration // when the second request arrives
		format string
		next   int // bucket of its retry
	}{
		// At 0 the bucket is empty: a token in 2 s; hint 2 s.
		{"empty bucket", 0, "seconds", 20},
		// At 0.5 s a quarter token is there: a token in 1.5 s; hint 2 s.
		{"quarter token", 500 * time.Millisecond, "seconds", 25},
		// At 0.9 s: 0.45 token, a token in 1.1 s; hint 2 s.
		{"0.45 token", 900 * time.Millisecond, "seconds", 29},
		// An HTTP date at 0 names 2 s: the same.
		{"http-date whole second", 0, "http-date", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := model(t, 0, 100*time.Millisecond, 2)
			sc.Duration = 10 * time.Second
			sc.Bucket = 100 * time.Millisecond
			if tt.second > 0 {
				sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 2 * tt.second}
			}
			sc.Server.RateLimit = &scenarios.RateLimit{Rate: 0.5, Burst: 1, Format: tt.format}
			fixed(sc, 7*time.Second, 2)
			run := run1(t, sc)
			first := int(tt.second / sc.Bucket)
			want := map[int]int64{0: 1, first: 1, tt.next: 1}
			if first == 0 {
				want[0] = 2
			}
			assert.Equal(t, want, nonzero(run, attempts))
			assert.Equal(t, int64(1), run.Throttled)
			assert.Equal(t, int64(2), run.Delivered, "the hint waits long enough for a token")
		})
	}
}

func TestModelRetryAfterHintTable(t *testing.T) {
	// The hint the server sends, by the state of its token bucket: auto
	// is ceil((1 - tokens) / rate); a fixed retry_after is rounded up too.
	tests := []struct {
		rate   float64
		fixed  time.Duration
		tokens float64
		want   time.Duration
	}{
		{1, 0, 0, time.Second},
		{0.5, 0, 0, 2 * time.Second},
		{0.5, 0, 0.75, time.Second},
		{0.25, 0, 0.5, 2 * time.Second},
		{0.25, 0, 0.25, 3 * time.Second},
		{10, 0, 0, time.Second},
		{0.1, 0, 0, 10 * time.Second},
		{1, 3 * time.Second, 0.5, 3 * time.Second},
		{1, 2500 * time.Millisecond, 0, 3 * time.Second},
	}
	for _, tt := range tests {
		sc := model(t, 0, 100*time.Millisecond, 1)
		sc.Server.RateLimit = &scenarios.RateLimit{Rate: tt.rate, Burst: 1, RetryAfter: scenarios.AutoDuration(tt.fixed), Format: "seconds"}
		require.NoError(t, sc.Validate())
		s := &newRun(sc, 0, 0, 1).services[0]
		s.replicas[0].tokens = tt.tokens
		got := time.Duration(s.hint(0, 0)-1) * time.Second
		assert.Equal(t, tt.want, got, "rate %v, retry_after %s, tokens %v", tt.rate, tt.fixed, tt.tokens)
	}
}

func TestModelHintSecondsMatchesTheHeader(t *testing.T) {
	// The simulator's hint must be what a sender parses from the header the server
	// writes: ParseRetryAfter(FormatRetryAfter(wait, format, date), date)
	// with date = epoch + now.
	waits := []time.Duration{0, 1, 300 * time.Millisecond, 999 * time.Millisecond, time.Second,
		time.Second + 1, 1500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 59*time.Second + 1, time.Hour}
	nows := []time.Duration{0, 1, 250 * time.Millisecond, 500 * time.Millisecond, 999999999, time.Second,
		1500 * time.Millisecond, 7*time.Second + 100*time.Millisecond, 90 * time.Minute, 36*time.Hour + 1}
	for _, format := range []strategies.RetryAfterFormat{strategies.RetryAfterSeconds, strategies.RetryAfterHTTPDate} {
		t.Run(format.String(), func(t *testing.T) {
			var bad []string
			for _, wait := range waits {
				for _, now := range nows {
					date := epoch.Add(now)
					header := strategies.FormatRetryAfter(wait, format, date)
					parsed, ok := strategies.ParseRetryAfter(header, date)
					require.True(t, ok, "header %q", header)
					got := retryAfterWait(retryAfterHeader(wait, format, now), format, now)
					if got != parsed {
						bad = append(bad, fmt.Sprintf("wait %s at now %s: header %q parses to %s, the simulator gives %s", wait, now, header, parsed, got))
					}
				}
			}
			if len(bad) > 0 {
				t.Errorf("%d of %d (wait, now) pairs differ, such as:\n%s", len(bad), len(waits)*len(nows), strings.Join(bad[:min(len(bad), 6)], "\n"))
			}
		})
	}
}

func TestModelRetryAfterHTTPDateAtSubSecondNow(t *testing.T) {
	// End to end: rate 0.5/s, burst 1, auto hint in http-date. The second
	// request arrives at 0.5 s with a quarter token: a token is free at
	// 2.0 s, and the header names 2.0 s (00:00:02). A sender reading it
	// waits until 2.0 s, 1.5 s later, and gets the token then.
	sc := model(t, 0, 100*time.Millisecond, 2)
	sc.Duration = 10 * time.Second
	sc.Bucket = 100 * time.Millisecond
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: time.Second}
	sc.Server.RateLimit = &scenarios.RateLimit{Rate: 0.5, Burst: 1, Format: "http-date"}
	fixed(sc, 7*time.Second, 2)
	run := run1(t, sc)
	assert.Equal(t, map[int]int64{0: 1, 5: 1, 20: 1}, nonzero(run, attempts), "retry at the header's date, 2.0 s")
	assert.Equal(t, int64(2), run.Delivered)
}

// ---- 6. Slowdown ----

func TestModelSlowdown(t *testing.T) {
	// Base 100 ms, +10 ms per request in service.
	t.Run("unlimited", func(t *testing.T) {
		// A burst of 5 starts at once: with 0, 1, 2, 3, 4 others in
		// service they take 100, 110, 120, 130, 140 ms.
		sc := model(t, 0, 100*time.Millisecond, 5)
		sc.Server.Slowdown = 10 * time.Millisecond
		run := run1(t, sc)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 140*time.Millisecond, *run.Completion)
		assert.InDelta(t, 0.6, run.LatencySum, 1e-9, "0.1 + 0.11 + 0.12 + 0.13 + 0.14")
	})
	t.Run("two slots", func(t *testing.T) {
		// Two slots: r0 0-100 ms, r1 0-110 ms (one in service), r2 starts
		// at 100 ms with one in service: 110 ms, to 210; r3 at 110 ms: to
		// 220; r4 at 210 ms: to 320.
		sc := model(t, 2, 100*time.Millisecond, 5)
		sc.Server.Slowdown = 10 * time.Millisecond
		run := run1(t, sc)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 320*time.Millisecond, *run.Completion)
		assert.InDelta(t, 0.1+0.11+0.21+0.22+0.32, run.LatencySum, 1e-9)
	})
	t.Run("none", func(t *testing.T) {
		sc := model(t, 0, 100*time.Millisecond, 5)
		run := run1(t, sc)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 100*time.Millisecond, *run.Completion)
	})
}

// ---- 7. drop_expired ----

func TestModelDropExpired(t *testing.T) {
	// One slot, 1 s service, 2.5 s timeout, a burst of 10, no retries:
	// r0 and r1 are answered at 1 s and 2 s; r2 is in service (2-3 s)
	// when the eight others' senders give up at 2.5 s.
	build := func(drop bool) *results.Run {
		sc := model(t, 1, time.Second, 10)
		sc.Strategies[0].Timeout = 2500 * time.Millisecond
		sc.Server.DropExpired = drop
		return run1(t, sc)
	}
	keep, drop := build(false), build(true)
	for _, run := range []*results.Run{keep, drop} {
		assert.Equal(t, int64(2), run.Delivered)
		assert.Equal(t, int64(8), run.TimedOut)
		assert.Equal(t, map[int]int64{2: 8}, nonzero(run, timedOut))
	}
	// Kept: all ten are served, eight to no one, until 10 s.
	assert.Equal(t, int64(10), keep.Processed)
	assert.Equal(t, int64(8), keep.Wasted)
	assert.Equal(t, int64(1), keep.Series[8].InFlight, "still serving the abandoned at 9 s")
	// Dropped: only r2, already in service at 2.5 s, is wasted; the seven
	// still queued are skipped.
	assert.Equal(t, int64(3), drop.Processed)
	assert.Equal(t, int64(1), drop.Wasted)
	assert.Zero(t, drop.Series[3].InFlight, "nothing left to serve at 4 s")
}

func TestModelDropExpiredSkipsStaleAttempts(t *testing.T) {
	// Retries leave stale copies in the queue: one slot, 1 s service,
	// timeout 1.5 s, retry after 0.5 s, 3 attempts, a burst of 4.
	build := func(drop bool) *results.Run {
		sc := model(t, 1, time.Second, 4)
		fixed(sc, 500*time.Millisecond, 3)
		sc.Strategies[0].Timeout = 1500 * time.Millisecond
		sc.Server.DropExpired = drop
		return run1(t, sc)
	}
	// Kept: the server works through the stale copies while the
	// retries time out behind them; only r0 is answered in time.
	keep := build(false)
	assert.Equal(t, int64(10), keep.Processed)
	assert.Equal(t, int64(9), keep.Wasted)
	assert.Equal(t, int64(1), keep.Delivered)
	// Dropped: r0 0-1 s (delivered); r1's first attempt 1-2 s (its
	// sender gave up at 1.5 s: wasted); the stale first attempts of r2
	// and r3 are skipped, so r1's retry is served at once 2-3 s
	// (delivered); r2's retry 3-4 s (gave up at 3.5: wasted), r3's
	// second skipped; r2's third 4-5 s (delivered); r3's third 5-6 s
	// (gave up at 5.5 s: wasted, dead-lettered). 6 processed, 3 wasted.
	drop := build(true)
	assert.Equal(t, int64(6), drop.Processed)
	assert.Equal(t, int64(3), drop.Wasted)
	assert.Equal(t, int64(3), drop.Delivered)
	assert.Equal(t, map[string]int64{"max_attempts": 1}, drop.DeadLetteredBy)
	assert.Equal(t, map[int]int64{1: 1, 3: 1, 5: 1}, nonzero(drop, delivered))
}

// ---- 8. Response loss and idempotency ----

func TestModelResponseLoss(t *testing.T) {
	const (
		n        = 10_000
		p        = 0.3
		attempts = 5
	)
	build := func(idempotent bool) *results.Run {
		sc := model(t, 0, 10*time.Millisecond, n)
		sc.Server.ResponseLoss = p
		sc.Server.Idempotency = idempotent
		fixed(sc, 100*time.Millisecond, attempts)
		return run1(t, sc)
	}

	t.Run("without idempotency", func(t *testing.T) {
		run := build(false)
		// Every attempt is processed and its answer lost with chance p:
		// a request makes A = min(G, 5) attempts, G geometric, so it is
		// processed A - 1 extra times: E = p + p^2 + p^3 + p^4.
		var mean, sq float64
		for k := 1; k < attempts; k++ {
			pk := math.Pow(p, float64(k)) // P(A - 1 >= k)
			mean += pk
			sq += float64(2*k-1) * pk
		}
		sd := math.Sqrt((sq - mean*mean) * n)
		assert.InDelta(t, n*mean, float64(run.Duplicates), 4*sd, "duplicates: %d, expected %.0f ± %.0f", run.Duplicates, n*mean, sd)
		assert.Equal(t, run.Processed-n, run.Duplicates, "processings beyond the first")
		assert.Equal(t, run.Attempts, run.Processed)
		assert.Equal(t, run.Processed, run.Delivered+run.Lost, "each processing is delivered or lost")
		assert.Equal(t, run.Lost, sumBuckets(run, 0, len(run.Series), failed), "a reset is a failure")
		dead := n * math.Pow(p, attempts)
		assert.InDelta(t, dead, float64(run.DeadLettered), 4*math.Sqrt(dead)+1, "lost five times")
		assert.Equal(t, run.DeadLettered, run.DeadLetteredBy["max_attempts"])
		assert.Zero(t, run.Wasted, "the sender waited for every answer")
	})
	t.Run("with idempotency", func(t *testing.T) {
		run := build(true)
		// Repeats are answered from the cache: one processing each, every
		// request delivered, and an answer lost only the first time.
		assert.Zero(t, run.Duplicates)
		assert.Equal(t, int64(n), run.Processed)
		assert.Equal(t, int64(n), run.Delivered)
		assert.Zero(t, run.DeadLettered)
		assert.Equal(t, n+run.Lost, run.Attempts, "one repeat per lost answer")
		assert.InDelta(t, n*p, float64(run.Lost), 4*math.Sqrt(n*p*(1-p)))
	})
}

func TestModelIdempotencyAnswersRepeatsFromTheCache(t *testing.T) {
	// Every answer of a processing is lost (response_loss 1), so each
	// request's first attempt is processed and reset. One slot, 1 s
	// service, retry after 100 ms, three requests.
	build := func(idempotent bool) *results.Run {
		sc := model(t, 1, time.Second, 3)
		sc.Server.ResponseLoss = 1
		sc.Server.Idempotency = idempotent
		fixed(sc, 100*time.Millisecond, 3)
		return run1(t, sc)
	}
	t.Run("with", func(t *testing.T) {
		// r0 is processed 0-1 s, its repeat at 1.1 s is answered from the
		// cache at once, though the slot is busy with r1 (1-2 s); r1's
		// repeat at 2.1 s, r2's (2-3 s) at 3.1 s.
		run := build(true)
		assert.Equal(t, int64(3), run.Delivered)
		assert.Equal(t, int64(3), run.Processed)
		assert.Equal(t, int64(3), run.Lost)
		assert.Equal(t, int64(6), run.Attempts)
		assert.Zero(t, run.Duplicates)
		assert.Equal(t, map[int]int64{1: 1, 2: 1, 3: 1}, nonzero(run, delivered))
		require.NotNil(t, run.Completion)
		assert.Equal(t, 3100*time.Millisecond, *run.Completion)
	})
	t.Run("without", func(t *testing.T) {
		// Every attempt is processed and lost: three processings each,
		// two of them duplicates, and all dead-lettered.
		run := build(false)
		assert.Zero(t, run.Delivered)
		assert.Equal(t, int64(9), run.Processed)
		assert.Equal(t, int64(6), run.Duplicates)
		assert.Equal(t, int64(9), run.Lost)
		assert.Equal(t, map[string]int64{"max_attempts": 3}, run.DeadLetteredBy)
	})
}

// ---- 9. Network latency ----

func TestModelNetworkLatencyPerHop(t *testing.T) {
	lat := scenarios.Dist{Kind: scenarios.Constant, Mean: 50 * time.Millisecond}
	t.Run("served", func(t *testing.T) {
		// 2L + s: 50 + 100 + 50 ms.
		sc := model(t, 0, 100*time.Millisecond, 1)
		sc.Network.Latency = &lat
		run := run1(t, sc)
		require.Equal(t, int64(1), run.Delivered)
		assert.InDelta(t, 0.2, run.LatencySum, 1e-12)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 200*time.Millisecond, *run.Completion)
	})
	t.Run("refused then served", func(t *testing.T) {
		// Refused at 50 ms, told at 100 ms, retried at 1.1 s, at the
		// server at 1.15 s (back up), served to 1.25 s, answered at 1.3 s.
		sc := model(t, 0, 100*time.Millisecond, 1)
		sc.Network.Latency = &lat
		sc.Bucket = 50 * time.Millisecond
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Second, Mode: scenarios.Refuse}}
		fixed(sc, time.Second, 2)
		run := run1(t, sc)
		require.Equal(t, int64(1), run.Delivered)
		assert.Equal(t, map[int]int64{1: 1, 23: 1}, nonzero(run, attempts), "attempts reach the server at 50 ms and 1.15 s")
		assert.Equal(t, map[int]int64{2: 1}, nonzero(run, failed), "the refusal is seen at 100 ms")
		assert.InDelta(t, 1.3, run.LatencySum, 1e-12)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 1300*time.Millisecond, *run.Completion)
	})
}

func TestModelAnswerAtTheDeadline(t *testing.T) {
	// An answer that reaches the sender exactly at its timeout counts:
	// response() drops only answers later than sentAt + timeout, and
	// atServer schedules no timeout for work done by then. The three
	// paths must agree.
	lat := scenarios.Dist{Kind: scenarios.Constant, Mean: 50 * time.Millisecond}
	tests := []struct {
		name    string
		slots   int
		service time.Duration
		timeout time.Duration
		latency *scenarios.Dist
	}{
		// Two requests, two slots: both answered at 1 s, the timeout.
		{"served at once", 2, time.Second, time.Second, nil},
		// Two requests, one slot: r1 waits, is served 1-2 s, answered
		// at 2 s, its timeout.
		{"queued", 1, time.Second, 2 * time.Second, nil},
		// 50 ms each way, 900 ms service: answered at 1 s, the timeout.
		{"network latency", 2, 900 * time.Millisecond, time.Second, &lat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := model(t, tt.slots, tt.service, 2)
			sc.Strategies[0].Timeout = tt.timeout
			sc.Network.Latency = tt.latency
			run := run1(t, sc)
			assert.Equal(t, int64(2), run.Delivered, "answered at the deadline")
			assert.Zero(t, run.TimedOut)
			assert.Zero(t, run.Wasted)
		})
	}
}

// ---- 10. Workload ----

func TestModelWorkloadBurst(t *testing.T) {
	sc := model(t, 0, 100*time.Millisecond, 100)
	sc.Workload.Arrival.At = 5 * time.Second
	run := run1(t, sc)
	assert.Equal(t, map[int]int64{5: 100}, nonzero(run, attempts))
	assert.Equal(t, int64(100), run.Requests)
	assert.InDelta(t, 100*0.1, run.LatencySum, 1e-9, "every request created at 5 s, done at 5.1 s")
}

func TestModelWorkloadUniform(t *testing.T) {
	// 100 requests spread evenly over [10 s, 20 s): 10 a second, the last
	// at 19.9 s.
	sc := model(t, 0, 100*time.Millisecond, 100)
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, From: 10 * time.Second, Until: 20 * time.Second}
	run := run1(t, sc)
	assert.Equal(t, every(10, 20, 1, 10), nonzero(run, attempts))
	require.NotNil(t, run.Completion)
	assert.Equal(t, 20*time.Second, *run.Completion)

	// Finer: 7 requests over [0, 7 s) in 1 s buckets: one each.
	sc = model(t, 0, 100*time.Millisecond, 7)
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 7 * time.Second}
	run = run1(t, sc)
	assert.Equal(t, every(0, 7, 1, 1), nonzero(run, attempts))
}

func TestModelWorkloadPoissonSchedule(t *testing.T) {
	// 40/s from 0 to 40 s, 80/s from 20 s to 25 s.
	sc := model(t, 0, 10*time.Millisecond, 0)
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 40, Until: 40 * time.Second,
		Schedule: []scenarios.RateStep{{From: 20 * time.Second, Until: 25 * time.Second, Rate: 80}}}
	run := run1(t, sc)
	rate := func(i int) float64 {
		switch {
		case i >= 20 && i < 25:
			return 80
		case i < 40:
			return 40
		}
		return 0
	}
	windows := []struct{ from, to int }{{0, 20}, {20, 25}, {25, 40}, {40, 60}}
	for _, w := range windows {
		var want float64
		for i := w.from; i < w.to; i++ {
			want += rate(i)
		}
		got := float64(sumBuckets(run, w.from, w.to, attempts))
		assert.InDelta(t, want, got, 4*math.Sqrt(want), "arrivals in [%ds, %ds)", w.from, w.to)
	}
	// Goodness of fit per bucket: chi-square over the 40 busy buckets.
	var chi2 float64
	for i := range 40 {
		d := float64(run.Series[i].Attempts) - rate(i)
		chi2 += d * d / rate(i)
	}
	limit := distuv.ChiSquared{K: 40}.Quantile(0.999)
	assert.Less(t, chi2, limit, "chi-square of arrivals per second")
	assert.Equal(t, run.Requests, run.Attempts)
	t.Logf("%d arrivals, chi-square %.1f (limit %.1f)", run.Requests, chi2, limit)
}

func TestModelWorkloadPoissonCap(t *testing.T) {
	sc := model(t, 0, 10*time.Millisecond, 50)
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 100}
	run := run1(t, sc)
	assert.Equal(t, int64(50), run.Requests)
	assert.Equal(t, int64(50), run.Attempts)
	// 50 arrivals at 100/s take about half a second; none after 3 s.
	assert.Zero(t, sumBuckets(run, 3, len(run.Series), attempts))
}

// ---- 11. Senders and dispatcher ----

func TestModelDispatcherBoundsAttemptsInFlight(t *testing.T) {
	// 2 senders with 3 workers each, 1 s service, unlimited server: 6
	// attempts a second, 60 requests done at 10 s.
	sc := model(t, 0, time.Second, 60)
	sc.Workload.Senders, sc.Workload.Workers = 2, 3
	run := run1(t, sc)
	assert.Equal(t, every(0, 10, 1, 6), nonzero(run, attempts))
	assert.Equal(t, every(1, 11, 1, 6), nonzero(run, delivered))
	for i, b := range run.Series {
		want := int64(0)
		if i < 10 {
			want = 6
		}
		require.Equal(t, want, b.InFlight, "in service at %ds", i+1)
	}
	require.NotNil(t, run.Completion)
	assert.Equal(t, 10*time.Second, *run.Completion)

	// Without a dispatcher all 60 go at once.
	sc.Workload.Workers = 0
	run = run1(t, sc)
	assert.Equal(t, map[int]int64{0: 60}, nonzero(run, attempts))
}

func TestModelDispatcherBackoffHoldsNoWorker(t *testing.T) {
	// One sender, one worker, 5 requests, a server that refuses, retry
	// after 10 s: a refused request frees its worker while it waits, so
	// all five try at 0 and again at 10 s.
	sc := model(t, 0, 100*time.Millisecond, 5)
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.Refuse}}
	sc.Workload.Senders, sc.Workload.Workers = 1, 1
	fixed(sc, 10*time.Second, 2)
	run := run1(t, sc)
	assert.Equal(t, map[int]int64{0: 5, 10: 5}, nonzero(run, attempts))

	// An attempt in flight does hold its worker: with no answer (timeout
	// outage, 2 s timeout) the five go one after another.
	sc.Server.Outages[0].Mode = scenarios.TimeoutMode
	sc.Strategies[0].Timeout = 2 * time.Second
	fixed(sc, 100*time.Second, 1)
	run = run1(t, sc)
	assert.Equal(t, every(0, 10, 2, 1), nonzero(run, attempts))
	assert.Equal(t, int64(5), run.TimedOut)
}

func TestModelBlockingDispatcherSleepsThroughBackoff(t *testing.T) {
	// The same five refused requests through a blocking dispatcher: the
	// worker sleeps through each request's 10 s backoff, so one request
	// makes both its attempts (0 s and 10 s) before the next may start.
	sc := model(t, 0, 100*time.Millisecond, 5)
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.Refuse}}
	sc.Workload.Senders, sc.Workload.Workers = 1, 1
	sc.Workload.Dispatch = scenarios.DispatchBlocking
	sc.Duration = 2 * time.Minute
	fixed(sc, 10*time.Second, 2)
	run := run1(t, sc)
	assert.Equal(t, map[int]int64{0: 1, 10: 2, 20: 2, 30: 2, 40: 2, 50: 1}, nonzero(run, attempts))
	assert.Equal(t, int64(5), run.DeadLettered)

	// Delivered requests free the worker too: with the server up, the
	// five go through one after another in 0.5 s.
	sc.Server.Outages = nil
	run = run1(t, sc)
	assert.Equal(t, int64(5), run.Delivered)
	require.NotNil(t, run.Completion)
	assert.Equal(t, 500*time.Millisecond, *run.Completion)
}

// ---- 12. Breaker ----

func TestModelBreakerShortCircuits(t *testing.T) {
	// One sender, one request, a destination down for good, retry every
	// second. Five refusals (0-4 s) trip the breaker for 60 s: the tries
	// at 5..63 s are short-circuited, the one at 64 s is a canary,
	// refused, which opens it again until 124 s, and so on.
	sc := model(t, 0, 100*time.Millisecond, 1)
	sc.Duration = 200 * time.Second
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.Refuse}}
	sc.Workload.Senders = 1
	fixed(sc, time.Second, 10)
	sc.Strategies[0].Breaker = &scenarios.Breaker{Consecutive: 5, OpenFor: time.Minute, MinCalls: 10, Canaries: 1}
	run := run1(t, sc)

	want := every(0, 5, 1, 1)
	for _, at := range []int{64, 124, 184} {
		want[at] = 1
	}
	assert.Equal(t, want, nonzero(run, attempts), "attempts: five, then canaries 60 s apart")
	assert.Equal(t, int64(8), run.Attempts)
	sc2 := nonzero(run, func(b results.Bucket) int64 { return b.ShortCircuited })
	assert.Len(t, sc2, 200-8)
	assert.Equal(t, int64(200-8), run.ShortCircuited, "every other second a short-circuit")
	for at := range want {
		assert.NotContains(t, sc2, at)
	}
	// Short-circuits are not attempts: 8 of the 10 allowed were made, so
	// the request is still waiting, not dead-lettered.
	assert.Equal(t, int64(1), run.Unfinished)
	assert.Zero(t, run.DeadLettered)
}

func TestModelBreakerIsPerSender(t *testing.T) {
	// Ten requests through one sender: once its breaker trips, every
	// request of that sender is short-circuited. With ten senders (one
	// request each) each breaker sees one failure a second and never
	// trips before its request runs out of attempts.
	build := func(senders int) *results.Run {
		sc := model(t, 0, 100*time.Millisecond, 10)
		sc.Duration = 30 * time.Second
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.Refuse}}
		sc.Workload.Senders = senders
		fixed(sc, time.Second, 4)
		sc.Strategies[0].Breaker = &scenarios.Breaker{Consecutive: 5, OpenFor: time.Minute, MinCalls: 10, Canaries: 1}
		return run1(t, sc)
	}
	one, ten := build(1), build(10)
	assert.Equal(t, int64(40), ten.Attempts)
	assert.Zero(t, ten.ShortCircuited)
	// One sender: without latency each refusal comes back before the
	// next request tries, so the fifth trips the breaker and the other
	// five are short-circuited at 0 s; then all ten every second.
	assert.Equal(t, map[int]int64{0: 5}, nonzero(one, attempts))
	assert.Equal(t, int64(5+10*29), one.ShortCircuited)
	assert.Equal(t, int64(5), one.Series[0].ShortCircuited)
}

// ---- 13. Budgets ----

func TestModelBudgets(t *testing.T) {
	// One sender, 100 requests, a server that always answers 503, five
	// attempts each.
	tests := []struct {
		name     string
		budget   *scenarios.Budget
		attempts int64
	}{
		// Without a budget: 500 attempts.
		{"none", nil, 500},
		// Tokens (10, ratio 0.1): a retry is allowed while more than 5
		// tokens are left; the first four failures leave 9, 8, 7, 6,
		// then none is allowed. 100 + 4 attempts.
		{"tokens", &scenarios.Budget{Kind: "tokens", MaxTokens: 10, TokenRatio: 0.1}, 104},
		// Quota of 50 at 5 a retry: 10 retries.
		{"quota", &scenarios.Budget{Kind: "quota", Capacity: 50, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}, 110},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := model(t, 0, 100*time.Millisecond, 100)
			sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.ErrorMode}}
			sc.Workload.Senders = 1
			fixed(sc, time.Second, 5)
			sc.Strategies[0].Budget = tt.budget
			res := simulate(t, sc)
			run := res.Runs[0]
			assert.Equal(t, tt.attempts, run.Attempts)
			assert.Equal(t, int64(100), run.DeadLettered)
			if tt.budget == nil {
				assert.Equal(t, map[string]int64{"max_attempts": 100}, run.DeadLetteredBy)
				return
			}
			assert.Equal(t, map[string]int64{"budget": 100}, run.DeadLetteredBy)
			assert.InDelta(t, float64(tt.attempts)/100, res.Summary.Strategies[0].Amplification, 1e-9)
			assert.Less(t, res.Summary.Strategies[0].Amplification, 1.2, "much lower than 5 without a budget")
		})
	}
}

// ---- 14. DLQ ----

func TestModelDeadLetterReasons(t *testing.T) {
	t.Run("max_attempts", func(t *testing.T) {
		sc := model(t, 0, 100*time.Millisecond, 10)
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.ErrorMode}}
		fixed(sc, time.Second, 3)
		run := run1(t, sc)
		assert.Equal(t, int64(30), run.Attempts)
		assert.Equal(t, map[string]int64{"max_attempts": 10}, run.DeadLetteredBy)
		assert.Equal(t, int64(10), run.DeadLettered)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 2*time.Second, *run.Completion, "given up after the third attempt, at 2 s")
	})
	t.Run("max_elapsed", func(t *testing.T) {
		// Retry every 2 s within 5 s: attempts at 0, 2, 4; a retry at 6
		// would be too late.
		sc := model(t, 0, 100*time.Millisecond, 10)
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.ErrorMode}}
		fixed(sc, 2*time.Second, 0)
		sc.Strategies[0].MaxElapsed = 5 * time.Second
		run := run1(t, sc)
		assert.Equal(t, map[int]int64{0: 10, 2: 10, 4: 10}, nonzero(run, attempts))
		assert.Equal(t, map[string]int64{"max_elapsed": 10}, run.DeadLetteredBy)
		require.NotNil(t, run.Completion)
		assert.Equal(t, 4*time.Second, *run.Completion)
	})
}

func TestModelDLQReplayLosesNothing(t *testing.T) {
	// 100 requests, refused for 30 s, 3 attempts 1 s apart: all are dead
	// letters at 2 s. Replayed at 60 s at 10/s, with the server back up,
	// every one is delivered.
	build := func(replay bool) *results.Run {
		sc := model(t, 0, 100*time.Millisecond, 100)
		sc.Duration = 90 * time.Second
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 30 * time.Second, Mode: scenarios.Refuse}}
		fixed(sc, time.Second, 3)
		if replay {
			sc.DLQ.Replay = &scenarios.Replay{At: 60 * time.Second, Rate: 10}
		}
		return run1(t, sc)
	}
	before, after := build(false), build(true)
	require.Equal(t, int64(100), before.DeadLettered, "dead letters at 60 s")

	assert.Equal(t, before.DeadLettered, after.Replayed)
	assert.Equal(t, after.Requests, after.Delivered)
	assert.Zero(t, after.DeadLettered)
	assert.Zero(t, after.Unfinished)
	want := map[int]int64{0: 100, 1: 100, 2: 100}
	for i := 60; i < 70; i++ {
		want[i] = 10 // paced: 10 a second, 100 ms apart
	}
	assert.Equal(t, want, nonzero(after, attempts))
	require.NotNil(t, after.Completion)
	assert.Equal(t, 70*time.Second, *after.Completion, "the last sent at 69.9 s, served in 100 ms")
}

func TestModelDLQReplayTakesTheQueueAtItsStart(t *testing.T) {
	// Uniform arrivals at 0, 1, ..., 19 s, refused for 30 s, two attempts
	// 1 s apart: request k is a dead letter at k+1 s. The replay at 10.5 s
	// takes the ten dead by then (k = 0..9), at 100/s, with fresh attempt
	// counts: two more attempts each, into the outage, so they are dead
	// letters again. The ten that die later are not replayed.
	sc := model(t, 0, 100*time.Millisecond, 20)
	sc.Duration = 60 * time.Second
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 20 * time.Second}
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 30 * time.Second, Mode: scenarios.Refuse}}
	fixed(sc, time.Second, 2)
	sc.DLQ.Replay = &scenarios.Replay{At: 10500 * time.Millisecond, Rate: 100}
	run := run1(t, sc)
	assert.Equal(t, int64(10), run.Replayed)
	assert.Equal(t, int64(20), run.DeadLettered)
	assert.Equal(t, int64(20*2+10*2), run.Attempts, "a replayed dead letter gets its attempts afresh")
	// In [10 s, 11 s): request 9's second attempt, request 10's first and
	// the ten replayed at 10.5-10.59 s; in [11 s, 12 s) their second.
	assert.Equal(t, int64(12), run.Series[10].Attempts)
	assert.Equal(t, int64(12), run.Series[11].Attempts)
}

// ---- 15. Drain and completion ----

func TestModelDrainAndCompletion(t *testing.T) {
	// Refused until 10 s, retry every 4 s, 100 ms service. Four requests
	// created at 0, 5, 10 and 15 s: tries at 0, 4, 8, 12 (done 12.1);
	// 5, 9, 13 (13.1); 10 (10.1); 15 (15.1). Those existing at 10 s are
	// done at 13.1: drain 3.1 s; all at 15.1 s.
	build := func(horizon time.Duration) *results.Run {
		sc := model(t, 0, 100*time.Millisecond, 4)
		sc.Duration = horizon
		sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Uniform, Until: 20 * time.Second}
		sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 10 * time.Second, Mode: scenarios.Refuse}}
		fixed(sc, 4*time.Second, 0)
		return run1(t, sc)
	}
	run := build(time.Minute)
	require.NotNil(t, run.Completion)
	require.NotNil(t, run.Drain)
	assert.Equal(t, 15100*time.Millisecond, *run.Completion)
	assert.Equal(t, 3100*time.Millisecond, *run.Drain)
	assert.Equal(t, map[int]int64{10: 1, 12: 1, 13: 1, 15: 1}, nonzero(run, delivered))

	// Horizon 15.05 s: the last request is unfinished, so there is no
	// completion time, but the drain is known.
	run = build(15050 * time.Millisecond)
	assert.Equal(t, int64(1), run.Unfinished)
	assert.Nil(t, run.Completion)
	require.NotNil(t, run.Drain)
	assert.Equal(t, 3100*time.Millisecond, *run.Drain)

	// Horizon 13 s: the request created at 5 s is unfinished: neither.
	run = build(13 * time.Second)
	assert.Equal(t, int64(1), run.Unfinished)
	assert.Nil(t, run.Completion)
	assert.Nil(t, run.Drain)
	f := run.Figures(Setup(&scenarios.Scenario{Bucket: time.Second, Server: scenarios.Server{Concurrency: scenarios.Unlimited}}))
	assert.Nil(t, f.CompletionTimeS)
	assert.Nil(t, f.DrainTimeS)
}

func TestModelDrainWithoutOutage(t *testing.T) {
	// No outage: the drain counts from 0 over the requests created at 0.
	sc := model(t, 2, time.Second, 5)
	run := run1(t, sc)
	require.NotNil(t, run.Completion)
	require.NotNil(t, run.Drain)
	assert.Equal(t, 3*time.Second, *run.Completion, "five through two slots of 1 s")
	assert.Equal(t, 3*time.Second, *run.Drain)
}

// TestSamplesNeverOverflow: the tails of the exponential and lognormal
// reach past what a Duration holds; a draw stops at maxSample.
func TestSamplesNeverOverflow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	huge := newSampler(&scenarios.Dist{Kind: scenarios.Lognormal, Mean: scenarios.MaxDuration, StdDev: 20 * scenarios.MaxDuration})
	expo := newSampler(&scenarios.Dist{Kind: scenarios.Exponential, Mean: scenarios.MaxDuration})
	for range 10_000 {
		for _, s := range []sampler{huge, expo} {
			d := s.sample(r)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, maxSample)
		}
	}
	assert.Equal(t, maxSample, clampSample(math.Inf(1)))
	assert.Equal(t, maxSample, clampSample(1e300))
}

func TestMulDiv(t *testing.T) {
	assert.Equal(t, 200*time.Millisecond, mulDiv(20*time.Second, 1, 100))
	assert.Equal(t, 20*time.Second, mulDiv(20*time.Second, 100, 100))
	long := 10 * scenarios.MaxDuration // d * 100 would overflow
	assert.Equal(t, long, mulDiv(long, 100, 100))
	assert.InDelta(t, float64(long)/2, float64(mulDiv(long, 50, 100)), 1e3)
}
