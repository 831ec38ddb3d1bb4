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
	real := readSummary(t, out)

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

// replayMeans replays real-mode.yaml's strategies against args' target
// (none: in-process) at a fifth of real time, 3 runs each, and checks
// that each strategy's mean peak load and recovery time are within 15%
// of the simulation's, as TestReplayAgreesWithTheSimulation does.
func replayMeans(t *testing.T, args ...string) {
	t.Helper()
	const runs = 3
	out := filepath.Join(t.TempDir(), "out")
	args = append([]string{"replay", "../../scenarios/real-mode.yaml", "--time-scale", "0.2", "--runs", strconv.Itoa(runs), "-o", out, "-q"}, args...)
	code, _, stderr := herdlab(args...)
	require.Equal(t, exitOK, code, stderr)
	real := readSummary(t, out)
	sc, err := scenarios.Load("../../scenarios/real-mode.yaml")
	require.NoError(t, err)
	sc.Runs = runs
	simulated, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	require.Len(t, real.Strategies, len(simulated.Summary.Strategies))
	for i, r := range real.Strategies {
		s := simulated.Summary.Strategies[i]
		require.NotNil(t, r.RecoveryTimeS, "%s: the real server recovers", r.Name)
		require.NotNil(t, s.RecoveryTimeS)
		t.Logf("%s: peak load: real %v, simulated %v; recovery: real %vs, simulated %vs; processed %v", r.Name, r.PeakLoad, s.PeakLoad, *r.RecoveryTimeS, *s.RecoveryTimeS, r.Processed)
		assert.InEpsilon(t, s.PeakLoad, r.PeakLoad, 0.15, "%s: peak load within 15%%", r.Name)
		assert.InDelta(t, *s.RecoveryTimeS, *r.RecoveryTimeS, max(0.15**s.RecoveryTimeS, sc.Bucket.Seconds()), "%s: recovery time within 15%% (or a bucket)", r.Name)
		assert.InEpsilon(t, s.Delivered, r.Delivered, 0.02, r.Name)
		assert.Positive(t, r.Processed, "%s: the server's counts", r.Name)
	}
}

func TestReplayAgreesWithTheSimulationAgainstServe(t *testing.T) {
	// Both strategies of the real-mode scenario, 3 runs each, one after
	// another against one herdlab serve, whose clock each run resets:
	// each agrees with the simulation as the in-process server does.
	if testing.Short() {
		t.Skip("a minute of wall time")
	}
	work, control, _ := serveProcess(t, "--scenario", "../../scenarios/real-mode.yaml", "--time-scale", "0.2")
	replayMeans(t, "--target", work, "--control", control)
}

func TestReplayAgreesWithTheSimulationOrSaysSoAt50000Requests(t *testing.T) {
	// 50,000 webhooks in one burst, and a fixed retry that brings them
	// back as one herd. Replay sizes its connections to the 2,500
	// attempts the server holds at once. Either the real run agrees
	// with the simulation, or it says that it could not send the herd
	// as simulated and exits 1; it never exits 0 with figures that do
	// not agree. Waits for a connection are never counted as timeouts.
	if testing.Short() {
		t.Skip("20 s of wall time")
	}
	dir := t.TempDir()
	file := writeScenario(t, dir, "herd.yaml", herd50k)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "-o", out, "-q")
	real := readSummary(t, out)
	sc, err := scenarios.Load(file)
	require.NoError(t, err)
	simulated, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	r, s := real.Strategies[0], simulated.Summary.Strategies[0]
	t.Logf("exit %d; amplification real %v, simulated %v; peak real %v, simulated %v; timed out real %v; %s", code, r.Amplification, s.Amplification, r.PeakLoad, s.PeakLoad, r.TimedOut, stderr)
	assert.Equal(t, 50000.0, r.Requests)
	assert.Equal(t, s.TimedOut, r.TimedOut, "no wait for a connection counted as a timeout")
	assert.Zero(t, r.Duplicates)
	switch code {
	case exitOK:
		assert.InEpsilon(t, s.Amplification, r.Amplification, 0.15)
		assert.InEpsilon(t, s.PeakLoad, r.PeakLoad, 0.15)
	case exitFailed:
		assert.Contains(t, stderr, "went out more than")
		assert.Contains(t, stderr, "the herd did not go out as simulated")
	default:
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestGraphReplayAgreesWithTheSimulation(t *testing.T) {
	// The shipped three-layer chain over real HTTP at half real time,
	// every replica a test server and every inner call a real request
	// retried by its edge's policy: at every layer, peak load and
	// amplification within 15% of the simulation's, as means over 2
	// runs of each strategy (one real run of every-layer peaks at the
	// database within about 3% of the simulated 2,134/s).
	if testing.Short() {
		t.Skip("50 s of wall time")
	}
	const runs = 2
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := herdlab("replay", "../../scenarios/real-graph.yaml", "--time-scale", "0.5", "--runs", strconv.Itoa(runs), "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	real := readSummary(t, out)
	sc, err := scenarios.Load("../../scenarios/real-graph.yaml")
	require.NoError(t, err)
	sc.Runs = runs
	simulated, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	require.Len(t, real.Strategies, 2)
	for i, r := range real.Strategies {
		s := simulated.Summary.Strategies[i]
		require.Len(t, r.Services, 3, r.Name)
		for k, rs := range r.Services {
			ss := s.Services[k]
			t.Logf("%s, %s: peak real %.0f, simulated %.0f; amplification real %.2f, simulated %.2f", r.Name, rs.Name, rs.PeakLoadOverall, ss.PeakLoadOverall, rs.Amplification, ss.Amplification)
			assert.InEpsilon(t, ss.PeakLoadOverall, rs.PeakLoadOverall, 0.15, "%s, %s: peak load", r.Name, rs.Name)
			assert.InEpsilon(t, ss.Amplification, rs.Amplification, 0.15, "%s, %s: amplification", r.Name, rs.Name)
			assert.Positive(t, rs.Processed, "%s, %s: the replicas' counts", r.Name, rs.Name)
		}
		assert.InEpsilon(t, s.Delivered, r.Delivered, 0.05, r.Name)
	}
	assert.Greater(t, real.Strategies[0].Services[2].Amplification, 4*real.Strategies[1].Services[2].Amplification,
		"for real too, retries at every layer multiply at the database")
	cmp, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	assert.Contains(t, string(cmp), "every-layer: peak load and amplification agree within 15% at every service")
	assert.Contains(t, string(cmp), "| every-layer | db: amplification |")
}
