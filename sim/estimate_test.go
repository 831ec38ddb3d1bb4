package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

func TestEstimate(t *testing.T) {
	sc := scenarioOf(t, `
name: e
duration: 100s
bucket: 100ms
server: {concurrency: 10}
workload: {requests: 100000}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
  - {name: b, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	sc.Runs = 3
	n := Estimate(sc, Options{Parallel: 3})
	assert.Equal(t, 100000.0, n.Requests)
	assert.Equal(t, 6, n.Runs)
	assert.Equal(t, 3, n.AtOnce)
	assert.Equal(t, int64(6*1000), n.Rows)
	assert.Greater(t, 6*n.Kept+3*n.PerRun, int64(HeapFloor), "the runs take more than the heap floor")
	assert.Equal(t, baseMemory+6*n.Kept+3*n.PerRun, n.Memory())
	n.Runs, n.AtOnce = 1, 1
	n.Kept, n.PerRun = 1000, 2000
	assert.Equal(t, int64(baseMemory+HeapFloor), n.Memory(), "a run smaller than the heap floor")
	// A memory limit leaves the floor what room it has: a run that fits
	// the limit without a floor fits it with one.
	limit := int64(baseMemory + 10<<20)
	tight := Estimate(sc, Options{Parallel: 3, MaxMemory: limit})
	assert.Equal(t, int64(10<<20), tight.Floor)
	tight.Runs, tight.AtOnce, tight.Kept, tight.PerRun = 1, 1, 1000, 2000
	assert.Equal(t, limit, tight.Memory())
	assert.Equal(t, int64(HeapFloor), HeapFloorUnder(0), "no limit")
	assert.Equal(t, int64(HeapFloor), HeapFloorUnder(1<<40))
	assert.Zero(t, HeapFloorUnder(baseMemory/2))

	one := Estimate(sc, Options{Parallel: 2, Strategies: []string{"b"}})
	assert.Equal(t, 3, one.Runs)

	// Poisson arrivals: the expected count, with room above it.
	sc.Workload.Requests = 0
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: 100, Schedule: []scenarios.RateStep{{From: 10 * time.Second, Until: 20 * time.Second, Rate: 1100}}}
	mean := 100.0*90 + 1100*10
	assert.InDelta(t, mean+6*141.42, Estimate(sc, Options{}).Requests, 1)
	sc.Workload.Requests = 5000 // a cap below that
	assert.Equal(t, 5000.0, Estimate(sc, Options{}).Requests)
}

func TestFit(t *testing.T) {
	sc := scenarioOf(t, `
name: fit
duration: 1m
server: {concurrency: 10}
workload: {requests: 2000000}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
  - {name: b, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	n := Estimate(sc, Options{Parallel: 2})
	two, one := n.Memory(), n.Memory()-n.PerRun

	got, err := Fit(sc, Options{Parallel: 2}, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, got, "no limit")
	got, err = Fit(sc, Options{Parallel: 2}, two)
	require.NoError(t, err)
	assert.Equal(t, 2, got, "both fit")
	got, err = Fit(sc, Options{Parallel: 2}, two-1)
	require.NoError(t, err)
	assert.Equal(t, 1, got, "one at a time fits")

	_, err = Fit(sc, Options{Parallel: 2}, one-1)
	require.Error(t, err)
	var se *scenarios.Error
	require.ErrorAs(t, err, &se)
	// The requests outweigh the unlimited queue, where each request's
	// attempts that timed out wait beside its retry (16 bytes each).
	assert.Equal(t, "workload.requests", se.Path, "the field that makes it big")
	assert.Equal(t, 5, se.Line)
	assert.Equal(t, 22, se.Col)
	assert.Contains(t, err.Error(), "x.yaml:5:22: workload.requests: a run needs about")
	assert.Contains(t, err.Error(), "2,000,000 requests x 70 B")
	assert.Contains(t, err.Error(), "with herdlab's own 48 MB", "the estimate counts herdlab's own memory, and says so")
	assert.Contains(t, err.Error(), "the limit is")

	// The same through Run: refused before anything runs.
	_, err = Run(context.Background(), sc, Options{Parallel: 2, MaxMemory: one - 1})
	require.ErrorAs(t, err, &se)
}

// TestFitLeavesTheHeapFloorWhatRoomItHas: a limit that runs smaller than
// the heap floor fit without one is enough, whether it comes as Fit's
// and FitUnits' limit or as Options.MaxMemory; the floor takes what is
// left.
func TestFitLeavesTheHeapFloorWhatRoomItHas(t *testing.T) {
	sc := scenarioOf(t, `
name: small
duration: 1m
server: {concurrency: 10}
workload: {requests: 10}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	n := Estimate(sc, Options{Parallel: 1})
	runs := n.Kept + n.PerRun
	require.Less(t, runs, int64(HeapFloor), "the run is smaller than the floor")
	limit := int64(baseMemory) + runs
	got, err := Fit(sc, Options{Parallel: 1}, limit)
	require.NoError(t, err)
	assert.Equal(t, 1, got)
	_, err = FitUnits(sc, Options{Parallel: 1}, limit)
	require.NoError(t, err)
	_, err = Run(context.Background(), sc, Options{Parallel: 1, MaxMemory: limit})
	require.NoError(t, err)
	_, err = Fit(sc, Options{Parallel: 1}, limit-1)
	require.Error(t, err, "one byte short")
}

func TestFitNamesWhatIsKept(t *testing.T) {
	sc := scenarioOf(t, `
name: kept
duration: 1h
bucket: 10ms
runs: 10
server: {concurrency: 10}
workload: {requests: 10}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	// 360,000 buckets x 10 runs: 3.6 million rows, in bounds, but the
	// series kept in memory are what is big.
	_, err := Fit(sc, Options{}, 256<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bucket: 10 runs (strategies x replications) of 360,000 buckets each keep about")

	sc.Runs = 20
	_, err = Fit(sc, Options{}, 0)
	require.Error(t, err, "rows are bounded whatever the memory")
	assert.Contains(t, err.Error(), "7,200,000 rows of timeseries.csv")
}

func TestFitRefusesUncountablePoissonArrivals(t *testing.T) {
	sc := scenarioOf(t, `
name: flood
duration: 1h
server: {concurrency: 10}
workload: {arrival: {kind: poisson, rate: 1e9}}
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	_, err := Fit(sc, Options{}, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "x.yaml:5:43: workload.arrival.rate: a run would make about 3,600,0")
}

// TestEventBudget: a run that would never end in reasonable time stops at
// its event budget, naming the strategy and why.
func TestEventBudget(t *testing.T) {
	sc := scenarioOf(t, `
name: spin
duration: 15m
server:
  concurrency: 10
  outages: [{start: 0s, duration: 10m}]
workload: {requests: 100}
strategies:
  - {name: patient, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
  - {name: spinning, backoff: {kind: fixed, delay: 1ns}}
`)
	_, err := Run(context.Background(), sc, Options{MaxEvents: 100_000})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrEventBudget))
	assert.Contains(t, err.Error(), "strategy spinning stopped after 100,000 events, at t=")
	assert.NotContains(t, err.Error(), "patient")

	// Exactly at the budget, not a batch past it.
	g := newRun(sc, 1, 0, 1)
	g.maxEvents = 1234
	_, err = g.simulate(context.Background())
	require.ErrorIs(t, err, ErrEventBudget)
	assert.Equal(t, int64(1234), g.events)

	res, err := Run(context.Background(), sc, Options{Strategies: []string{"patient"}, MaxEvents: 100_000})
	require.NoError(t, err, "a run within its budget is not touched")
	assert.Less(t, res.Summary.Strategies[0].Engine.Events, int64(100_000))
}

func scenarioOf(t *testing.T, yaml string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("x.yaml", []byte(yaml))
	require.NoError(t, err)
	return sc
}

// fanOut is a chain of services s0..sN, each calling the next with
// fanout copies.
func fanOut(layers, fanout int, strategy string) string {
	y := "name: fan\nduration: 1m\nservices:\n"
	for i := range layers {
		y += fmt.Sprintf("  - {name: s%d, service_time: 1ms, calls: [{service: s%d, fanout: %d}]}\n", i, i+1, fanout)
	}
	y += fmt.Sprintf("  - {name: s%d, service_time: 1ms}\n", layers)
	return y + "workload: {requests: 1}\nstrategies:\n  - " + strategy + "\n"
}

// TestGraphEstimateNeverWraps: fan-outs of 1,000 over 6 edges make 10^18
// attempts with no failure at all; the estimate saturates instead of
// wrapping to a small figure (it said 80 MB), and the run is refused at
// the fan-out that passes the event budget, with the product, whatever
// the memory limit, before anything is allocated.
func TestGraphEstimateNeverWraps(t *testing.T) {
	for fanout, least := range map[int]int64{100: 200 << 40, 1000: maxBytes} {
		sc := scenarioOf(t, fanOut(6, fanout, "{name: a, backoff: {kind: fixed, delay: 1s}}"))
		n := Estimate(sc, Options{MaxEvents: math.MaxInt64})
		assert.GreaterOrEqual(t, n.Memory(), least, "fanout %d: 10^12 or 10^18 jobs at once", fanout)
		assert.GreaterOrEqual(t, n.PerRun, n.perRun[0].bytes, "no part wrapped the sum")

		_, err := Fit(sc, Options{}, 0)
		var se *scenarios.Error
		require.ErrorAs(t, err, &se, "fanout %d", fanout)
		assert.Regexp(t, `^services\[\d\]\.calls\[0\]\.fanout$`, se.Path)
		assert.Contains(t, err.Error(), "with no attempt failing")
		assert.Contains(t, err.Error(), "more than a run's budget of 1,000,000,000 (--max-events)")
		_, err = Run(context.Background(), sc, Options{})
		require.ErrorAs(t, err, &se, "Run refuses it too, before it allocates")
	}
	sc := scenarioOf(t, fanOut(6, 1000, "{name: a, backoff: {kind: fixed, delay: 1s}}"))
	_, err := Fit(sc, Options{}, 0)
	assert.ErrorContains(t, err, "x.yaml:6:65: services[2].calls[0].fanout: strategy a: 1 requests x fan-outs 1,000 x 1,000 x 1,000 make 1,000,000,000 attempts at s3")

	// With more events allowed, the memory limit refuses it, naming a
	// figure that did not wrap.
	_, err = Fit(sc, Options{MaxEvents: math.MaxInt64}, 64<<30)
	assert.ErrorContains(t, err, "a run needs about more than 4096 PB of memory")

	// The worst case (every attempt failing) is counted when the fleet's
	// attempts are unlimited, per attempt of the fleet: 4 attempts at
	// each of 4 edges of fan-out 10 make 40^4 = 2.56 million attempts at
	// the bottom per fleet attempt.
	y := fanOut(4, 10, `{name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, edges: {default: {max_attempts: 4}}}`)
	sc = scenarioOf(t, strings.Replace(y, "requests: 1}", "requests: 1000}", 1))
	_, err = Fit(sc, Options{}, 0)
	assert.ErrorContains(t, err, "workload.requests: strategy a: 1,000 requests x a worst-case amplification of")
	assert.ErrorContains(t, err, "per attempt of the fleet (whose attempts are unlimited)")
}

// TestEstimateCountsCaches: 60 services with 10 million keys each hold
// 4.3 GB (the run died there); the estimate said 80 MB.
func TestEstimateCountsCaches(t *testing.T) {
	y := "name: caches\nduration: 10s\nservices:\n"
	for i := range 60 {
		calls := ""
		if i < 59 {
			calls = fmt.Sprintf(", calls: [{service: s%d}]", i+1)
		}
		y += fmt.Sprintf("  - {name: s%d, service_time: 1ms, cache: {hit_ratio: 0.9, keys: 10000000}%s}\n", i, calls)
	}
	y += "workload: {requests: 1}\nstrategies:\n  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 2}\n"
	sc := scenarioOf(t, y)
	assert.Greater(t, Estimate(sc, Options{}).Memory(), int64(4<<30))
	_, err := Fit(sc, Options{}, 2<<30)
	var se *scenarios.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "services[0].cache.keys", se.Path)
	assert.Contains(t, err.Error(), "caches of 600,000,000 keys in all")
}

// TestServicesCSVIsBounded: 5 services of 10,000 replicas over 300
// buckets would write 15 million rows of services.csv (563 MB); it is
// bounded as timeseries.csv is, naming the replicas.
func TestServicesCSVIsBounded(t *testing.T) {
	y := "name: replicas\nduration: 5m\nservices:\n"
	for i := range 5 {
		calls := ""
		if i < 4 {
			calls = fmt.Sprintf(", calls: [{service: s%d}]", i+1)
		}
		y += fmt.Sprintf("  - {name: s%d, service_time: 1ms, replicas: 10000%s}\n", i, calls)
	}
	y += "workload: {requests: 100}\nstrategies:\n  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 2}\n"
	sc := scenarioOf(t, y)
	n := Estimate(sc, Options{})
	assert.Equal(t, int64(300*50005), n.ServiceRows)
	_, err := Fit(sc, Options{}, 0)
	var se *scenarios.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "services[0].replicas", se.Path)
	assert.Contains(t, err.Error(), "300 buckets a run x 50,005 series (services and replicas) x 1 runs of each strategy make 15,001,500 rows of services.csv")
	_, err = FitUnits(sc, Options{}, 0)
	assert.NoError(t, err, "a sweep writes no services.csv")
	sc.Bucket = 10 * time.Second
	_, err = Fit(sc, Options{}, 0)
	assert.NoError(t, err, "a wider bucket: 1.5 million rows")
}

// TestScheduledMean: the expected arrivals of a schedule, in linear time
// where no steps overlap, are those of the rate in force integrated piece
// by piece (rateAt), steps in any order, clipped to the span; overlapping
// steps take the piecewise way.
func TestScheduledMean(t *testing.T) {
	piecewise := func(a scenarios.Arrival, end time.Duration) float64 {
		mean := 0.0
		for t := a.From; t < end; {
			rate, until := rateAt(a, end, t)
			mean += rate * (until - t).Seconds()
			t = until
		}
		return mean
	}
	s := time.Second
	tests := []scenarios.Arrival{
		{Rate: 5},
		{Rate: 5, From: 10 * s, Schedule: []scenarios.RateStep{{From: 30 * s, Until: 40 * s, Rate: 100}, {From: 0, Until: 20 * s, Rate: 0}, {From: 90 * s, Until: 200 * s, Rate: 7}}},
		{Rate: 1, Schedule: []scenarios.RateStep{{From: 10 * s, Until: 50 * s, Rate: 10}, {From: 20 * s, Until: 30 * s, Rate: 1000}}}, // overlapping: the first wins
	}
	for i, a := range tests {
		assert.InDelta(t, piecewise(a, 100*s), scheduledMean(a, 100*s), 1e-9, "arrival %d", i)
	}
	assert.InDelta(t, 1*60+10*40.0, scheduledMean(tests[2], 100*s), 1e-9)
}

// TestTheEstimateCountsEverySide: what the memory estimate counts beside
// a graph's call is what a run allocates there, side by side (a side
// added to the calls and not to sideNeeds.bytes fails it), on the files
// that use every field.
func TestTheEstimateCountsEverySide(t *testing.T) {
	files, err := filepath.Glob("../scenarios/testdata/valid/everything*.yaml")
	require.NoError(t, err)
	graphs := 0
	for _, file := range files {
		sc, err := scenarios.Load(file)
		require.NoError(t, err)
		if !sc.Graph() {
			continue
		}
		graphs++
		for i, st := range sc.Strategies {
			g := newGraph(sc, &sc.Strategies[i], 0, 1, true)
			var allocated int64
			sides := reflect.ValueOf(g.sides)
			for k := range sides.NumField() {
				if f := sides.Field(k); !f.IsNil() {
					allocated += int64(f.Type().Elem().Size())
				}
			}
			g.releaseQueue()
			assert.Equal(t, allocated, callSides(sc, Options{Strategies: []string{st.Name}}), "%s %s", file, st.Name)
		}
	}
	require.NotZero(t, graphs, "a graph that uses every field")
}

// TestEstimateCountsJobsOnTheirWayWhereTheNetworkDelays: an attempt on
// its way to the server is a job only with a network delay
// (metastable.yaml has one); without one (thundering-herd.yaml) the
// estimate must not name the network, nor for a server of model occ
// (aws-occ-10.yaml without its network), whose attempts are no jobs.
func TestEstimateCountsJobsOnTheirWayWhereTheNetworkDelays(t *testing.T) {
	paths := func(file string, network bool) []string {
		sc, err := scenarios.Load("../scenarios/" + file + ".yaml")
		require.NoError(t, err)
		if !network {
			sc.Network = scenarios.Network{}
		}
		var out []string
		for _, p := range Estimate(sc, Options{}).perRun {
			out = append(out, p.path)
		}
		return out
	}
	assert.Contains(t, paths("metastable", true), "network.latency")
	assert.NotContains(t, paths("thundering-herd", true), "network.latency")
	assert.NotContains(t, paths("aws-occ-10", false), "network.latency")
}
