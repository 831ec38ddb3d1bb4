//go:build !race

// The race detector slows real time down unevenly, so the agreement of a
// real-HTTP replay with the simulation is measured without it: make test
// runs this file in a second, plain go test.

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

func TestReplayAgreesWithTheSimulation(t *testing.T) {
	// The shipped real-mode scenario over real HTTP at a fifth of real
	// time: peak load and recovery time within 15% of the simulation's,
	// as means over 3 runs (the peak of one real run ranges over about
	// 370-470 against the simulation's 380).
	if testing.Short() {
		t.Skip("30 s of wall time")
	}
	const runs = 3
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := herdlab("replay", "../../scenarios/real-mode.yaml", "--strategy", "full-jitter", "--time-scale", "0.2", "--runs", strconv.Itoa(runs), "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	f, err := os.Open(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	real, err := results.ReadJSON(f)
	require.NoError(t, err)

	sc, err := scenarios.Load("../../scenarios/real-mode.yaml")
	require.NoError(t, err)
	sc.Runs = runs
	simulated, err := sim.Run(context.Background(), sc, sim.Options{Strategies: []string{"full-jitter"}})
	require.NoError(t, err)
	r, s := real.Strategies[0], simulated.Summary.Strategies[0]
	require.NotNil(t, r.RecoveryTimeS, "the real server recovers")
	require.NotNil(t, s.RecoveryTimeS)
	t.Logf("peak load: real %v, simulated %v; recovery: real %vs, simulated %vs", r.PeakLoad, s.PeakLoad, *r.RecoveryTimeS, *s.RecoveryTimeS)
	assert.InEpsilon(t, s.PeakLoad, r.PeakLoad, 0.15, "peak load within 15%")
	assert.InDelta(t, *s.RecoveryTimeS, *r.RecoveryTimeS, max(0.15**s.RecoveryTimeS, sc.Bucket.Seconds()), "recovery time within 15% (or a bucket)")
	assert.InEpsilon(t, s.Delivered, r.Delivered, 0.02)
	cmp, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	assert.Contains(t, string(cmp), "full-jitter: peak load and recovery time agree within 15%", "comparison.md states it")
}
