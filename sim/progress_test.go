package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestWorkDone pins the measure of a run's work: the share of the
// horizon passed until requests finish, then the events against those
// the finishing rate says the run will take.
func TestWorkDone(t *testing.T) {
	const horizon = 100 * time.Second
	tests := []struct {
		name          string
		now           time.Duration
		events, first int64
		finished      int64
		expected      float64
		want          float64
	}{
		{"nothing yet", 0, 0, -1, 0, 1000, 0},
		{"an outage: time only", 3 * time.Second, 600, -1, 0, 1000, 0.03},
		{"expected unknown: time only", 20 * time.Second, 600, 500, 10, 0, 0.2},
		// From 600 events, 10% of the requests finished in 40 events:
		// 600 + 40/0.1 = 1,000 events in all.
		{"draining", 4 * time.Second, 640, 600, 100, 1000, 0.64},
		{"half drained", 5 * time.Second, 800, 600, 500, 1000, 0.8},
		{"every request finished", 6 * time.Second, 1000, 600, 1000, 1000, 1},
		{"more than expected (poisson)", 6 * time.Second, 1000, 600, 1200, 1000, 1},
		{"time ahead of the work", 90 * time.Second, 700, 600, 100, 1000, 0.9},
		{"past the horizon", 200 * time.Second, 10, -1, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, workDone(tt.now, horizon, tt.events, tt.first, tt.finished, tt.expected), 1e-9)
		})
	}
}

// progressTrace runs the first strategy of the scenario in yaml once,
// and returns, at each report of its progress, the events so far and the
// units reported in all, with the run's events.
func progressTrace(t *testing.T, yaml string) (reports [][2]int64, events int64) {
	t.Helper()
	sc, err := scenarios.Parse("progress.yaml", []byte(yaml))
	require.NoError(t, err)
	g := newRun(sc, 0, 0, RunSeed(sc.Seed, 0))
	var done int64
	g.setLimits(func(n int) {
		assert.Positive(t, n, "a report adds units")
		done += int64(n)
		reports = append(reports, [2]int64{g.events, done})
	}, expectedRequests(sc), 0)
	r, err := g.simulate(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, reports)
	assert.EqualValues(t, ProgressUnits, done, "a run is ProgressUnits units")
	return reports, r.Events
}

// TestProgressMeasuresTheWork: a herd's run stops when its last request
// is finished, at a sixth of its horizon; its progress follows the work,
// near its end by the end of the work, where the share of the horizon
// passed said 17% (and the bar sat there until the run ended).
func TestProgressMeasuresTheWork(t *testing.T) {
	reports, events := progressTrace(t, `
seed: 1
duration: 15m
server: {concurrency: 100, service_time: {dist: exponential, mean: 100ms}, queue: 1000, outages: [{start: 0s, duration: 30s, mode: refuse}]}
workload: {requests: 50000, arrival: {kind: burst, at: 0s}}
strategies: [{name: full-jitter, backoff: {kind: full-jitter, base: 1s, cap: 60s}, max_attempts: 10, timeout: 10s}]
`)
	require.Greater(t, len(reports), 4, "reports every checkEvery events")
	last := reports[len(reports)-2] // the last before the run's end
	assert.GreaterOrEqual(t, last[1], int64(80), "at %d of %d events", last[0], events)
	assert.InDelta(t, float64(last[0])/float64(events), float64(last[1])/ProgressUnits, 0.15, "at %d of %d events", last[0], events)
	assert.Equal(t, events, reports[len(reports)-1][0], "the rest at the end")
}

// TestProgressIsLinearInEvents: for a steady load, halfway through a
// run's events its progress is about half.
func TestProgressIsLinearInEvents(t *testing.T) {
	reports, events := progressTrace(t, `
seed: 1
duration: 10m
server: {concurrency: 200, service_time: {dist: exponential, mean: 100ms}, queue: 1000}
workload: {requests: 200000, arrival: {kind: poisson, rate: 1000}}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	require.Greater(t, len(reports), 4)
	for _, r := range reports[:len(reports)-1] {
		assert.InDelta(t, float64(r[0])/float64(events), float64(r[1])/ProgressUnits, 0.1, "at %d of %d events", r[0], events)
	}
}
