//go:build !race

// The phase diagram takes 2.5 s plainly and 40 s under the race detector,
// which adds nothing to a model's claim: make test runs this file in its
// second, plain go test.

package sweep

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestMetastablePhaseDiagram checks the claim of the phase diagram that
// scenarios/metastable.yaml ships: the longer and the stronger the
// trigger, the fewer strategies recover; immediate retries and 1 s full
// jitter latch beyond the shortest triggers, equal jitter with a 10 s
// base recovers from longer and stronger ones, and without retries the
// service always recovers. It runs a coarse grid of the shipped sweep's
// points, far from the edges, with the first 2 of its 10 runs.
func TestMetastablePhaseDiagram(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/metastable.yaml")
	require.NoError(t, err)
	require.NotNil(t, sc.Sweep, "metastable.yaml ships its phase diagram")
	assert.Equal(t, "workload.arrival.schedule[0].until", sc.Sweep.Vary[0].Path)
	assert.Equal(t, "workload.arrival.schedule[0].rate", sc.Sweep.Vary[1].Path)
	assert.Len(t, sc.Sweep.Vary[0].Values, 10)
	assert.Len(t, sc.Sweep.Vary[1].Values, 7)

	sc.Runs = 2
	vary := []scenarios.Vary{
		{Path: sc.Sweep.Vary[0].Path, Label: "trigger end", Values: []string{"21s", "22s", "24s", "27s", "30s"}},
		{Path: sc.Sweep.Vary[1].Path, Label: "surge rate", Values: []string{"900", "1000", "1400"}},
	}
	plan, err := NewPlan(context.Background(), sc, vary, "", nil)
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = plan.Run(context.Background(), dir, Options{})
	require.NoError(t, err)
	rs, err := Collect(dir)
	require.NoError(t, err)
	s, err := Build(rs, plan.Metric)
	require.NoError(t, err)

	// Recovered in both runs, along the trigger end, at each surge rate.
	const T, F = true, false
	want := map[string]map[string][]bool{
		"no-retries": {"900": {T, T, T, T, T}, "1000": {T, T, T, T, T}, "1400": {T, T, T, T, T}},
		"immediate":  {"900": {T, T, T, T, T}, "1000": {T, T, T, F, F}, "1400": {T, F, F, F, F}},
		// A 1 s jitter base brings the retries back before the service
		// drains: no better than immediate retries.
		"full-jitter-1s":   {"900": {T, T, T, T, T}, "1000": {T, T, T, F, F}, "1400": {T, F, F, F, F}},
		"equal-jitter-10s": {"900": {T, T, T, T, T}, "1000": {T, T, T, T, F}, "1400": {T, T, F, F, F}},
	}
	got := map[string]map[string][]bool{}
	for _, b := range s.Boundaries() {
		if got[b.Strategy] == nil {
			got[b.Strategy] = map[string][]bool{}
		}
		got[b.Strategy][b.Given[0]] = b.Recovered
	}
	assert.Equal(t, want, got)

	// Where immediate retries recover, equal jitter does too.
	for _, b := range s.Boundaries() {
		if b.Strategy != "immediate" {
			continue
		}
		for i, ok := range b.Recovered {
			if ok {
				assert.True(t, got["equal-jitter-10s"][b.Given[0]][i], "equal jitter at %s, %s", b.Given[0], vary[0].Values[i])
			}
		}
	}
	assert.Contains(t, s.BoundarySentences(), "equal-jitter-10s recovers for trigger end up to 22s, not from 24s, at surge rate = 1400")
	assert.Contains(t, s.BoundarySentences(), "no-retries recovers at every point of the sweep")
	p := s.Points[2*3+2] // 24s, 1400
	assert.Equal(t, []string{"24s", "1400"}, p.Values)
	_, ok := p.Strategies[1].Value("recovery_time_s")
	assert.False(t, ok, "a latched service has no recovery time")
}
