package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "lossy.yaml", `name: lossy
duration: 20s
server:
  concurrency: 20
  service_time: {dist: exponential, mean: 20ms}
  outages: [{start: 0s, duration: 2s, mode: refuse}]
  response_loss: 0.2
workload: {requests: 200}
strategies:
  - {name: full-jitter, backoff: {kind: full-jitter, base: 500ms, cap: 5s}, max_attempts: 10}
`)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := herdlab("replay", file, "--time-scale", "0.05", "-o", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "lossy over real HTTP (time scale 0.05)")
	for _, name := range []string{"summary.json", "timeseries.csv", "report.md", "report.html", "load.png", "comparison.md", "comparison.png", "dlq.jsonl"} {
		assert.FileExists(t, filepath.Join(out, name))
	}
	f, err := os.Open(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadJSON(f)
	require.NoError(t, err)
	st := s.Strategies[0]
	assert.Equal(t, 200.0, st.Requests)
	assert.Equal(t, st.Requests, st.Delivered+st.DeadLettered+st.Unfinished, "conservation")
	assert.Positive(t, st.Duplicates, "lost responses retried without idempotency are processed twice, counted by the server")

	cmp, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	assert.Contains(t, string(cmp), "| full-jitter | amplification |")
	assert.Equal(t, 5, strings.Count(string(cmp), "| full-jitter |"))
}

func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "name one scenario file"},
		{[]string{"replay", file, "--time-scale", "-1"}, "--time-scale -1: want a number > 0"},
		{[]string{"replay", file, "--strategy", "nope"}, `no strategy "nope"`},
	}
	for _, tt := range tests {
		code, _, stderr := herdlab(tt.args...)
		assert.Equal(t, exitBadInput, code, tt.args)
		assert.Contains(t, stderr, tt.want, tt.args)
	}
}

func TestReplayInterruptedWritesPartialResults(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(500*time.Millisecond, cancel) // as SIGINT would
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"replay", "../../scenarios/real-mode.yaml", "--time-scale", "0.2", "-o", out, "-q"}, &stdout, &stderr)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr.String(), "interrupted: the results are partial")
	f, err := os.Open(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadJSON(f)
	require.NoError(t, err)
	assert.True(t, s.Partial)
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "Partial results")
}
