package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chain is a small layered-retries: retries at both layers multiply at
// the database, which the front does not show.
const chain = `name: chain
seed: 1
duration: 1m
services:
  - name: gateway
    concurrency: 400
    service_time: {dist: exponential, mean: 5ms}
    calls: [{service: db}]
  - name: db
    concurrency: 20
    service_time: {dist: exponential, mean: 10ms}
    outages: [{start: 10s, duration: 10s, mode: error}]
workload:
  target: gateway
  senders: 20
  arrival: {kind: poisson, rate: 200, from: 0s, until: 40s}
strategies:
  - name: every-layer
    backoff: {kind: full-jitter, base: 1s, cap: 10s}
    max_attempts: 4
    timeout: 10s
    edges:
      default: {backoff: {kind: full-jitter, base: 20ms, cap: 200ms}, max_attempts: 4, timeout: 2s}
  - name: edge-only
    backoff: {kind: full-jitter, base: 1s, cap: 10s}
    max_attempts: 4
    timeout: 10s
    edges:
      default: {max_attempts: 1, timeout: 2s}
lint:
  silence:
    - {rule: HL010, reason: retries at every layer without a budget are what this test shows}
`

// The terminal table and report.md of a graph name the front in its
// columns and give the service each strategy hurts most beside them; the
// takeaways say which.
func TestRunNamesTheServiceHurtMost(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "chain.yaml", chain)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := herdlab("run", file, "--out", out, "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(stdout, "\n")
	var head string
	for _, l := range lines {
		if strings.HasPrefix(l, "strategy ") {
			head = l
			break
		}
	}
	require.NotEmpty(t, head, stdout)
	assert.Regexp(t, `^strategy +attempts \(gateway\) +amplif\. \(gateway\) +peak after outage \(gateway\) +hurt most +its peak after outage +its amplif\. +recovery \(gateway\) +drain`, head)
	for _, name := range []string{"every-layer", "edge-only"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+name+` +[0-9,.]+ +[0-9.]+x +\S+ \([0-9.]+x\) at \S+ +db +[0-9,.]+ \([0-9.]+x\) at \S+ +[0-9.]+x +`), stdout, name)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "| strategy | attempts (gateway) | amplif. (gateway) | peak after outage (gateway) | hurt most | its peak after outage | its amplif. | recovery (gateway) |")
	assert.Regexp(t, `- The service each strategy hurts most \(the highest peak load after the outage over capacity\): every-layer, db \(peak [0-9.]+x its capacity, [0-9.]+x attempts per fleet request\); edge-only, db`, string(report))
	assert.Regexp(t, `- Least work at the service each strategy hurts most: edge-only, [0-9.]+x attempts per fleet request at db \(.*; most: every-layer, [0-9.]+x at db\)\.`, string(report))
}
