package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The claims of the overload-control scenarios of the library.
func init() {
	libraryChecks["hedging-latch.yaml"] = checkHedgingLatch
	libraryChecks["overload-controls.yaml"] = checkOverloadControls
	libraryChecks["flaky-dependency-50pct-10-clients.yaml"] = checkFlakyFewClients
	libraryChecks["flaky-dependency-50pct-1000-clients.yaml"] = checkFlakyManyClients
	libraryChecks["open-loop.yaml"] = checkOpenLoop
	libraryChecks["closed-loop.yaml"] = checkClosedLoop
}

func checkHedgingLatch(t *testing.T, l *libraryRun) {
	runs := l.sc.Runs
	none, hedge, cancel, budget, retry := l.strategy(t, "no-hedge"), l.strategy(t, "hedge"), l.strategy(t, "hedge-cancel"),
		l.strategy(t, "hedge-budget"), l.strategy(t, "retry-slow")
	assert.Equal(t, runs, none.RecoveredRuns, "no-hedge: the spike drains in every run")
	assert.Zero(t, hedge.RecoveredRuns, "hedge: without a budget the service never recovers")
	assert.InDelta(t, 0.86, hedge.DeliveredRatio, 0.03, "hedge: about 86% delivered")
	assert.Greater(t, hedge.Amplification, 1.6, "hedge: every request hedged once latched")
	assert.Greater(t, hedge.Duplicates, 20000.0, "hedge: the losing copies are served too")
	assert.Zero(t, retry.RecoveredRuns, "retry-slow: retrying slow requests latches too")
	assert.Less(t, retry.DeliveredRatio, 0.25, "retry-slow: about 16% delivered")
	assert.Equal(t, runs, cancel.RecoveredRuns, "hedge-cancel: the losers are dropped from the queue and the service recovers")
	assert.Equal(t, runs, budget.RecoveredRuns, "hedge-budget: the service recovers")
	assert.Less(t, budget.Amplification, 1.11, "hedge-budget: hedges at most about 10% of the requests")
	assert.Greater(t, budget.Hedges, 0.05*budget.Requests, "hedge-budget: it does hedge")
}

func checkOverloadControls(t *testing.T, l *libraryRun) {
	plain := l.strategy(t, "retries")
	tokens, fleet, proxy := l.strategy(t, "grpc-tokens"), l.strategy(t, "envoy-fleet"), l.strategy(t, "envoy-per-proxy")
	sre, std, adaptive := l.strategy(t, "sre-throttle"), l.strategy(t, "aws-standard"), l.strategy(t, "aws-adaptive")
	assert.InDelta(t, 2.3, plain.Amplification, 0.1, "plain retries: 2.3 attempts per request")
	assert.InDelta(t, 0.82, plain.DeliveredRatio, 0.02, "82% delivered: the surge's excess cannot be served")
	assert.Less(t, tokens.Amplification, 1.05, "gRPC tokens: 1.01")
	assert.Less(t, fleet.Amplification, 1.08, "Envoy, fleet: 1.04")
	assert.Greater(t, proxy.Amplification, fleet.Amplification+0.05, "Envoy per proxy: each proxy has its own floor (1.14)")
	assert.Positive(t, fleet.SharedBudgetDenied)
	assert.InDelta(t, 1.62, sre.Amplification, 0.1, "SRE throttling: 1.62")
	assert.Greater(t, sre.ClientRejected, 50000.0, "SRE throttling: 72,000 rejected locally")
	assert.InDelta(t, 1.28, std.Amplification, 0.06, "AWS standard profile: 1.28")
	assert.Greater(t, adaptive.DeliveredRatio, 0.99, "AWS adaptive: 99.7% delivered")
	assert.Greater(t, adaptive.LatencyS.P99, 20.0, "AWS adaptive: late, the requests wait in the clients")
	assert.Less(t, adaptive.Throttled, 0.05*plain.Throttled, "AWS adaptive: the clients stop sending what would be throttled")
	for _, s := range []string{"grpc-tokens", "envoy-fleet", "sre-throttle", "aws-standard"} {
		assert.InDelta(t, plain.DeliveredRatio, l.strategy(t, s).DeliveredRatio, 0.02, "%s: the same 82% delivered, for less work", s)
	}
}

func checkFlakyFewClients(t *testing.T, l *libraryRun) {
	assert.InDelta(t, 1.875, l.strategy(t, "3-retries").Amplification, 0.03, "3 retries: 1.88")
	assert.Less(t, l.strategy(t, "3-retries-token-budget").Amplification, 1.05, "10 busy clients: the token budget runs dry at once")
	assert.Less(t, l.strategy(t, "3-retries-breaker").Amplification, 1.2, "each breaker trips within its first second")
	assert.LessOrEqual(t, l.strategy(t, "brooker-bucket").Amplification, 1.105, "the bucket's bound, 1 + 0.1 + 5 x 10 / 10,000")
	assert.Less(t, l.strategy(t, "brooker-breaker").Amplification, 1.005)
}

func checkFlakyManyClients(t *testing.T, l *libraryRun) {
	three := l.strategy(t, "3-retries")
	assert.InDelta(t, 1.875, three.Amplification, 0.03, "3 retries: 1.88")
	assert.Greater(t, l.strategy(t, "3-retries-token-budget").Amplification, 1.3, "1,000 clients spend their own tokens: 1.44")
	breaker := l.strategy(t, "3-retries-breaker")
	assert.Zero(t, breaker.ShortCircuited, "no breaker sees its 100 calls")
	assert.InDelta(t, three.Amplification, breaker.Amplification, 0.01, "so the breaker does nothing")
	bucket := l.strategy(t, "brooker-bucket").Amplification
	assert.Greater(t, bucket, 1.35, "the starting tokens are most of the retries: 1.49")
	assert.LessOrEqual(t, bucket, 1.6, "the bound 1 + 0.1 + 5 x 1,000 / 10,000")
	assert.Less(t, l.strategy(t, "brooker-breaker").Amplification, 1.005, "the cumulative breaker still stops every retry")
}

func checkOpenLoop(t *testing.T, l *libraryRun) {
	want := 1 + 0.75 + 0.75*0.75 + 0.75*0.75*0.75
	base := l.strategy(t, "3-retries")
	for _, s := range []string{"3-retries", "3-retries-backoff", "3-retries-jitter"} {
		st := l.strategy(t, s)
		assert.InEpsilon(t, want, st.Amplification, 0.02, "%s: 2.73 calls per request", s)
		assert.InEpsilon(t, base.Attempts, st.Attempts, 0.03, "%s: open loop, about the same calls whatever the backoff", s)
	}
}

func checkClosedLoop(t *testing.T, l *libraryRun) {
	none, backoff, jitter := l.strategy(t, "3-retries"), l.strategy(t, "3-retries-backoff"), l.strategy(t, "3-retries-jitter")
	assert.InEpsilon(t, 2.73, backoff.Amplification, 0.03, "2.73 calls per request in a closed loop too")
	assert.Less(t, backoff.Attempts, 0.35*none.Attempts, "clients that back off make far fewer calls (33,500 against 122,200)")
	assert.Less(t, jitter.Attempts, 0.5*none.Attempts, "full jitter: 52,600")
	assert.Greater(t, jitter.Attempts, backoff.Attempts, "full jitter waits half as long, and cuts less")
}
