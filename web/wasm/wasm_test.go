package main_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web/lab"
)

// wallS matches the engine's wall time in a summary.json, the one figure
// that may differ from run to run.
var wallS = regexp.MustCompile(`"wall_s": [-0-9.e+]+`)

func normalize(summary []byte) string {
	return wallS.ReplaceAllString(string(summary), `"wall_s": 0`)
}

// TestWebAssemblyMatchesTheCLI builds the simulator to WebAssembly, runs
// scenarios through it under Node.js as the browser app does, and checks
// that its summary.json is byte for byte the CLI's (engine wall time
// aside), and that a bad file's problems come with their line and column.
func TestWebAssemblyMatchesTheCLI(t *testing.T) {
	node, wasmExec, module := buildModule(t)
	dir := t.TempDir()
	raw, err := os.ReadFile(module)
	require.NoError(t, err)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(raw)
	require.NoError(t, zw.Close())
	t.Logf("herdlab.wasm: %.1f MB, %.2f MB gzipped", float64(len(raw))/1e6, float64(gz.Len())/1e6)
	assert.Less(t, gz.Len(), 5_000_000, "the compressed bundle stays under 5 MB")

	type answer struct {
		lab.Result
		MS         float64         `json:"ms"`
		Progress   []float64       `json:"progress"`
		Validation lab.Validation  `json:"validation"`
		Parts      lab.Result      `json:"parts"`
		Sweep      lab.SweepResult `json:"sweep"`
	}
	runWasm := func(file string, args ...string) answer {
		t.Helper()
		cmd := exec.Command(node, append([]string{filepath.Join("testdata", "run.cjs"), wasmExec, module, file}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "node: %s", stderr.String())
		var a answer
		require.NoError(t, json.Unmarshal(out, &a), "%s", out)
		return a
	}

	for _, name := range []string{"thundering-herd", "real-graph", "hedging-latch"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "..", "scenarios", name+".yaml")
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			sc, err := scenarios.Load(file)
			require.NoError(t, err)
			start := time.Now()
			res, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			cli := time.Since(start)
			var want bytes.Buffer
			require.NoError(t, results.WriteJSON(&want, res.Summary))

			// The runs in parts too, but for the long one.
			parts := name != "hedging-latch"
			var a answer
			if parts {
				a = runWasm(file, "parts")
			} else {
				a = runWasm(file)
			}
			require.Empty(t, a.Error)
			t.Logf("%s: WebAssembly %.0f ms under Node.js, the CLI's packages %.0f ms natively (all cores)", name, a.MS, float64(cli.Milliseconds()))
			assert.Equal(t, normalize(want.Bytes()), normalize([]byte(a.Summary)), "the same summary.json as the CLI")
			charts, err := results.ChartData(res.Summary, res.Runs)
			require.NoError(t, err)
			assert.Equal(t, charts, a.Charts, "the same chart data")
			require.NotEmpty(t, a.Progress, "progress while it runs")
			assert.IsNonDecreasing(t, a.Progress)
			assert.Equal(t, 1.0, a.Progress[len(a.Progress)-1])
			assert.Empty(t, a.Validation.Problems)
			assert.Equal(t, lab.Controls(string(src)), a.Validation.Controls)
			// The graph the page draws before a run: herdlab ui's.
			assert.Equal(t, lab.Validate(string(src), file).Graph, a.Validation.Graph)
			if name == "real-graph" {
				require.NotNil(t, a.Validation.Graph, "a graph scenario's validation has its graph")
				assert.Equal(t, [][]string{{"gateway"}, {"orders"}, {"db"}}, a.Validation.Graph.Layers)
			}
			if parts {
				require.Empty(t, a.Parts.Error)
				assert.Equal(t, normalize(want.Bytes()), normalize([]byte(a.Parts.Summary)), "runs in two parts, summarised: the same summary.json")
				assert.Equal(t, charts, a.Parts.Charts, "and the same chart data")
			}
		})
	}

	// A sweep, in two parts: herdlab ui's sweep.
	swept := filepath.Join(dir, "sweep.yaml")
	src := "name: s\nruns: 2\nduration: 1m\nserver: {concurrency: 10, outages: [{start: 0s, duration: 5s, mode: refuse}]}\nworkload: {requests: 500}\n" +
		"strategies: [{name: j, backoff: {kind: full-jitter, base: 1s, cap: 5s}, max_attempts: 5}, {name: f, backoff: {kind: fixed, delay: 2s}, max_attempts: 5}]\n" +
		"sweep: {vary: [{path: workload.requests, values: [100, 1000, 3000]}]}\n"
	require.NoError(t, os.WriteFile(swept, []byte(src), 0o644))
	a := runWasm(swept, "sweep")
	require.Empty(t, a.Sweep.Error)
	assert.Equal(t, lab.Sweep(context.Background(), src, swept, lab.Options{}), a.Sweep, "the sweep made in parts is herdlab ui's")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: bad\nworkload: {requests: 10}\nstrategies:\n  - {name: s, backoff: {kind: fixed}, max_attempts: unlimited}\n"), 0o644))
	a = runWasm(bad)
	require.NotEmpty(t, a.Error)
	require.NotEmpty(t, a.Problems)
	p := a.Problems[0]
	assert.Equal(t, 4, p.Line)
	assert.Positive(t, p.Col)
	assert.Equal(t, "strategies[0].backoff.delay", p.Path)
	assert.Contains(t, p.Message, "missing")
	assert.Equal(t, a.Problems, a.Validation.Problems, "validate finds what run refuses")
}

// buildModule finds Node.js and builds the simulator to WebAssembly in a
// temporary directory: it returns node, Go's wasm_exec.js and the module.
// Without Node.js it skips, unless HERDLAB_REQUIRE_NODE is set (CI).
func buildModule(tb testing.TB) (node, wasmExec, module string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil && os.Getenv("HERDLAB_REQUIRE_NODE") == "" {
		tb.Skip("no Node.js to run the WebAssembly build (Debian's nodejs; .ci/run installs it and sets HERDLAB_REQUIRE_NODE)")
	}
	require.NoError(tb, err, "HERDLAB_REQUIRE_NODE is set: the WebAssembly test needs Node.js (Debian's nodejs)")
	module = filepath.Join(tb.TempDir(), "herdlab.wasm")
	build := exec.Command("go", "build", "-o", module, ".")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := build.CombinedOutput()
	require.NoError(tb, err, "GOOS=js GOARCH=wasm go build: %s", out)
	wasmExec = filepath.Join(runtime.GOROOT(), "lib", "wasm", "wasm_exec.js")
	require.FileExists(tb, wasmExec)
	return node, wasmExec, module
}
