package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// herdlab runs the command line and returns its exit code and outputs.
func herdlab(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidate(t *testing.T) {
	code, out, errOut := herdlab("validate", "../../scenarios/thundering-herd.yaml", "../../scenarios/testdata/valid/minimal.yaml")
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "../../scenarios/thundering-herd.yaml: ok\n  thundering-herd: 50,000 requests in a burst")
	assert.Contains(t, out, "../../scenarios/testdata/valid/minimal.yaml: ok\n")
	assert.Empty(t, errOut)
	// thundering-herd's estimate (5 strategies, 1 run each, 2 at once on
	// this machine or fewer): its memory line says so.
	sc, err := scenarios.Load("../../scenarios/thundering-herd.yaml")
	require.NoError(t, err)
	assert.Contains(t, out, "  memory: "+memoryLine(sc, limits{})+"\n")
	assert.Regexp(t, `memory: up to \d+ MB \(5 runs, \d at once: the estimate --max-memory checks\)`, out)
}

func TestValidateReportsEveryProblemWithExit2(t *testing.T) {
	code, out, errOut := herdlab("validate", "../../scenarios/thundering-herd.yaml", "../../scenarios/testdata/invalid/unknown-keys.yaml")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, out, "thundering-herd.yaml: ok", "valid files are still reported")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	assert.Len(t, lines, 5)
	assert.Equal(t, "../../scenarios/testdata/invalid/unknown-keys.yaml:12:5: strategies[0].maxattempts: unknown field (did you mean max_attempts?)", lines[4])
}

func TestValidateQuiet(t *testing.T) {
	code, out, _ := herdlab("validate", "-q", "../../scenarios/thundering-herd.yaml")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, out)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage: herdlab COMMAND"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"validate", "--frob", "x.yaml"}, "unknown flag: --frob"},
		{"no files", []string{"validate"}, "name at least one scenario file"},
		{"help for unknown", []string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{"version with args", []string{"version", "x"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := herdlab(tt.args...)
			assert.Equal(t, exitBadInput, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := herdlab("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "validate")
	assert.Contains(t, out, "version")

	for _, args := range [][]string{{"help", "validate"}, {"validate", "--help"}, {"validate", "-h"}} {
		code, out, errOut := herdlab(args...)
		assert.Equal(t, exitOK, code, args)
		assert.Contains(t, out, "Usage: herdlab validate FILE.yaml...", args)
		assert.Contains(t, out, "--quiet", args)
		assert.Equal(t, 1, strings.Count(out, "Usage:"), "once: %v", args)
		assert.Empty(t, errOut, "not again on stderr: %v", args)
	}
}

// TestHelpTextsFitATerminal: every command's description, as --help
// prints it above its flags, wraps within 80 columns.
func TestHelpTextsFitATerminal(t *testing.T) {
	for name, cmd := range commands {
		for i, line := range strings.Split(cmd.summary, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "herdlab %s --help, line %d: %q", name, i+1, line)
		}
	}
}

// TestGraphsOverRealHTTPRefuseWhatTheyDoNotServe: serve and replay refuse
// a graph setting the real-HTTP graph does not serve yet (exit 2, at its
// field) rather than serve a model it does not describe, and bad flags
// for a graph; run simulates it and writes services.csv.
func TestGraphsOverRealHTTPRefuseWhatTheyDoNotServe(t *testing.T) {
	cached := writeScenario(t, t.TempDir(), "cached.yaml", `name: cached
services:
  - {name: api, cache: {hit_ratio: 0.9}, calls: [{service: db}]}
  - {name: db}
workload: {target: api, requests: 10}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 1s}}}
`)
	for _, tc := range []struct {
		args []string
		at   string
	}{
		{[]string{"replay", cached}, "cached.yaml:3:24: services[0].cache: service api: a cache in front of the fleet's target is not served over real HTTP yet"},
		{[]string{"serve", "--scenario", cached}, "cached.yaml:3:24: services[0].cache: "},
		{[]string{"serve", "--scenario", "../../scenarios/slow-replica.yaml", "--strategy", "nope"}, "--strategy nope: ../../scenarios/slow-replica.yaml has no such strategy"},
		{[]string{"serve", "--scenario", "../../scenarios/slow-replica.yaml", "--log", "x.log"}, "--log: a graph's replicas keep their keys in memory"},
		{[]string{"serve", "--scenario", "../../scenarios/real-mode.yaml", "--strategy", "full-jitter"}, "--strategy is for a graph of services"},
		{[]string{"replay", "../../scenarios/slow-replica.yaml", "--target", "http://127.0.0.1:1/"}, "--target without --control: a graph's figures per service come from its control endpoint"},
	} {
		code, _, stderr := herdlab(tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr, tc.at, tc.args)
	}
	out := t.TempDir()
	code, stdout, stderr := herdlab("run", "../../scenarios/slow-replica.yaml", "--runs", "1", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "power-of-two  store")
	assert.Contains(t, stdout, "charts: "+filepath.Join(out, "{load,recovery,latency,queue,amplification,services-load,layers,graph}.png"))
	for _, chart := range []string{"services-load", "layers", "graph"} {
		assert.FileExists(t, filepath.Join(out, chart+".png"))
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "## Services")
	assert.Contains(t, string(report), "(graph.png)")
	data, err := os.ReadFile(filepath.Join(out, "services.csv"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), results.ServicesHeader))
}

// TestCITemplatesInstallFromACheckout: the workflows the README tells
// users to copy install herdlab the way that works before its module is
// published: from a checkout, with make install.
func TestCITemplatesInstallFromACheckout(t *testing.T) {
	files, err := filepath.Glob("../../docs/ci/*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		text := mustRead(t, file)
		assert.Contains(t, text, "run: make -C .herdlab install", file)
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "run:") {
				assert.NotContains(t, line, "@latest", "%s: go install ...@latest fails until the module is published", file)
			}
		}
	}
	assert.Regexp(t, `(?m)^install:\n\t\$\(GO\) install `, mustRead(t, "../../Makefile"), "make install exists")
}

// TestDocsStayInTheRepository: the docs and the README point at nothing
// outside the repository.
func TestDocsStayInTheRepository(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../../README.md")
	for _, file := range files {
		text := mustRead(t, file)
		assert.NotContains(t, text, "../shared", file)
		assert.NotContains(t, text, "DESIGN.md", file)
	}
}
