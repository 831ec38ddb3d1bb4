package results

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healthy returns n buckets where every attempt succeeds.
func healthy(n int) []Bucket {
	s := make([]Bucket, n)
	for i := range s {
		s[i] = Bucket{Attempts: 10, OK: 10}
	}
	return s
}

func TestRecovery(t *testing.T) {
	setup := Setup{Bucket: time.Second, Concurrency: 5, LastOutageEnd: 30 * time.Second}
	tests := []struct {
		name   string
		series func() []Bucket
		want   time.Duration
		ok     bool
	}{
		{"healthy from the outage's end", func() []Bucket { return healthy(60) }, 0, true},
		{"failures until 40s", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 40; i++ {
				s[i] = Bucket{Attempts: 100, OK: 50, NotOK: 50}
			}
			return s
		}, 10 * time.Second, true},
		{"95% is enough", func() []Bucket {
			s := healthy(60)
			s[45] = Bucket{Attempts: 100, OK: 95, NotOK: 5}
			return s
		}, 0, true},
		{"94% is not", func() []Bucket {
			s := healthy(60)
			s[45] = Bucket{Attempts: 100, OK: 94, NotOK: 6}
			return s
		}, 16 * time.Second, true},
		{"never: the last bucket fails", func() []Bucket {
			s := healthy(60)
			s[59] = Bucket{Attempts: 10, NotOK: 10}
			return s
		}, 0, false},
		{"a growing queue is not recovered", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 60; i++ {
				s[i].Queue = int64(i-30) * 100 // grows by 100 a second
			}
			return s
		}, 29 * time.Second, true}, // only the last bucket: nothing after it grows
		{"a draining queue is recovered", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 60; i++ {
				s[i].Queue = int64(60-i) * 100
			}
			return s
		}, 0, true},
		{"queue noise within the concurrency", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 60; i++ {
				s[i].Queue = int64(i % 5)
			}
			return s
		}, 0, true},
		{"results still out at the end say nothing", func() []Bucket {
			s := healthy(60)
			s[59] = Bucket{Attempts: 10, OK: 1} // nine still in flight at the end
			return s
		}, 0, true},
		{"a latched server is not recovered by its silent last buckets", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 57; i++ {
				s[i] = Bucket{Attempts: 100, OK: 10, NotOK: 90}
			}
			for i := 57; i < 60; i++ {
				s[i] = Bucket{Attempts: 100, OK: 2} // timeouts not yet due
			}
			return s
		}, 0, false},
		{"only silent buckets after the outage", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 60; i++ {
				s[i] = Bucket{Attempts: 100}
			}
			return s
		}, 0, false},
		{"buckets without attempts show no recovery", func() []Bucket { return make([]Bucket, 60) }, 0, false},
		{"no success after the outage is no recovery", func() []Bucket {
			s := healthy(60)
			for i := 30; i < 45; i++ {
				s[i] = Bucket{Attempts: 100, NotOK: 100} // every attempt times out
			}
			for i := 45; i < 60; i++ {
				s[i] = Bucket{} // the senders gave up: nothing sent
			}
			return s
		}, 0, false},
		{"empty buckets after successes are healthy", func() []Bucket {
			s := healthy(60)
			for i := 45; i < 60; i++ {
				s[i] = Bucket{}
			}
			return s
		}, 0, true},
		{"outage past the horizon", func() []Bucket { return healthy(20) }, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Recovery(tt.series(), setup)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	// An outage ending within a bucket: recovery counts from its end to
	// the next bucket's start.
	got, ok := Recovery(healthy(60), Setup{Bucket: time.Second, LastOutageEnd: 2500 * time.Millisecond})
	assert.True(t, ok)
	assert.Equal(t, 500*time.Millisecond, got)
}

func TestBreakdown(t *testing.T) {
	tests := []struct {
		name string
		b    Bucket
		want Breakdown
	}{
		{"all classes", Bucket{Attempts: 20, OK: 5, NotOK: 13, Rejected: 4, Throttled: 3, NotOKTimeout: 2},
			Breakdown{Succeeded: 5, Rejected: 4, Throttled: 3, TimedOut: 2, Failed: 4, Unresolved: 2}},
		{"a rejection the sender timed out on counts once", Bucket{Attempts: 1, NotOK: 1, Rejected: 1, NotOKTimeout: 1},
			Breakdown{Rejected: 1}},
		{"empty", Bucket{}, Breakdown{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Breakdown()
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.b.Attempts, got.Succeeded+got.Rejected+got.Throttled+got.TimedOut+got.Failed+got.Unresolved)
		})
	}
}

func TestFigures(t *testing.T) {
	r := NewRun("fixed", 0, 4)
	r.Requests, r.Attempts, r.Delivered, r.DeadLettered, r.Unfinished = 100, 250, 90, 6, 4
	r.DeadLetteredBy["max_attempts"] = 6
	r.Series[0] = Bucket{Attempts: 200, NotOK: 200} // during the outage
	r.Series[2] = Bucket{Attempts: 40, OK: 40}
	r.Series[3] = Bucket{Attempts: 10, OK: 10}
	for _, ms := range []int{100, 200, 300, 400} {
		r.RecordLatency(time.Duration(ms) * time.Millisecond)
	}
	drain := 1500 * time.Millisecond
	r.Drain = &drain
	f := r.Figures(Setup{Bucket: 2 * time.Second, Capacity: 10, LastOutageEnd: time.Second})
	assert.Equal(t, 2.5, f.Amplification)
	assert.Equal(t, 0.9, f.DeliveredRatio)
	assert.Equal(t, 40.0, f.PeakLoad, "the peak counts from the outage's end")
	assert.Equal(t, 4.0, f.PeakAtS)
	assert.Equal(t, 200.0, f.PeakLoadOverall)
	require.NotNil(t, f.PeakLoadRatio)
	assert.Equal(t, 2.0, *f.PeakLoadRatio, "40 attempts in 2s against 10/s")
	require.NotNil(t, f.DrainTimeS)
	assert.Equal(t, 1.5, *f.DrainTimeS)
	assert.Nil(t, f.CompletionTimeS)
	assert.InDelta(t, 0.25, f.LatencyS.Mean, 1e-12, "the mean is exact")
	assert.InEpsilon(t, 0.2, f.LatencyS.P50, 0.001)
	assert.InEpsilon(t, 0.4, f.LatencyS.Max, 0.001)
	assert.Equal(t, map[string]float64{"max_attempts": 6}, f.DeadLetteredBy)

	unlimited := r.Figures(Setup{Bucket: time.Second, Capacity: math.Inf(1)})
	assert.Nil(t, unlimited.PeakLoadRatio, "no ratio to an unlimited capacity")
}

func TestLatencyHistogramsMergeExactly(t *testing.T) {
	a, b, all := LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
	for i := range 10_000 {
		v := int64(1 + i*i%5_000_000)
		require.NoError(t, all.RecordValue(v))
		if i%2 == 0 {
			require.NoError(t, a.RecordValue(v))
		} else {
			require.NoError(t, b.RecordValue(v))
		}
	}
	assert.Zero(t, a.Merge(b))
	assert.True(t, a.Equals(all))
}

func summaryForTest() *Summary {
	rec, ratio := 12.5, 1.03
	return &Summary{
		Scenario: "demo", Description: "A demo.", Seed: 1, Runs: 1, BucketS: 1,
		Strategies: []StrategySummary{
			{Name: "full-jitter", Figures: Figures{Requests: 50000, Attempts: 376037, Amplification: 7.52074, Delivered: 49973, DeliveredRatio: 0.99946,
				DeadLettered: 27, PeakLoad: 2065, PeakLoadRatio: &ratio, PeakAtS: 36, RecoveryTimeS: &rec,
				LatencyS: Latency{P99: 84.61}, DeadLetteredBy: map[string]float64{"max_attempts": 27}}},
			{Name: "fixed-60s", Figures: Figures{Requests: 50000, Attempts: 420800, DeadLetteredBy: map[string]float64{}}},
		},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	s := summaryForTest()
	s.Strategies[len(s.Strategies)-1].Index = 4 // its place in the file
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, s))
	assert.Contains(t, buf.String(), `"recovery_time_s": null`, "a missing figure is null")
	assert.Contains(t, buf.String(), `"queue_limit": null`, "an unlimited queue has no limit")
	assert.Contains(t, buf.String(), `"index": 4`)
	got, err := ReadJSON(&buf)
	require.NoError(t, err)
	assert.Equal(t, s, got)

	_, err = ReadJSON(strings.NewReader(`{"scenario": "x", "bogus": 1}`))
	assert.ErrorContains(t, err, "bogus")
}

func TestSummaryCSV(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteSummaryCSV(&buf, summaryForTest()))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	header := strings.Split(lines[0], ",")
	row := strings.Split(lines[2], ",")
	require.Len(t, row, len(header))
	col := func(name string) string {
		for i, h := range header {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	assert.Equal(t, "fixed-60s", row[0])
	assert.Equal(t, "420800", col("attempts"))
	assert.Empty(t, col("recovery_time_s"), "a missing figure is empty")
	assert.Empty(t, col("backlog_at_outage_end"), "not known: empty, not 0")
	assert.Equal(t, "0", col("dead_lettered_in_outage"))
}

func TestTimeseries(t *testing.T) {
	r := NewRun("a", 1, 2)
	r.Series[1] = Bucket{Attempts: 5, OK: 3, NotOK: 1, Delivered: 3, Failed: 1, Rejected: 1, ShortCircuited: 2, Queue: 7, InFlight: 4, Throttled: 1, TimedOut: 1, NotOKTimeout: 1, Delayed: 6, DLQ: 2}
	var buf bytes.Buffer
	require.NoError(t, WriteTimeseries(&buf, 500*time.Millisecond, []*Run{r}))
	assert.Equal(t, TimeseriesHeader+"\na,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\na,1,0.5,5,3,1,1,2,7,4,3,1,1,1,1,6,2,,\n", buf.String(),
		"a queue that was not measured has no longest or mean, not 0")
	assert.True(t, strings.HasPrefix(TimeseriesHeader, "strategy,run,t,attempts,delivered,failed,rejected,short_circuited,queue,in_flight"),
		"the contract's columns come first")
	assert.True(t, strings.HasSuffix(TimeseriesHeader, ",queue_max,queue_mean"), "new columns at the end")

	// A measured queue: empty at the bucket's end, 2,000 at its most.
	r.QueueTracked = true
	r.Series[1].Queue, r.Series[1].QueueMax, r.Series[1].QueueMean = 0, 2000, 1017.833333
	buf.Reset()
	require.NoError(t, WriteTimeseries(&buf, 500*time.Millisecond, []*Run{r}))
	assert.Equal(t, TimeseriesHeader+"\na,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\na,1,0.5,5,3,1,1,2,0,4,3,1,1,1,1,6,2,2000,1017.833\n", buf.String())
}

func TestTableAndReport(t *testing.T) {
	var table, report bytes.Buffer
	s := summaryForTest()
	require.NoError(t, WriteTable(&table, s))
	require.NoError(t, WriteReport(&report, s, nil))
	assert.Contains(t, table.String(), "2,065 (1.03x) at 36s")
	assert.Contains(t, table.String(), "never", "a server that never recovered says so")
	assert.Contains(t, table.String(), "completion")
	assert.Contains(t, report.String(), "# demo\n\nA demo.\n")
	assert.Contains(t, report.String(), "| full-jitter | 376,037 | 7.52x |")
}

func TestFormatting(t *testing.T) {
	assert.Equal(t, "50,000", Count(50000))
	assert.Equal(t, "999", Count(999))
	assert.Equal(t, "-1,234,567", Count(-1234567))
	assert.Equal(t, "1,234.5", Count(1234.5))
	assert.Equal(t, "1.03", Decimal(1.0345))
	assert.Equal(t, "25", Decimal(25))
	x, y := 0.25, 90.0
	assert.Equal(t, "250ms", Seconds(&x, ""))
	assert.Equal(t, "90s", Seconds(&y, ""))
	assert.Equal(t, "never", Seconds(nil, "never"))
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	err := WriteFile(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("crash")
	})
	require.Error(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(data), "a failed write leaves the old file")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "and no temporary file")

	require.NoError(t, WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }))
	data, _ = os.ReadFile(path)
	assert.Equal(t, "new", string(data))
}

func TestTakeaways(t *testing.T) {
	capacity := 2000.0
	never, quick, slow := (*float64)(nil), 0.0, 511.0
	r25, r1, r0 := 25.0, 1.03, 0.0
	backlog, none := 50000.0, 0.0
	s := &Summary{
		Scenario: "herd", Runs: 1, BucketS: 1, CapacityPerS: &capacity,
		Outages: []Window{{StartS: 0, EndS: 30, Mode: "refuse"}},
		Strategies: []StrategySummary{
			{Name: "fixed-60s", Recovery: Recovered, Figures: Figures{Requests: 50000, Delivered: 19800, PeakLoad: 50000, PeakLoadRatio: &r25, PeakAtS: 60, RecoveryTimeS: &slow,
				BacklogAtOutageEnd: &backlog, Amplification: 8.42, DeliveredRatio: 0.396, DeadLettered: 30200, DeadLetteredBy: map[string]float64{"max_attempts": 30200}}},
			{Name: "full-jitter", Recovery: Recovered, Figures: Figures{Requests: 50000, Delivered: 49973, PeakLoad: 2065, PeakLoadRatio: &r1, PeakAtS: 36, RecoveryTimeS: &quick,
				BacklogAtOutageEnd: &backlog, Amplification: 7.52, DeliveredRatio: 0.99946, DeadLettered: 27, Duplicates: 3}},
			{Name: "exponential", Recovery: Never, Figures: Figures{Requests: 20, Delivered: 10, RecoveryTimeS: never, BacklogAtOutageEnd: &backlog, Amplification: 9.56, DeliveredRatio: 0.5, DeadLettered: 10,
				DeadLetteredBy: map[string]float64{"max_attempts": 4, "budget": 6, "max_elapsed": 0}}},
			// It gives up on every request within the outage: nothing to
			// recover, no load after it, the least work, and no praise.
			{Name: "give-up", Recovery: NothingLeft, NothingLeftRuns: 1, Figures: Figures{Requests: 50000, Delivered: 0, PeakLoadRatio: &r0, RecoveryTimeS: &quick,
				BacklogAtOutageEnd: &none, DeadLetteredInOutage: 50000, Amplification: 3, DeadLettered: 50000,
				DeadLetteredBy: map[string]float64{"max_elapsed": 50000}}},
		},
	}
	assert.Equal(t, []string{
		"fixed-60s: 50,000 attempts within 1s at t = 60s, 25x capacity.",
		"Peak load after the outage stays near capacity with full-jitter (1.03x; 99.95% delivered, 0.05% given up).",
		"give-up left nothing to recover: by the end of the outage it had given up on 50,000 requests (100%), so its load and recovery after it say nothing of speed.",
		"Fastest recovery after the outage: full-jitter, 0s (99.95% delivered, 0.05% given up); slowest: fixed-60s, 511s (39.6% delivered, 60.4% given up).",
		"The server never recovered within the horizon with exponential.",
		"fixed-60s delivered 39.6% of requests; 30,200 went to the dead-letter queue (max_attempts).",
		"full-jitter: 3 requests were processed more than once (duplicates).",
		"exponential delivered 50% of requests; 10 went to the dead-letter queue (6 budget, 4 max_attempts).",
		"give-up delivered 0% of requests; 50,000 went to the dead-letter queue (max_elapsed).",
		"Least work: give-up, 3x attempts per request (0% delivered, 100% given up; most: exponential, 9.56x).",
	}, Takeaways(s))

	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, s))
	assert.Regexp(t, `give-up .* none +nothing left +nothing left`, table.String(), "no peak, and nothing left to recover or drain: not 0 (0x) at 0s, not 0s")
	assert.NotContains(t, table.String(), "0 (0x) at 0s")
	assert.Regexp(t, `give-up .* none delivered\s*\n`, table.String(), "no latency where nothing was delivered")

	// Without an outage there is no "after the outage".
	s.Outages = nil
	table.Reset()
	require.NoError(t, WriteTable(&table, s))
	assert.NotContains(t, table.String(), "peak after outage")
	assert.Contains(t, table.String(), "peak load")
	assert.Contains(t, Takeaways(s)[1], "Peak load stays near capacity")
}

func TestRecoveryOf(t *testing.T) {
	tests := []struct {
		runs, recovered, nothingLeft int
		want                         string
	}{
		// recovered leaves the nothing-left runs out
		{1, 1, 0, Recovered},
		{1, 0, 1, NothingLeft},
		{1, 0, 0, Never},
		{3, 0, 3, NothingLeft},
		{3, 2, 1, Mixed},
		{3, 0, 1, Mixed},
		{3, 2, 0, Mixed},
		{3, 0, 0, Never},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, RecoveryOf(tt.runs, tt.recovered, tt.nothingLeft), "%+v", tt)
	}
}

func TestReportsEmbedCharts(t *testing.T) {
	s := summaryForTest()
	images := []Image{
		{File: "load.png", Caption: "demo: load on the server", Data: []byte("\x89PNG fake")},
		{File: "latency.svg", Caption: "demo: <latency> & CDF", Data: []byte("<svg/>")},
	}
	var md, page bytes.Buffer
	require.NoError(t, WriteReport(&md, s, images))
	assert.Contains(t, md.String(), "![demo: load on the server](load.png)")
	assert.Contains(t, md.String(), "## Takeaways\n")

	require.NoError(t, WriteHTML(&page, s, images, nil))
	html := page.String()
	assert.Contains(t, html, `src="data:image/png;base64,iVBORyBmYWtl"`, "images are inlined")
	assert.Contains(t, html, `src="data:image/svg&#43;xml;base64,PHN2Zy8&#43;"`, "an escaped + is still a +")
	assert.Contains(t, html, "demo: &lt;latency&gt; &amp; CDF", "text is escaped")
	assert.Contains(t, html, "<td>full-jitter</td><td>376,037</td>")
	assert.NotContains(t, html, "load.png", "nothing refers to a file beside the page")
	assert.NotContains(t, html, "<script", "without the chart component, no script")
}

func TestReportDrawsItsChartsInThePage(t *testing.T) {
	// With the chart component, report.html inlines it and the data, and
	// leaves out the images of the charts it draws, keeping the others.
	s := summaryForTest()
	images := []Image{
		{File: "load.png", Caption: "load", Data: []byte("load image")},
		{File: "graph.png", Caption: "the graph", Data: []byte("graph image")},
	}
	charts := &Charts{Version: ChartsVersion, BucketS: 1, T: []float64{0, 1}, Strategies: []StrategyCharts{{Name: "a</script>", Attempts: []float64{3, 4}}}}
	live := &Interactive{Charts: charts, Script: `var HerdlabCharts = {render: function () { return "</script>"; }};`, Style: ".chart { width: 100% }"}
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, s, images, live))
	html := page.String()
	assert.Contains(t, html, `return "<\/script>"`, "the script cannot end its element")
	assert.Contains(t, html, "<style>.chart { width: 100% }</style>")
	assert.Contains(t, html, `window.herdlabReport = HerdlabCharts.render(document.getElementById("herdlab-charts"), {"scenario":`)
	assert.Contains(t, html, `"attempts":[3,4]`, "the chart data, inlined")
	assert.Contains(t, html, `a\u003c/script\u003e`, "data is escaped in the script")
	assert.Equal(t, 2, strings.Count(html, "</script>"), "two scripts, each ended once")
	assert.NotContains(t, html, base64.StdEncoding.EncodeToString([]byte("load image")), "the load chart is drawn, not inlined")
	assert.Contains(t, html, base64.StdEncoding.EncodeToString([]byte("graph image")), "the graph diagram is inlined")
}

func TestWriteComparison(t *testing.T) {
	sim, real := summaryForTest(), summaryForTest()
	real.Strategies[0].PeakLoad = 2272 // 10% above 2,065
	real.Strategies[0].RecoveryTimeS = nil
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, sim, real, "comparison.png"))
	out := buf.String()
	assert.Contains(t, out, "| full-jitter | peak load (after the outage) | 2,065 | 2,272 | +10.0% |")
	assert.Contains(t, out, "| full-jitter | recovery time (s) | 12.5 | never | - |")
	assert.Contains(t, out, "| fixed-60s | amplification | 0 | 0 | 0% |")
	assert.Contains(t, out, "](comparison.png)")
	assert.Contains(t, out, "full-jitter: peak load agrees within 15%; recovery time does not")
	assert.Contains(t, out, "fixed-60s: peak load and recovery time agree within 15%")
}

func TestWriteComparisonJudgesEveryFigure(t *testing.T) {
	// The audit's hedging with cancel: peak load and recovery time agree,
	// but the real server served its cancelled copies (duplicates 529
	// against 36) and half as many attempts timed out. comparison.md
	// shows every figure either side has and does not call them in
	// agreement; a count within 0.1% of the requests (50 of 50,000) does
	// agree.
	sim, real := summaryForTest(), summaryForTest()
	for _, s := range []*StrategySummary{&sim.Strategies[0], &real.Strategies[0]} {
		s.Hedges, s.HedgeWins, s.Wasted = 9000, 4000, 120
	}
	sim.Strategies[0].Duplicates, real.Strategies[0].Duplicates = 36, 529
	sim.Strategies[0].TimedOut, real.Strategies[0].TimedOut = 5932, 2950
	real.Strategies[0].Hedges = 9040 // 40 more: within 0.1% of the requests
	real.Strategies[0].PeakLoad = 2100
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, sim, real, ""))
	out := buf.String()
	assert.Contains(t, out, "| full-jitter | timed out | 5,932 | 2,950 | -50.3% |")
	assert.Contains(t, out, "| full-jitter | hedges | 9,000 | 9,040 | +0.4% |")
	assert.Contains(t, out, "| full-jitter | wasted work | 120 | 120 | +0.0% |")
	assert.Contains(t, out, "| full-jitter | p99 latency, delivered (s) | 84.6 | 84.6 | +0.0% |")
	assert.NotContains(t, out, "| fixed-60s | timed out |", "a figure neither side has is left out")
	assert.Contains(t, out, "full-jitter: peak load and recovery time agree within 15%, but these figures do not: "+
		"duplicates (36 simulated, 529 real), timed out (5,932 simulated, 2,950 real)\n")
	assert.Contains(t, out, "fixed-60s: peak load and recovery time agree within 15%, and so do the other figures compared\n")

	// Peak load off too: the sentence says so, and names the others.
	real.Strategies[0].PeakLoad = 3000
	buf.Reset()
	require.NoError(t, WriteComparison(&buf, sim, real, ""))
	assert.Contains(t, buf.String(), "full-jitter: recovery time agrees within 15%; peak load does not; nor do these figures: duplicates")
}

func TestWriteComparisonOfAGraph(t *testing.T) {
	// Each service of a graph gets its overall peak load and its
	// amplification, and the layers' agreement names the services off
	// by more than 15%.
	sim, real := summaryForTest(), summaryForTest()
	sim.Strategies[0].Services = []ServiceFigures{{Name: "gateway", PeakLoadOverall: 240, Amplification: 2.6}, {Name: "db", PeakLoadOverall: 2100, Amplification: 16}}
	real.Strategies[0].Services = []ServiceFigures{{Name: "gateway", PeakLoadOverall: 250, Amplification: 2.6}, {Name: "db", PeakLoadOverall: 2500, Amplification: 16.2}}
	sim.Strategies[1].Services = []ServiceFigures{{Name: "db", PeakLoadOverall: 100, Amplification: 2}}
	real.Strategies[1].Services = []ServiceFigures{{Name: "db", PeakLoadOverall: 110, Amplification: 2.2}}
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, sim, real, ""))
	out := buf.String()
	assert.Contains(t, out, "| full-jitter | db: peak load (overall) | 2,100 | 2,500 | +19.0% |")
	assert.Contains(t, out, "| full-jitter | gateway: amplification | 2.6 | 2.6 | +0.0% |")
	assert.Contains(t, out, "full-jitter: peak load or amplification does not agree within 15% at db\n")
	assert.Contains(t, out, "fixed-60s: peak load and amplification agree within 15% at every service\n")
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "folder")
	images := []Image{{File: "a.png", Data: []byte("png")}}
	files := append(ImageFiles(images), File{Name: "b.txt", Write: Raw([]byte("text"))})
	require.NoError(t, WriteFiles(dir, files))
	for name, want := range map[string]string{"a.png": "png", "b.txt": "text"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	failing := []File{{Name: "c.txt", Write: func(io.Writer) error { return errors.New("boom") }}}
	require.ErrorContains(t, WriteFiles(dir, failing), "boom")
	assert.NoFileExists(t, filepath.Join(dir, "c.txt"), "a failed write leaves nothing")
}

// TestServiceTableSaysNoLoad: a service that nothing reached after the
// outage has no recovery to speak of: "no load", not "0s".
func TestServiceTableSaysNoLoad(t *testing.T) {
	zero := 0.0
	s := &Summary{Strategies: []StrategySummary{{Name: "s", Services: []ServiceFigures{
		{Name: "api", RecoveryTimeS: &zero, AttemptsAfterOutage: 5},
		{Name: "db", RecoveryTimeS: &zero},
	}}}}
	rows := serviceRows(s)
	require.Len(t, rows, 3)
	assert.Equal(t, "0s", rows[1][5])
	assert.Equal(t, "no load", rows[2][5])
}

func TestWriteClientRates(t *testing.T) {
	runs := []*Run{
		{Strategy: "plain", Run: 0},
		{Strategy: "adaptive", Run: 1, ClientRates: []ClientRate{{}, {Limited: 3, Rate: 70.5}}},
	}
	var b strings.Builder
	require.NoError(t, WriteClientRates(&b, time.Second, runs))
	assert.Equal(t, "strategy,run,t,limited_senders,rate_per_s\nadaptive,1,0,0,0\nadaptive,1,1,3,70.5\n", b.String())
}

// TestPercentNeverRoundsToAllOrNone: a share is never shown as 100% (or
// 0%) unless it is exactly that: 99,997 delivered beside 3 dead letters
// is 99.997%.
func TestPercentNeverRoundsToAllOrNone(t *testing.T) {
	tests := []struct {
		ratio float64
		want  string
	}{
		{1, "100"},
		{0, "0"},
		{0.5, "50"},
		{0.9995, "99.95"},
		{99997.0 / 100000, "99.997"},
		{3.0 / 100000, "0.003"},
		{0.99999999999, "> 99.999999"},
		{1e-12, "< 0.000001"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Percent(tt.ratio), "%v", tt.ratio)
	}
	s := &Summary{Runs: 1, Outages: []Window{{EndS: 30}}, Strategies: []StrategySummary{{Name: "nearly",
		Figures: Figures{Requests: 100000, Delivered: 99997, DeliveredRatio: 0.99997, DeadLettered: 3, DeadLetteredBy: map[string]float64{"max_attempts": 3}}}}}
	rows := tableRows(s)
	assert.Contains(t, rows[1], "99,997 (99.997%)")
	assert.Equal(t, "p99 latency (delivered only)", rows[0][len(rows[0])-1])
}

// TestTheReportSaysWhichStrategiesAreClientCode: strategies played by
// herdtest are named in report.md and report.html, with whether their
// runs are reproducible; a report of simulated strategies says nothing.
func TestTheReportSaysWhichStrategiesAreClientCode(t *testing.T) {
	yes, no := true, false
	s := &Summary{Scenario: "s", Runs: 1, Strategies: []StrategySummary{
		{Name: "simulated"},
		{Name: "retryablehttp", Client: &ClientCode{Runner: "herdtest", Deterministic: &yes}},
		{Name: "cenkalti", Client: &ClientCode{Runner: "herdtest", Deterministic: &no}},
	}}
	var md, html strings.Builder
	require.NoError(t, WriteReport(&md, s, nil))
	require.NoError(t, WriteHTML(&html, s, nil, nil))
	for _, out := range []string{md.String(), html.String()} {
		assert.Contains(t, out, "Played by your own client code through herdtest, not simulated (2 strategies): retryablehttp gave the same results twice for one seed; cenkalti did not: it draws randomness herdlab does not seed")
	}
	s.Strategies = s.Strategies[:1]
	md.Reset()
	require.NoError(t, WriteReport(&md, s, nil))
	assert.NotContains(t, md.String(), "client code")
}
