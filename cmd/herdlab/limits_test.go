package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimit: a scenario whose runs cannot fit in memory is refused
// before anything runs, naming the field, the estimate and the limit.
func TestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "big.yaml", `name: big
server: {concurrency: 10}
workload:
  requests: 200000000
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("run", file, "-o", out, "--max-memory", "8GiB")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "big.yaml:4:13: workload.requests: a run needs about")
	assert.Contains(t, stderr, "200,000,000 requests x")
	assert.Contains(t, stderr, "the limit is 8.0 GB (--max-memory)")
	assert.NoDirExists(t, out, "nothing is written")

	code, _, stderr = herdlab("check", file, "--max-memory", "8GiB")
	assert.Equal(t, exitBadInput, code, "check refuses it too")
	assert.Contains(t, stderr, "workload.requests: a run needs about")

	// The default limit is this machine's.
	code, _, stderr = herdlab("run", file, "-o", out, "--max-memory", "100MB")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "the limit is 100 MB")

	for _, bad := range []string{"lots", "-1GB", "1e400"} {
		code, _, stderr = herdlab("run", file, "-o", out, "--max-memory", bad)
		assert.Equal(t, exitBadInput, code, bad)
		assert.Contains(t, stderr, "--max-memory", bad)
	}
}

func TestParseSize(t *testing.T) {
	for text, want := range map[string]int64{"0": 0, "512": 512, "1KB": 1 << 10, "8GiB": 8 << 30, "1.5 G": 3 << 29, "500mb": 500 << 20, "2T": 2 << 40} {
		got, err := parseSize(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
	for _, text := range []string{"", "GB", "x1", "-5", "1PB"} {
		_, err := parseSize(text)
		assert.Error(t, err, text)
	}
}

// TestFewerRunsAtOnceWhenMemoryIsShort: runs that fit one at a time but
// not all at once run one at a time, with the same results.
func TestFewerRunsAtOnceWhenMemoryIsShort(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	code, _, stderr := herdlab("run", file, "-o", a, "-q", "--no-charts", "--parallel", "2")
	require.Equal(t, exitOK, code, stderr)
	code, _, stderr = herdlab("run", file, "-o", b, "-q", "--no-charts", "--parallel", "2", "--max-memory", "70MB")
	require.Equal(t, exitOK, code, stderr)
	for _, name := range []string{"timeseries.csv", "summary.csv"} {
		wa, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		wb, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(wa, wb), name)
	}
}

// TestEventBudgetStopsARunaway: retries that never wait stop at the event
// budget with exit 1, naming the strategy, and the output folder of an
// earlier run is left whole.
func TestEventBudgetStopsARunaway(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "spin.yaml", `name: spin
server:
  concurrency: 10
  outages: [{start: 0s, duration: 10m}]
workload: {requests: 100}
strategies:
  - {name: patient, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
  - {name: spinning, backoff: {kind: fixed, delay: 1ns}}
`)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("run", file, "-o", out, "-q", "--strategy", "patient")
	require.Equal(t, exitOK, code, stderr)
	before, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)

	code, _, stderr = herdlab("run", file, "-o", out, "-q", "--max-events", "200000")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "strategy spinning stopped after 200,000 events")
	assert.Contains(t, stderr, "--max-events")
	after, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the earlier run's folder is left as it was")

	// Lint calls the setting an error, and check fails on it without --strict.
	code, stdout, _ := herdlab("check", file, "--lint")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stdout, "HL009 retry-spin")
	code, _, stderr = herdlab("run", file, "-o", out, "-q", "--strategy", "patient")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stderr, "herdlab run: lint error: "+file+":8:31: strategies[1].backoff: HL009 retry-spin: fixed waits at most 1ns", "run says so, and runs what it was asked")
	code, _, stderr = herdlab("validate", file)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stderr, "herdlab validate: lint error: ")

	code, _, stderr = herdlab("run", file, "-o", out, "--max-events", "0")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "--max-events 0: want a number of events >= 1")
}

// heapGoals runs herdlab in a process of its own with GODEBUG=gctrace=1
// and GOGC=gogc ("" for unset), and returns the heap goal of each
// collection it did not force, in MiB.
func heapGoals(t *testing.T, gogc string, args ...string) []int {
	t.Helper()
	cmd := herdlabProcess(args...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GODEBUG=")
	})
	cmd.Env = append(cmd.Env, "GODEBUG=gctrace=1")
	if gogc != "" {
		cmd.Env = append(cmd.Env, "GOGC="+gogc)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var goals []int
	for _, m := range regexp.MustCompile(`(?m)^gc \d+ .* (\d+) MB goal.*$`).FindAllStringSubmatch(stderr.String(), -1) {
		if strings.Contains(m[0], "(forced)") {
			continue
		}
		goal, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		goals = append(goals, goal)
	}
	return goals
}

// TestTheCommandKeepsAHeapFloor: herdlab's process lets its heap grow to
// sim.HeapFloor (32 MiB) before it collects, not to the runtime's 4 MiB,
// through 2,000 runs of a few clients; GOGC in the environment overrides
// the floor, and --max-memory bounds it.
func TestTheCommandKeepsAHeapFloor(t *testing.T) {
	args := []string{"run", "../../scenarios/aws-occ-10.yaml", "--runs", "400", "-q", "--no-charts", "-o", t.TempDir()}
	floor := heapGoals(t, "", args...)
	t.Logf("heap goals with the floor: %v MiB", floor)
	require.NotEmpty(t, floor, "the runs allocate enough to collect")
	assert.GreaterOrEqual(t, slices.Min(floor), 31)
	def := heapGoals(t, "100", args...)
	t.Logf("heap goals at GOGC=100: %v MiB", def)
	require.NotEmpty(t, def)
	assert.Less(t, slices.Min(def), 16, "GOGC overrides the floor")
	assert.Greater(t, len(def), len(floor), "more collections without the floor")

	// --max-memory bounds it: 64 MB leaves 16 MiB beside the program's
	// own 48, through a sweep of small runs.
	capped := heapGoals(t, "", "sweep", "../../scenarios/aws-occ-10.yaml", "--vary", "workload.requests=10,20,30,40", "--max-memory", "64MB", "-q", "--out", filepath.Join(t.TempDir(), "sweep"))
	t.Logf("heap goals under --max-memory 64MB: %v MiB", capped)
	require.NotEmpty(t, capped)
	assert.InDelta(t, 16, slices.Min(capped), 1, "the floor bounded, not gone")
}
