package sim

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

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
	skipUnderRace(t)
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
	skipUnderRace(t)
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

// TestDeadlinePropagation: mid works 300 ms, then calls bottom, which
// works 800 ms: bottom's work ends after the fleet's 1 s deadline. With
// deadline propagation it is dropped at the deadline instead; without,
// it is done late and counted.
func TestDeadlinePropagation(t *testing.T) {
	scenario := func(propagate bool) string {
		return fmt.Sprintf(`
duration: 2m
services:
  - {name: top, service_time: 1ms, calls: [{service: mid}]}
  - {name: mid, service_time: 300ms, calls: [{service: bottom, when: after}]}
  - {name: bottom, service_time: 800ms}
network: {latency: 1ms}
workload: {requests: 1000, arrival: {kind: uniform, from: 0s, until: 60s}}
strategies:
  - name: s
    backoff: {kind: none}
    max_attempts: 1
    timeout: 1s
    deadline_propagation: %v
    edges:
      default: {timeout: 1s}
`, propagate)
	}
	_, without := runGraph(t, scenario(false))
	_, with := runGraph(t, scenario(true))
	off, on := without.Summary.Strategies[0], with.Summary.Strategies[0]
	assert.Equal(t, 1000.0, serviceOf(off, "bottom").LateWork, "without: every bottom work ends after the fleet's deadline")
	assert.Zero(t, serviceOf(off, "bottom").DeadlineDropped)
	for _, s := range on.Services {
		assert.Zero(t, s.LateWork, "with propagation no work at %s ends after the deadline", s.Name)
	}
	assert.Equal(t, 1000.0, serviceOf(on, "bottom").DeadlineDropped)
	assert.Zero(t, serviceOf(on, "bottom").Processed)
	assert.Equal(t, 1000.0, off.DeadLettered)
	assert.Equal(t, 1000.0, on.DeadLettered)
}

// TestRandomGraphsConserveAndRepeat builds random graphs (a DAG of
// services with replicas, balancers, fan-out, quorums, failures,
// outages and queues, retried at every layer) and checks that they run
// without breaking conservation (the engine panics when any service's or
// the fleet's counts do not add up), that every request is accounted
// for, and that the same seed gives the same bytes.
func TestRandomGraphsConserveAndRepeat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	balancers := []string{"round-robin", "random", "least-outstanding", "power-of-two-choices"}
	modes := []string{"refuse", "timeout", "error"}
	graphs := 40
	if raceDetector {
		// The detector watches the parallel runs of the first graphs;
		// make test's second step, without it, checks all 40.
		graphs = 5
	}
	for n := range graphs {
		var b strings.Builder
		fmt.Fprintf(&b, "name: random-%d\nseed: %d\nduration: 3m\nruns: 2\nnetwork: {latency: {dist: exponential, mean: 2ms}}\nservices:\n", n, n+1)
		services := 2 + r.IntN(4)
		for i := range services {
			fmt.Fprintf(&b, "  - name: s%d\n    concurrency: %d\n    service_time: {dist: exponential, mean: %dms}\n    replicas: %d\n    balancer: %s\n    queue_discipline: %s\n",
				i, 1+r.IntN(20), 1+r.IntN(30), 1+r.IntN(3), balancers[r.IntN(4)], []string{"fifo", "lifo"}[r.IntN(2)])
			if r.IntN(2) == 0 {
				fmt.Fprintf(&b, "    queue: %d\n", r.IntN(30))
			}
			if r.IntN(2) == 0 {
				fmt.Fprintf(&b, "    failure_probability: %.2f\n", r.Float64()/2)
			}
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, "    outages: [{start: %ds, duration: %ds, mode: %s}]\n", r.IntN(30), 1+r.IntN(30), modes[r.IntN(3)])
			}
			var calls []string
			for k := i + 1; k < services; k++ {
				if r.IntN(2) == 0 {
					fanout := 1 + r.IntN(3)
					calls = append(calls, fmt.Sprintf("{service: s%d, fanout: %d, quorum: %d, probability: %.2f, when: %s}",
						k, fanout, r.IntN(fanout+1), 0.3+0.7*r.Float64(), []string{"before", "after"}[r.IntN(2)]))
				}
			}
			if len(calls) > 0 {
				fmt.Fprintf(&b, "    calls: [%s]\n", strings.Join(calls, ", "))
			}
		}
		fmt.Fprintf(&b, "workload: {requests: %d, arrival: {kind: poisson, rate: %d, from: 0s, until: 60s}}\n", 200+r.IntN(800), 5+r.IntN(50))
		fmt.Fprintf(&b, `strategies:
  - name: a
    backoff: {kind: full-jitter, base: 10ms, cap: 1s}
    max_attempts: %d
    timeout: 5s
    deadline_propagation: %v
    edges:
      default: {backoff: {kind: exponential, base: 5ms, cap: 100ms}, max_attempts: %d, timeout: 2s}
  - name: b
    backoff: {kind: none}
    max_attempts: 2
    timeout: 3s
    breaker: {consecutive: 5, open_for: 5s}
    edges:
      default: {max_attempts: 2, timeout: 1s, budget: {kind: tokens}}
`, 1+r.IntN(4), r.IntN(2) == 0, 1+r.IntN(3))
		text := b.String()
		sc, err := scenarios.Parse("random.yaml", []byte(text))
		require.NoError(t, err, text)
		first, err := Run(context.Background(), sc, Options{})
		require.NoError(t, err, text)
		again, err := Run(context.Background(), sc, Options{Parallel: 1})
		require.NoError(t, err, text)
		for _, st := range first.Summary.Strategies {
			assert.Equal(t, st.Requests, st.Delivered+st.DeadLettered+st.Unfinished, text)
			assert.Equal(t, st.Attempts, serviceOf(st, sc.Services[0].Name).Attempts, "the strategy's attempts are the target's")
		}
		js1, ts1 := outputs(t, sc, first)
		js2, ts2 := outputs(t, sc, again)
		require.Equal(t, string(js1), string(js2), text)
		require.Equal(t, string(ts1), string(ts2), text)
		var s1, s2 bytes.Buffer
		require.NoError(t, results.WriteServices(&s1, sc.Bucket, first.Runs))
		require.NoError(t, results.WriteServices(&s2, sc.Bucket, again.Runs))
		require.Equal(t, s1.String(), s2.String())
	}
}

// TestWorstCaseBeyondTheBudgetIsRefused: a graph whose worst case (every
// attempt failing, at every layer) needs more events than a run's budget
// is refused before it runs, with the product shown.
func TestWorstCaseBeyondTheBudgetIsRefused(t *testing.T) {
	sc, err := scenarios.Parse("big.yaml", []byte(chain(1_000_000, 10, "concurrency: 10")))
	require.NoError(t, err)
	_, err = Fit(sc, Options{}, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "big.yaml:")
	assert.Contains(t, err.Error(), "workload.requests: strategy every-layer: 1,000,000 requests x a worst-case amplification of 1,110 attempts each (top 10, mid 100, bottom 1,000)")
	// A budget that covers it lets it run; fewer attempts too.
	_, err = Fit(sc, Options{MaxEvents: 4e9}, 0)
	assert.NoError(t, err)
	sc, err = scenarios.Parse("big.yaml", []byte(chain(1_000_000, 4, "concurrency: 10")))
	require.NoError(t, err)
	_, err = Fit(sc, Options{}, 0)
	assert.NoError(t, err)
}

// TestQueueDisciplinesUnderOverload: twice the capacity for a minute,
// callers that give up after 1 s. FIFO serves everything after its
// caller left; LIFO and adaptive LIFO serve the newest, whose callers
// still wait; CoDel keeps the queueing delay near its target.
func TestQueueDisciplinesUnderOverload(t *testing.T) {
	const capacity, seconds = 100.0, 60.0
	goodput := map[string]float64{}
	delay := map[string]float64{}
	for _, d := range []string{"fifo", "lifo", "adaptive-lifo", "codel"} {
		_, res := runGraph(t, fmt.Sprintf(`
duration: 3m
services:
  - {name: api, concurrency: 10, service_time: {dist: exponential, mean: 100ms}, queue_discipline: %s}
network: {latency: 1ms}
workload: {requests: 0, arrival: {kind: poisson, rate: 200, from: 0s, until: 60s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 1s}
`, d))
		st := res.Summary.Strategies[0]
		goodput[d] = st.Delivered / seconds / capacity
		delay[d] = serviceOf(st, "api").QueueDelayS
	}
	t.Logf("goodput (share of capacity) %v, mean queueing delay %v", goodput, delay)
	assert.Less(t, goodput["fifo"], 0.10)
	assert.Greater(t, goodput["lifo"], 0.80)
	assert.Greater(t, goodput["adaptive-lifo"], 0.80)
	assert.Greater(t, goodput["codel"], 0.80)
	assert.Less(t, delay["codel"], 0.05, "near the 5 ms target (fifo's is %vs)", delay["fifo"])
	assert.Greater(t, delay["fifo"], 10.0)
}

// cacheRatio returns the hit ratio of service k's cache in run r over
// buckets [from, to).
func cacheRatio(r *results.Run, k, from, to int) float64 {
	var lookups, hits int64
	for _, b := range r.Services[k].Cache[from:to] {
		lookups += b.Lookups
		hits += b.Hits
	}
	return float64(hits) / float64(lookups)
}

// attemptsIn sums service k's attempts in run r over buckets [from, to).
func attemptsIn(r *results.Run, k, from, to int) float64 {
	var n int64
	for _, b := range r.Services[k].Series[from:to] {
		n += b.Attempts
	}
	return float64(n)
}

// TestCacheFlushMultipliesTheLoad: a warm cache with hit ratio h sends
// the backing service 1-h of the reads; while it is flushed, all of
// them: 1/(1-h) = 10 times as many at 90%.
func TestCacheFlushMultipliesTheLoad(t *testing.T) {
	skipUnderRace(t)
	_, res := runGraph(t, `
duration: 2m
services:
  - {name: api, service_time: 1ms, calls: [{service: db}]}
  - name: db
    service_time: 1ms
    cache: {hit_ratio: 0.9, keys: 10000}
    outages: [{start: 60s, duration: 20s, mode: flush}]
network: {latency: 1ms}
workload: {requests: 0, arrival: {kind: poisson, rate: 2000, from: 0s, until: 2m}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1}
`)
	r := res.Runs[0]
	warm := attemptsIn(r, 1, 10, 60) / 50
	flushed := attemptsIn(r, 1, 60, 80) / 20
	assert.InEpsilon(t, 10, flushed/warm, 0.05, "db load %v/s warm, %v/s flushed", warm, flushed)
	assert.InDelta(t, 0.9, cacheRatio(r, 1, 10, 60), 0.01)
	assert.Zero(t, cacheRatio(r, 1, 60, 80))
	assert.Greater(t, cacheRatio(r, 1, 110, 120), cacheRatio(r, 1, 80, 90), "it warms again once back")
}

// TestColdCacheStaysCold: the backing service serves 300/s; the fleet
// reads 1,000/s through a 90% cache. A 10 s flush sends all 1,000/s to
// the database, whose queue then makes every read time out; a read that
// fails fills nothing, so the cache stays cold after the flush ends
// (metastable), until the load falls below what the database serves.
func TestColdCacheStaysCold(t *testing.T) {
	skipUnderRace(t)
	_, res := runGraph(t, `
duration: 6m
services:
  - {name: api, service_time: 1ms, calls: [{service: db, retry: {timeout: 1s}}]}
  - name: db
    concurrency: 3
    service_time: 10ms
    queue: 600
    cache: {hit_ratio: 0.9, keys: 10000}
    outages: [{start: 30s, duration: 10s, mode: flush}]
network: {latency: 1ms}
workload:
  requests: 0
  arrival: {kind: poisson, rate: 1000, from: 0s, until: 6m, schedule: [{from: 2m, until: 6m, rate: 100}]}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 2s}
`)
	r := res.Runs[0]
	assert.InDelta(t, 0.9, cacheRatio(r, 1, 5, 30), 0.02, "warm before the flush")
	assert.Less(t, cacheRatio(r, 1, 60, 120), 0.05, "still cold 20 s to 80 s after the flush ended")
	var okAfter int64
	for _, b := range r.Series[60:120] {
		okAfter += b.OK
	}
	assert.Less(t, float64(okAfter), 0.1*60*1000, "the fleet's reads keep failing")
	assert.Greater(t, cacheRatio(r, 1, 300, 360), 0.5, "warm again once the load fell below the database's capacity")
}

// share returns replica r's share of service k's attempts.
func share(st results.StrategySummary, name string, r int) float64 {
	s := serviceOf(st, name)
	return s.Replicas[r].Attempts / s.Attempts
}

// TestLoadBalancerSinkhole: one of three replicas fails fast. It has the
// fewest attempts outstanding, so least-outstanding sends it most of the
// traffic (the sinkhole); power-of-two-choices with outlier detection
// ejects it and sends it little.
func TestLoadBalancerSinkhole(t *testing.T) {
	skipUnderRace(t)
	run := func(balancer, health string) results.StrategySummary {
		_, res := runGraph(t, fmt.Sprintf(`
duration: 2m
services:
  - name: store
    replicas: 3
    balancer: %s
    %s
    concurrency: 10
    service_time: {dist: exponential, mean: 20ms}
    outages: [{start: 0s, duration: 2m, mode: error, replicas: [0]}]
network: {latency: 1ms}
workload: {requests: 0, arrival: {kind: poisson, rate: 500, from: 0s, until: 2m}}
strategies:
  - {name: s, backoff: {kind: full-jitter, base: 10ms, cap: 100ms}, max_attempts: 3}
`, balancer, health))
		return res.Summary.Strategies[0]
	}
	least := run("least-outstanding", "")
	p2c := run("power-of-two-choices", "health: {consecutive: 5, eject_for: 10s}")
	t.Logf("the failing replica's share: least-outstanding %.3f, power-of-two with health %.3f", share(least, "store", 0), share(p2c, "store", 0))
	assert.Greater(t, share(least, "store", 0), 0.5)
	assert.Less(t, share(p2c, "store", 0), 0.05)
	assert.Greater(t, p2c.DeliveredRatio, least.DeliveredRatio)
	blind := run("power-of-two-choices", "")
	assert.Greater(t, share(blind, "store", 0), 0.3, "without outlier detection, power of two is drawn in too")
}

// TestOneSlowReplica: one of three replicas serves ten times slower.
// Random keeps sending it a third of the traffic, more than it can
// serve; power-of-two-choices sees its queue and sends it less.
func TestOneSlowReplica(t *testing.T) {
	run := func(balancer string) results.StrategySummary {
		_, res := runGraph(t, fmt.Sprintf(`
duration: 2m
services:
  - name: store
    replicas: 3
    balancer: %s
    concurrency: 5
    service_time: {dist: exponential, mean: 20ms}
    outages: [{start: 0s, duration: 2m, mode: slow, factor: 10, replicas: [0]}]
network: {latency: 1ms}
workload: {requests: 0, arrival: {kind: poisson, rate: 400, from: 0s, until: 1m}}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1, timeout: 1m}
`, balancer))
		return res.Summary.Strategies[0]
	}
	random, p2c := run("random"), run("power-of-two-choices")
	t.Logf("p99 latency: random %.3fs, power of two %.3fs; the slow replica's share %.3f, %.3f",
		random.LatencyS.P99, p2c.LatencyS.P99, share(random, "store", 0), share(p2c, "store", 0))
	assert.InDelta(t, 1.0/3, share(random, "store", 0), 0.01)
	assert.Less(t, share(p2c, "store", 0), 0.15)
	assert.Greater(t, random.LatencyS.P99, 10*p2c.LatencyS.P99)
}

// TestEdgesCountTheirAttempts: the attempts along each edge add up to
// the attempts at the service they call (nothing lost on the way, in a
// run that ends with nothing in flight).
func TestEdgesCountTheirAttempts(t *testing.T) {
	_, res := runGraph(t, `
duration: 5m
services:
  - {name: gateway, service_time: 1ms, calls: [{service: payments}, {service: inventory, parallel: true}]}
  - {name: payments, service_time: 2ms, failure_probability: 0.3, calls: [{service: db}]}
  - {name: inventory, service_time: 2ms, calls: [{service: db, fanout: 2}]}
  - {name: db, service_time: 1ms, failure_probability: 0.2}
network: {latency: 1ms}
workload: {requests: 2000, arrival: {kind: uniform, from: 0s, until: 20s}}
strategies:
  - name: s
    backoff: {kind: full-jitter, base: 10ms, cap: 100ms}
    max_attempts: 3
    edges: {default: {max_attempts: 3, backoff: {kind: full-jitter, base: 5ms, cap: 50ms}}}
`)
	st := res.Summary.Strategies[0]
	require.Len(t, st.Edges, 5)
	into := map[string]float64{}
	for _, e := range st.Edges {
		into[e.To] += e.Attempts
	}
	for _, s := range st.Services {
		assert.Equal(t, s.Attempts, into[s.Name], "the edges into %s", s.Name)
	}
	assert.Equal(t, "", st.Edges[0].From)
	assert.Equal(t, st.Amplification, st.Edges[0].Amplification)
}

// TestStrategiesChangeServices: a strategy's services section deploys
// the graph differently for it alone: here a LIFO queue, against the
// scenario's FIFO, under overload.
func TestStrategiesChangeServices(t *testing.T) {
	sc, res := runGraph(t, `
duration: 2m
services:
  - {name: api, concurrency: 10, service_time: {dist: exponential, mean: 100ms}}
network: {latency: 1ms}
workload: {requests: 0, arrival: {kind: poisson, rate: 200, from: 0s, until: 60s}}
strategies:
  - {name: fifo, backoff: {kind: none}, max_attempts: 1, timeout: 1s}
  - {name: lifo, backoff: {kind: none}, max_attempts: 1, timeout: 1s, services: {api: {queue_discipline: lifo, replicas: 2}}}
`)
	fifo, lifo := res.Summary.Strategies[0], res.Summary.Strategies[1]
	assert.Less(t, fifo.DeliveredRatio, 0.05)
	assert.Greater(t, lifo.DeliveredRatio, 0.9, "two LIFO replicas serve the whole load in time")
	assert.Equal(t, "fifo", sc.Services[0].QueueDiscipline, "the scenario's own service is unchanged")
	require.NotNil(t, fifo.PeakLoadRatio)
	require.NotNil(t, lifo.PeakLoadRatio)
	assert.InDelta(t, *fifo.PeakLoadRatio/2, *lifo.PeakLoadRatio, 0.1*(*lifo.PeakLoadRatio), "each strategy's ratio is to its own capacity")

	_, err := scenarios.Parse("x.yaml", []byte(`
services: [{name: api}]
workload: {requests: 10}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1, services: {db: {replicas: 2}, api: {queue_discipline: stack, calls: [], health: {consecutive: 0}}}}
`))
	require.Error(t, err)
	for _, want := range []string{
		`x.yaml:5:70: strategies[0].services.db: unknown service "db" (want one of api)`,
		`strategies[0].services.api.queue_discipline: unknown value "stack"`,
		`strategies[0].services.api.calls: not changed by a strategy`,
		`strategies[0].services.api.health.consecutive: must be >= 1, got 0`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestOpenBreakerDrainsALongQueueWithoutRecursion: with an inner edge's
// breaker open, every queued job fails at once when it starts, which
// starts the next: 200,000 of them are taken in a loop, not a recursion
// as deep as the queue (which would pass the 32 MB stack this test
// allows: the binary would crash).
func TestOpenBreakerDrainsALongQueueWithoutRecursion(t *testing.T) {
	skipUnderRace(t)
	defer debug.SetMaxStack(debug.SetMaxStack(32 << 20))
	_, res := runGraph(t, `
duration: 2m
services:
  - {name: api, concurrency: 1, service_time: 1ms, calls: [{service: db, retry: {max_attempts: 1, breaker: {consecutive: 1, open_for: 10m, counts_as_attempt: true}}}]}
  - {name: db, outages: [{start: 0s, duration: 2m, mode: error}]}
network: {latency: 1ms}
workload: {requests: 200000, arrival: {kind: burst, at: 0s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 10m}
`)
	st := res.Summary.Strategies[0]
	assert.Equal(t, 200000.0, st.DeadLettered)
	assert.Equal(t, 1.0, serviceOf(st, "db").Attempts, "one attempt opens the breaker; the rest are short-circuited")
}

// TestShedByQueueDelay: under overload, a request taken from the queue
// after waiting longer than the shed bound is answered 503 instead of
// served: no served request waited longer.
func TestShedByQueueDelay(t *testing.T) {
	_, res := runGraph(t, `
duration: 2m
services:
  - {name: api, concurrency: 10, service_time: {dist: exponential, mean: 100ms}, shed: {queue_delay: 200ms}}
workload: {requests: 0, arrival: {kind: poisson, rate: 200, from: 0s, until: 60s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 1s}
`)
	api := serviceOf(res.Summary.Strategies[0], "api")
	assert.Greater(t, api.Shed, 0.3*api.Attempts, "about half the overload is shed")
	assert.LessOrEqual(t, api.QueueDelayS, 0.2, "no served request waited past the bound")
	assert.Less(t, api.Wasted, 0.01*api.Processed, "a served request's caller still waits (200 ms queued < 1 s), unless its service time alone passes 800 ms (e^-8)")
}

// TestCacheTTLHitRatio: keys read at rate r each, entries living T: a
// miss fills the key, and the reads in the next T hit, Poisson(rT) of
// them, so the hit ratio is rT / (1 + rT): 1/2 at rT = 1.
func TestCacheTTLHitRatio(t *testing.T) {
	skipUnderRace(t)
	_, res := runGraph(t, `
duration: 2m
services:
  - {name: api, service_time: 1ms, calls: [{service: db}]}
  - {name: db, service_time: 1ms, cache: {capacity: 100, keys: 100, ttl: 100ms}}
workload: {requests: 0, arrival: {kind: poisson, rate: 1000, from: 0s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1}
`)
	// 1,000 reads/s over 100 keys: 10 a second each; T = 0.1 s.
	r := res.Runs[0]
	assert.InDelta(t, 0.5, cacheRatio(r, 1, 10, 110), 0.02)
}

// quorumScenario (testdata/quorum.yaml, which realhttp's test replays
// too) is a fleet of 3 requests, 2 s apart, to api, whose
// first step calls store 3 times at once, needing 2 of them, and slow
// once in parallel (1.5 s); its local work comes after them (when:
// before). store serves 2 at a time for 500 ms with no waiting room:
// the third copy is refused (503) at 0, 200 and 400 ms (a fixed 200 ms
// backoff) while the first two are served; they answer at 500 ms, and
// the third's next try would be at 600 ms, when store is free and would
// serve it, while the step still waits for slow. Cancelled at the
// quorum, it makes 2 + 3 attempts a request; left to retry until the
// step or the job ends, 2 + 4. The margins (100 ms) hold over real HTTP
// too (realhttp's TestGraphQuorumCancelsTheCopiesBeyondIt).
var quorumScenario = readTestdata("quorum.yaml")

// TestQuorumCancelsTheCopiesBeyondIt: once a call has its quorum, its
// copies still going are cancelled at once, not left to retry until the
// caller's job ends: store takes exactly 2 + 3 attempts a request (see
// quorumScenario), not 2 + 4.
func TestQuorumCancelsTheCopiesBeyondIt(t *testing.T) {
	_, res := runGraph(t, quorumScenario)
	run := res.Runs[0]
	require.Equal(t, int64(3), run.Delivered)
	var store int64
	for _, e := range run.Edges {
		if e.Caller == "api" && e.Callee == "store" {
			store = e.Attempts
		}
	}
	assert.Equal(t, int64(3*(2+3)), store, "store's attempts")
}

// hedgeQuorumScenario (testdata/hedge-quorum.yaml, which realhttp's
// test replays too): api calls store twice, needing one, each copy
// hedged after 100 ms with cancel; store serves one at a time for
// 500 ms. The first call's copy is served (0-500 ms); the second call's
// copy and both hedges wait. At 500 ms the first call wins: store takes
// the second call's copy next, at once (before any cancel can reach it),
// and the first call's hedge is cancelled; so is the second call, now
// beyond the quorum, whose hedge is taken out of the queue too, hung up
// on as herdlab's test server drops it over real HTTP (realhttp's
// TestGraphHedgeCancelDropsCopiesOfCancelledCalls): store processes 2.
var hedgeQuorumScenario = readTestdata("hedge-quorum.yaml")

// TestHedgeCancelDropsCopiesOfCancelledCalls: a call cancelled (beyond
// its quorum, or its job ended) hangs up on its hedged copies, and with
// cancel those still queued are taken out, as a winner's losers are.
func TestHedgeCancelDropsCopiesOfCancelledCalls(t *testing.T) {
	_, res := runGraph(t, hedgeQuorumScenario)
	run := res.Runs[0]
	require.Equal(t, int64(1), run.Delivered)
	assert.Equal(t, int64(2), run.Services[1].Processed, "store: the winner and the copy it took next; both hedges dropped")
}

// readTestdata returns a file of testdata/ (read as the package's tests
// start: a missing one fails them all).
func readTestdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestATimeoutPassedOnTheWayIsOnTime: an attempt whose way to its
// service takes longer than its caller's timeout is given up at the
// timeout, not when it arrives; without a network delay, an attempt
// served in time sets no timeout at all.
func TestATimeoutPassedOnTheWayIsOnTime(t *testing.T) {
	_, res := runGraph(t, `
name: late
duration: 1m
network: {latency: {dist: constant, mean: 30ms}}
services: [{name: api, service_time: {dist: constant, mean: 1ms}}]
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1, timeout: 10ms}]
`)
	run := res.Runs[0]
	require.Equal(t, int64(1), run.DeadLettered)
	require.NotNil(t, run.Completion)
	assert.Equal(t, 10*time.Millisecond, *run.Completion, "given up at its timeout, not at its arrival (30 ms)")

	_, res = runGraph(t, `
name: quick
duration: 1m
services: [{name: api, service_time: {dist: constant, mean: 1ms}}]
workload: {requests: 1000, arrival: {kind: uniform, from: 0s, until: 10s}}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1, timeout: 10ms}]
`)
	run = res.Runs[0]
	require.Equal(t, int64(1000), run.Delivered)
	assert.Equal(t, int64(2000), run.Events, "an arrival and a service's end an attempt: no timeout event")
}
