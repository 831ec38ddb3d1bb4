package sim

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// runGraph parses a scenario and runs it.
func runGraph(t *testing.T, yaml string) (*scenarios.Scenario, *Result) {
	t.Helper()
	sc, err := scenarios.Parse("graph.yaml", []byte(yaml))
	require.NoError(t, err)
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	return sc, res
}

// chain is a fleet calling top, which calls mid, which calls bottom,
// every call (the fleet's too) made up to attempts times at once.
func chain(requests, attempts int, bottom string) string {
	return fmt.Sprintf(`
duration: 10m
services:
  - {name: top, service_time: 1ms, calls: [{service: mid}]}
  - {name: mid, service_time: 1ms, calls: [{service: bottom}]}
  - {name: bottom, service_time: 1ms, %s}
network: {latency: 1ms}
workload: {requests: %d, arrival: {kind: uniform, from: 0s, until: 100s}}
strategies:
  - name: every-layer
    backoff: {kind: none}
    max_attempts: %d
    edges:
      default: {max_attempts: %d}
`, bottom, requests, attempts, attempts)
}

func serviceOf(st results.StrategySummary, name string) results.ServiceFigures {
	for _, s := range st.Services {
		if s.Name == name {
			return s
		}
	}
	panic("no service " + name)
}

// TestRetriesMultiplyAcrossLayers: three layers, each call retried up
// to 3 times, the bottom failing every attempt: (N+1)^L attempts.
func TestRetriesMultiplyAcrossLayers(t *testing.T) {
	_, res := runGraph(t, chain(100, 4, "failure_probability: 1"))
	st := res.Summary.Strategies[0]
	assert.Equal(t, 4.0, serviceOf(st, "top").Amplification)
	assert.Equal(t, 16.0, serviceOf(st, "mid").Amplification)
	assert.Equal(t, 64.0, serviceOf(st, "bottom").Amplification)
	assert.Equal(t, 400.0, st.Attempts, "the strategy's own figures are the target's")
	assert.Equal(t, 100.0, st.DeadLettered)
	assert.Equal(t, 0.0, st.Delivered)
}

// TestLayerAttemptsMatchTheRecursion: the bottom fails each attempt
// independently with probability p; the mean attempts per fleet request
// at each layer follow A_1 = 1 + p + ... + p^N, f_1 = p^(N+1),
// A_(k+1) = A_k (1 + f_k + ... + f_k^N), f_(k+1) = f_k^(N+1).
func TestLayerAttemptsMatchTheRecursion(t *testing.T) {
	const n, N = 40_000, 3
	geo := func(f float64) float64 { // 1 + f + ... + f^N
		s := 0.0
		for k := 0; k <= N; k++ {
			s += math.Pow(f, float64(k))
		}
		return s
	}
	for _, p := range []float64{0.1, 0.3, 0.5} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			_, res := runGraph(t, chain(n, N+1, fmt.Sprintf("failure_probability: %v", p)))
			st := res.Summary.Strategies[0]
			f1 := math.Pow(p, N+1)
			f2 := math.Pow(f1, N+1)
			bottom := geo(p) * geo(f1) * geo(f2) // A_3
			mid := geo(f1) * geo(f2)
			top := geo(f2)
			assert.InEpsilon(t, bottom, serviceOf(st, "bottom").Amplification, 0.01, "bottom")
			assert.InEpsilon(t, mid, serviceOf(st, "mid").Amplification, 0.01, "mid")
			assert.InEpsilon(t, top, serviceOf(st, "top").Amplification, 0.01, "top")
			// Every fleet request is accounted for.
			assert.Equal(t, float64(n), st.Delivered+st.DeadLettered+st.Unfinished)
			assert.InDelta(t, 1-math.Pow(f2, N+1), st.DeliveredRatio, 4*math.Sqrt(0.25/n)+1e-9)
		})
	}
}

// TestFanOutNeedsEveryCopy: a request that calls k replicas in parallel
// and needs all k succeeds with probability (1-p)^k per try; with a
// quorum of 1, with 1-p^k.
func TestFanOutNeedsEveryCopy(t *testing.T) {
	const n, k, p = 20_000, 3, 0.2
	for _, c := range []struct {
		quorum int
		want   float64
	}{{0, math.Pow(1-p, k)}, {1, 1 - math.Pow(p, k)}, {2, math.Pow(1-p, 3) + 3*p*math.Pow(1-p, 2)}} {
		t.Run(fmt.Sprint("quorum ", c.quorum), func(t *testing.T) {
			_, res := runGraph(t, fmt.Sprintf(`
services:
  - {name: api, service_time: 1ms, calls: [{service: store, fanout: %d, quorum: %d}]}
  - {name: store, replicas: %d, service_time: 1ms, failure_probability: %v}
network: {latency: 1ms}
workload: {requests: %d, arrival: {kind: uniform, from: 0s, until: 100s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1}
`, k, c.quorum, k, p, n))
			st := res.Summary.Strategies[0]
			sd := math.Sqrt(c.want * (1 - c.want) / n)
			assert.InDelta(t, c.want, st.DeliveredRatio, 4*sd)
			assert.Equal(t, float64(k), serviceOf(st, "store").Amplification, "every copy is sent")
			for r, rep := range serviceOf(st, "store").Replicas {
				assert.Equal(t, float64(n), rep.Attempts, "round-robin gives replica %d one copy of each", r)
			}
		})
	}
}
