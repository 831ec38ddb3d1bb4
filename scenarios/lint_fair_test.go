package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fairYAML returns a scenario of the server and workload given (flow
// mappings, on lines 1 and 2) and one strategy a line from line 4
// (strategies[i] at 4+i:5), each the fields of a flow mapping after its
// name, s0, s1, ...
func fairYAML(server, workload string, strategies ...string) string {
	var b strings.Builder
	b.WriteString("server: " + server + "\n")
	b.WriteString("workload: " + workload + "\n")
	b.WriteString("strategies:\n")
	for i, st := range strategies {
		fmt.Fprintf(&b, "  - {name: s%d, %s}\n", i, st)
	}
	return b.String()
}

const (
	fairServer   = "{concurrency: 10, queue: 10}"
	fairWorkload = "{requests: 10, senders: 1, workers: 1}"
	// jitter is a backoff that breaks no other rule, with a limit.
	jitter = "backoff: {kind: full-jitter}"
)

// fairLintSteps holds the step tables of the rules for fair comparisons:
// whole scenarios, and the findings of the table's rule.
var fairLintSteps = map[string][]graphStep{
	"HL020": {
		{"the same timeout", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, timeout: 2s", jitter+", max_attempts: 3, timeout: 2s"), nil},
		{"both the default", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 3"), nil},
		{"the default written", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 3, timeout: 30s"), nil},
		{"one sets a timeout, the other not", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 3, timeout: 10s"),
			[]string{"HL020 strategies[1].timeout 5:72"}},
		{"the one left at the default is the odd one", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, timeout: 2s",
			jitter+", max_attempts: 3", jitter+", max_attempts: 3, timeout: 2s"),
			[]string{"HL020 strategies[1] 5:5"}},
		{"three values", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, timeout: 1s",
			jitter+", max_attempts: 3, timeout: 2s", jitter+", max_attempts: 3, timeout: 3s"),
			[]string{"HL020 strategies[1].timeout 5:72", "HL020 strategies[2].timeout 6:72"}},
		{"a baseline without retries counts", fairYAML(fairServer, fairWorkload, "backoff: {kind: none}, max_attempts: 1", jitter+", max_attempts: 3, timeout: 10s"),
			[]string{"HL020 strategies[1].timeout 5:72"}},
		{"one strategy", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, timeout: 10s"), nil},
	},
	"HL021": {
		{"the same limits", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, max_elapsed: 1m", jitter+", max_attempts: 3, max_elapsed: 1m"), nil},
		{"different max_attempts", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 5"),
			[]string{"HL021 strategies[1].max_attempts 5:60"}},
		{"max_attempts against max_elapsed", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_elapsed: 1m"),
			[]string{"HL021 strategies[1].max_elapsed 5:59"}},
		{"a different max_elapsed", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, max_elapsed: 1m", jitter+", max_attempts: 3, max_elapsed: 2m"),
			[]string{"HL021 strategies[1].max_attempts 5:60"}},
		{"unlimited with a budget", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: unlimited, budget: {kind: tokens}"),
			[]string{"HL021 strategies[1].max_attempts 5:60"}},
		{"a baseline without retries is not compared", fairYAML(fairServer, fairWorkload, "backoff: {kind: none}, max_attempts: 1", jitter+", max_attempts: 5"), nil},
		{"the majority sets the reference", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 5", jitter+", max_attempts: 3", jitter+", max_attempts: 3"),
			[]string{"HL021 strategies[0].max_attempts 4:60"}},
		{"a preset's own limit", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", "backoff: {preset: go-retryablehttp}"),
			[]string{"HL021 strategies[1] 5:5"}},
	},
	"HL022": {
		// 200 slots of 100ms: more than 2,000 requests within 100ms.
		{"a burst 25 times the slots", fairYAML("{concurrency: 200}", "{requests: 50000}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"with a queue", fairYAML("{concurrency: 200, queue: 2000}", "{requests: 50000}", jitter+", max_attempts: 3"), nil},
		{"queue unlimited, written", fairYAML("{concurrency: 200, queue: unlimited}", "{requests: 50000}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:35"}},
		{"10 times the slots", fairYAML("{concurrency: 200}", "{requests: 2000}", jitter+", max_attempts: 3"), nil},
		{"just above 10 times", fairYAML("{concurrency: 200}", "{requests: 2001}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"a longer service time holds more", fairYAML("{concurrency: 200, service_time: 1s}", "{requests: 2001}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"unlimited concurrency", fairYAML("{concurrency: unlimited}", "{requests: 50000}", jitter+", max_attempts: 3"), nil},
		{"poisson at 30,000/s: 3,000 in 100ms", fairYAML("{concurrency: 200}", "{arrival: {kind: poisson, rate: 30000, until: 10s}}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"poisson at 20,000/s: 2,000 in 100ms", fairYAML("{concurrency: 200}", "{arrival: {kind: poisson, rate: 20000, until: 10s}}", jitter+", max_attempts: 3"), nil},
		{"a schedule's peak", fairYAML("{concurrency: 200}", "{arrival: {kind: poisson, rate: 100, until: 10s, schedule: [{from: 1s, until: 2s, rate: 30000}]}}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"uniform: 50,000 over 1s", fairYAML("{concurrency: 200}", "{requests: 50000, arrival: {kind: uniform, from: 0s, until: 1s}}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"uniform: 50,000 over 10s", fairYAML("{concurrency: 200}", "{requests: 50000, arrival: {kind: uniform, from: 0s, until: 10s}}", jitter+", max_attempts: 3"), nil},
		{"senders x workers bound what arrives", fairYAML("{concurrency: 200}", "{requests: 50000, senders: 100, workers: 20}", jitter+", max_attempts: 3"), nil},
		{"a closed loop of 3,000 clients", fairYAML("{concurrency: 200}", "{clients: {count: 3000, think_time: 1s}, requests: 5000}", jitter+", max_attempts: 3"),
			[]string{"HL022 server.queue 1:9"}},
		{"a graph: the front, and below it what the front lets through",
			"services:\n  - {name: front, concurrency: 100, calls: [{service: db, fanout: 3}]}\n  - {name: db, concurrency: 20}\n  - {name: quiet, concurrency: 10, queue: 5}\n" +
				"workload: {requests: 5000}\nstrategies:\n  - {name: s, " + jitter + ", max_attempts: 3}\n",
			[]string{"HL022 services[0].queue 2:5", "HL022 services[1].queue 3:5"}},
		{"a graph: replicas add slots", "services:\n  - {name: front, concurrency: 100, replicas: 6}\n" +
			"workload: {requests: 5000}\nstrategies:\n  - {name: s, " + jitter + ", max_attempts: 3}\n", nil},
	},
}

// TestFairLintRuleSteps runs the fairness rules' step tables.
func TestFairLintRuleSteps(t *testing.T) {
	for _, table := range slices.Sorted(mapKeys(fairLintSteps)) {
		t.Run(table, func(t *testing.T) {
			for _, tt := range fairLintSteps[table] {
				t.Run(tt.name, func(t *testing.T) {
					s, err := Parse("x.yaml", []byte(tt.file))
					require.NoError(t, err, tt.file)
					var got []string
					for _, f := range Lint(s) {
						if f.Rule.ID == table {
							got = append(got, fmt.Sprintf("%s %s %d:%d", f.Rule.ID, f.Path, f.Line, f.Col))
							assert.NotEmpty(t, f.Msg)
						}
					}
					assert.Equal(t, tt.want, got)
				})
			}
		})
	}
}

func TestFairLintMessages(t *testing.T) {
	tests := []struct {
		name, file string
		want       string // the first finding's message
	}{
		{"timeout", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 3, timeout: 10s"),
			"s1 10s, while s0 times out after 30s: a strategy that waits longer for an attempt fails fewer of them on a slow or queueing server, " +
				"and one that gives up sooner sends more retries, so the comparison measures the timeouts as much as the retries; give every " +
				"strategy the same timeout, or say why by silencing HL020 with a reason"},
		{"the default timeout", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3, timeout: 2s", jitter+", max_attempts: 3", jitter+", max_attempts: 3, timeout: 2s"),
			"s1 30s (the default: the strategy does not write timeout), while s0 and s2 time out after 2s: "},
		{"limits", fairYAML(fairServer, fairWorkload, jitter+", max_attempts: 3", jitter+", max_attempts: 3", jitter+", max_elapsed: 1m"),
			"s2 max_attempts unlimited, max_elapsed 1m0s, while s0 and s1 have max_attempts 3, max_elapsed none: the strategy allowed more " +
				"attempts or more time delivers more of its requests through a long outage and sends more load, whatever its backoff; give every " +
				"strategy the same limits, or say why by silencing HL021 with a reason"},
		{"queue", fairYAML("{concurrency: 200}", "{requests: 50000}", jitter+", max_attempts: 3"),
			"50,000 requests of a burst arrive within one mean service time (100ms) at the server: more than 10x its 200 slots; with no queue " +
				"limit nothing is refused, every request waits its turn, and the strategy that retries slowest looks best; set server.queue to " +
				"what the server holds (a real server answers 503 beyond it), or silence HL022 with a reason"},
		{"queue, bounded by the workers", fairYAML("{concurrency: 10}", "{requests: 5000, senders: 5, workers: 400}", jitter+", max_attempts: 3"),
			"2,000 requests in flight at once (5,000 requests, 5 senders x 400 workers) arrive within one mean service time (100ms) at the server: more than 10x its 10 slots; "},
		{"queue of a service", "services:\n  - {name: front, concurrency: 100, queue: 50, calls: [{service: db, fanout: 3}]}\n  - {name: db, concurrency: 20}\n" +
			"workload: {requests: 5000}\nstrategies:\n  - {name: s, " + jitter + ", max_attempts: 3}\n",
			"300 first attempts from front arrive within one mean service time (100ms) at db: more than 10x its 20 slots; with no queue limit nothing is refused, " +
				"every request waits its turn, and the strategy that retries slowest looks best; set its queue to what a replica holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(tt.file))
			require.NoError(t, err)
			var msgs []string
			for _, f := range Lint(s) {
				if f.Rule.ID >= "HL020" {
					msgs = append(msgs, f.Msg)
				}
			}
			require.NotEmpty(t, msgs)
			assert.True(t, strings.HasPrefix(msgs[0], tt.want), "%s\ndoes not start with\n%s", msgs[0], tt.want)
		})
	}
}

// TestShippedScenariosCompareFairly: every scenario of the library, and
// so every example of the browser lab, compares its strategies on equal
// terms or says why not (lint.silence, with a reason).
func TestShippedScenariosCompareFairly(t *testing.T) {
	files := shippedFiles(t)
	for _, file := range files {
		s, err := Load(file)
		require.NoError(t, err, file)
		for _, f := range Lint(s) {
			switch f.Rule {
			case ruleUnequalTimeouts, ruleUnequalLimits, ruleUnboundedQueue:
				assert.NotEmpty(t, f.Silenced, "%s", f)
			}
		}
	}
}

// shippedFiles returns the scenarios of the library: scenarios/*.yaml
// and those of scenarios/configs.
func shippedFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	read, err := filepath.Glob("configs/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	require.NotEmpty(t, read)
	return append(files, read...)
}

// TestLintDocListsEveryRule: docs/lint.md has a row for every rule, by
// its id and name, and names error rules as such.
func TestLintDocListsEveryRule(t *testing.T) {
	data, err := os.ReadFile("../docs/lint.md")
	require.NoError(t, err)
	doc := string(data)
	for _, r := range LintRules {
		row := "| " + r.ID + " " + r.Name + " |"
		if r.Error {
			row = "| " + r.ID + " " + r.Name + " (error) |"
		}
		assert.Contains(t, doc, row, "docs/lint.md lists %s", r.ID)
	}
}
