package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gated is the small scenario of run_test.go with checks: the fixed
// delay's herd, and jitter's calm.
const gated = small + `checks:
  - strategy: fixed
    why: the fixed delay brings the fleet back together
    peak_load_ratio: {min: 2}
  - strategy: jitter
    peak_load_ratio: {max: 2}
  - compare: jitter.peak_load < fixed.peak_load
`

func TestCheckPasses(t *testing.T) {
	file := writeScenario(t, t.TempDir(), "gated.yaml", gated)
	code, out, stderr := herdlab("check", file)
	require.Equal(t, exitOK, code, stderr+out)
	assert.Regexp(t, `fixed\s+peak_load_ratio\s+>= 2\s+\S+\s+PASS`, out)
	assert.Contains(t, out, "HL001 fixed-delay", "lint runs before every check")
	assert.Contains(t, out, "(warning)")
	assert.True(t, strings.HasSuffix(out, "check: 3 passed, 0 failed\n"), out)
}

func TestCheckFails(t *testing.T) {
	file := writeScenario(t, t.TempDir(), "gated.yaml", strings.Replace(gated, "peak_load_ratio: {min: 2}", "peak_load_ratio: {max: 0.5}", 1))
	code, out, _ := herdlab("check", file)
	assert.Equal(t, exitFailed, code)
	assert.Regexp(t, `fixed\s+peak_load_ratio\s+<= 0.5\s+\S+\s+FAIL`, out)
	assert.Contains(t, out, "check: 2 passed, 1 failed")
}

func TestCheckStrictLint(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "gated.yaml", gated)
	code, out, _ := herdlab("check", "--lint", "--strict", file)
	assert.Equal(t, exitFailed, code, "an unsilenced finding fails under --strict")
	assert.Contains(t, out, "(error)")
	assert.Contains(t, out, "no checks", "--lint runs no simulation")

	silenced := writeScenario(t, dir, "silenced.yaml", gated+"lint:\n  silence:\n    - {rule: HL001, reason: the demo's point}\n")
	code, out, _ = herdlab("check", "--lint", "--strict", silenced)
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "HL001 fixed-delay silenced: the demo's point")
}

func TestCheckFormats(t *testing.T) {
	file := writeScenario(t, t.TempDir(), "gated.yaml", gated)
	code, out, stderr := herdlab("check", file, "--format", "json")
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Passed, Failed int
		Scenarios      []struct {
			Scenario string
			Checks   []struct{ Strategy, Figure string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, 3, doc.Passed)
	assert.Equal(t, "small", doc.Scenarios[0].Scenario)

	code, out, stderr = herdlab("check", file, "--format", "junit")
	require.Equal(t, exitOK, code, stderr)
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &suites))
	assert.Equal(t, 0, suites.Failures)
	assert.GreaterOrEqual(t, suites.Tests, 3)

	code, _, stderr = herdlab("check", file, "--format", "yaml")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, `--format "yaml": want text, json or junit`)
}

func TestCheckBaseline(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "gated.yaml", gated)
	baselines := filepath.Join(dir, "baselines")
	code, _, stderr := herdlab("run", file, "-q", "--no-charts", "-o", filepath.Join(dir, "out"), "--save-baseline", baselines)
	require.Equal(t, exitOK, code, stderr)
	require.FileExists(t, filepath.Join(baselines, "small.json"))

	code, out, stderr := herdlab("check", file, "--baseline", baselines)
	require.Equal(t, exitOK, code, stderr+out)
	assert.Contains(t, out, "baseline peak_load_ratio")

	// A change that makes the jittered fleet slower regresses.
	worse := writeScenario(t, dir, "worse.yaml", strings.Replace(gated, "{kind: full-jitter, base: 1s, cap: 30s}", "{kind: full-jitter, base: 4s, cap: 30s}", 1))
	code, out, _ = herdlab("check", worse, "--baseline", baselines)
	assert.Equal(t, exitFailed, code, out)
	assert.Regexp(t, `jitter\s+baseline \S+\s+.*FAIL`, out)

	// No baseline for a scenario: said, and skipped.
	empty := filepath.Join(dir, "none")
	require.NoError(t, os.Mkdir(empty, 0o755))
	code, _, stderr = herdlab("check", file, "--baseline", empty)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stderr, "no baseline for small")
}

func TestCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := writeScenario(t, dir, "bad.yaml", gated+"  - strategy: fixed\n    speed: {max: 1}\n")
	code, _, stderr := herdlab("check", bad)
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "bad.yaml:24:5: checks[3].speed: unknown figure")
	assert.NotContains(t, stderr, "bound at least one figure", "a misspelt figure is one problem, not two")
	code, _, _ = herdlab("check")
	assert.Equal(t, exitBadInput, code)
}

func TestCheckStrategy(t *testing.T) {
	file := writeScenario(t, t.TempDir(), "gated.yaml", gated)
	code, out, stderr := herdlab("check", file, "--strategy", "jitter")
	require.Equal(t, exitOK, code, "checks on fixed are skipped, not failed: "+stderr+out)
	assert.Contains(t, out, "small ("+file+", 1 run(s), only jitter)")
	assert.Regexp(t, `fixed\s+peak_load_ratio\s+>= 2\s+not run\s+SKIP`, out)
	assert.Regexp(t, `jitter\s+peak_load_ratio\s+<= 2\s+\S+\s+PASS`, out)
	assert.Regexp(t, `-\s+jitter.peak_load < fixed.peak_load\s+holds\s+not run\s+SKIP`, out, "a comparison naming a strategy not run")
	assert.True(t, strings.HasSuffix(out, "check: 1 passed, 0 failed, 2 skipped\n"), out)

	// A check that fails still fails among skipped ones.
	failing := writeScenario(t, t.TempDir(), "failing.yaml", strings.Replace(gated, "peak_load_ratio: {max: 2}", "peak_load_ratio: {max: 0.01}", 1))
	code, out, _ = herdlab("check", failing, "--strategy", "jitter")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "check: 0 passed, 1 failed, 2 skipped")

	code, _, stderr = herdlab("check", file, "--strategy", "nope")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, `scenario small has no strategy "nope" (it has fixed, jitter)`)
}

func TestCheckJSONNumbers(t *testing.T) {
	file := writeScenario(t, t.TempDir(), "gated.yaml", gated)
	code, out, stderr := herdlab("check", file, "--format", "json", "--strategy", "jitter")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, `"bound": ">= 2"`, "bounds are plain text, not HTML-escaped")
	assert.NotContains(t, out, `\u003`)
	var doc struct {
		Passed, Failed, Skipped int
		Scenarios               []struct {
			Checks []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, [3]int{1, 0, 2}, [3]int{doc.Passed, doc.Failed, doc.Skipped})
	checks := doc.Scenarios[0].Checks
	require.Len(t, checks, 3)
	assert.IsType(t, 0.0, checks[1]["value"], "jitter's peak_load_ratio is a number")
	assert.Equal(t, 2.0, checks[1]["max"])
	assert.Nil(t, checks[0]["value"], "fixed did not run: no value")
	assert.Equal(t, true, checks[0]["skipped"])
}

func TestCheckBaselineSaysTolerance(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "gated.yaml", gated)
	baselines := filepath.Join(dir, "baselines")
	code, _, stderr := herdlab("run", file, "-q", "--no-charts", "-o", filepath.Join(dir, "out"), "--save-baseline", baselines)
	require.Equal(t, exitOK, code, stderr)

	code, out, stderr := herdlab("check", file, "--baseline", baselines)
	require.Equal(t, exitOK, code, stderr+out)
	assert.Regexp(t, `jitter\s+baseline attempts\s+<= \S+ \(baseline \S+ \+5% relative\)`, out)
	assert.Regexp(t, `jitter\s+baseline delivered_ratio\s+>= \S+ \(baseline \S+ -0.05 absolute\)`, out)

	code, out, stderr = herdlab("check", file, "--baseline", baselines, "--format", "json")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, `"tolerance": "relative"`)
	assert.Contains(t, out, `"tolerance": "absolute"`)

	// With --strategy, the baseline of a strategy not run is skipped.
	code, out, stderr = herdlab("check", file, "--baseline", baselines, "--strategy", "jitter")
	require.Equal(t, exitOK, code, stderr+out)
	assert.Regexp(t, `fixed\s+baseline\s+as in the baseline\s+not run\s+SKIP`, out)
	assert.NotRegexp(t, `fixed\s+baseline attempts`, out)

	code, help, _ := herdlab("check", "--help")
	require.Equal(t, exitOK, code)
	assert.Contains(t, help, "relative to the baseline's value where\nthat is 1 or more")
	assert.Contains(t, help, "absolute, in the figure's own unit")
	assert.Contains(t, help, "--strategy")
}

// TestCheckFormatsAgreeOnSkipped: the JSON, JUnit and text outputs count
// the same checks skipped (a strategy not run, a scenario without a
// baseline), and a lint warning is skipped in none of them.
func TestCheckFormatsAgreeOnSkipped(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "gated.yaml", gated) // with a lint warning (HL001)
	none := filepath.Join(dir, "no-baselines")
	require.NoError(t, os.Mkdir(none, 0o755))
	args := []string{"check", file, "--strategy", "jitter", "--baseline", none}

	code, out, stderr := herdlab(append(args, "--format", "json")...)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Skipped   int
		Scenarios []struct {
			Checks []struct {
				Strategy, Figure, Bound string
				Skipped                 bool
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	var jsonSkipped []string
	for _, c := range doc.Scenarios[0].Checks {
		if c.Skipped {
			jsonSkipped = append(jsonSkipped, strings.TrimSpace(c.Strategy+" "+c.Figure+" "+c.Bound))
		}
	}
	assert.Len(t, jsonSkipped, 3, "two checks on fixed, and the baseline")
	assert.Equal(t, 3, doc.Skipped)

	code, out, stderr = herdlab(append(args, "--format", "junit")...)
	require.Equal(t, exitOK, code, stderr)
	var suites struct {
		Skipped int `xml:"skipped,attr"`
		Suites  []struct {
			Skipped int `xml:"skipped,attr"`
			Cases   []struct {
				Name    string    `xml:"name,attr"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &suites), out)
	var junitSkipped []string
	for _, c := range suites.Suites[0].Cases {
		if c.Skipped != nil {
			junitSkipped = append(junitSkipped, c.Name)
		}
	}
	assert.Equal(t, jsonSkipped, junitSkipped, "the same checks skipped")
	assert.Equal(t, doc.Skipped, suites.Skipped)
	assert.Equal(t, doc.Skipped, suites.Suites[0].Skipped)
	assert.Contains(t, out, "<system-out>warning: fixed-delay", "the lint warning is told, not skipped")

	code, out, _ = herdlab(args...)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "check: 1 passed, 0 failed, 3 skipped")
}

// tooSlow's impatient clients time out (1 s) on a server that takes 2 s:
// they deliver nothing, give up on every request, and stop sending,
// which leaves the server idle, not recovered.
const tooSlow = `name: too-slow
duration: 5m
server:
  concurrency: 10
  service_time: 2s
  outages: [{start: 0s, duration: 10s, mode: refuse}]
workload: {requests: 200}
strategies:
  - name: impatient
    backoff: {kind: full-jitter, base: 5s, cap: 5s}
    max_attempts: 5
    timeout: 1s
  - name: patient
    backoff: {kind: full-jitter, base: 1s, cap: 10s}
    max_attempts: 20
    timeout: 30s
checks:
  - strategy: impatient
    recovery_time_s: {max: 120}
    drain_time_s: {max: 600}
    peak_load_ratio: {max: 100}
    recovered_runs: {min: 1}
  - strategy: patient
    recovery_time_s: {max: 300}
    delivered_ratio: {min: 0.99999}
`

// TestCheckAStrategyThatDeliveredNothing: a strategy that delivered
// nothing passes no recovery, drain, recovered-runs or load gate, and the
// report calls it neither recovered nor fastest; a bound is shown as
// written.
func TestCheckAStrategyThatDeliveredNothing(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "slow.yaml", tooSlow)
	code, out, stderr := herdlab("check", file)
	require.Equal(t, exitFailed, code, stderr+out)
	for _, figure := range []string{"recovery_time_s", "drain_time_s", "peak_load_ratio", "recovered_runs"} {
		assert.Regexp(t, `impatient\s+`+figure+`\s+\S+ \S+\s+delivered nothing.*FAIL`, out)
	}
	assert.Regexp(t, `patient\s+recovery_time_s\s+<= 300\s+\S+\s+PASS`, out)
	assert.Regexp(t, `patient\s+delivered_ratio\s+>= 0.99999\s+1\s+PASS`, out, "the bound as written, not >= 1")
	assert.Contains(t, out, "check: 2 passed, 4 failed")

	code, _, stderr = herdlab("run", file, "-o", filepath.Join(dir, "out"), "-q", "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	report, err := os.ReadFile(filepath.Join(dir, "out", "report.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(report), "Fastest recovery after the outage: impatient")
	assert.Contains(t, string(report), "impatient delivered nothing")
	assert.Regexp(t, `\| impatient \| [^|]+ \| [^|]+ \| [^|]+ \| never \|`, string(report))
	assert.Contains(t, string(report), "| p99 latency (delivered only) |")
	var s struct {
		Strategies []struct {
			Name          string
			Recovery      string
			RecoveryTimeS *float64 `json:"recovery_time_s"`
			RecoveredRuns int      `json:"recovered_runs"`
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &s))
	assert.Equal(t, "never", s.Strategies[0].Recovery)
	assert.Nil(t, s.Strategies[0].RecoveryTimeS, "empty buckets are no recovered server")
	assert.Zero(t, s.Strategies[0].RecoveredRuns)
}

// TestCheckNoOutageNoRecovery: a scenario without an outage owes no
// recovery figure: summary.json says no_outage, the table "no outage",
// and a gate on the recovery fails, saying why.
func TestCheckNoOutageNoRecovery(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "calm.yaml", `name: calm
duration: 2m
server: {concurrency: 10, service_time: 50ms, queue: 5}
workload:
  requests: 3000
  clients: {count: 40, think_time: 10ms}
strategies:
  - name: jitter
    backoff: {kind: full-jitter, base: 1s, cap: 10s}
    max_attempts: 3
checks:
  - strategy: jitter
    recovery_time_s: {max: 300}
`)
	code, out, stderr := herdlab("check", file)
	require.Equal(t, exitFailed, code, stderr+out)
	assert.Regexp(t, `jitter\s+recovery_time_s\s+<= 300\s+no outage: there was nothing to recover from\s+FAIL`, out)

	code, out, stderr = herdlab("run", file, "-o", filepath.Join(dir, "out"), "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `jitter\s+\S+\s+\S+\s+.*\bno outage\b`, out, "the table")
	data, err := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"recovery_time_s": null`)
	assert.Contains(t, string(data), `"recovery": "no_outage"`)
}

// latchInOneRun is the load spike of load-spike-latch.yaml over two runs,
// of which immediate retries latch the server in one (at this seed).
const latchInOneRun = `name: latch-in-one-run
seed: 2
runs: 2
duration: 5m
server: {concurrency: unlimited, service_time: 1s, slowdown: 10ms}
network:
  latency: {dist: exponential, mean: 100ms}
workload:
  arrival: {kind: poisson, rate: 40, from: 0s, schedule: [{from: 60s, until: 65s, rate: 80}]}
strategies:
  - {name: no-retries, backoff: {kind: none}, max_attempts: 1, timeout: 3s}
  - {name: immediate, backoff: {kind: none}, max_attempts: 3, timeout: 3s}
checks:
  - strategy: "*"
    recovery_time_s: {max: 100}
`

// TestCheckAFigureSomeRunsLack: with runs: 2 and one run latched for
// good, the recovery time is the other run's; a gate on it fails (it
// passed before, at 67 s against 100 s), and so does a comparison.
func TestCheckAFigureSomeRunsLack(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "latch.yaml", latchInOneRun)
	code, out, stderr := herdlab("check", file)
	require.Equal(t, exitFailed, code, stderr+out)
	assert.Regexp(t, `no-retries\s+recovery_time_s\s+<= 100\s+\S+ ± \S+\s+PASS`, out)
	assert.Regexp(t, `immediate\s+recovery_time_s\s+<= 100\s+\S+\s+FAIL: 1 of 2 runs have no recovery_time_s \(never recovered\)`, out)

	code, out, stderr = herdlab("check", writeScenario(t, dir, "compare.yaml", latchInOneRun+"  - compare: immediate.recovery_time_s < 2 * no-retries.recovery_time_s\n"))
	require.Equal(t, exitFailed, code, stderr+out)
	assert.Regexp(t, `-\s+immediate.recovery_time_s < 2 \* no-retries.recovery_time_s\s+holds\s+.*FAIL: 1 of 2 runs`, out)
}
