package lab

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

var wallS = regexp.MustCompile(`"wall_s": [-0-9.e+]+`)

// normalize sets the engine's wall time in a summary.json, the one
// figure that differs from run to run, to 0.
func normalize(summary string) string { return wallS.ReplaceAllString(summary, `"wall_s": 0`) }

const badFile = "name: bad\nworkload: {requests: 10}\nstrategies:\n  - {name: s, backoff: {kind: fixed}, max_attempts: unlimited}\n"

// read returns a shipped scenario, or a file of testdata/.
func read(t *testing.T, name string) string {
	t.Helper()
	if !strings.HasPrefix(name, "testdata/") {
		name = "../../scenarios/" + name
	}
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// at returns the text of src at line and col (from 1, in characters),
// n characters long.
func at(src string, line, col, n int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	r := []rune(lines[line-1])
	if col < 1 || col-1+n > len(r) {
		return ""
	}
	return string(r[col-1 : col-1+n])
}

func TestValidateAValidFile(t *testing.T) {
	src := read(t, "thundering-herd.yaml")
	v := Validate(src, "thundering-herd.yaml")
	assert.Empty(t, v.Problems)
	assert.Empty(t, v.Error)
	assert.Empty(t, v.Warnings, "the file silences what lint finds")
	assert.Contains(t, v.Describe, "50,000 requests in a burst")
	labels := map[string]string{}
	for _, c := range v.Controls {
		labels[c.Path] = c.Label + " = " + c.Value
		assert.Equal(t, c.Value, at(src, c.Line, c.Col, c.Len), "%s: the control's span holds its value", c.Path)
	}
	assert.Equal(t, map[string]string{
		"seed":                        "seed = 1",
		"runs":                        "runs = 1",
		"duration":                    "horizon = 15m",
		"server.concurrency":          "server concurrency = 200",
		"server.queue":                "server queue = 2000",
		"server.outages[0].start":     "outage 1: start = 0s",
		"server.outages[0].duration":  "outage 1: length = 30s",
		"workload.requests":           "requests = 50000",
		"strategies[0].backoff.delay": "fixed-60s: delay = 60s",
		"strategies[0].max_attempts":  "fixed-60s: attempts = 10",
		"strategies[1].backoff.base":  "exponential: base = 1s",
		"strategies[1].backoff.cap":   "exponential: cap = 60s",
		"strategies[1].max_attempts":  "exponential: attempts = 10",
		"strategies[2].backoff.base":  "full-jitter: base = 1s",
		"strategies[2].backoff.cap":   "full-jitter: cap = 60s",
		"strategies[2].max_attempts":  "full-jitter: attempts = 10",
		"strategies[3].backoff.base":  "equal-jitter: base = 1s",
		"strategies[3].backoff.cap":   "equal-jitter: cap = 60s",
		"strategies[3].max_attempts":  "equal-jitter: attempts = 10",
		"strategies[4].backoff.base":  "decorrelated-jitter: base = 1s",
		"strategies[4].backoff.cap":   "decorrelated-jitter: cap = 60s",
		"strategies[4].max_attempts":  "decorrelated-jitter: attempts = 10",
	}, labels)
}

func TestControlsOfAGraph(t *testing.T) {
	src := read(t, "real-graph.yaml")
	v := Validate(src, "real-graph.yaml")
	require.Empty(t, v.Problems)
	var services int
	for _, c := range v.Controls {
		assert.Equal(t, c.Value, at(src, c.Line, c.Col, c.Len), c.Path)
		if strings.HasPrefix(c.Path, "services[") {
			services++
			assert.NotContains(t, c.Label, "%", c.Path)
		}
	}
	assert.Positive(t, services, "the services' numbers are controls")
}

func TestControlsOnlyWherePlain(t *testing.T) {
	// A quoted value, a value from an alias and text that is not YAML
	// give no control: the page could not edit them in place.
	src := "workload: {requests: \"10\"}\nserver: {concurrency: &c 5, queue: *c}\nruns: 3 # three\n"
	var paths []string
	for _, c := range Controls(src) {
		paths = append(paths, c.Path)
	}
	assert.Equal(t, []string{"server.concurrency", "runs"}, paths)
	assert.Empty(t, Controls("{{{"))
}

func TestValidateABadFile(t *testing.T) {
	v := Validate(badFile, "bad.yaml")
	require.NotEmpty(t, v.Problems)
	assert.Equal(t, Problem{Line: 4, Col: 24, Path: "strategies[0].backoff.delay", Message: v.Problems[0].Message}, v.Problems[0])
	assert.Contains(t, v.Error, "bad.yaml:4:")
	assert.Empty(t, v.Describe)
}

func TestRun(t *testing.T) {
	var mu sync.Mutex
	var seen []float64
	r := Run(context.Background(), read(t, "thundering-herd.yaml"), "thundering-herd.yaml", Options{Progress: func(f float64) {
		mu.Lock()
		seen = append(seen, f)
		mu.Unlock()
	}})
	require.Empty(t, r.Error)
	s, err := results.ReadJSON(strings.NewReader(r.Summary))
	require.NoError(t, err)
	require.Len(t, s.Strategies, 5)
	require.NotNil(t, r.Charts)
	require.Len(t, r.Charts.Strategies, 5)
	assert.Len(t, r.Charts.T, 900, "15 min of 1 s buckets")
	for i, st := range r.Charts.Strategies {
		total := 0.0
		for _, x := range st.Attempts {
			total += x
		}
		assert.InDelta(t, s.Strategies[i].Attempts, total, 1e-6, "%s: the series add up to the summary's attempts", st.Name)
	}
	require.NotEmpty(t, seen)
	assert.IsNonDecreasing(t, seen)
	assert.Equal(t, 1.0, seen[len(seen)-1])
}

func TestRunRefuses(t *testing.T) {
	r := Run(context.Background(), badFile, "bad.yaml", Options{})
	assert.Empty(t, r.Summary)
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, 4, r.Problems[0].Line)

	// Over the memory bound: the message says so, at the workload.
	r = Run(context.Background(), read(t, "thundering-herd.yaml"), "thundering-herd.yaml", Options{MaxMemory: 1 << 20})
	assert.Empty(t, r.Summary)
	assert.Contains(t, r.Error, "memory")
	require.NotEmpty(t, r.Problems)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = Run(ctx, read(t, "thundering-herd.yaml"), "thundering-herd.yaml", Options{})
	assert.Empty(t, r.Summary)
	assert.Contains(t, r.Error, "canceled")
}

func TestRunRefusesRetriesThatNeverWait(t *testing.T) {
	// HL009: a run would spin until its event budget (minutes of CPU in
	// herdlab ui, a frozen tab in the static site); both engines refuse
	// it at once, at the backoff, as the CLI does.
	spin := "name: spin\nworkload: {requests: 1000}\nserver: {concurrency: 1, service_time: 1s, outages: [{start: 0s, duration: 1h, mode: refuse}]}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 2147483647}\n"
	r := Run(context.Background(), spin, "spin.yaml", Options{})
	assert.Empty(t, r.Summary)
	assert.Contains(t, r.Error, "HL009")
	require.NotEmpty(t, r.Problems)
	assert.Equal(t, Problem{Line: 5, Col: 24, Path: "strategies[0].backoff", Rule: "HL009", Message: r.Problems[0].Message}, r.Problems[0])
	p := RunUnits(context.Background(), spin, "spin.yaml", []int{0}, Options{})
	assert.Empty(t, p.Runs)
	assert.Equal(t, r.Problems, p.Problems)
}

func TestRunsInPartsSummariseAsOne(t *testing.T) {
	skipUnderRace(t)
	// The static site's workers each run some units, in any order, and
	// one summarises: summary.json and the chart data are Run's, for a
	// single server, runs > 1, a graph and the AWS adaptive limiter's
	// client rates.
	for _, name := range []string{"thundering-herd.yaml", "jitter.yaml", "real-graph.yaml", "testdata/adaptive.yaml"} {
		src := read(t, name)
		whole := Run(context.Background(), src, name, Options{})
		require.Empty(t, whole.Error, name)
		v := Validate(src, name)
		require.Positive(t, v.Units, name)
		var odd, even []int
		for k := v.Units - 1; k >= 0; k-- {
			if k%2 == 1 {
				odd = append(odd, k)
			} else {
				even = append(even, k)
			}
		}
		var seen []float64
		a := RunUnits(context.Background(), src, name, odd, Options{Progress: func(f float64) { seen = append(seen, f) }})
		b := RunUnits(context.Background(), src, name, even, Options{})
		require.Empty(t, a.Error, name)
		require.Empty(t, b.Error, name)
		if len(odd) > 0 {
			assert.Equal(t, 1.0, seen[len(seen)-1], name)
		}
		got := Summarize(src, name, [][]byte{b.Runs, a.Runs})
		require.Empty(t, got.Error, name)
		assert.Equal(t, normalize(whole.Summary), normalize(got.Summary), name)
		assert.Equal(t, whole.Charts, got.Charts, name)

		if v.Units > 1 {
			missing := Summarize(src, name, [][]byte{b.Runs})
			assert.Contains(t, missing.Error, "do not hold every run", name)
			twice := Summarize(src, name, [][]byte{a.Runs, b.Runs, a.Runs})
			assert.NotEmpty(t, twice.Error, name)
		}
	}
	assert.Contains(t, RunUnits(context.Background(), read(t, "jitter.yaml"), "jitter.yaml", []int{1000}, Options{}).Error, "no unit 1000")
	assert.Equal(t, 4, RunUnits(context.Background(), badFile, "bad.yaml", []int{0}, Options{}).Problems[0].Line)
}

func TestValidateStopsWithItsContext(t *testing.T) {
	// A sweep's points take a while to check: a validation whose
	// context ends stops, with the context's error.
	values := make([]string, 10000)
	for i := range values {
		values[i] = strconv.Itoa(1000 + i)
	}
	src := read(t, "thundering-herd.yaml") + "sweep:\n  vary:\n    - {path: workload.requests, values: [" + strings.Join(values, ", ") + "]}\n"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := ValidateContext(ctx, src, "th.yaml")
	assert.Equal(t, context.Canceled.Error(), v.Error)
	assert.Empty(t, v.Describe)
	assert.NotEmpty(t, Validate(src, "th.yaml").Describe, "uncancelled, it validates")
}
