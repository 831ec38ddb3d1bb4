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
			Requests: 50000, Delivered: 20000, DeliveredRatio: 0.4, LatencyS: results.Latency{P99: 541}, DeadLetteredBy: map[string]float64{"max_attempts": 30200}}},
		{Name: "jitter", Figures: results.Figures{PeakLoad: 2065, PeakLoadRatio: ptr(1.03), Amplification: 7.5,
			Requests: 50000, Delivered: 49975, DeliveredRatio: 0.9995, RecoveryTimeS: ptr(4), LatencyS: results.Latency{P99: 84.6}, DeadLetteredBy: map[string]float64{}}},
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
		rows = append(rows, row{r.Strategy, r.Figure, r.Bound, r.Text, r.Status(), r.Note})
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

	// The figures as numbers too: the value, the bound's ends.
	require.NotNil(t, got[0].Value)
	assert.Equal(t, 25.0, *got[0].Value)
	assert.Equal(t, ptr(10), got[0].Min)
	assert.Nil(t, got[0].Max)
	assert.Equal(t, []*float64{ptr(0.999), ptr(1)}, []*float64{got[5].Min, got[5].Max})
	assert.Nil(t, got[6].Value, "never recovered: no number")
}

func TestStrategiesNotRunAreSkipped(t *testing.T) {
	// check --strategy jitter: fixed did not run.
	s := summary()
	s.Strategies = s.Strategies[1:]
	sc := scenario(t, `
  - strategy: fixed
    peak_load_ratio: {min: 10}
  - strategy: jitter
    peak_load_ratio: {max: 1.5}
  - strategy: "*"
    recovery_time_s: {max: 120}
  - compare: jitter.peak_load < fixed.peak_load
  - compare: jitter.peak_load < 3000
`)
	got := Evaluate(sc, s)
	type row struct{ strategy, figure, status string }
	var rows []row
	for _, r := range got {
		rows = append(rows, row{r.Strategy, r.Figure, r.Status()})
	}
	assert.Equal(t, []row{
		{"fixed", "peak_load_ratio", "SKIP"},
		{"jitter", "peak_load_ratio", "PASS"},
		{"fixed", "recovery_time_s", "SKIP"},
		{"jitter", "recovery_time_s", "PASS"},
		{"", "jitter.peak_load < fixed.peak_load", "SKIP"},
		{"", "jitter.peak_load < 3000", "PASS"},
	}, rows)
	for _, i := range []int{0, 2, 4} {
		assert.False(t, got[i].Pass, "a skipped check has not passed")
		assert.False(t, got[i].Failed(), "nor failed")
		assert.Nil(t, got[i].Value)
		assert.Equal(t, "not run", got[i].Text)
		assert.Equal(t, "fixed was not run (--strategy)", got[i].Note)
	}
	r := &Report{Checks: got}
	assert.Equal(t, [3]int{3, 0, 3}, [3]int{r.Passed(), r.Failed(), r.Skipped()})
	assert.Equal(t, "3 passed, 0 failed, 3 skipped", Tally(r.Passed(), r.Failed(), r.Skipped()))
	assert.Equal(t, "3 passed, 0 failed", Tally(3, 0, 0))
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
	assert.Equal(t, "1.03 ± 0.2", got[0].Text)
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
	assert.Equal(t, "2065 <= 25000", got[0].Text)
	assert.False(t, got[1].Pass)
	assert.True(t, got[2].Pass)
	assert.False(t, got[3].Pass)
	assert.Equal(t, "never recovered < 30", got[3].Text)

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
	assert.Equal(t, "<= 1.082 (baseline 1.03 +5% relative)", byFigure["jitter baseline peak_load_ratio"].Bound)
}

func TestBaselineToleranceRelativeOrAbsolute(t *testing.T) {
	base := summary()
	rows := map[string]Result{}
	for _, r := range Baseline(summary(), base, 0.05) {
		rows[r.Strategy+" "+r.Figure] = r
	}
	tests := []struct {
		row, tolerance, bound string
		limit                 float64
	}{
		{"fixed baseline peak_load", ToleranceRelative, "<= 52500 (baseline 50000 +5% relative)", 52500},             // a count
		{"jitter baseline latency_s.p99", ToleranceRelative, "<= 88.83 (baseline 84.6 +5% relative)", 88.83},         // a time
		{"jitter baseline peak_load_ratio", ToleranceRelative, "<= 1.082 (baseline 1.03 +5% relative)", 1.0815},      // a ratio above 1
		{"jitter baseline delivered_ratio", ToleranceAbsolute, ">= 0.9495 (baseline 0.9995 -0.05 absolute)", 0.9495}, // a ratio below 1
		{"fixed baseline duplicates", ToleranceAbsolute, "<= 0.05 (baseline 0 +0.05 absolute)", 0.05},                // a baseline of 0
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			r, ok := rows[tt.row]
			require.True(t, ok)
			assert.Equal(t, tt.tolerance, r.Tolerance)
			assert.Equal(t, tt.bound, r.Bound)
			limit := r.Max
			if limit == nil {
				limit = r.Min
			}
			require.NotNil(t, limit)
			assert.InDelta(t, tt.limit, *limit, 1e-9)
			require.NotNil(t, r.Baseline)
			assert.True(t, r.Pass, "unchanged")
		})
	}
}

func TestBaselineStrategiesNotInBoth(t *testing.T) {
	base := summary()
	now := summary()
	now.Strategies = now.Strategies[1:] // fixed not run
	now.Strategies = append(now.Strategies, results.StrategySummary{Name: "new"})
	var skipped []string
	for _, r := range Baseline(now, base, 0.05) {
		if r.Skipped {
			skipped = append(skipped, r.Strategy+": "+r.Note)
		}
	}
	assert.Equal(t, []string{
		"new: new is not in the baseline",
		"fixed: fixed was not run (--strategy), or is no longer in the scenario",
	}, skipped)
}

func TestFiguresNamedByChecksExistInSummaries(t *testing.T) {
	// Every figure a check may name is a number of summary.json.
	s := summary()
	s.Strategies[0].RecoveryTimeS = ptr(1)
	s.Strategies[0].DrainTimeS = ptr(1)
	s.Strategies[0].CompletionTimeS = ptr(1)
	s.Strategies[0].BacklogAtOutageEnd = ptr(1)
	s.Strategies[0].Delivered = 1
	f := newFigures(&s.Strategies[0], 1)
	for _, name := range scenarios.Figures {
		assert.True(t, f.get(name).ok, name)
	}

	// Nothing left to recover: its 0 s is not a recovery time to pass a
	// bound.
	s.Strategies[0].Recovery = results.NothingLeft
	rec := newFigures(&s.Strategies[0], 1).get("recovery_time_s")
	assert.False(t, rec.ok)
	assert.Contains(t, rec.why, "nothing left to recover")
	s.Strategies[0].Recovery = results.Recovered

	// Nothing delivered: no latency to bound, not one of 0 s.
	s.Strategies[0].Delivered = 0
	p99 := newFigures(&s.Strategies[0], 1).get("latency_s.p99")
	assert.False(t, p99.ok)
	assert.Equal(t, "nothing delivered", p99.why)
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
	assert.Contains(t, out, "1 passed, 1 failed\n")

	rs[0].Only = []string{"jitter"}
	rs[0].Checks[1].skip("fixed")
	buf.Reset()
	require.NoError(t, WriteText(&buf, rs))
	out = buf.String()
	assert.Contains(t, out, "gate (gate.yaml, 1 run(s), only jitter)")
	assert.Regexp(t, `fixed\s+peak_load_ratio\s+<= 1.5\s+not run\s+SKIP: fixed was not run \(--strategy\)`, out)
	assert.Contains(t, out, "1 passed, 0 failed, 1 skipped\n")

	rs = reports(t)
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

	// Numbers as JSON numbers, bounds as plain text.
	assert.Contains(t, buf.String(), `"bound": "<= 1.5"`, "not HTML-escaped")
	assert.NotContains(t, buf.String(), `\u003c`)
	var raw struct {
		Scenarios []struct {
			Checks []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &raw))
	jitter := raw.Scenarios[0].Checks[0]
	assert.Equal(t, 1.03, jitter["value"], "a number, not a string")
	assert.Equal(t, 1.5, jitter["max"])
	assert.Equal(t, "1.03", jitter["value_text"])

	// A figure that does not exist is null; a skipped check says so.
	rs := reports(t)
	rs[0].Checks = append(rs[0].Checks, Result{Strategy: "fixed", Figure: "recovery_time_s", Bound: "<= 120", Text: "never recovered", Note: "no value"})
	rs[0].Checks[1].skip("fixed")
	buf.Reset()
	require.NoError(t, WriteJSON(&buf, rs))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &raw))
	never := raw.Scenarios[0].Checks[2]
	assert.Contains(t, never, "value")
	assert.Nil(t, never["value"])
	assert.Equal(t, true, raw.Scenarios[0].Checks[1]["skipped"])
	assert.Contains(t, buf.String(), `"skipped": 1,`)
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
	assert.Nil(t, suite.Cases[2].Skipped, "a lint warning is no skipped check")
	assert.Nil(t, suite.Cases[2].Failure, "nor a failure")
	assert.Contains(t, suite.Cases[2].SystemOut, "warning: ")

	// A check on a strategy not run is a skipped case, not a failure.
	rs := reports(t)
	rs[0].Checks[1].skip("fixed")
	buf.Reset()
	require.NoError(t, WriteJUnit(&buf, rs))
	doc = junitSuites{}
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, 0, doc.Failures)
	require.NotNil(t, doc.Suites[0].Cases[1].Skipped)
	assert.Contains(t, doc.Suites[0].Cases[1].Skipped.Message, "not run")
	assert.Equal(t, 1, doc.Suites[0].Skipped, "the check not run; the lint warning is not skipped")
	assert.Equal(t, 1, doc.Skipped)

	// A baseline figure's case says how the tolerance applied.
	rs[0].Checks = Baseline(summary(), summary(), 0.05)
	buf.Reset()
	require.NoError(t, WriteJUnit(&buf, rs))
	assert.Contains(t, buf.String(), `name="jitter baseline delivered_ratio &gt;= 0.9495 (baseline 0.9995 -0.05 absolute)"`)
	assert.Contains(t, buf.String(), `name="jitter baseline peak_load &lt;= 2168.25 (baseline 2065 +5% relative)"`)
}

func TestLintErrorsFailWithoutStrict(t *testing.T) {
	r := &Report{Lint: []Finding{{Rule: "HL001", Name: "fixed-delay"}, {Rule: "HL009", Name: "retry-spin", Error: true}}}
	assert.Equal(t, 1, r.Failed(), "the error fails; the warning does not")
	r.Strict = true
	assert.Equal(t, 2, r.Failed())
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, []*Report{{File: "x.yaml", Lint: []Finding{{Rule: "HL009", Name: "retry-spin", Message: "spins", Error: true}}}}))
	assert.Contains(t, buf.String(), "HL009 retry-spin: spins (error)")
	assert.Contains(t, buf.String(), "0 passed, 1 failed")
}

// TestServiceFigures: checks bound and compare the figures of one
// service of a graph, services.NAME.FIGURE; a service that never
// recovered has no recovery to bound.
func TestServiceFigures(t *testing.T) {
	sc, err := scenarios.Parse("graph.yaml", []byte(`
services:
  - {name: api, calls: [{service: db.main}]}
  - {name: db.main}
workload: {requests: 100}
strategies:
  - {name: every-layer, backoff: {kind: full-jitter}, max_attempts: 3}
  - {name: edge-only, backoff: {kind: full-jitter}, max_attempts: 3}
checks:
  - strategy: every-layer
    services.db.main.amplification: {min: 5}
    services.db.main.recovery_time_s: {max: 60}
  - strategy: edge-only
    services.api.amplification: {max: 3}
    services.db.main.recovery_time_s: {max: 60}
  - compare: edge-only.services.db.main.attempts <= 0.5 * every-layer.services.db.main.attempts
`))
	require.NoError(t, err)
	s := &results.Summary{Runs: 1, Strategies: []results.StrategySummary{
		{Name: "every-layer", Services: []results.ServiceFigures{{Name: "api", Amplification: 3}, {Name: "db.main", Amplification: 9, Attempts: 900, AttemptsAfterOutage: 10}}},
		{Name: "edge-only", Services: []results.ServiceFigures{{Name: "api", Amplification: 3}, {Name: "db.main", Amplification: 3, Attempts: 300}}},
	}}
	var got []string
	for _, r := range Evaluate(sc, s) {
		got = append(got, r.Strategy+" "+r.Figure+" "+r.Text+" "+r.Status()+" "+r.Note)
	}
	assert.Equal(t, []string{
		"every-layer services.db.main.amplification 9 PASS ",
		"every-layer services.db.main.recovery_time_s never recovered FAIL no value",
		"edge-only services.api.amplification 3 PASS ",
		"edge-only services.db.main.recovery_time_s no load: nothing reached db.main after the outage FAIL no value",
		" edge-only.services.db.main.attempts <= 0.5 * every-layer.services.db.main.attempts 300 <= 450 PASS ",
	}, got)

	_, err = scenarios.Parse("graph.yaml", []byte(`
services: [{name: api}]
workload: {requests: 100}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
checks:
  - {strategy: s, services.db.amplification: {max: 3}}
  - {strategy: s, services.api.speed: {max: 3}}
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `graph.yaml:6:46: checks[0].services.db.amplification: no service "db" (the graph has api)`)
	assert.Contains(t, err.Error(), `checks[1].services.api.speed: unknown figure (a service's figure is services.NAME.FIGURE`)
}

// TestBaselineWatchesServices: a graph's baseline comparison watches each
// service's figures too: a service whose attempts grew past the
// tolerance regresses, though the strategy's own figures did not move.
func TestBaselineWatchesServices(t *testing.T) {
	summary := func(db float64) *results.Summary {
		return &results.Summary{Runs: 1, Strategies: []results.StrategySummary{{Name: "s",
			Figures:  results.Figures{Attempts: 100, Amplification: 1, Requests: 100, Delivered: 100, DeliveredRatio: 1},
			Services: []results.ServiceFigures{{Name: "api", Attempts: 100, Amplification: 1}, {Name: "db", Attempts: db, Amplification: db / 100}}}}}
	}
	failed := func(rs []Result) []string {
		var out []string
		for _, r := range rs {
			if r.Failed() {
				out = append(out, r.Figure)
			}
		}
		return out
	}
	assert.Empty(t, failed(Baseline(summary(400), summary(400), 0.05)))
	assert.Equal(t, []string{"baseline services.db.attempts", "baseline services.db.amplification"}, failed(Baseline(summary(500), summary(400), 0.05)))
}
