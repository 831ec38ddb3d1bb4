package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// occScenario is n clients writing one row once each, with hops of a
// constant 10 ms.
func occScenario(t *testing.T, n int) *scenarios.Scenario {
	t.Helper()
	sc := scenario(t, 1, time.Millisecond)
	sc.Server = scenarios.Server{Model: scenarios.ModelOCC}
	sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Constant, Mean: 10 * time.Millisecond}
	sc.Duration = time.Minute
	sc.Workload = scenarios.Workload{Requests: n, Arrival: scenarios.Arrival{Kind: scenarios.Burst}}
	sc.Strategies[0].MaxAttempts = 0
	return sc
}

func TestOCCOneWinnerPerRound(t *testing.T) {
	// Without backoff every client reads and writes in lockstep: each
	// round one write commits and the rest conflict, so n clients make
	// n + (n-1) + ... + 1 write calls and finish after n rounds of four
	// hops (read, answer, write, answer).
	const n = 10
	res := simulate(t, occScenario(t, n))
	s := res.Summary.Strategies[0]
	assert.Equal(t, float64(n*(n+1)/2), s.Attempts, "write calls")
	assert.Equal(t, float64(n), s.Delivered)
	require.NotNil(t, s.CompletionTimeS)
	assert.InDelta(t, n*0.040, *s.CompletionTimeS, 1e-9)
}

func TestOCCReproducesTheAWSStudy(t *testing.T) {
	// The AWS Architecture Blog's findings at 50 clients: jitter cuts the
	// work of plain exponential backoff by about half; full jitter does
	// the least work; equal jitter takes longer than full jitter; plain
	// exponential backoff is by far the slowest.
	sc, err := scenarios.Load("../scenarios/aws-occ-50.yaml")
	require.NoError(t, err)
	sc.Runs = 30
	res := simulate(t, sc)
	fig := map[string][2]float64{}
	for _, s := range res.Summary.Strategies {
		require.NotNil(t, s.CompletionTimeS, s.Name)
		fig[s.Name] = [2]float64{s.Attempts, *s.CompletionTimeS}
		t.Logf("%-20s %7.1f calls %6.2fs", s.Name, s.Attempts, *s.CompletionTimeS)
	}
	calls := func(name string) float64 { return fig[name][0] }
	took := func(name string) float64 { return fig[name][1] }
	assert.Less(t, calls("full-jitter"), 0.6*calls("exponential"))
	assert.Less(t, calls("full-jitter"), 0.6*calls("none"))
	assert.Less(t, calls("full-jitter"), calls("equal-jitter"))
	assert.Less(t, calls("full-jitter"), calls("decorrelated-jitter"))
	assert.Greater(t, took("equal-jitter"), took("full-jitter"))
	for _, name := range []string{"none", "equal-jitter", "full-jitter", "decorrelated-jitter"} {
		assert.Greater(t, took("exponential"), 3*took(name), name)
	}
}

func TestNormalLatencyIsFolded(t *testing.T) {
	// |Normal(10ms, 2ms)| has the mean of the normal when it is far from 0.
	sc := occScenario(t, 1)
	sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Normal, Mean: 10 * time.Millisecond, StdDev: 2 * time.Millisecond}
	sc.Runs = 2000
	res := simulate(t, sc)
	assert.InDelta(t, 0.040, res.Summary.Strategies[0].LatencyS.Mean, 0.0005, "four hops of 10 ms")
}
