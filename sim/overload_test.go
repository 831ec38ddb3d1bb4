package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

// The overload controls of issue 13, each against the closed form or
// the bound its algorithm makes.

// steady sums field over the buckets from 'from' to the end.
func steady(run *results.Run, from int, field func(b results.Bucket) int64) float64 {
	return float64(sumBuckets(run, from, len(run.Series), field))
}

// TestAdaptiveThrottlingAtSteadyOverload offers 10x what a backend
// accepts (a rate limit of 100/s, 1,000/s offered by 10 clients, one
// attempt each): with the SRE book's throttle the backend receives K x
// its accepts, within 10%, and the clients' local rejections make up the
// rest. failsafe-go's variant, which does not count its rejections,
// settles elsewhere: with p = (sent - K accepts)/sent and sent =
// offered (1 - p), sent^2 = K x accepts x offered.
func TestAdaptiveThrottlingAtSteadyOverload(t *testing.T) {
	skipUnderRace(t)
	for _, tc := range []struct {
		throttle string
		k        float64
		counted  bool // the throttle counts its rejections as requests
	}{
		{"{kind: sre}", 2, true},
		{"{kind: sre, k: 3}", 3, true},
		{"{kind: failsafe, max_rejection: 1}", 1 / 0.9, false},
	} {
		t.Run(tc.throttle, func(t *testing.T) {
			_, res := runGraph(t, fmt.Sprintf(`
name: sre
duration: 4m
bucket: 1s
server: {service_time: 1ms, rate_limit: {rate: 100, burst: 20}}
workload: {senders: 10, arrival: {kind: poisson, rate: 1000, per_sender: true}}
strategies:
  - {name: throttled, backoff: {kind: none}, max_attempts: 1, throttle: %s}
`, withKey(tc.throttle, "window: 30s")))
			run := res.Runs[0]
			received := steady(run, 60, attempts)
			accepted := steady(run, 60, delivered)
			want := tc.k
			if !tc.counted {
				offered := float64(run.Requests) * 180 / 240
				want = math.Sqrt(tc.k * offered / accepted)
			}
			t.Logf("%s: received %.0f/s, accepted %.0f/s, ratio %.3f (want %.3f); rejected locally %d of %d",
				tc.throttle, received/180, accepted/180, received/accepted, want, run.ClientRejected, run.Requests)
			assert.InDelta(t, 100, accepted/180, 2, "the rate limit accepts 100/s")
			assert.InEpsilon(t, want, received/accepted, 0.1, "received / accepted")
			// Every request was sent once or rejected once (a few in
			// flight at the end aside).
			assert.InDelta(t, run.Requests, run.ClientRejected+run.Attempts, 5)
			assert.Equal(t, run.ClientRejected, run.DeadLetteredBy["client_rejected"], "a rejected last attempt is the reason")
		})
	}
}

// withKey puts extra into a flow mapping {...}.
func withKey(flow, extra string) string {
	return flow[:len(flow)-1] + ", " + extra + "}"
}

// sharedBudgetScenario is 100 senders at 2 requests a second each
// against a server down (fast 503s) for the first 20 s, each request
// retried after 1 s up to 3 times under the budget given.
func sharedBudgetScenario(budget string) string {
	return fmt.Sprintf(`
name: shared
duration: 40s
bucket: 1s
server: {service_time: 10ms, outages: [{start: 0s, duration: 20s, mode: error}]}
network: {latency: 5ms}
workload: {senders: 100, arrival: {kind: poisson, rate: 200, per_sender: true}}
strategies:
  - {name: s, backoff: {kind: fixed, delay: 1s}, max_attempts: 4, budget: %s}
`, budget)
}

// TestEnvoyBudgetBoundsRetriesInFlight: Envoy's budget allows at most
// max(3, 20% of the attempts in flight) retries in flight, each from its
// grant through its 1 s backoff to its answer. In the outage a few
// attempts are in flight, so a budget held by the whole fleet lets about
// 3 retries a second through, one held by groups of 10 senders about 10
// times as many, and one per sender far more (until its senders' own
// demand, 2 requests a second each, caps it).
func TestEnvoyBudgetBoundsRetriesInFlight(t *testing.T) {
	rate := map[string]float64{}
	for _, scope := range []string{"scope: fleet", "scope: group, group_size: 10", "scope: sender"} {
		_, res := runGraph(t, sharedBudgetScenario("{kind: envoy, percent: 20, min_concurrency: 3, "+scope+"}"))
		run := res.Runs[0]
		// Every request is tried at once: the rest are retries, all
		// made in the outage or the second after it (the retries of
		// the outage's last second).
		retries := float64(run.Attempts - run.Requests)
		rate[scope] = retries / 21
		t.Logf("%s: %.0f retries (%.1f a second), %d denied", scope, retries, rate[scope], run.SharedBudgetDenied)
		if scope == "scope: sender" {
			assert.Zero(t, run.SharedBudgetDenied, "a budget each sender holds alone is no shared one")
			assert.Positive(t, run.DeadLetteredBy["budget"])
		} else {
			assert.Equal(t, run.SharedBudgetDenied, run.DeadLetteredBy["budget"])
		}
	}
	// Each retry holds its place at least its 1 s backoff: 3 places
	// make at most 3 retries a second, and the outage's demand keeps
	// them full.
	assert.LessOrEqual(t, rate["scope: fleet"], 3.0*21/20+0.2, "never more than 3 in flight")
	assert.Greater(t, rate["scope: fleet"], 2.5)
	assert.InEpsilon(t, 10*rate["scope: fleet"], rate["scope: group, group_size: 10"], 0.1, "10 groups")
	assert.Greater(t, rate["scope: sender"], 150.0, "100 senders, each with 3")
}

// TestFinagleBudgetIsAShareOfRequests: Finagle's budget lets retries
// withdraw at most percent of the requests of the last TTL (plus the
// reserve of min_per_second): held by the fleet with no reserve, at most
// 10% of the requests are retried, and the outage's demand uses them
// all. Per sender, the default reserve (10 a second over 10 s) gives each
// of the 100 senders 100 retries of its own: no bound at all here.
func TestFinagleBudgetIsAShareOfRequests(t *testing.T) {
	_, res := runGraph(t, sharedBudgetScenario("{kind: finagle, percent: 10, ttl: 10s, min_per_second: 0, scope: fleet}"))
	run := res.Runs[0]
	retries := float64(run.Attempts - run.Requests)
	inOutage := float64(sumBuckets(run, 0, 20, attempts)) - retries
	t.Logf("fleet: %.0f retries for %.0f first tries in the outage (%.1f%%), %d denied", retries, inOutage, 100*retries/inOutage, run.SharedBudgetDenied)
	assert.LessOrEqual(t, retries, 0.1*float64(run.Requests)+1)
	assert.InEpsilon(t, 0.1*inOutage, retries, 0.1, "the outage uses the whole 10%")

	_, res = runGraph(t, sharedBudgetScenario("{kind: finagle, percent: 10}"))
	run = res.Runs[0]
	retries = float64(run.Attempts - run.Requests)
	t.Logf("per sender, with the default reserve: %.0f retries for %d requests", retries, run.Requests)
	assert.Greater(t, retries, 2*float64(run.Requests)*20/40, "nearly every request of the outage retries 3 times")
}

// TestPushback: a negative pushback stops every retry (the reason is
// pushback); one of 2 s replaces the backoff, so the retries come 2 s
// apart instead of 100 ms.
func TestPushback(t *testing.T) {
	_, res := runGraph(t, `
name: pushback
duration: 1m
bucket: 1s
server: {service_time: 1ms, rate_limit: {rate: 1, burst: 1, pushback: -1ms}}
workload: {requests: 100}
strategies:
  - {name: s, backoff: {kind: fixed, delay: 100ms}, max_attempts: 5}
  - {name: deaf, backoff: {kind: fixed, delay: 100ms}, max_attempts: 5, ignore_pushback: true}
`)
	run := res.Runs[0]
	assert.Equal(t, int64(100), run.Attempts, "no retry")
	assert.Equal(t, int64(99), run.DeadLetteredBy["pushback"])
	assert.Greater(t, res.Runs[1].Attempts, int64(300), "ignored, the retries go on")

	_, res = runGraph(t, `
name: pushback
duration: 1m
bucket: 1s
server: {service_time: 1ms, failure_probability: 1, failure_pushback: 2s}
workload: {requests: 100}
strategies:
  - {name: s, backoff: {kind: fixed, delay: 100ms}, max_attempts: 5}
`)
	assert.Equal(t, map[int]int64{0: 100, 2: 100, 4: 100, 6: 100, 8: 100}, nonzero(res.Runs[0], attempts))
}

// TestAWSAdaptiveFollowsTheRateLimit: one AWS adaptive client offering
// 150 requests a second to a backend that takes 100 sends, once its
// limiter is on, about what the backend takes (CUBIC probes above it
// and backs off) instead of all it is offered and the retries of its
// 429s. (Its backlog of requests waiting for a token grows by 50 a
// second, and each waiter asks again at every token, as the SDK's
// goroutines do: 10 times the offer for 2 minutes was 600 million waits.)
func TestAWSAdaptiveFollowsTheRateLimit(t *testing.T) {
	skipUnderRace(t)
	_, res := runGraph(t, `
name: aws
duration: 1m
bucket: 1s
server: {service_time: 1ms, rate_limit: {rate: 100, burst: 10}}
workload: {senders: 1, arrival: {kind: poisson, rate: 150}}
strategies:
  - {name: adaptive, backoff: {kind: full-jitter, base: 50ms, cap: 20s}, max_attempts: 3, throttle: {kind: aws-adaptive}}
  - {name: standard, backoff: {kind: full-jitter, base: 50ms, cap: 20s}, max_attempts: 3}
`)
	adaptive, standard := res.Runs[0], res.Runs[1]
	sent := steady(adaptive, 20, attempts) / 40
	accepted := steady(adaptive, 20, delivered) / 40
	sentStandard := steady(standard, 20, attempts) / 40
	t.Logf("adaptive: sends %.0f/s, %.0f/s accepted, %d waits; standard: sends %.0f/s", sent, accepted, adaptive.RateLimited, sentStandard)
	assert.InDelta(t, 100, sent, 15, "about what the backend takes")
	assert.Greater(t, accepted, 80.0)
	assert.Positive(t, adaptive.RateLimited)
	assert.Greater(t, sentStandard, 170.0, "without the limiter every request and its retries go")

	// The limiter's rate over time: on from the first throttle, and
	// about the 100/s the backend takes.
	require.Len(t, adaptive.ClientRates, len(adaptive.Series))
	assert.Nil(t, standard.ClientRates)
	var rates []float64
	for _, c := range adaptive.ClientRates[20:] {
		assert.Equal(t, int64(1), c.Limited)
		rates = append(rates, c.Rate)
	}
	mean := 0.0
	for _, r := range rates {
		mean += r / float64(len(rates))
	}
	assert.InDelta(t, 100, mean, 30, "the fill rate hovers about the backend's rate")
}

// closedOpen is Brooker's flaky dependency (failure probability 0.75,
// 3 retries) behind 100 clients: open, each with a Poisson stream of 10
// calls a second, or closed, each sending its next request 100 ms after
// its previous one ended.
func closedOpen(workload, backoff string) string {
	return fmt.Sprintf(`
name: loop
duration: 60s
bucket: 1s
server: {service_time: 1ms, failure_probability: 0.75}
network: {latency: 5ms}
workload: %s
strategies:
  - {name: s, backoff: %s, max_attempts: 4}
`, workload, backoff)
}

// TestClosedLoopBackoffCutsTheWork: in an open loop backoff changes
// when the retries come, not how many (the amplification stays 1 + 0.75
// + 0.75^2 + 0.75^3 = 2.73); in a closed loop a client that backs off
// sends its next request later, so backoff cuts the calls made in all.
func TestClosedLoopBackoffCutsTheWork(t *testing.T) {
	skipUnderRace(t)
	const (
		open   = "{senders: 100, arrival: {kind: poisson, rate: 1000, per_sender: true}}"
		closed = "{clients: {count: 100, think_time: 100ms}}"
		none   = "{kind: none}"
		expo   = "{kind: exponential, base: 100ms, cap: 10s}"
	)
	calls := map[string]*results.Run{}
	for _, w := range []string{open, closed} {
		for _, b := range []string{none, expo} {
			_, res := runGraph(t, closedOpen(w, b))
			calls[w+b] = res.Runs[0]
			r := res.Runs[0]
			t.Logf("%s, %s: %d requests, %d calls, %.3f calls a request", w, b, r.Requests, r.Attempts, float64(r.Attempts)/float64(r.Requests))
		}
	}
	amp := func(r *results.Run) float64 { return float64(r.Attempts) / float64(r.Requests) }
	want := 1 + 0.75 + 0.75*0.75 + 0.75*0.75*0.75
	assert.InEpsilon(t, want, amp(calls[open+none]), 0.03)
	assert.InEpsilon(t, want, amp(calls[open+expo]), 0.03, "open loop: the backoff does not change the amplification")
	assert.InEpsilon(t, calls[open+none].Attempts, calls[open+expo].Attempts, 0.05, "nor the calls")
	assert.InEpsilon(t, want, amp(calls[closed+expo]), 0.05, "closed loop: nor the calls a request")
	assert.Less(t, float64(calls[closed+expo].Attempts), 0.6*float64(calls[closed+none].Attempts),
		"but the clients that back off send far fewer calls in all")
	assert.Less(t, float64(calls[closed+expo].Attempts), 0.6*float64(calls[open+expo].Attempts), "than the open loop with the same policy")
}

// hedgeScenario is 10 senders at 1,000 requests a second in all against
// a server of lognormal service times (mean 20 ms, sd 40 ms) and the
// given capacity, each request made once, hedged as the strategy says.
func hedgeScenario(server, strategies string) string {
	return fmt.Sprintf(`
name: hedge
duration: 60s
bucket: 1s
server: {service_time: {dist: lognormal, mean: 20ms, stddev: 40ms}, %s}
network: {latency: 1ms}
workload: {senders: 10, arrival: {kind: poisson, rate: 1000}}
strategies:
%s
`, server, strategies)
}

// TestHedgingCutsTheTail: with no queueing, a hedge at the 95th
// percentile of the latencies seen sends about 5% more copies, and the
// 99th percentile of latency falls by 40% or more (173 ms to 95: a slow
// first copy is overtaken by its hedge).
func TestHedgingCutsTheTail(t *testing.T) {
	skipUnderRace(t)
	_, res := runGraph(t, hedgeScenario("concurrency: unlimited", `
  - {name: plain, backoff: {kind: none}, max_attempts: 1}
  - {name: hedged, backoff: {kind: none}, max_attempts: 1, hedge: {delay: p95}}
  - {name: hedged-cancel, backoff: {kind: none}, max_attempts: 1, hedge: {delay: p95, cancel: true}}`))
	plain, hedged := res.Summary.Strategies[0], res.Summary.Strategies[1]
	for _, s := range res.Summary.Strategies {
		f := s.Figures
		t.Logf("%s: p50 %.1f ms, p99 %.1f ms, %.3f copies a request, %.0f hedges, %.0f wins, %.0f wasted",
			s.Name, 1000*f.LatencyS.P50, 1000*f.LatencyS.P99, f.Amplification, f.Hedges, f.HedgeWins, f.Wasted)
	}
	assert.Less(t, hedged.Figures.LatencyS.P99, 0.6*plain.Figures.LatencyS.P99, "the tail falls")
	assert.InEpsilon(t, plain.Figures.LatencyS.P50, hedged.Figures.LatencyS.P50, 0.05, "the median does not move")
	assert.InDelta(t, 1.05, hedged.Figures.Amplification, 0.02, "about 5% more load")
	assert.InDelta(t, 0.05*hedged.Figures.Requests, hedged.Figures.Hedges, 0.02*hedged.Figures.Requests)
	assert.Positive(t, hedged.Figures.HedgeWins)
	assert.Less(t, hedged.Figures.HedgeWins, hedged.Figures.Hedges, "not every hedge wins")
	assert.InDelta(t, 1.0, plain.Figures.Amplification, 0.001)
	assert.Zero(t, plain.Figures.Hedges)
}

// TestHedgingOnACallEdge: in a graph, a call edge hedges as the fleet
// does: api's calls to a database of lognormal service times, hedged at
// the 95th percentile, cost the database about 5% more attempts and cut
// the fleet's p99; with cancel and a queue at the database, the losing
// copies leave the queue (the services' conservation checks hold).
func TestHedgingOnACallEdge(t *testing.T) {
	skipUnderRace(t)
	graph := func(db, retry string) string {
		return fmt.Sprintf(`
name: hedge-graph
duration: 60s
bucket: 1s
services:
  - {name: api, service_time: 1ms, calls: [{service: db, retry: %s}]}
  - {name: db, service_time: {dist: lognormal, mean: 20ms, stddev: 40ms}, %s}
network: {latency: 1ms}
workload: {senders: 10, arrival: {kind: poisson, rate: 500}}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1}
`, retry, db)
	}
	_, plain := runGraph(t, graph("concurrency: unlimited", "{max_attempts: 1}"))
	_, hedged := runGraph(t, graph("concurrency: unlimited", "{max_attempts: 1, hedge: {delay: p95}}"))
	db := func(r *Result) results.ServiceFigures { return serviceOf(r.Summary.Strategies[0], "db") }
	p, h := plain.Summary.Strategies[0], hedged.Summary.Strategies[0]
	t.Logf("db amplification %.3f -> %.3f; fleet p99 %.1f ms -> %.1f ms", db(plain).Amplification, db(hedged).Amplification, 1000*p.LatencyS.P99, 1000*h.LatencyS.P99)
	assert.InDelta(t, 1.05, db(hedged).Amplification/db(plain).Amplification, 0.02, "about 5% more attempts at the database")
	assert.Less(t, h.LatencyS.P99, 0.7*p.LatencyS.P99, "the tail falls")
	assert.Zero(t, h.Hedges, "the fleet's own calls do not hedge")

	// A database of 10 slots with a queue, hedged after 10 ms with
	// cancel: copies leave its queue when they lose.
	_, cancel := runGraph(t, graph("concurrency: 20, queue: 1000", "{max_attempts: 1, timeout: 5s, hedge: {delay: 10ms, cancel: true}}"))
	_, keep := runGraph(t, graph("concurrency: 20, queue: 1000", "{max_attempts: 1, timeout: 5s, hedge: {delay: 10ms}}"))
	c, k := cancel.Summary.Strategies[0], keep.Summary.Strategies[0]
	t.Logf("cancel: db processed %.0f, wasted %.0f; keep: processed %.0f, wasted %.0f",
		db(cancel).Processed, db(cancel).Wasted, db(keep).Processed, db(keep).Wasted)
	assert.Less(t, db(cancel).Processed, db(keep).Processed, "cancelled copies are not served")
	assert.Less(t, db(cancel).Wasted, db(keep).Wasted)
	assert.InDelta(t, 1, c.DeliveredRatio, 0.02)
	assert.InDelta(t, 1, k.DeliveredRatio, 0.02)
}

// TestHedgingTheFleetsCallsInAGraph: the fleet's calls to the target
// hedge in a graph too, counted in the strategy's figures.
func TestHedgingTheFleetsCallsInAGraph(t *testing.T) {
	_, res := runGraph(t, `
name: hedge-fleet
duration: 30s
bucket: 1s
services:
  - {name: api, service_time: {dist: lognormal, mean: 20ms, stddev: 40ms}}
network: {latency: 1ms}
workload: {senders: 10, arrival: {kind: poisson, rate: 500}}
strategies:
  - {name: plain, backoff: {kind: none}, max_attempts: 1}
  - {name: hedged, backoff: {kind: none}, max_attempts: 1, hedge: {delay: p95}}
`)
	p, h := res.Summary.Strategies[0], res.Summary.Strategies[1]
	assert.InDelta(t, 1.05, h.Amplification, 0.02)
	assert.InDelta(t, 0.05*h.Requests, h.Hedges, 0.02*h.Requests)
	assert.Positive(t, h.HedgeWins)
	assert.Less(t, h.LatencyS.P99, 0.7*p.LatencyS.P99)
}
