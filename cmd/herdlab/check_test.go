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
