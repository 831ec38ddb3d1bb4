package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// readSummary reads dir/summary.json.
func readSummary(t *testing.T, dir string) *results.Summary {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadJSON(f)
	require.NoError(t, err)
	return s
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	// Buckets of 10 s: at scale 0.1 an attempt is late after 250 ms of
	// wall time, which a burst of 200 keeps to under the race detector
	// on a busy machine.
	file := writeScenario(t, dir, "lossy.yaml", `name: lossy
duration: 20s
bucket: 10s
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
	code, stdout, stderr := herdlab("replay", file, "--time-scale", "0.1", "-o", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "lossy over real HTTP (time scale 0.1)")
	for _, name := range []string{"summary.json", "timeseries.csv", "report.md", "report.html", "load.png", "comparison.md", "comparison.png", "dlq.jsonl"} {
		assert.FileExists(t, filepath.Join(out, name))
	}
	s := readSummary(t, out)
	st := s.Strategies[0]
	assert.Equal(t, 200.0, st.Requests)
	assert.Equal(t, st.Requests, st.Delivered+st.DeadLettered+st.Unfinished, "conservation")
	assert.Positive(t, st.Duplicates, "lost responses retried without idempotency are processed twice, counted by the server")
	assert.Empty(t, st.Services, "a single server's run has no services, as the simulator's has none")
	assert.Empty(t, st.Edges)
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"services"`)
	assert.NotContains(t, string(raw), `"edges"`)

	cmp, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	for _, figure := range []string{"peak load (after the outage)", "recovery time (s)", "amplification", "delivered", "duplicates",
		"attempts", "responses lost", "processed"} {
		assert.Contains(t, string(cmp), "| full-jitter | "+figure+" |", "every figure either side has is compared")
	}
	assert.NotContains(t, string(cmp), "| full-jitter | hedges |", "not one that neither has")
	assert.Regexp(t, `full-jitter: .*(and so do the other figures compared|these figures do not: |nor do these figures: |the other figures compared agree)`, string(cmp),
		"the verdict covers every figure")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".new-", "no staging folder left behind")
	}
}

func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	// An earlier replay's folder, which bad input must leave alone.
	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	old := map[string]string{"dlq.jsonl": `{"request":1}` + "\n", "summary.json": "{}\n"}
	for name, text := range old {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(text), 0o644))
	}
	stray := filepath.Join(dir, "stray")
	require.NoError(t, os.MkdirAll(stray, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "notes.txt"), []byte("mine"), 0o644))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "name one scenario file"},
		{[]string{"replay", file, "--time-scale", "-1"}, "--time-scale -1: want a finite number > 0"},
		{[]string{"replay", file, "--strategy", "nope"}, `no strategy "nope"`},
		{[]string{"replay", file, "--max-conns", "-1"}, "--max-conns -1: want a number >= 0"},
		{[]string{"replay", file, "--runs", "0"}, "--runs 0: want a number >= 1"},
		{[]string{"replay", file, "--parallel", "2"}, "unknown flag: --parallel"},
		{[]string{"replay", file, "--target", "127.0.0.1:8080"}, "--target: "},
		{[]string{"replay", file, "--control", "http://127.0.0.1:1/"}, "--control needs --target"},
		{[]string{"replay", file, "--target", "http://127.0.0.1:1/", "--control", "ftp://x/"}, "--control: "},
		{[]string{"replay", file, "--target", "http://127.0.0.1:1/"}, "--target without --control: 2 runs (2 strategies x 1)"},
		{[]string{"replay", file, "--target", "http://127.0.0.1:1/", "--control", "http://127.0.0.1:1/"}, "--control http://127.0.0.1:1/: "},
		{[]string{"replay", file, "-o", stray}, "--out: "},
	}
	for _, tt := range tests {
		args := tt.args
		if len(args) > 1 && !slicesContains(args, "-o") {
			args = append(args, "-o", out)
		}
		start := time.Now()
		code, _, stderr := herdlab(args...)
		assert.Equal(t, exitBadInput, code, tt.args)
		assert.Contains(t, stderr, tt.want, tt.args)
		assert.Less(t, time.Since(start), 2*time.Second, "refused before replaying: %v", tt.args)
	}
	for name, text := range old {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		assert.Equal(t, text, string(b), "%s untouched", name)
	}
	b, err := os.ReadFile(filepath.Join(stray, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// herd50k is a herd of 50,000 webhooks into a 5 s refusal, and the fixed
// 5 s retry that brings them back as one.
const herd50k = `name: herd-50k
description: 50,000 webhooks in one burst into a 5 s refusal.
duration: 25s
server:
  concurrency: 500
  service_time: {dist: exponential, mean: 50ms}
  queue: 2000
  outages: [{start: 0s, duration: 5s, mode: refuse}]
workload: {requests: 50000}
strategies:
  - {name: fixed-5s, backoff: {kind: fixed, delay: 5s}, max_attempts: 4, timeout: 10s}
`

func TestReplayRefusesAHerdItCannotSend(t *testing.T) {
	// The 2,500 attempts that the server holds at once after the outage
	// need 2,500 connections (and a quarter more): 256 would smear the
	// herd over seconds. Replay says so before it starts, and writes
	// nothing.
	dir := t.TempDir()
	file := writeScenario(t, dir, "herd.yaml", herd50k)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "--max-conns", "256", "-o", out)
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "--max-conns 256: the simulation holds up to 2500 attempts at the server at once (fixed-5s, run 1, at t=5s)")
	assert.Contains(t, stderr, "raise --max-conns to 3125")
	assert.NoDirExists(t, out)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the scenario: no staging folder left")

	limit, ok := realhttp.OpenFileLimit()
	if !ok || limit > 1<<20 {
		return
	}
	code, _, stderr = herdlab("replay", file, "--max-conns", strconv.FormatUint(limit, 10), "-o", out)
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "ulimit -n", "the open-file limit binds")
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
	s := readSummary(t, out)
	assert.True(t, s.Partial)
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "Partial results")
}

func TestReplayKeepsTheOldFolderUntilDone(t *testing.T) {
	// A second replay into the folder of a first: until it is done, the
	// first's dead letters and summary are there, whole; then the
	// folder is the second's, whole.
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	first := []byte(`{"scenario": "first"}` + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(out, "summary.json"), first, 0o644))
	letters := filepath.Join(out, "dlq.jsonl")
	oldLetters := []byte(`{"request":7,"key":"k","reason":"max_attempts","attempts":8,"t":1}` + "\n")
	require.NoError(t, os.WriteFile(letters, oldLetters, 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"replay", "../../scenarios/real-mode.yaml", "--time-scale", "0.2", "--strategy", "full-jitter", "-o", out, "-q"}, io.Discard, io.Discard)
	}()
	// The second is under way when its staged dead-letter file exists.
	require.Eventually(t, func() bool {
		staged, _ := filepath.Glob(filepath.Join(dir, ".out.new-*", "dlq.jsonl"))
		return len(staged) == 1
	}, 10*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	now, err := os.ReadFile(letters)
	require.NoError(t, err)
	assert.Equal(t, oldLetters, now, "the old dead letters are untouched while the replay runs")
	summary, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	assert.Equal(t, first, summary)
	cancel() // as SIGINT: the partial results replace the folder whole
	assert.Equal(t, exitFailed, <-done)
	s := readSummary(t, out)
	assert.True(t, s.Partial)
	assert.Equal(t, "real-mode", s.Scenario, "the second replay's")
	now, err = os.ReadFile(letters)
	require.NoError(t, err)
	assert.NotEqual(t, oldLetters, now)
	left, _ := filepath.Glob(filepath.Join(dir, ".out.*"))
	assert.Empty(t, left, "no staging folder left")
}

// serveProcess runs herdlab serve with args in a process of its own
// until the test ends (then SIGINT stops it), and returns its work and
// control URLs and what it prints.
func serveProcess(t *testing.T, args ...string) (work, control string, stdout *syncBuffer) {
	t.Helper()
	cmd := herdlabProcess(append([]string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("serve did not stop on SIGINT")
		}
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err, "serve's stderr: %s", stderr)
	stdout = &syncBuffer{}
	stdout.Write([]byte(line))
	go io.Copy(stdout, r)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/) \((?:metrics and )?control at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1], m[2], stdout
}

// serveForTest is serveProcess, in this process: a goroutine runs
// herdlab serve until the test ends.
func serveForTest(t *testing.T, args ...string) (work, control string, stdout *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, args...), w, io.Discard)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	stdout = &syncBuffer{}
	stdout.Write([]byte(line))
	go io.Copy(stdout, r)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/) \((?:metrics and )?control at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1], m[2], stdout
}

func TestReplayAgainstServeResetsEachRun(t *testing.T) {
	// Two strategies against one herdlab serve: each run starts from
	// t=0 of the target's clock, so each meets the outage at its start.
	dir := t.TempDir()
	file := writeScenario(t, dir, "two.yaml", `name: two
duration: 10s
bucket: 10s
server:
  concurrency: 20
  service_time: 10ms
  outages: [{start: 0s, duration: 2s, mode: refuse}]
workload: {requests: 50}
strategies:
  - {name: fixed, backoff: {kind: fixed, delay: 3s}, max_attempts: 3}
  - {name: jitter, backoff: {kind: full-jitter, base: 1s, cap: 3s}, max_attempts: 5}
`)
	work, control, served := serveProcess(t, "--scenario", file, "--time-scale", "0.1")
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "--target", work, "--control", control, "--time-scale", "0.1", "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, 2, strings.Count(served.String(), "scenario clock reset to 0"), served.String())
	assert.Equal(t, 3, strings.Count(served.String(), "refuse outage starts"), "at serve's start, and at each reset")

	f, err := os.Open(filepath.Join(out, "timeseries.csv"))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	failed := map[string]int{}
	for _, row := range rows[1:] {
		if row[2] == "0" { // the first bucket: the outage
			failed[row[0]], _ = strconv.Atoi(row[5])
		}
	}
	assert.GreaterOrEqual(t, failed["fixed"], 50, "every first attempt refused")
	assert.GreaterOrEqual(t, failed["jitter"], 50, "the second strategy met the outage too")
	s := readSummary(t, out)
	for _, st := range s.Strategies {
		assert.GreaterOrEqual(t, st.Delivered, 45.0, st.Name)
		assert.Equal(t, st.Delivered, st.Processed, "the target's counts, through its control endpoint: %s", st.Name)
	}

	// The same target, another time scale: refused.
	code, _, stderr = herdlab("replay", file, "--target", work, "--control", control, "--time-scale", "0.2", "-o", out, "-q")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "the target runs at time scale 0.1, the replay at 0.2")
}

func TestReplaySingleServerInProcessAsAgainstServe(t *testing.T) {
	// A single server with deadline propagation, replayed in process and
	// against a herdlab serve: both drop the work whose attempt gave up
	// (and do the other strategy's for no one), and neither writes
	// services nor edges into summary.json. Against serve, each run's
	// reset tells serve whose deadline it serves. (An attempt has 300 ms
	// to reach the server: on a loaded machine, one that took longer
	// than a shorter timeout was given up before the server read it.)
	dir := t.TempDir()
	file := writeScenario(t, dir, "deadlines.yaml", `name: deadlines
duration: 10s
bucket: 10s
server: {service_time: {dist: constant, mean: 1s}}
workload: {requests: 5, arrival: {kind: uniform, from: 0s, until: 50ms}}
strategies:
  - {name: done, backoff: {kind: none}, max_attempts: 1, timeout: 300ms}
  - {name: dropped, backoff: {kind: none}, max_attempts: 1, timeout: 300ms, deadline_propagation: true}
`)
	work, control, _ := serveProcess(t, "--scenario", file)
	paths := map[string][]string{
		"in process":    nil,
		"against serve": {"--target", work, "--control", control},
	}
	type figures struct{ Processed, Wasted map[string]float64 }
	got := map[string]figures{}
	for path, args := range paths {
		out := filepath.Join(dir, strings.ReplaceAll(path, " ", "-"))
		code, _, stderr := herdlab(append([]string{"replay", file, "-o", out, "-q"}, args...)...)
		require.Equal(t, exitOK, code, "%s: %s", path, stderr)
		f := figures{map[string]float64{}, map[string]float64{}}
		for _, st := range readSummary(t, out).Strategies {
			f.Processed[st.Name], f.Wasted[st.Name] = st.Processed, st.Wasted
			assert.Empty(t, st.Services, "%s: %s", path, st.Name)
			assert.Empty(t, st.Edges, "%s: %s", path, st.Name)
		}
		got[path] = f
		raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
		require.NoError(t, err)
		assert.NotContains(t, string(raw), `"services"`, path)
		assert.NotContains(t, string(raw), `"edges"`, path)
	}
	assert.Equal(t, figures{map[string]float64{"done": 5, "dropped": 0}, map[string]float64{"done": 5, "dropped": 0}}, got["in process"])
	assert.Equal(t, got["in process"], got["against serve"], "the same server, in process or served")
}

func TestReplayRefusesATargetWithoutCounts(t *testing.T) {
	// A bare test server (as an older herdlab serve ran a single server)
	// serves the same server section but reports no counts: replay
	// refuses it before replaying, rather than leave the server's
	// figures at 0.
	dir := t.TempDir()
	file := writeScenario(t, dir, "one.yaml", `name: one
duration: 10s
server: {service_time: 1ms}
workload: {requests: 1}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`)
	sc, err := scenarios.Load(file)
	require.NoError(t, err)
	srv, err := realhttp.NewServer(sc, realhttp.ServerOptions{})
	require.NoError(t, err)
	require.NoError(t, srv.Start(""))
	t.Cleanup(func() { assert.NoError(t, srv.Shutdown(context.Background())) })
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != realhttp.ControlStatePath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		assert.NoError(t, json.NewEncoder(w).Encode(srv.State()))
	}))
	t.Cleanup(admin.Close)
	out := filepath.Join(dir, "out")
	start := time.Now()
	code, _, stderr := herdlab("replay", file, "--target", srv.URL(), "--control", admin.URL+"/", "-o", out, "-q")
	assert.Equal(t, exitBadInput, code, stderr)
	assert.Contains(t, stderr, "the target reports no counts")
	assert.Less(t, time.Since(start), 2*time.Second, "refused before replaying")
	assert.NoDirExists(t, out)
}

// TestReplayWithoutAnOutageOwesNoRecovery: over real HTTP as in the
// simulation, a scenario without an outage has no recovery figure:
// summary.json says no_outage, the table "no outage", and comparison.md
// shows no recovery time ("never" would be false).
func TestReplayWithoutAnOutageOwesNoRecovery(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "calm.yaml", `name: calm
duration: 20s
bucket: 10s
server: {concurrency: 10, service_time: 20ms}
workload:
  requests: 200
  arrival: {kind: uniform, from: 0s, until: 10s}
strategies:
  - {name: jitter, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
`)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := herdlab("replay", file, "--time-scale", "0.1", "-o", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `jitter\s+.*\bno outage\b`, stdout)
	s := readSummary(t, out)
	assert.Equal(t, "no_outage", s.Strategies[0].Recovery)
	assert.Nil(t, s.Strategies[0].RecoveryTimeS)
	comparison, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(comparison), "recovery time (s) | never")
}
