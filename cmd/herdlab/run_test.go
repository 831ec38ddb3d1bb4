package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/web"
)

const small = `name: small
duration: 2m
server:
  concurrency: 10
  queue: 100
  outages: [{start: 0s, duration: 10s, mode: refuse}]
workload:
  requests: 2000
strategies:
  - name: fixed
    backoff: {kind: fixed, delay: 15s}
    max_attempts: 5
  - name: jitter
    backoff: {kind: full-jitter, base: 1s, cap: 30s}
    max_attempts: 5
`

func writeScenario(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestRunWritesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := herdlab("run", file, "--out", out, "--runs", "2")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "small: 2,000 requests in a burst")
	assert.Contains(t, stdout, "report: "+filepath.Join(out, "report.md"))
	for _, name := range []string{"summary.json", "summary.csv", "timeseries.csv", "report.md", "report.html",
		"load.png", "recovery.png", "latency.png", "queue.png", "amplification.png"} {
		assert.FileExists(t, filepath.Join(out, name))
	}
	f, err := os.Open(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadJSON(f)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Runs, "--runs overrides the file")
	require.Len(t, s.Strategies, 2)
	assert.Equal(t, 2000.0, s.Strategies[0].Requests)
	assert.NotNil(t, s.Strategies[0].CI95)
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "HerdlabCharts.render(", "report.html draws its charts in the page")
	assert.Contains(t, string(page), web.ChartScript(), "with the chart component inlined")
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "(load.png)", "report.md keeps its images")
}

func TestRunChartFormats(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	svg := filepath.Join(dir, "svg")
	code, stdout, stderr := herdlab("run", file, "-o", svg, "--format", "svg", "--overlay")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "charts: "+filepath.Join(svg, "{load,recovery,latency,queue,amplification}.svg"))
	data, err := os.ReadFile(filepath.Join(svg, "load.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "<svg")
	report, err := os.ReadFile(filepath.Join(svg, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "(load.svg)")

	none := filepath.Join(dir, "none")
	code, _, stderr = herdlab("run", file, "-o", none, "--no-charts", "-q")
	require.Equal(t, exitOK, code, stderr)
	assert.NoFileExists(t, filepath.Join(none, "load.png"))
	assert.FileExists(t, filepath.Join(none, "report.html"))
	page, err := os.ReadFile(filepath.Join(none, "report.html"))
	require.NoError(t, err)
	assert.NotContains(t, string(page), "<script", "--no-charts: no charts in the page either")

	code, _, stderr = herdlab("run", file, "-o", filepath.Join(dir, "bad"), "--format", "gif")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, `--format "gif": want png or svg`)
}

func TestRunOneStrategyAndSeed(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := herdlab("run", file, "-o", out, "--strategy", "jitter", "--seed", "7", "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "; strategies: jitter\n", "the header names only what ran")
	f, err := os.Open(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadJSON(f)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), s.Seed)
	require.Len(t, s.Strategies, 1)
	assert.Equal(t, "jitter", s.Strategies[0].Name)
}

func TestRunBadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	good := writeScenario(t, dir, "small.yaml", small)
	bad := writeScenario(t, dir, "bad.yaml", "server: {concurrency: 0}\n")
	out := filepath.Join(dir, "out")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an invalid file", []string{"run", good, bad, "--out", out}, "bad.yaml:1:23: server.concurrency: must be >= 1 or unlimited, got 0"},
		{"an unknown strategy", []string{"run", good, "--out", out, "--strategy", "nope"}, `scenario small has no strategy "nope" (it has fixed, jitter)`},
		{"zero runs", []string{"run", good, "--out", out, "--runs", "0"}, "runs: must be >= 1, got 0"},
		{"no file", []string{"run"}, "name at least one scenario file"},
		{"a missing file", []string{"run", filepath.Join(dir, "nope.yaml")}, "nope.yaml:1:1: cannot read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := herdlab(tt.args...)
			assert.Equal(t, exitBadInput, code)
			assert.Contains(t, stderr, tt.want)
			assert.NoDirExists(t, out, "nothing is written")
		})
	}
}

// TestRunReplacesItsFolderWhole: a re-run leaves no file of the run before
// (charts it no longer draws), and a folder that is unusable is refused
// before anything is simulated.
func TestRunReplacesItsFolderWhole(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("run", file, "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	assert.FileExists(t, filepath.Join(out, "load.png"))

	code, _, stderr = herdlab("run", file, "-o", out, "-q", "--no-charts", "--strategy", "jitter")
	require.Equal(t, exitOK, code, stderr)
	assert.NoFileExists(t, filepath.Join(out, "load.png"), "the first run's charts are gone with it")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "small.yaml and out, no temporary folder")

	mine := filepath.Join(dir, "mine")
	require.NoError(t, os.MkdirAll(mine, 0o755))
	writeScenario(t, mine, "notes.txt", "mine")
	code, _, stderr = herdlab("run", file, "-o", mine, "-q")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "notes.txt and no summary.json")
	assert.FileExists(t, filepath.Join(mine, "notes.txt"))

	blocked := filepath.Join(dir, "small.yaml", "out") // a file where a folder should be
	code, _, stderr = herdlab("run", file, "-o", blocked, "-q")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "cannot write the output folder "+blocked)

	code, _, stderr = herdlab("run", file, file, "-o", filepath.Join(dir, "twice"), "-q")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "both write "+filepath.Join(dir, "twice", "small"))
	assert.NoDirExists(t, filepath.Join(dir, "twice", "small"))
}

// TestRunRemovesWhatAKilledRunLeft: a run killed (SIGKILL) while it
// simulates leaves its staging folder beside the output folder; the next
// run into that folder removes it.
func TestRunRemovesWhatAKilledRunLeft(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "small.yaml", small)
	long := writeScenario(t, dir, "long.yaml", strings.Replace(small, "requests: 2000", "requests: 1000000\nruns: 50", 1))
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("run", file, "-o", out, "-q", "--no-charts")
	require.Equal(t, exitOK, code, stderr)

	p := herdlabProcess("run", long, "-o", out, "-q", "--no-charts", "--parallel", "1")
	require.NoError(t, p.Start())
	var left []string
	deadline := time.Now().Add(30 * time.Second)
	for len(left) == 0 && time.Now().Before(deadline) {
		left, _ = filepath.Glob(filepath.Join(dir, ".out.new-*"))
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, p.Process.Signal(syscall.SIGKILL))
	p.Wait()
	require.NotEmpty(t, left, "the killed run had staged its folder")
	require.DirExists(t, left[0], "and left it")

	code, _, stderr = herdlab("run", file, "-o", out, "-q", "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"long.yaml", "out", "small.yaml"}, names, "the killed run's folder is gone")
}
