package sim

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// The scenario library: every shipped scenario states in its description
// what it demonstrates. TestScenarioLibrary runs each one and checks that
// claim on its figures, so that a change to the simulator that breaks a
// demonstration fails here, and a new scenario must come with its claim.

// libraryRun is one shipped scenario, run.
type libraryRun struct {
	sc  *scenarios.Scenario
	res *Result
}

// strategy returns the summary of the named strategy.
func (l *libraryRun) strategy(t *testing.T, name string) results.StrategySummary {
	t.Helper()
	for _, s := range l.res.Summary.Strategies {
		if s.Name == name {
			return s
		}
	}
	require.Failf(t, "no such strategy", "%s has no strategy %q", l.sc.Name, name)
	return results.StrategySummary{}
}

// runs returns every run of the named strategy.
func (l *libraryRun) runs(t *testing.T, name string) []*results.Run {
	t.Helper()
	var rs []*results.Run
	for _, r := range l.res.Runs {
		if r.Strategy == name {
			rs = append(rs, r)
		}
	}
	require.NotEmpty(t, rs, "%s has no runs of %q", l.sc.Name, name)
	return rs
}

// bucket returns the index of the bucket holding t.
func (l *libraryRun) bucket(t time.Duration) int { return int(t / l.sc.Bucket) }

// attemptsEvery returns the attempts of run in buckets of width (a
// multiple of the scenario's bucket), by index, leaving out empty ones.
func (l *libraryRun) attemptsEvery(run *results.Run, width time.Duration) map[int]int64 {
	per := int(width / l.sc.Bucket)
	m := map[int]int64{}
	for i, b := range run.Series {
		if b.Attempts != 0 {
			m[i/per] += b.Attempts
		}
	}
	return m
}

// deliveredOver returns the requests delivered in run over the last d of
// the horizon.
func (l *libraryRun) deliveredOver(run *results.Run, d time.Duration) int64 {
	n := len(run.Series)
	return sumBuckets(run, n-l.bucket(d), n, delivered)
}

// latched counts the runs of a strategy in which the server never came
// back: over the last d of the horizon it delivered less than 80% of the
// requests arriving at rate per second. (recovery_time_s is not used:
// it counts buckets whose attempts are still unresolved at the horizon
// as healthy, so a server that stays down "recovers" one timeout before
// the end.)
func (l *libraryRun) latched(t *testing.T, name string, d time.Duration, rate float64) int {
	t.Helper()
	n := 0
	for _, r := range l.runs(t, name) {
		if float64(l.deliveredOver(r, d)) < 0.8*rate*d.Seconds() {
			n++
		}
	}
	return n
}

// libraryRuns lowers the runs of scenarios whose claim holds with fewer,
// to keep the test fast under the race detector; the rest run as shipped.
var libraryRuns = map[string]int{
	"fixed-delay.yaml":               3,
	"jitter.yaml":                    2,
	"dispatcher.yaml":                2,
	"asymmetric-partition.yaml":      1,
	"asymmetric-partition-keys.yaml": 1,
	"metastable.yaml":                4,
}

// libraryShortRuns lowers them further with -short.
var libraryShortRuns = map[string]int{
	"metastable.yaml":       2,
	"load-spike-latch.yaml": 10,
}

// libraryChecks holds, per shipped file, the check of the claim its
// description makes. Every assertion message names the claim.
var libraryChecks = map[string]func(t *testing.T, l *libraryRun){
	"thundering-herd.yaml":           checkThunderingHerd,
	"capped-exponential.yaml":        checkCappedExponential,
	"fixed-delay.yaml":               checkFixedDelay,
	"jitter.yaml":                    checkJitter,
	"dispatcher.yaml":                checkDispatcher,
	"asymmetric-partition.yaml":      checkAsymmetricPartition,
	"asymmetric-partition-keys.yaml": checkAsymmetricPartitionKeys,
	"circuit-breaker.yaml":           checkCircuitBreaker,
	"retry-after.yaml":               checkRetryAfter,
	"retry-after-http-date.yaml":     checkRetryAfterHTTPDate,
	"dlq-replay.yaml":                checkDLQReplay,
	"dispatcher-blocking.yaml":       checkDispatcherBlocking,
	"real-mode.yaml":                 checkRealMode,
	"metastable.yaml":                checkMetastable,
	"load-spike-latch.yaml":          checkLoadSpikeLatch,
	"flaky-dependency-0.1pct.yaml":   checkFlakyDependency,
	"flaky-dependency-10pct.yaml":    checkFlakyDependency,
	"flaky-dependency-50pct.yaml":    checkFlakyDependency,
	"flaky-dependency-75pct.yaml":    checkFlakyDependency,
}

func TestScenarioLibrary(t *testing.T) {
	// Each scenario's runs are simulations, one goroutine each, whose
	// worker pool the detector checks in the many other tests that call
	// Run; it would slow these sevenfold, for nothing to find (they were
	// most of the sim package's 324 s under it, on 2 cores).
	skipUnderRace(t)
	files, err := filepath.Glob("../scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		base := filepath.Base(file)
		if base == "million.yaml" || base == "million-chain.yaml" || strings.HasPrefix(base, "aws-occ-") {
			continue // too big for a test; tested in occ_test.go
		}
		t.Run(strings.TrimSuffix(base, ".yaml"), func(t *testing.T) {
			t.Parallel()
			check, ok := libraryChecks[base]
			require.True(t, ok, "%s has no check in libraryChecks: a shipped scenario must state its claim and be checked", base)
			sc, err := scenarios.Load(file)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimSuffix(base, ".yaml"), sc.Name, "a scenario is named after its file")
			assert.NotEmpty(t, strings.TrimSpace(sc.Description), "a scenario says what it demonstrates")
			if n, ok := libraryRuns[base]; ok && n < sc.Runs {
				sc.Runs = n
			}
			if n, ok := libraryShortRuns[base]; ok && testing.Short() && n < sc.Runs {
				sc.Runs = n
			}
			res, err := Run(context.Background(), sc, Options{})
			require.NoError(t, err)
			check(t, &libraryRun{sc: sc, res: res})
		})
	}
	for base := range libraryChecks {
		assert.FileExists(t, "../scenarios/"+base, "libraryChecks names a scenario that is not shipped")
	}
}

// ---- the article ----

func checkThunderingHerd(t *testing.T, l *libraryRun) {
	for _, name := range []string{"fixed-60s", "exponential"} {
		s := l.strategy(t, name)
		require.NotNil(t, s.PeakLoadRatio)
		assert.Greater(t, *s.PeakLoadRatio, 10.0, "%s: synchronized retries land as a herd of more than 10x capacity on the recovered gateway", name)
		assert.Less(t, s.DeliveredRatio, 0.6, "%s: the herd knocks the gateway over again and many webhooks are lost", name)
	}
	fj := l.strategy(t, "full-jitter")
	require.NotNil(t, fj.PeakLoadRatio)
	assert.Less(t, *fj.PeakLoadRatio, 1.5, "full-jitter: spread retries stay near the gateway's capacity")
	assert.Greater(t, fj.DeliveredRatio, 0.99, "full-jitter: nearly every webhook is delivered")
}

func checkCappedExponential(t *testing.T, l *libraryRun) {
	const n = 1000
	timeline := func(secs ...int) map[int]int64 {
		m := map[int]int64{}
		for _, s := range secs {
			m[s] = n
		}
		return m
	}
	capped := []int{0, 1, 3, 7, 15, 31, 63, 123, 183, 243}
	for _, c := range []struct {
		name     string
		attempts int
	}{{"capped-8-attempts", 8}, {"capped-10-attempts", 10}} {
		run := l.runs(t, c.name)[0]
		assert.Equal(t, timeline(capped[:c.attempts]...), l.attemptsEvery(run, time.Second),
			"%s: the whole fleet retries after 1, 2, 4, ... 32 s, then every 60 s (the cap)", c.name)
		s := l.strategy(t, c.name)
		assert.Equal(t, float64(n), s.DeadLetteredBy["max_attempts"], "%s: every request is dead-lettered after %d attempts", c.name, c.attempts)
		require.NotNil(t, s.CompletionTimeS)
		assert.Equal(t, float64(capped[c.attempts-1]), *s.CompletionTimeS, "%s: requests give up at their last attempt, long before the 10 min outage ends", c.name)
	}

	c20 := l.strategy(t, "capped-20-attempts")
	want := slices.Clone(capped[:8])
	for s := 183; s <= 603; s += 60 {
		want = append(want, s)
	}
	assert.Equal(t, timeline(want...), l.attemptsEvery(l.runs(t, "capped-20-attempts")[0], time.Second),
		"capped-20-attempts: once capped, the fleet probes once a minute until the attempt at 603 s succeeds")
	assert.Equal(t, float64(n), c20.Delivered, "capped-20-attempts: everything is delivered")
	assert.InDelta(t, 603.5, c20.LatencyS.P50, 1, "capped-20-attempts: delivered 3 s after the endpoint returns")

	un := l.strategy(t, "uncapped-20-attempts")
	var powers []int
	for k := 1; k <= 1024; k *= 2 {
		powers = append(powers, k-1)
	}
	assert.Equal(t, timeline(powers...), l.attemptsEvery(l.runs(t, "uncapped-20-attempts")[0], time.Second),
		"uncapped-20-attempts: attempts at 2^k - 1 s, the waits doubling without a cap")
	assert.Equal(t, float64(n), un.Delivered, "uncapped-20-attempts: everything is delivered in the end")
	assert.InDelta(t, 1023.5, un.LatencyS.P50, 1, "uncapped-20-attempts: but only at 1,023 s")
	assert.Greater(t, un.LatencyS.P50-c20.LatencyS.P50, 400.0, "the cap delivers seven minutes sooner after the endpoint returns")
}

func checkFixedDelay(t *testing.T, l *libraryRun) {
	const n = 800
	first := l.bucket(time.Minute)
	for _, run := range l.runs(t, "fixed-5s") {
		s := run.Series
		assert.Equal(t, int64(n), s[0].Attempts, "fixed-5s: all 800 dispatchers fail at once")
		assert.Equal(t, int64(n), s[5].Attempts, "fixed-5s: all 800 hammer the database again at exactly 5 s")
		for i := 1; i < first; i++ {
			if i%5 != 0 {
				assert.Zero(t, s[i].Attempts, "fixed-5s: nothing between the waves (t = %d s): the spike moves forward intact", i)
			} else if i <= 20 {
				assert.Greater(t, s[i].Attempts, int64(n/2), "fixed-5s: the wave at %d s is still most of the fleet", i)
			}
		}
	}
	fixed := l.strategy(t, "fixed-5s")
	require.NotNil(t, fixed.PeakLoadRatio)
	assert.GreaterOrEqual(t, *fixed.PeakLoadRatio, 1.9, "fixed-5s: the wave is twice what the database can serve")
	assert.Positive(t, fixed.DeadLettered, "fixed-5s: the waves exhaust the attempts of some dispatchers")
	for _, name := range []string{"jittered-0-5s", "full-jitter"} {
		s := l.strategy(t, name)
		assert.Less(t, s.PeakLoad, 0.6*fixed.PeakLoad, "%s: jitter spreads the spike", name)
		assert.Equal(t, 1.0, s.DeliveredRatio, "%s: every request is delivered", name)
	}
}

func checkJitter(t *testing.T, l *libraryRun) {
	const n = 10000
	second := l.bucket(time.Second)
	half := l.bucket(500 * time.Millisecond)
	expo := l.strategy(t, "exponential")
	for _, run := range l.runs(t, "exponential") {
		assert.Zero(t, sumBuckets(run, 1, second, attempts), "exponential: no retry before 1 s")
		assert.Equal(t, int64(n), run.Series[second].Attempts, "exponential: the whole fleet retries in the same 100 ms at 1 s")
	}
	require.NotNil(t, expo.PeakLoadRatio)
	assert.Greater(t, *expo.PeakLoadRatio, 50.0, "exponential: the lockstep herd is far above capacity after the outage")
	for _, run := range l.runs(t, "full-jitter") {
		assert.Greater(t, sumBuckets(run, 1, half, attempts), int64(n/4), "full-jitter: many retries come within the first 500 ms (tiny waits)")
	}
	for _, run := range l.runs(t, "equal-jitter") {
		assert.Zero(t, sumBuckets(run, 1, half, attempts), "equal-jitter: no retry before half the backoff (500 ms)")
		assert.Equal(t, int64(n), sumBuckets(run, half, second, attempts), "equal-jitter: every first retry lands in [t/2, t)")
	}
	for _, run := range l.runs(t, "decorrelated-jitter") {
		assert.Zero(t, sumBuckets(run, 1, second, attempts), "decorrelated-jitter: no retry before the base (1 s)")
	}
	fj := l.strategy(t, "full-jitter")
	require.NotNil(t, fj.PeakLoadRatio)
	assert.Less(t, *fj.PeakLoadRatio, 1.2, "full-jitter: the load after the outage stays near capacity")
	for _, name := range []string{"full-jitter", "equal-jitter", "decorrelated-jitter"} {
		s := l.strategy(t, name)
		assert.Less(t, s.PeakLoad, expo.PeakLoad/20, "%s: jitter breaks the lockstep", name)
		assert.Greater(t, s.DeliveredRatio, 0.95, "%s: nearly everything is delivered", name)
	}
	assert.Less(t, expo.DeliveredRatio, 0.7, "exponential: the lockstep herd loses a large part of the fleet")
}

func checkDispatcher(t *testing.T, l *libraryRun) {
	pool := int64(l.sc.Workload.Senders * l.sc.Workload.Workers)
	for _, name := range []string{"full-jitter", "retry-in-place"} {
		for _, run := range l.runs(t, name) {
			for i, b := range run.Series {
				require.LessOrEqual(t, b.InFlight, pool, "%s: calls in flight never exceed the %d workers (t = %d s)", name, pool, i)
			}
		}
	}
	fj := l.strategy(t, "full-jitter")
	assert.Equal(t, fj.Requests, fj.Delivered, "full-jitter: every webhook is delivered")
	assert.Less(t, fj.LatencyS.P50, 5.0, "full-jitter: the median webhook is delivered in about one call (3 s): delayed messages hold no worker")
	rip := l.strategy(t, "retry-in-place")
	assert.InDelta(t, 1-math.Pow(0.3, 5), rip.DeliveredRatio, 0.005, "retry-in-place: 5 attempts at 30% failure deliver 1 - 0.3^5")
}

func checkRealMode(t *testing.T, l *libraryRun) {
	// The simulated half of the real-mode comparison (the real half is
	// TestReplayAgreesWithTheSimulation in cmd/herdlab).
	for _, name := range []string{"full-jitter", "equal-jitter"} {
		s := l.strategy(t, name)
		assert.Greater(t, s.DeliveredRatio, 0.99, "%s: the webhooks get through the outage", name)
		require.NotNil(t, s.PeakLoadRatio)
		assert.Less(t, *s.PeakLoadRatio, 1.3, "%s: the fleet returns near the gateway's capacity", name)
	}
}

func checkDispatcherBlocking(t *testing.T, l *libraryRun) {
	fj := l.strategy(t, "full-jitter")
	assert.Greater(t, fj.LatencyS.P50, 20.0, "full-jitter, blocking: workers asleep in their backoff make every webhook wait (3.5 s with a delay queue)")
	assert.Positive(t, fj.Unfinished, "full-jitter, blocking: webhooks still queued at the end")
	rip := l.strategy(t, "retry-in-place")
	assert.Less(t, rip.LatencyS.P50, 5.0, "retry-in-place never sleeps, so blocking changes nothing for it")
}

func checkAsymmetricPartition(t *testing.T, l *libraryRun) {
	retry := l.strategy(t, "full-jitter")
	assert.Equal(t, retry.Requests, retry.Delivered, "with retries every payment is delivered")
	assert.Greater(t, retry.Lost, 0.035*retry.Requests, "about 5% of responses are lost")
	assert.InDelta(t, retry.Lost, retry.Duplicates, 0.2*retry.Lost, "without idempotency keys, every retry after a lost 200 charges the card again")
	assert.Greater(t, retry.Duplicates, 0.035*retry.Requests, "about 500 double charges")

	once := l.strategy(t, "no-retries")
	assert.Zero(t, once.Duplicates, "without retries there is no double charge")
	assert.Equal(t, once.Lost, once.DeadLettered, "without retries, every lost response is a payment the sender thinks failed")
	assert.Equal(t, once.Requests, once.Processed, "... although every one of them was charged")
}

func checkAsymmetricPartitionKeys(t *testing.T, l *libraryRun) {
	retry := l.strategy(t, "full-jitter")
	assert.Zero(t, retry.Duplicates, "with idempotency keys no payment is processed twice")
	assert.Equal(t, retry.Requests, retry.Delivered, "with keys and retries every payment is delivered: nothing lost")
	assert.Equal(t, retry.Requests, retry.Processed, "each payment is processed exactly once")
	assert.Greater(t, retry.Lost, 0.035*retry.Requests, "responses are still lost (about 5%), and retried")

	once := l.strategy(t, "no-retries")
	assert.Zero(t, once.Duplicates)
	assert.Equal(t, once.Lost, once.DeadLettered, "without retries, lost responses are still dead letters that were in fact charged")
}

func checkCircuitBreaker(t *testing.T, l *libraryRun) {
	without := l.strategy(t, "no-breaker")
	with := l.strategy(t, "breaker")
	assert.Less(t, with.Attempts, without.Attempts/5, "the breaker makes far fewer attempts against the dead destination")
	assert.Less(t, with.TimedOut, without.TimedOut/100, "the breaker wastes over 100 times fewer 10 s timeouts")
	assert.Greater(t, without.TimedOut, 100_000.0, "without a breaker, hundreds of thousands of timeouts")
	assert.Positive(t, with.ShortCircuited, "the open breaker fails webhooks internally, without a network call")
	for _, s := range []results.StrategySummary{without, with} {
		assert.Equal(t, s.Requests, s.Delivered, "%s: every webhook is delivered once the destination is back", s.Name)
		assert.Zero(t, s.Unfinished, "%s: nothing is left pending at the horizon", s.Name)
	}
	require.NotNil(t, with.DrainTimeS)
	assert.Less(t, *with.DrainTimeS, (l.sc.Server.Outages[0].Duration / 6).Seconds(), "the breaker delays delivery after the outage by at most about one open period")
}

// retryAfterTimeline checks the exact timeline of the honor strategy and
// the ordering of the three modes, common to both Retry-After files.
func retryAfterTimeline(t *testing.T, l *libraryRun, honor []int) {
	got := l.attemptsEvery(l.runs(t, "honor")[0], time.Second)
	assert.Equal(t, honor, sortedKeys(got),
		"honor: retries exactly at the hinted time; after the 5xx start, backoff resumes at 1, 2, 4 s")
	h, ig, mx := l.strategy(t, "honor"), l.strategy(t, "ignore"), l.strategy(t, "max")
	for _, s := range []results.StrategySummary{h, ig, mx} {
		assert.Equal(t, s.Requests, s.Delivered, "%s: every webhook is delivered", s.Name)
		require.NotNil(t, s.CompletionTimeS, s.Name)
	}
	assert.Less(t, *h.CompletionTimeS, 35.0, "honor: done in about 33 s")
	assert.Less(t, *h.CompletionTimeS, *mx.CompletionTimeS, "honor finishes before max")
	assert.Less(t, *mx.CompletionTimeS, *ig.CompletionTimeS, "max finishes before ignore")
	assert.Greater(t, *ig.CompletionTimeS, 3**h.CompletionTimeS, "ignoring the hint: the blind backoff retries too late and finishes far later")
	assert.Greater(t, ig.Throttled, h.Throttled+2000, "ignoring the hint: the blind backoff retries too early, thousands of extra 429s")
}

func sortedKeys(m map[int]int64) []int {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkRetryAfter(t *testing.T, l *libraryRun) {
	retryAfterTimeline(t, l, []int{0, 5, 10, 15, 16, 18, 22, 27, 32})
	// Delta-seconds: a request throttled at t comes back at t + 5 s, so
	// the retries keep the spread of the arrivals.
	run := l.runs(t, "honor")[0]
	from, to := l.bucket(5*time.Second), l.bucket(6*time.Second)
	busy := 0
	for i := from; i < to; i++ {
		if run.Series[i].Attempts > 0 {
			busy++
		}
	}
	assert.GreaterOrEqual(t, busy, 8, "honor: delta-seconds hints send the throttled back spread over 5-6 s, as they arrived")
}

func checkRetryAfterHTTPDate(t *testing.T, l *libraryRun) {
	retryAfterTimeline(t, l, []int{0, 6, 11, 16, 17, 19, 23, 28, 33})
	second := l.bucket(time.Second)
	for _, name := range []string{"honor", "max"} {
		run := l.runs(t, name)[0]
		for i := second; i < len(run.Series); i++ {
			if i%second != 0 {
				require.Zero(t, run.Series[i].Attempts, "%s: an HTTP-date names a whole second, so every retry lands on one (t = %v)", name, time.Duration(i)*l.sc.Bucket)
			}
		}
	}
	h := l.runs(t, "honor")[0]
	assert.Equal(t, sumBuckets(h, 0, second, failed), h.Series[6*second].Attempts, "honor: every request throttled in the first second comes back at exactly 6.0 s")
}

func checkDLQReplay(t *testing.T, l *libraryRun) {
	outageEnd := l.bucket(l.sc.Server.Outages[0].End())
	replay := l.bucket(l.sc.DLQ.Replay.At)
	for _, name := range []string{"8-retries-over-24h", "max-elapsed-24h"} {
		s := l.strategy(t, name)
		assert.Equal(t, s.Requests, s.Replayed, "%s: every webhook reached the DLQ, and the replay sent it back", name)
		assert.Equal(t, s.Requests, s.Delivered, "%s: zero data loss: delivered = requests", name)
		assert.Zero(t, s.DeadLettered, "%s: the DLQ is empty at the end", name)
		require.NotNil(t, s.PeakLoadRatio)
		assert.LessOrEqual(t, *s.PeakLoadRatio, 0.25, "%s: the replay runs at a rate the endpoint can take", name)
		run := l.runs(t, name)[0]
		assert.Zero(t, sumBuckets(run, 0, replay, delivered), "%s: nothing is delivered before the replay", name)
		assert.Zero(t, sumBuckets(run, l.bucket(37*time.Hour), outageEnd, attempts), "%s: by hour 37 every webhook is parked in the DLQ, no more attempts", name)
		require.NotNil(t, s.CompletionTimeS)
		assert.Less(t, *s.CompletionTimeS, (l.sc.DLQ.Replay.At + 5*time.Minute).Seconds(), "%s: the replay delivers everything within about 4 minutes", name)
		// The DLQ depth a dashboard would show: every webhook parked
		// before the fix, the queue emptied by the replay.
		assert.Equal(t, int64(s.Requests), run.Series[replay-1].DLQ, "%s: the DLQ holds every webhook just before the replay", name)
		assert.Zero(t, run.Series[len(run.Series)-1].DLQ, "%s: the DLQ is empty at the end", name)
	}
	s := l.strategy(t, "8-retries-over-24h")
	assert.Equal(t, 10*s.Requests, s.Attempts, "8-retries-over-24h: 9 attempts, then one replayed attempt each")
}

func checkMetastable(t *testing.T, l *libraryRun) {
	rate := l.sc.Workload.Arrival.Rate
	window := 30 * time.Second
	runs := l.sc.Runs
	assert.Equal(t, 0, l.latched(t, "no-retries", window, rate), "no-retries: the service recovers from the surge on its own")
	assert.Equal(t, runs, l.latched(t, "immediate", window, rate), "immediate: retries keep the service down after the trigger ends, in every run")
	assert.Equal(t, runs, l.latched(t, "full-jitter-1s", window, rate), "full-jitter-1s: retries come back before the service drains, and it latches")
	assert.Equal(t, 0, l.latched(t, "equal-jitter-10s", window, rate), "equal-jitter-10s: waits outlast the overload and the service recovers, in every run")
	ej := l.strategy(t, "equal-jitter-10s")
	assert.Greater(t, ej.DeliveredRatio, 0.99, "equal-jitter-10s: nearly everything delivered")
	assert.Equal(t, runs, ej.RecoveredRuns, "equal-jitter-10s: recovered in every run")
	assert.Zero(t, l.strategy(t, "immediate").RecoveredRuns, "immediate: never recovered")
	assert.Less(t, l.strategy(t, "immediate").DeliveredRatio, 0.4, "immediate: most requests are lost")
}

func checkLoadSpikeLatch(t *testing.T, l *libraryRun) {
	rate := l.sc.Workload.Arrival.Rate
	window := time.Minute
	runs := l.sc.Runs
	latched := map[string]int{}
	for _, s := range l.sc.Strategies {
		latched[s.Name] = l.latched(t, s.Name, window, rate)
	}
	t.Logf("latched runs of %d: %v", runs, latched)
	assert.Zero(t, latched["no-retries"], "no-retries: the spike alone does not latch the server")
	assert.Greater(t, latched["immediate"], runs/2, "immediate: most runs never recover")
	assert.GreaterOrEqual(t, latched["full-jitter-1s"], runs*2/5, "full-jitter-1s: waits shorter than the overload do not save most runs")
	assert.LessOrEqual(t, latched["full-jitter-10s"], runs/5, "full-jitter-10s: waits that outlast the overload: the server recovers in most runs")
	assert.Greater(t, l.strategy(t, "full-jitter-10s").DeliveredRatio, l.strategy(t, "immediate").DeliveredRatio+0.3,
		"full-jitter-10s delivers far more than immediate retries")
}

// ---- published studies ----

func checkFlakyDependency(t *testing.T, l *libraryRun) {
	p := l.sc.Server.FailureProbability
	none := l.strategy(t, "no-retries")
	three := l.strategy(t, "3-retries")
	budget := l.strategy(t, "3-retries-token-budget")
	breaker := l.strategy(t, "3-retries-breaker")
	bucket := l.strategy(t, "brooker-bucket")
	cumulative := l.strategy(t, "brooker-breaker")
	amp := 1 + p + p*p + p*p*p
	claim := func(s string) string { return fmt.Sprintf("p = %v: %s", p, s) }

	assert.Equal(t, 1.0, none.Amplification, claim("no retries: one call per request"))
	assert.InDelta(t, 1-p, none.DeliveredRatio, 0.01, claim("no retries: delivered 1 - p"))
	assert.InEpsilon(t, amp, three.Amplification, 0.01, claim("3 retries: amplification 1 + p + p^2 + p^3"))
	assert.InDelta(t, 1-math.Pow(p, 4), three.DeliveredRatio, 0.01, claim("3 retries: delivered 1 - p^4"))

	if p <= 0.001 {
		assert.InDelta(t, three.Amplification, budget.Amplification, 0.001, claim("the token budget never steps in"))
	}
	if p >= 0.5 {
		assert.Less(t, budget.Amplification, 1.1, claim("the token budget holds the load to about what the clients send"))
		assert.Less(t, budget.Amplification, three.Amplification-0.5, claim("the token budget amplifies far less than 3 retries"))
		assert.Less(t, breaker.Amplification, three.Amplification-0.25, claim("the retry breaker cuts the retries of 3 retries"))
		assert.Greater(t, breaker.Amplification, budget.Amplification, claim("... but lets more through than the drained token budget"))
		assert.Greater(t, breaker.DeliveredRatio, none.DeliveredRatio, claim("first tries always go, so the retry breaker delivers more than no retries"))
		assert.Positive(t, breaker.ShortCircuited, claim("the retry breaker trips"))
	} else {
		assert.InEpsilon(t, three.Amplification, breaker.Amplification, 0.005, claim("the breaker never trips below its 50% threshold"))
		assert.InDelta(t, three.DeliveredRatio, breaker.DeliveredRatio, 0.001, claim("the breaker never trips below its 50% threshold"))
	}
	assert.LessOrEqual(t, budget.Amplification, three.Amplification+1e-9, claim("the token budget never retries more than 3 retries"))
	assert.GreaterOrEqual(t, three.DeliveredRatio, budget.DeliveredRatio, claim("delivered: 3 retries >= token budget"))
	assert.GreaterOrEqual(t, budget.DeliveredRatio, none.DeliveredRatio-0.005, claim("delivered: token budget >= no retries"))

	// Brooker's bucket: a client's retries are fewer than the 5 tokens it
	// starts with plus 0.1 per first try (the last retry may take it from
	// just above 1 to just above 0).
	bound := 1 + 0.1 + 5*float64(l.sc.Workload.Senders)/bucket.Requests
	assert.LessOrEqual(t, bucket.Amplification, bound, claim("Brooker's bucket: at most 1 + 0.1 + 5 x clients / calls"))
	if p <= 0.001 {
		assert.InDelta(t, three.Amplification, bucket.Amplification, 0.001, claim("Brooker's bucket retries the rare failure"))
		assert.InDelta(t, three.Amplification, cumulative.Amplification, 0.001, claim("Brooker's breaker retries the rare failure"))
	}
	if p >= 0.5 {
		assert.Greater(t, bucket.Amplification, 1.1, claim("Brooker's bucket spends what its deposits allow"))
		assert.Less(t, cumulative.Amplification, 1.005, claim("Brooker's breaker, over 10% at once, stops every retry"))
	}
	assert.LessOrEqual(t, cumulative.Amplification, three.Amplification+1e-9, claim("Brooker's breaker never retries more than 3 retries"))
}
