package checks

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// scenario parses a scenario with two strategies, fixed and jitter, and
// the given checks section.
func scenario(t *testing.T, checks string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("gate.yaml", []byte(`
server: {concurrency: 10}
workload: {requests: 100}
strategies:
  - {name: fixed, backoff: {kind: fixed, delay: 5s}, max_attempts: 3}
  - {name: jitter, backoff: {kind: full-jitter}, max_attempts: 3}
checks:
`+checks))
	require.NoError(t, err)
	return sc
}

func ptr(x float64) *float64 { return &x }

// summary has fixed peaking at 25x capacity and never recovering, jitter
// at 1.03x recovering after 4 s.
func summary() *results.Summary {
	return &results.Summary{Scenario: "gate", Runs: 1, Strategies: []results.StrategySummary{
		{Name: "fixed", Figures: results.Figures{PeakLoad: 50000, PeakLoadRatio: ptr(25), Amplification: 8.4,
			DeliveredRatio: 0.4, LatencyS: results.Latency{P99: 541}, DeadLetteredBy: map[string]float64{"max_attempts": 30200}}},
		{Name: "jitter", Figures: results.Figures{PeakLoad: 2065, PeakLoadRatio: ptr(1.03), Amplification: 7.5,
			DeliveredRatio: 0.9995, RecoveryTimeS: ptr(4), LatencyS: results.Latency{P99: 84.6}, DeadLetteredBy: map[string]float64{}}},
	}}
}

func TestBounds(t *testing.T) {
	sc := scenario(t, `
  - strategy: fixed
    why: the herd
    peak_load_ratio: {min: 10}
    latency_s.p99: {max: 60}
    dead_lettered_by.max_attempts: {min: 1}
    dead_lettered_by.budget: {max: 0}
  - strategy: jitter
    peak_load_ratio: {max: 1.5}
    delivered_ratio: {min: 0.999, max: 1}
  - strategy: "*"
    recovery_time_s: {max: 120}
`)
	got := Evaluate(sc, summary())
	type row struct{ strategy, figure, bound, value, status, note string }
	var rows []row
	for _, r := range got {
		rows = append(rows, row{r.Strategy, r.Figure, r.Bound, r.Value, r.Status(), r.Note})
	}
	assert.Equal(t, []row{
		{"fixed", "peak_load_ratio", ">= 10", "25", "PASS", ""},
		{"fixed", "latency_s.p99", "<= 60", "541", "FAIL", ""},
		{"fixed", "dead_lettered_by.max_attempts", ">= 1", "30200", "PASS", ""},
		{"fixed", "dead_lettered_by.budget", "<= 0", "0", "PASS", ""},
		{"jitter", "peak_load_ratio", "<= 1.5", "1.03", "PASS", ""},
		{"jitter", "delivered_ratio", "in [0.999, 1]", "0.9995", "PASS", ""},
		{"fixed", "recovery_time_s", "<= 120", "never recovered", "FAIL", "no value"},
		{"jitter", "recovery_time_s", "<= 120", "4", "PASS", ""},
	}, rows)
	assert.Equal(t, "the herd", got[0].Why)
	assert.Equal(t, 9, got[0].Line, "a result points at its check in the file")
}

func TestConfidenceIntervals(t *testing.T) {
	// With runs, a bound holds only when the whole 95% interval does.
	s := summary()
	s.Runs = 5
	s.Strategies[1].CI95 = &results.Figures{PeakLoadRatio: ptr(0.2), DeliveredRatio: 0.0001}
	sc := scenario(t, `
  - strategy: jitter
    peak_load_ratio: {max: 1.5}
  - strategy: jitter
    peak_load_ratio: {max: 1.1}
  - strategy: jitter
    peak_load_ratio: {max: 0.8}
`)
	got := Evaluate(sc, s)
	require.Len(t, got, 3)
	assert.True(t, got[0].Pass, "1.03 ± 0.2 is below 1.5")
	assert.Equal(t, "1.03 ± 0.2", got[0].Value)
	assert.False(t, got[1].Pass, "1.03 ± 0.2 straddles 1.1")
	assert.Contains(t, got[1].Note, "straddles")
	assert.False(t, got[2].Pass, "1.03 ± 0.2 is above 0.8")
	assert.Empty(t, got[2].Note)
}

func TestComparisons(t *testing.T) {
	sc := scenario(t, `
  - compare: jitter.peak_load <= 0.5 * fixed.peak_load
  - compare: jitter.amplification >= fixed.amplification
  - compare: jitter.recovery_time_s < 30
  - compare: fixed.recovery_time_s < 30
`)
	got := Evaluate(sc, summary())
	require.Len(t, got, 4)
	assert.True(t, got[0].Pass)
	assert.Equal(t, "2065 <= 25000", got[0].Value)
	assert.False(t, got[1].Pass)
	assert.True(t, got[2].Pass)
	assert.False(t, got[3].Pass)
	assert.Equal(t, "never recovered < 30", got[3].Value)

	// Overlapping intervals are inconclusive: a fail that says so.
	s := summary()
	s.Runs = 3
	s.Strategies[0].CI95 = &results.Figures{Amplification: 0.5}
	s.Strategies[1].CI95 = &results.Figures{Amplification: 0.5}
	sc = scenario(t, "  - compare: jitter.amplification < fixed.amplification\n")
	r := Evaluate(sc, s)[0]
	assert.False(t, r.Pass)
	assert.Contains(t, r.Note, "overlap")
}

func TestBaseline(t *testing.T) {
	base := summary()
	now := summary()
	now.Strategies[1].PeakLoadRatio = ptr(1.2) // worse by 16%
	now.Strategies[1].Amplification = 7.6      // worse by 1.3%: within 5%
	now.Strategies[1].DeliveredRatio = 0.9     // worse
	now.Strategies[0].RecoveryTimeS = ptr(100) // fixed now recovers: better
	now.Strategies[1].RecoveryTimeS = nil      // jitter no longer does: worse
	byFigure := map[string]Result{}
	for _, r := range Baseline(now, base, 0.05) {
		byFigure[r.Strategy+" "+r.Figure] = r
	}
	assert.False(t, byFigure["jitter baseline peak_load_ratio"].Pass)
	assert.True(t, byFigure["jitter baseline amplification"].Pass)
	assert.False(t, byFigure["jitter baseline delivered_ratio"].Pass)
	assert.False(t, byFigure["jitter baseline recovery_time_s"].Pass, "a server that no longer recovers regresses")
	assert.True(t, byFigure["fixed baseline recovery_time_s"].Pass, "recovering where the baseline did not is fine")
	assert.True(t, byFigure["fixed baseline peak_load"].Pass, "unchanged")
	assert.Equal(t, "<= 1.082 (baseline 1.03 +5%)", byFigure["jitter baseline peak_load_ratio"].Bound)
}

func TestFiguresNamedByChecksExistInSummaries(t *testing.T) {
	// Every figure a check may name is a number of summary.json.
	s := summary()
	s.Strategies[0].RecoveryTimeS = ptr(1)
	s.Strategies[0].DrainTimeS = ptr(1)
	s.Strategies[0].CompletionTimeS = ptr(1)
	f := newFigures(&s.Strategies[0])
	for _, name := range scenarios.Figures {
		assert.True(t, f.get(name).ok, name)
	}
}

func reports(t *testing.T) []*Report {
	sc := scenario(t, `
  - strategy: jitter
    why: jitter spreads the herd
    peak_load_ratio: {max: 1.5}
  - strategy: fixed
    peak_load_ratio: {max: 1.5}
`)
	return []*Report{{File: "gate.yaml", Scenario: "gate", Runs: 1, Checks: Evaluate(sc, summary()),
		Lint: []Finding{{Rule: "HL001", Name: "fixed-delay", Path: "strategies[0].backoff", Line: 5, Col: 5, Message: "a fixed 5s delay"}}}}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	rs := reports(t)
	require.NoError(t, WriteText(&buf, rs))
	out := buf.String()
	assert.Contains(t, out, "gate (gate.yaml, 1 run(s))")
	assert.Regexp(t, `jitter\s+peak_load_ratio\s+<= 1.5\s+1.03\s+PASS`, out)
	assert.Regexp(t, `fixed\s+peak_load_ratio\s+<= 1.5\s+25\s+FAIL`, out)
	assert.Contains(t, out, "gate.yaml:5:5: strategies[0].backoff: HL001 fixed-delay: a fixed 5s delay (warning)")
	assert.Contains(t, out, "1 passed, 1 failed")

	rs[0].Strict = true
	assert.Equal(t, 2, rs[0].Failed(), "strict: the lint finding fails too")
	rs[0].Lint[0].Silenced = "on purpose"
	assert.Equal(t, 1, rs[0].Failed(), "a silenced finding never fails")
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, reports(t)))
	var doc struct {
		Passed, Failed int
		Scenarios      []Report
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, 1, doc.Passed)
	assert.Equal(t, 1, doc.Failed)
	require.Len(t, doc.Scenarios[0].Checks, 2)
	assert.Equal(t, "jitter spreads the herd", doc.Scenarios[0].Checks[0].Why)
}

func TestWriteJUnit(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, reports(t)))
	assert.True(t, strings.HasPrefix(buf.String(), xml.Header))
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, 3, doc.Tests, "two checks and a lint finding")
	assert.Equal(t, 1, doc.Failures)
	suite := doc.Suites[0]
	assert.Equal(t, "gate", suite.Name)
	assert.Equal(t, "jitter peak_load_ratio <= 1.5", suite.Cases[0].Name)
	assert.Nil(t, suite.Cases[0].Failure)
	require.NotNil(t, suite.Cases[1].Failure)
	assert.Equal(t, "value 25", suite.Cases[1].Failure.Message)
	assert.NotNil(t, suite.Cases[2].Skipped, "a lint warning is a skipped case")
}
