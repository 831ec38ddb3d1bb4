package scenarios

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lintYAML returns a minimal valid scenario with one strategy, named s:
// the workload is on line 2, the strategy starts on line 4 (strategies[0]
// at 4:5) and its lines follow from line 5, each indented four spaces, so
// a block field such as max_attempts has its value at 5:19 or below.
func lintYAML(workload string, strategy ...string) string {
	var b strings.Builder
	b.WriteString("server: {concurrency: 10, queue: 100}\n")
	b.WriteString("workload: " + workload + "\n")
	b.WriteString("strategies:\n")
	b.WriteString("  - name: s\n")
	for _, line := range strategy {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// lintStep is one row of a rule's step table: a scenario and the
// findings it must give, each "RULE PATH LINE:COL", in order.
type lintStep struct {
	name     string
	workload string
	strategy []string
	want     []string
}

// graphStep is a row of a graph rule's step table: a whole scenario.
type graphStep struct {
	name string
	file string
	want []string
}

// graphYAML is a chain a -> b -> c called by the fleet, with the
// strategy's lines from line 9 (strategies[0] at 8:5) and the calls'
// fields of a and b given.
func graphYAML(aCall, bCall string, strategy ...string) string {
	return fmt.Sprintf(`services:
  - {name: a, calls: [{service: b%s}]}
  - {name: b, calls: [{service: c%s}]}
  - {name: c}
workload: {requests: 10}
network: {latency: 1ms}
strategies:
  - name: s
    %s
`, aCall, bCall, strings.Join(strategy, "\n    "))
}

// One burst request: no fleet, so HL001 and HL002 stay quiet.
const oneRequest = "{requests: 1}"

// lintSteps holds each rule's step table: a scenario that makes the rule
// fire and near-identical ones that do not.
var lintSteps = map[string][]lintStep{
	"HL001": {
		{"fixed delay, 800 requests one sender each", "{requests: 800}",
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"},
			[]string{"HL001 strategies[0].backoff 5:14"}},
		{"one request", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"}, nil},
		{"1 sender x 1 worker", "{requests: 800, senders: 1, workers: 1}",
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"}, nil},
		{"1 sender without a worker limit sends all 800 at once", "{requests: 800, senders: 1}",
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"},
			[]string{"HL001 strategies[0].backoff 5:14"}},
		{"2 senders x 1 worker", "{requests: 800, senders: 2, workers: 1}",
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"},
			[]string{"HL001 strategies[0].backoff 5:14"}},
		{"uncapped poisson arrivals", "{arrival: {kind: poisson, rate: 10}}",
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"},
			[]string{"HL001 strategies[0].backoff 5:14"}},
		{"full jitter instead", "{requests: 800}",
			[]string{"backoff: {kind: full-jitter, base: 5s, cap: 60s}", "max_attempts: 3"}, nil},
	},
	"HL002": {
		{"exponential, 800 requests", "{requests: 800}",
			[]string{"backoff: {kind: exponential, base: 1s, cap: 60s}", "max_attempts: 3"},
			[]string{"HL002 strategies[0].backoff 5:14"}},
		{"exponential, one request", oneRequest,
			[]string{"backoff: {kind: exponential, base: 1s, cap: 60s}", "max_attempts: 3"}, nil},
		{"equal jitter instead", "{requests: 800}",
			[]string{"backoff: {kind: equal-jitter, base: 1s, cap: 60s}", "max_attempts: 3"}, nil},
	},
	"HL003": {
		{"full jitter, cap = base", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 5s, cap: 5s}", "max_attempts: 3"},
			[]string{"HL003 strategies[0].backoff.cap 5:49"}},
		{"full jitter, cap above base", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 5s, cap: 6s}", "max_attempts: 3"}, nil},
		{"default cap 60s = base: placed at the backoff", oneRequest,
			[]string{"backoff: {kind: equal-jitter, base: 60s}", "max_attempts: 3"},
			[]string{"HL003 strategies[0].backoff.cap 5:14"}},
		{"decorrelated jitter, cap = base", oneRequest,
			[]string{"backoff: {kind: decorrelated-jitter, base: 1s, cap: 1s}", "max_attempts: 3"},
			[]string{"HL003 strategies[0].backoff.cap 5:57"}},
	},
	"HL004": {
		{"no limit", oneRequest,
			[]string{"backoff: {kind: full-jitter}"},
			[]string{"HL004 strategies[0] 4:5"}},
		{"max_attempts", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3"}, nil},
		{"max_elapsed", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_elapsed: 1h"}, nil},
		{"budget", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "budget: {kind: tokens}"}, nil},
	},
	"HL005": {
		{"honor, cap 2h", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "retry_after: {mode: honor, cap: 2h}"},
			[]string{"HL005 strategies[0].retry_after.cap 7:37"}},
		{"max, cap 2h", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "retry_after: {mode: max, cap: 2h}"},
			[]string{"HL005 strategies[0].retry_after.cap 7:35"}},
		{"honor, cap exactly 1h", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "retry_after: {mode: honor, cap: 1h}"}, nil},
		{"ignore, cap 2h", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "retry_after: {mode: ignore, cap: 2h}"}, nil},
	},
	"HL006": {
		// 3 timeouts of 10s and 2 waits of 5s: 40s.
		{"fixed, 40s beyond 39s", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3", "timeout: 10s", "max_elapsed: 39s"},
			[]string{"HL006 strategies[0].max_attempts 6:19"}},
		{"fixed, exactly 40s", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3", "timeout: 10s", "max_elapsed: 40s"}, nil},
		// 5 timeouts of 1s and waits 1, 2, 4, 4 (capped): 16s.
		{"exponential, 16s beyond 15s", oneRequest,
			[]string{"backoff: {kind: exponential, base: 1s, cap: 4s}", "max_attempts: 5", "timeout: 1s", "max_elapsed: 15s"},
			[]string{"HL006 strategies[0].max_attempts 6:19"}},
		{"exponential, exactly 16s", oneRequest,
			[]string{"backoff: {kind: exponential, base: 1s, cap: 4s}", "max_attempts: 5", "timeout: 1s", "max_elapsed: 16s"}, nil},
		// 4 timeouts of 1s and waits min(10, 3), min(10, 9), min(10, 27): 26s.
		{"decorrelated, 26s beyond 25s", oneRequest,
			[]string{"backoff: {kind: decorrelated-jitter, base: 1s, cap: 10s}", "max_attempts: 4", "timeout: 1s", "max_elapsed: 25s"},
			[]string{"HL006 strategies[0].max_attempts 6:19"}},
		{"decorrelated, exactly 26s", oneRequest,
			[]string{"backoff: {kind: decorrelated-jitter, base: 1s, cap: 10s}", "max_attempts: 4", "timeout: 1s", "max_elapsed: 26s"}, nil},
		// 4 timeouts of 1s and waits 1.5, 3, 6 (t * 1.5): 14.5s.
		{"proportional, 14.5s beyond 14s", oneRequest,
			[]string{"backoff: {kind: proportional-jitter, base: 1s, cap: 10s, jitter: 0.5}", "max_attempts: 4", "timeout: 1s", "max_elapsed: 14s"},
			[]string{"HL006 strategies[0].max_attempts 6:19"}},
		{"proportional, exactly 14.5s", oneRequest,
			[]string{"backoff: {kind: proportional-jitter, base: 1s, cap: 10s, jitter: 0.5}", "max_attempts: 4", "timeout: 1s", "max_elapsed: 14500ms"}, nil},
		{"a single attempt is never beyond", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 1", "timeout: 10s", "max_elapsed: 1s"}, nil},
		{"no max_elapsed", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3", "timeout: 10s"}, nil},
	},
	"HL007": {
		{"open 5s, base 10s", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 10s}", "max_attempts: 3", "breaker: {consecutive: 5, open_for: 5s}"},
			[]string{"HL007 strategies[0].breaker.open_for 7:41"}},
		{"open 10s, base 10s", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 10s}", "max_attempts: 3", "breaker: {consecutive: 5, open_for: 10s}"}, nil},
		{"open 15s, fixed 30s", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 30s}", "max_attempts: 3", "breaker: {consecutive: 5, open_for: 15s}"},
			[]string{"HL007 strategies[0].breaker.open_for 7:41"}},
		{"default open 15m, base 20m: placed at the breaker", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 20m, cap: 1h}", "max_attempts: 3", "breaker: {consecutive: 5}"},
			[]string{"HL007 strategies[0].breaker.open_for 7:14"}},
		{"backoff none", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 3", "breaker: {consecutive: 5, open_for: 1ms}"}, nil},
	},
	"HL008": {
		{"6 attempts", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 6"},
			[]string{"HL008 strategies[0].max_attempts 6:19"}},
		{"5 attempts", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 5"}, nil},
		{"6 attempts with a budget", oneRequest,
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 6", "budget: {kind: quota}"}, nil},
	},
	"HL013": {
		{"a hedge without a budget", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 1", "hedge: {delay: 50ms}"},
			[]string{"HL013 strategies[0].hedge 7:12"}},
		{"a hedge with a budget", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 1", "hedge: {delay: 50ms}", "budget: {kind: tokens}"}, nil},
	},
	"HL014": {
		{"finagle per sender: 10% of 1 request a second, no reserve", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: finagle, percent: 10, min_per_second: 0}"},
			[]string{"HL014 strategies[0].budget 7:13"}},
		{"finagle held by the fleet: 10 a second", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: finagle, percent: 10, min_per_second: 0, scope: fleet}"}, nil},
		{"finagle per sender with its default reserve of 10 a second", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: finagle, percent: 10}"}, nil},
		{"finagle in groups of 5: 0.5 a second", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: finagle, percent: 10, min_per_second: 0, scope: group, group_size: 5}"},
			[]string{"HL014 strategies[0].budget 7:13"}},
		{"envoy: 3 retries held 10 s each", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter, base: 10s}", "max_attempts: 3", "budget: {kind: envoy, scope: fleet}"},
			[]string{"HL014 strategies[0].budget 7:13"}},
		{"envoy: 3 retries held 1 s each", "{senders: 100, arrival: {kind: poisson, rate: 100}}",
			[]string{"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 3", "budget: {kind: envoy, scope: fleet}"}, nil},
	},
	"HL018": {
		// 10 senders x 10 workers: at most 100 attempts in flight.
		{"a fleet floor of 100 over 100 in flight", "{requests: 1000, senders: 10, workers: 10}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy, min_concurrency: 100, scope: fleet}"},
			[]string{"HL018 strategies[0].budget.min_concurrency 7:44"}},
		{"a fleet floor of 99", "{requests: 1000, senders: 10, workers: 10}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy, min_concurrency: 99, scope: fleet}"}, nil},
		// Envoy's default floor of 3, per sender of 2 workers: placed at
		// the budget, as the floor is not written.
		{"the default floor per sender of 2 workers", "{requests: 1000, senders: 10, workers: 2}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy}"},
			[]string{"HL018 strategies[0].budget.min_concurrency 7:13"}},
		{"the default floor per sender of 4 workers", "{requests: 1000, senders: 10, workers: 4}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy}"}, nil},
		{"a group of 2 senders of 1 worker, floor 2", "{requests: 1000, senders: 10, workers: 1}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy, min_concurrency: 2, scope: group, group_size: 2}"},
			[]string{"HL018 strategies[0].budget.min_concurrency 7:44"}},
		{"senders without a worker limit are not bounded", "{requests: 1000, senders: 10}",
			[]string{"backoff: {kind: full-jitter}", "max_attempts: 3", "budget: {kind: envoy, min_concurrency: 50}"}, nil},
	},
	"HL009": {
		{"a fixed 1ns delay, unlimited attempts", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 1ns}"},
			[]string{"HL004 strategies[0] 4:5", "HL009 strategies[0].backoff 5:14"}},
		{"no backoff, 2^31-1 attempts", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 2147483647"},
			[]string{"HL009 strategies[0].backoff 5:14", "HL008 strategies[0].max_attempts 6:19"}},
		{"no backoff, 1,000 attempts: a bound", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 1000", "budget: {kind: tokens}"}, nil},
		{"no backoff, 1,001 attempts", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 1001", "budget: {kind: tokens}"}, nil},
		{"no backoff, 1,001 attempts, no budget", oneRequest,
			[]string{"backoff: {kind: none}", "max_attempts: 1001"},
			[]string{"HL009 strategies[0].backoff 5:14", "HL008 strategies[0].max_attempts 6:19"}},
		{"a cap under 1ms", oneRequest,
			[]string{"backoff: {kind: full-jitter, base: 100us, cap: 900us}"},
			[]string{"HL004 strategies[0] 4:5", "HL009 strategies[0].backoff 5:14"}},
		{"a 1ms fixed delay", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 1ms}"},
			[]string{"HL004 strategies[0] 4:5"}},
		{"unlimited attempts with a budget", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 1ns}", "budget: {kind: quota}"}, nil},
	},
	"order": {
		{"two rules on one field, by rule id", oneRequest,
			[]string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 6", "max_elapsed: 1s"},
			[]string{"HL006 strategies[0].max_attempts 6:19", "HL008 strategies[0].max_attempts 6:19"}},
		{"by line, then column", "{requests: 800}",
			[]string{"backoff: {kind: exponential, base: 1s, cap: 1s}", "max_attempts: 6"},
			[]string{"HL002 strategies[0].backoff 5:14", "HL003 strategies[0].backoff.cap 5:49", "HL008 strategies[0].max_attempts 6:19"}},
	},
}

// graphLintSteps holds the step tables of the rules for graphs.
var graphLintSteps = map[string][]graphStep{
	"HL010": {
		{"the fleet and every edge retry, no budget", graphYAML(", retry: {max_attempts: 3, timeout: 1s}", ", retry: {max_attempts: 3, timeout: 500ms}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 3", "timeout: 2s"),
			[]string{"HL010 services[0].calls[0].retry 2:43"}},
		{"edge only", graphYAML(", retry: {timeout: 1s}", ", retry: {timeout: 500ms}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 3", "timeout: 2s"), nil},
		{"every layer with budgets", graphYAML(", retry: {max_attempts: 3, timeout: 1s, budget: {kind: tokens}}", ", retry: {max_attempts: 3, timeout: 500ms, budget: {kind: tokens}}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 3", "timeout: 2s", "budget: {kind: tokens}"), nil},
		{"edges set by the strategy", graphYAML(", retry: {timeout: 1s}", ", retry: {timeout: 500ms}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 1", "timeout: 2s", "edges: {a->b: {max_attempts: 2}, b->c: {max_attempts: 2}}"),
			[]string{"HL010 strategies[0].edges.a->b 12:19"}},
	},
	"HL011": {
		{"5 x 5 x 5 = 125 attempts at c", graphYAML(", retry: {max_attempts: 5, timeout: 1s, budget: {kind: tokens}}", ", retry: {max_attempts: 5, timeout: 500ms, budget: {kind: tokens}}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 5", "timeout: 2s", "budget: {kind: tokens}"),
			[]string{"HL011 strategies[0] 8:5"}},
		{"4 x 4 x 4 = 64", graphYAML(", retry: {max_attempts: 4, timeout: 1s, budget: {kind: tokens}}", ", retry: {max_attempts: 4, timeout: 500ms, budget: {kind: tokens}}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 4", "timeout: 2s", "budget: {kind: tokens}"), nil},
		{"4 x 4 x (4 x fan-out 2) = 128", graphYAML(", retry: {max_attempts: 4, timeout: 1s, budget: {kind: tokens}}", ", fanout: 2, retry: {max_attempts: 4, timeout: 500ms, budget: {kind: tokens}}",
			"backoff: {kind: full-jitter, base: 1s}", "max_attempts: 4", "timeout: 2s", "budget: {kind: tokens}"),
			[]string{"HL011 strategies[0] 8:5"}},
	},
	"HL012": {
		{"b->c as long as a->b", graphYAML(", retry: {timeout: 1s}", ", retry: {timeout: 1s}",
			"backoff: {kind: none}", "max_attempts: 1", "timeout: 2s"),
			[]string{"HL012 services[1].calls[0].retry.timeout 3:53"}},
		{"shorter inside", graphYAML(", retry: {timeout: 1s}", ", retry: {timeout: 900ms}",
			"backoff: {kind: none}", "max_attempts: 1", "timeout: 2s"), nil},
		{"with deadline propagation", graphYAML(", retry: {timeout: 1s}", ", retry: {timeout: 1s}",
			"backoff: {kind: none}", "max_attempts: 1", "timeout: 2s", "deadline_propagation: true"), nil},
	},
}

// TestLintRuleSteps runs each rule's step table, asserting the rule ids,
// paths and positions of every finding.
func TestLintRuleSteps(t *testing.T) {
	for _, table := range slices.Sorted(mapKeys(lintSteps)) {
		t.Run(table, func(t *testing.T) {
			for _, tt := range lintSteps[table] {
				t.Run(tt.name, func(t *testing.T) {
					s, err := Parse("x.yaml", []byte(lintYAML(tt.workload, tt.strategy...)))
					require.NoError(t, err)
					var got []string
					for _, f := range Lint(s) {
						got = append(got, fmt.Sprintf("%s %s %d:%d", f.Rule.ID, f.Path, f.Line, f.Col))
						assert.Equal(t, "x.yaml", f.File)
						assert.Empty(t, f.Silenced)
						assert.NotEmpty(t, f.Msg)
					}
					assert.Equal(t, tt.want, got)
				})
			}
		})
	}
}

// TestGraphLintRuleSteps runs the graph rules' step tables.
func TestGraphLintRuleSteps(t *testing.T) {
	for _, table := range slices.Sorted(mapKeys(graphLintSteps)) {
		t.Run(table, func(t *testing.T) {
			for _, tt := range graphLintSteps[table] {
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

func mapKeys[V any](m map[string]V) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestLintRules(t *testing.T) {
	idRE := regexp.MustCompile(`^HL\d{3}$`)
	nameRE := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	fires := map[string]bool{}
	for _, steps := range lintSteps {
		for _, st := range steps {
			for _, w := range st.want {
				fires[strings.Fields(w)[0]] = true
			}
		}
	}
	for _, steps := range graphLintSteps {
		for _, st := range steps {
			for _, w := range st.want {
				fires[strings.Fields(w)[0]] = true
			}
		}
	}
	for _, steps := range fairLintSteps {
		for _, st := range steps {
			for _, w := range st.want {
				fires[strings.Fields(w)[0]] = true
			}
		}
	}
	for _, steps := range configLintSteps {
		for _, st := range steps {
			for _, w := range st.want {
				fires[strings.Fields(w)[0]] = true
			}
		}
	}
	seen := map[string]bool{}
	for i, r := range LintRules {
		assert.Regexp(t, idRE, r.ID)
		assert.Regexp(t, nameRE, r.Name)
		assert.NotEmpty(t, r.Doc, r.ID)
		assert.False(t, seen[r.ID], "%s is listed twice", r.ID)
		seen[r.ID] = true
		if i > 0 {
			assert.Less(t, LintRules[i-1].ID, r.ID, "LintRules is in id order")
		}
		assert.True(t, fires[r.ID], "%s has a step that makes it fire", r.ID)
		assert.True(t, len(lintSteps[r.ID])+len(graphLintSteps[r.ID])+len(configLintSteps[r.ID])+len(fairLintSteps[r.ID]) > 0, "%s has a step table", r.ID)
	}
	assert.Len(t, LintRules, 22)
}

func TestLintMessages(t *testing.T) {
	tests := []struct {
		workload string
		strategy []string
		want     []string // what the one finding's Msg contains
	}{
		{"{requests: 800}", []string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3"},
			[]string{"fixed 5s delay, 800 requests, one sender each", "use full-jitter or equal-jitter, or silence HL001 with a reason"}},
		{"{requests: 50000, senders: 20, workers: 5}", []string{"backoff: {kind: exponential, base: 1s, cap: 60s}", "max_attempts: 3"},
			[]string{"exponential 1s..1m0s without jitter, 50,000 requests, 20 senders x 5 workers", "wait 1s, 2s, 4s, ...", "silence HL002"}},
		{oneRequest, []string{"backoff: {kind: full-jitter, base: 5s, cap: 5s}", "max_attempts: 3"},
			[]string{"full-jitter with cap 5s, not above base 5s", "silence HL003"}},
		{oneRequest, []string{"backoff: {kind: full-jitter}"},
			[]string{"no max_attempts, no max_elapsed and no budget", "silence HL004"}},
		{oneRequest, []string{"backoff: {kind: full-jitter}", "max_attempts: 3", "retry_after: {mode: honor, cap: 72h}"},
			[]string{"Retry-After mode honor with cap 72h0m0s", "silence HL005"}},
		{oneRequest, []string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 3", "timeout: 10s", "max_elapsed: 39s"},
			[]string{"timing out after 10s", "(5s before the first retry, 5s before the last)", "3 attempts take 40s, longer than max_elapsed 39s",
				"only 2 attempts fit", "lower max_attempts to 2 or raise max_elapsed to 40s", "silence HL006"}},
		{oneRequest, []string{"backoff: {kind: fixed, delay: 5s}", "max_attempts: 2", "timeout: 10s", "max_elapsed: 5s"},
			[]string{"(5s before the retry)", "not even the first attempt's timeout fits"}},
		{oneRequest, []string{"backoff: {kind: full-jitter, base: 10s}", "max_attempts: 3", "breaker: {consecutive: 5, open_for: 5s}"},
			[]string{"breaker open for 5s, shorter than the first backoff wait (full-jitter 10s)", "silence HL007"}},
		{oneRequest, []string{"backoff: {kind: full-jitter}", "max_attempts: 10"},
			[]string{"max_attempts 10 without a budget", "up to 10x", "silence HL008"}},
	}
	for _, tt := range tests {
		s, err := Parse("x.yaml", []byte(lintYAML(tt.workload, tt.strategy...)))
		require.NoError(t, err)
		findings := Lint(s)
		require.Len(t, findings, 1, "%v", tt.strategy)
		for _, w := range tt.want {
			assert.Contains(t, findings[0].Msg, w)
		}
	}
}

func TestLintSilence(t *testing.T) {
	data := lintYAML("{requests: 800}", "backoff: {kind: fixed, delay: 5s}", "max_attempts: 6") +
		"  - name: t\n" +
		"    backoff: {kind: fixed, delay: 10s}\n" +
		"    max_attempts: 3\n" +
		"lint:\n" +
		"  silence:\n" +
		"    - {rule: HL001, reason: the article's anti-pattern on purpose}\n"
	s, err := Parse("x.yaml", []byte(data))
	require.NoError(t, err)
	findings := Lint(s)
	require.Len(t, findings, 4)
	// A scenario-level silence covers every finding of the rule.
	assert.Equal(t, "HL001", findings[0].Rule.ID)
	assert.Equal(t, "the article's anti-pattern on purpose", findings[0].Silenced)
	assert.Equal(t, "HL008", findings[1].Rule.ID)
	assert.Empty(t, findings[1].Silenced, "other rules still speak")
	assert.Equal(t, "HL001", findings[2].Rule.ID)
	assert.Equal(t, "strategies[1].backoff", findings[2].Path)
	assert.Equal(t, "the article's anti-pattern on purpose", findings[2].Silenced)
	assert.Equal(t, "HL021", findings[3].Rule.ID, "max_attempts 6 and 3")
	assert.Empty(t, findings[3].Silenced)

	str := findings[0].String()
	assert.True(t, strings.HasPrefix(str, "x.yaml:5:14: strategies[0].backoff: HL001 fixed-delay: fixed 5s delay, 800 requests"), str)
	assert.True(t, strings.HasSuffix(str, "or silence HL001 with a reason (silenced: the article's anti-pattern on purpose)"), str)
	assert.Equal(t, "x.yaml:6:19: strategies[0].max_attempts: HL008 many-attempts-no-budget: "+findings[1].Msg, findings[1].String())
}

func TestLintGoScenario(t *testing.T) {
	// A scenario built in Go has no positions: its findings say so.
	s := Default()
	s.Name = "go"
	s.Workload.Requests = 100
	st := NewStrategy("fixed")
	st.Backoff.Kind = BackoffFixed
	st.Backoff.Delay = time.Second
	s.Strategies = append(s.Strategies, st)
	require.NoError(t, s.Validate())
	findings := Lint(&s)
	require.Len(t, findings, 2)
	assert.Equal(t, Finding{Rule: LintRules[0], Path: "strategies[0].backoff", Msg: findings[0].Msg}, findings[0])
	assert.Equal(t, "HL004", findings[1].Rule.ID)
	assert.True(t, strings.HasPrefix(findings[0].String(), "strategies[0].backoff: HL001 fixed-delay: fixed 1s delay, 100 requests"))
}

func TestWorstCase(t *testing.T) {
	// brute sums the largest waits one by one, in floating point.
	brute := func(st Strategy, n int) float64 {
		sum := float64(n) * float64(st.Timeout)
		for k := 0; k < n-1; k++ {
			sum += float64(st.Backoff.largestWait(k))
		}
		return sum
	}
	strategy := func(b Backoff) Strategy {
		st := NewStrategy("s")
		st.Timeout = time.Second
		st.Backoff = b
		return st
	}
	tests := []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"none", Backoff{Kind: BackoffNone}, 4, 4 * time.Second},
		{"fixed", Backoff{Kind: BackoffFixed, Delay: 5 * time.Second}, 3, 13 * time.Second},
		{"exponential", Backoff{Kind: BackoffExponential, Base: time.Second, Cap: 4 * time.Second, Multiplier: 2}, 5, 16 * time.Second},
		{"full jitter x3", Backoff{Kind: BackoffFullJitter, Base: time.Second, Cap: time.Minute, Multiplier: 3}, 4, 4*time.Second + 13*time.Second},
		{"equal jitter, multiplier 1", Backoff{Kind: BackoffEqualJitter, Base: time.Second, Cap: time.Minute, Multiplier: 1}, 4, 7 * time.Second},
		{"proportional", Backoff{Kind: BackoffProportionalJitter, Base: time.Second, Cap: 10 * time.Second, Multiplier: 2, Jitter: 0.5}, 5, 5*time.Second + 20500*time.Millisecond},
		{"decorrelated", Backoff{Kind: BackoffDecorrelatedJitter, Base: time.Second, Cap: 10 * time.Second}, 5, 5*time.Second + 32*time.Second},
		{"decorrelated v2", Backoff{Kind: BackoffDecorrelatedJitterV2, Base: time.Second, Cap: 10 * time.Second}, 3, 23 * time.Second},
		{"one attempt", Backoff{Kind: BackoffFixed, Delay: time.Hour}, 1, time.Second},
		{"saturates", Backoff{Kind: BackoffExponential, Base: time.Second, Cap: 1 << 62, Multiplier: 2}, math.MaxInt, math.MaxInt64},
		{"a million attempts at the cap", Backoff{Kind: BackoffFullJitter, Base: time.Second, Cap: time.Minute, Multiplier: 2}, 1_000_000,
			1_000_000*time.Second + (1+2+4+8+16+32)*time.Second + (1_000_000-1-6)*time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, strategy(tt.b).worstCase(tt.n))
		})
	}

	t.Run("multiplier barely above 1", func(t *testing.T) {
		// Past lintMaxSteps the sum is a geometric series: it agrees with the
		// waits summed one by one.
		for _, kind := range []string{BackoffExponential, BackoffProportionalJitter} {
			st := strategy(Backoff{Kind: kind, Base: time.Millisecond, Cap: time.Hour, Multiplier: 1.0005, Jitter: 0.2})
			for _, n := range []int{lintMaxSteps, lintMaxSteps + 2, 10_000, 30_000, 100_000} {
				assert.InEpsilon(t, brute(st, n), float64(st.worstCase(n)), 1e-9, "%s n=%d", kind, n)
			}
		}
		st := strategy(Backoff{Kind: BackoffExponential, Base: time.Nanosecond, Cap: math.MaxInt64, Multiplier: 1 + 1e-15})
		assert.Positive(t, st.worstCase(math.MaxInt), "no hang, no overflow")
	})
}

// TestLintGolden lints every file of testdata/lint and compares the
// findings with the golden file beside it; go test -update rewrites the
// goldens. Together the files make every rule fire, and silence one.
func TestLintGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/lint/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fired := map[string]bool{}
	silenced := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := Load(file)
			require.NoError(t, err)
			var b strings.Builder
			for _, f := range Lint(s) {
				b.WriteString(f.String() + "\n")
				fired[f.Rule.ID] = true
				if f.Silenced != "" {
					silenced++
				}
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./scenarios -update to create it")
			assert.Equal(t, string(want), b.String())
		})
	}
	for _, r := range LintRules {
		assert.True(t, fired[r.ID], "%s fires in a testdata/lint file", r.ID)
	}
	assert.Positive(t, silenced, "a testdata/lint file silences a finding")
}

// TestLintShippedScenarios lints every scenario of the library and logs
// the findings: the anti-pattern scenarios break rules on purpose, so
// they are not required to be clean.
func TestLintShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			s, err := Load(file)
			require.NoError(t, err)
			findings := Lint(s)
			for i, f := range findings {
				t.Logf("%s", f)
				assert.Equal(t, file, f.File)
				assert.Positive(t, f.Line)
				assert.Positive(t, f.Col)
				if i > 0 {
					p := findings[i-1]
					assert.True(t, p.Line < f.Line || p.Line == f.Line && (p.Col < f.Col || p.Col == f.Col && p.Rule.ID <= f.Rule.ID),
						"file order: %s before %s", p, f)
				}
			}
		})
	}
}

func FuzzLint(f *testing.F) {
	seed(f, "testdata/lint/*.yaml", "testdata/valid/*.yaml", "*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, fd := range Lint(s) {
			require.Positive(t, fd.Line)
			require.NotEmpty(t, fd.Msg)
			require.True(t, strings.HasPrefix(fd.Path, "strategies[") || strings.HasPrefix(fd.Path, "services[") || fd.Path == "server.queue", fd.Path)
		}
	})
}

func ExampleLint() {
	s, err := Parse("webhooks.yaml", []byte(`server: {concurrency: 200}
workload: {requests: 800}
strategies:
  - name: fixed-5s
    backoff: {kind: fixed, delay: 5s}
    max_attempts: 5
lint:
  silence:
    - {rule: HL001, reason: the article's anti-pattern shown on purpose}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range Lint(s) {
		fmt.Println(f)
	}
	// Output:
	// webhooks.yaml:5:14: strategies[0].backoff: HL001 fixed-delay: fixed 5s delay, 800 requests, one sender each: the requests that fail together retry together 5s later, the same spike each time; use full-jitter or equal-jitter, or silence HL001 with a reason (silenced: the article's anti-pattern shown on purpose)
}

// TestRetrySpinCountsTheNetwork: with a network between them, an attempt
// takes a round trip however short its backoff: no spin (the AWS study's
// clients retry at once, but 10 ms apart).
func TestRetrySpinCountsTheNetwork(t *testing.T) {
	data := lintYAML(oneRequest, "backoff: {kind: none}", "max_attempts: 2000") + "network: {latency: 5ms}\n"
	s, err := Parse("x.yaml", []byte(data))
	require.NoError(t, err)
	var rules []string
	for _, f := range Lint(s) {
		rules = append(rules, f.Rule.ID)
	}
	assert.Equal(t, []string{"HL008"}, rules)

	s.Network.Latency.Mean = 400 * time.Microsecond // an 800 µs round trip
	rules = rules[:0]
	for _, f := range Lint(s) {
		rules = append(rules, f.Rule.ID)
	}
	assert.Equal(t, []string{"HL009", "HL008"}, rules)
}

// configStep is a row of the step table of a rule about configuration
// files: a file a strategy reads with from:, and the findings, each
// "RULE FILE:LINE:COL PATH", placed in the file.
type configStep struct {
	name string
	file string // the file's name, beside the scenario
	text string
	from string // the strategy's from:
	want []string
}

// grpcConfig is a gRPC service config of one retry policy with
// maxAttempts attempts (line 5) and the extra lines at the end of the
// policy (from line 10).
func grpcConfig(attempts int, throttling string, extra ...string) string {
	lines := []string{`{`, `  "methodConfig": [{`, `    "name": [{"service": "shop.Orders"}],`, `    "retryPolicy": {`,
		fmt.Sprintf(`      "maxAttempts": %d,`, attempts), `      "initialBackoff": "0.1s",`, `      "maxBackoff": "1s",`,
		`      "backoffMultiplier": 2,`, `      "retryableStatusCodes": ["UNAVAILABLE"]`}
	lines = append(lines, extra...)
	lines = append(lines, `    }`, `  }],`, `  `+throttling, `}`)
	return strings.Join(lines, "\n") + "\n"
}

var configLintSteps = map[string][]configStep{
	"HL015": {
		{"maxAttempts 6 is run as 5", "sc.json", grpcConfig(6, `"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}`),
			"{grpc_service_config: sc.json, method: shop.Orders/Get}", []string{"HL015 sc.json:5:7 strategies[0]"}},
		{"maxAttempts 5", "sc.json", grpcConfig(5, `"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}`),
			"{grpc_service_config: sc.json, method: shop.Orders/Get}", nil},
	},
	"HL016": {
		{"a per-try timeout as long as the route's", "vs.yaml", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\nspec:\n  hosts: [orders]\n  http:\n  - timeout: 2s\n    retries: {attempts: 2, perTryTimeout: 2s}\n    route: [{destination: {host: orders}}]\n",
			"{istio: vs.yaml, virtual_service: orders}", []string{"HL016 vs.yaml:8:28 strategies[0]"}},
		{"a per-try timeout of a fraction of it", "vs.yaml", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\nspec:\n  hosts: [orders]\n  http:\n  - timeout: 2s\n    retries: {attempts: 2, perTryTimeout: 500ms}\n    route: [{destination: {host: orders}}]\n",
			"{istio: vs.yaml, virtual_service: orders}", nil},
	},
	"HL017": {
		{"a POST retried on 5xx", "envoy.yaml", mustRead("testdata/lint/files/envoy-post.yaml"),
			"{envoy: envoy.yaml, route: create}", []string{"HL017 envoy.yaml:21:57 strategies[0]"}},
		{"the same route matching GET", "envoy.yaml", strings.Replace(mustRead("testdata/lint/files/envoy-post.yaml"), "exact: POST", "exact: GET", 1),
			"{envoy: envoy.yaml, route: create}", nil},
	},
	"HL019": {
		{"a misspelt retryThrottling", "sc.json", grpcConfig(3, `"retryThrotling": {"maxTokens": 10, "tokenRatio": 0.1}`),
			"{grpc_service_config: sc.json, method: shop.Orders/Get}", []string{"HL019 sc.json:12:3 strategies[0]"}},
	},
}

// TestConfigLintRuleSteps runs the step tables of the rules about
// configuration files: each finding is placed at its line in the file.
func TestConfigLintRuleSteps(t *testing.T) {
	for _, table := range slices.Sorted(mapKeys(configLintSteps)) {
		t.Run(table, func(t *testing.T) {
			for _, tt := range configLintSteps[table] {
				t.Run(tt.name, func(t *testing.T) {
					dir := t.TempDir()
					require.NoError(t, os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.text), 0o644))
					sc := lintYAML("{requests: 10, senders: 1, workers: 1}", "from: "+tt.from)
					require.NoError(t, os.WriteFile(filepath.Join(dir, "x.yaml"), []byte(sc), 0o644))
					s, err := Load(filepath.Join(dir, "x.yaml"))
					require.NoError(t, err)
					var got []string
					for _, f := range Lint(s) {
						if f.Rule.ID != table {
							continue // the values read may break other rules
						}
						got = append(got, fmt.Sprintf("%s %s:%d:%d %s", f.Rule.ID, filepath.Base(f.File), f.Line, f.Col, f.Path))
						assert.NotEmpty(t, f.Msg)
					}
					assert.Equal(t, tt.want, got)
				})
			}
		})
	}
}

// mustRead returns a file's text, for the step tables.
func mustRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}
