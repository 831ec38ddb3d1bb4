package results

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grid builds a sweep of one strategy over outage (first axis) x load,
// recovered where ok says, with recovery_time_s 10 where it did.
func grid(runs int, ok [][]int) *Sweep {
	s := &Sweep{
		Scenario: "grid", Runs: runs, Metric: "recovery_time_s",
		Axes: []Axis{
			{Path: "server.outages[0].duration", Label: "outage", Values: []string{"10s", "30s", "1m", "2m"}},
			{Path: "workload.arrival.rate", Values: []string{"100", "500"}},
		},
		Strategies: []string{"s"},
	}
	for i, o := range s.Axes[0].Values {
		for j, l := range s.Axes[1].Values {
			ps := PointSummary{Name: "s", RecoveredRuns: ok[i][j]}
			if ok[i][j] > 0 {
				ps.RecoveryTimeS = ptr(10)
			}
			s.Points = append(s.Points, SweepPoint{Index: len(s.Points), Values: []string{o, l}, Strategies: []PointSummary{ps}})
		}
	}
	return s
}

func TestBoundaries(t *testing.T) {
	// Rows: outage 10s, 30s, 1m, 2m; columns: load 100, 500.
	s := grid(1, [][]int{
		{1, 1},
		{1, 0},
		{1, 0},
		{0, 1},
	})
	bs := s.Boundaries()
	require.Len(t, bs, 2)
	assert.Equal(t, Boundary{Strategy: "s", Given: []string{"100"}, Recovered: []bool{true, true, true, false}, NothingLeft: make([]bool, 4)}, bs[0])
	assert.Equal(t, "s recovers for outage up to 1m, not from 2m, at workload.arrival.rate = 100", bs[0].Sentence(s))
	assert.Equal(t, "s recovers for outage up to 10s, not from 30s (but again at 2m), at workload.arrival.rate = 500", bs[1].Sentence(s))

	all := grid(1, [][]int{{1, 0}, {1, 0}, {1, 0}, {1, 0}})
	bs = all.Boundaries()
	assert.Equal(t, "s recovers for every value of outage tried, up to 2m, at workload.arrival.rate = 100", bs[0].Sentence(all))
	assert.Equal(t, "s recovers for no value of outage tried (from 10s), at workload.arrival.rate = 500", bs[1].Sentence(all))

	assert.Equal(t, []string{
		"s recovers for every value of outage tried, up to 2m, at workload.arrival.rate = 100",
		"s recovers for no value of outage tried (from 10s), at workload.arrival.rate = 500",
	}, all.BoundarySentences())
	assert.Equal(t, []string{"s recovers at every point of the sweep"}, grid(1, [][]int{{1, 1}, {1, 1}, {1, 1}, {1, 1}}).BoundarySentences())
	assert.Equal(t, []string{"s recovers at no point of the sweep"}, grid(2, [][]int{{1, 0}, {0, 0}, {0, 0}, {0, 0}}).BoundarySentences(), "recovering in some runs is not recovering")

	// Recovery in only some runs is not recovery.
	some := grid(3, [][]int{{3, 3}, {2, 3}, {3, 3}, {3, 3}})
	assert.Equal(t, []bool{true, false, true, true}, some.Boundaries()[0].Recovered)

	one := &Sweep{Runs: 1, Axes: []Axis{{Path: "x", Values: []string{"1", "2"}}}, Strategies: []string{"a"},
		Points: []SweepPoint{{Values: []string{"1"}, Strategies: []PointSummary{{RecoveredRuns: 1}}}, {Index: 1, Values: []string{"2"}, Strategies: []PointSummary{{}}}}}
	assert.Equal(t, "a recovers for x up to 1, not from 2", one.Boundaries()[0].Sentence(one))
}

// TestBoundariesOfAStrategyThatGivesUp: where a strategy gives up on
// every request during the outage, its server is healthy at once, but it
// did not recover from the herd: the report says it gave up, and the
// table says nothing was left, not 0 s.
func TestBoundariesOfAStrategyThatGivesUp(t *testing.T) {
	s := grid(2, [][]int{{2, 2}, {2, 2}, {2, 2}, {2, 2}})
	for _, i := range []int{4, 5, 6, 7} { // outage 1m and 2m
		ps := &s.Points[i].Strategies[0]
		ps.RecoveredRuns, ps.NothingLeftRuns, ps.Recovery, ps.RecoveryTimeS = 0, 2, NothingLeft, nil
	}
	s.Points[3].Strategies[0].NothingLeftRuns = 1 // 30s, 500: one run of two
	s.Points[3].Strategies[0].RecoveredRuns = 1
	assert.Equal(t, []bool{true, true, false, false}, s.Boundaries()[0].Recovered)
	assert.Equal(t, []bool{true, false, false, false}, s.Boundaries()[1].Recovered, "a run that left nothing is no recovery")
	assert.Equal(t, "s recovers for outage up to 30s; from 1m it gives up on every request during the outage (nothing left to recover), at workload.arrival.rate = 100",
		s.Boundaries()[0].Sentence(s))
	var buf bytes.Buffer
	require.NoError(t, WriteSweepReport(&buf, s, nil))
	assert.Contains(t, buf.String(), "| 2m | 100 | nothing left |\n")
	assert.Contains(t, buf.String(), "| 30s | 500 | 10s (recovered in 1/2 runs, 1 left nothing) |\n")
}

func TestSweepReport(t *testing.T) {
	s := grid(2, [][]int{{2, 2}, {2, 1}, {1, 0}, {0, 0}})
	var buf bytes.Buffer
	require.NoError(t, WriteSweepReport(&buf, s, []Image{{File: "heatmap-s.png", Caption: "grid, s"}}))
	md := buf.String()
	assert.Contains(t, md, "- outage (`server.outages[0].duration`): 10s, 30s, 1m, 2m\n")
	assert.Contains(t, md, "- s recovers for outage up to 30s, not from 1m, at workload.arrival.rate = 100\n")
	assert.Contains(t, md, "| outage | workload.arrival.rate | s |\n| --- | --- | --- |\n")
	assert.Contains(t, md, "| 10s | 100 | 10s |\n")
	assert.Contains(t, md, "| 30s | 500 | 10s (recovered in 1/2 runs) |\n")
	assert.Contains(t, md, "| 2m | 500 | never |\n")
	assert.Contains(t, md, "![grid, s](heatmap-s.png)")
}

func TestNamedFigures(t *testing.T) {
	f := NamedFigures(&Figures{PeakLoad: 12, Delivered: 4, LatencyS: Latency{P99: 0.5}, DeadLetteredBy: map[string]float64{"max_attempts": 3}})
	for name, want := range map[string]float64{"peak_load": 12, "latency_s.p99": 0.5, "dead_lettered_by.max_attempts": 3, "dead_lettered_by.budget": 0} {
		x, ok := f.Get(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, x, name)
	}
	for _, name := range []string{"recovery_time_s", "nope", "latency_s", "latency_s.p42", "dead_lettered_by.a.b"} {
		_, ok := f.Get(name)
		assert.False(t, ok, name)
	}
	_, ok := NamedFigures((*Figures)(nil)).Get("peak_load")
	assert.False(t, ok, "no figures")
	_, ok = NamedFigures(&Figures{LatencyS: Latency{P99: 0}}).Get("latency_s.p99")
	assert.False(t, ok, "nothing delivered: no latency, not 0")
	p := PointSummary{RecoveredRuns: 4}
	x, ok := p.Value("recovered_runs")
	assert.True(t, ok)
	assert.Equal(t, 4.0, x)
}

// TestPooledLatencyIsTheMergedHistogram: the pooled quantiles of several
// runs' records are those of one histogram holding every value, and the
// mean is the mean of every value.
func TestPooledLatencyIsTheMergedHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := NewRun("s", 0, 1)
	var recs []*RunRecord
	for i := range 4 {
		r := NewRun("s", i, 1)
		for range 1000 * (i + 1) {
			d := time.Duration(rng.ExpFloat64() * float64(time.Duration(i+1)*100*time.Millisecond))
			r.RecordLatency(d)
			all.RecordLatency(d)
		}
		r.Delivered = r.Latency.TotalCount()
		rec, err := NewRunRecord(3, r, Setup{Bucket: time.Second})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, WriteRecord(&buf, &rec))
		back, err := ReadRecord(&buf)
		require.NoError(t, err)
		assert.Equal(t, rec, *back, "a record survives its file")
		recs = append(recs, back)
	}
	all.Delivered = all.Latency.TotalCount()
	want := all.Figures(Setup{Bucket: time.Second}).LatencyS
	got, err := PooledLatency(recs)
	require.NoError(t, err)
	assert.Equal(t, want.P50, got.P50)
	assert.Equal(t, want.P90, got.P90)
	assert.Equal(t, want.P99, got.P99)
	assert.Equal(t, want.Max, got.Max)
	assert.InEpsilon(t, want.Mean, got.Mean, 1e-12)
	assert.Greater(t, got.P99, recs[0].Figures.LatencyS.P99, "the pooled tail is the slow runs'")
}

func TestSweepCSV(t *testing.T) {
	s := grid(1, [][]int{{1, 1}, {1, 0}, {1, 0}, {0, 1}})
	recs := []RunRecord{
		{Point: 0, Strategy: "s", Figures: s.Points[0].Strategies[0].Figures},
		{Point: 3, Strategy: "s", Figures: s.Points[3].Strategies[0].Figures},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteSweepCSV(&buf, s, recs))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.True(t, strings.HasPrefix(lines[0], "point,server.outages[0].duration,workload.arrival.rate,strategy,run,recovered,requests,attempts,"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "0,10s,100,s,0,true,0,"), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "3,30s,500,s,0,false,0,"), lines[2])
	header := strings.Split(lines[0], ",")
	row := strings.Split(lines[2], ",")
	require.Len(t, row, len(header))
	for i, h := range header {
		if h == "recovery_time_s" {
			assert.Empty(t, row[i], "no recovery, no number")
		}
	}
}

// TestBoundariesWithoutAnOutage: a sweep of a scenario without an outage
// says there is nothing to recover from, not that nothing recovers.
func TestBoundariesWithoutAnOutage(t *testing.T) {
	s := grid(1, [][]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}})
	for i := range s.Points {
		s.Points[i].Strategies[0].Recovery = NoOutage
	}
	assert.Equal(t, []string{"no point of the sweep has an outage or a load spike: there is nothing to recover from"}, s.BoundarySentences())
	var buf bytes.Buffer
	require.NoError(t, WriteSweepReport(&buf, s, nil))
	assert.Contains(t, buf.String(), "| no outage |")
}

// TestDecodeRecordIsReadRecord: DecodeRecord gives what ReadRecord gives,
// record or error, for records as WriteRecord writes them (with no
// latencies, one, or many) and for records laid out otherwise, which it
// leaves to ReadRecord.
func TestDecodeRecordIsReadRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var written []string
	for _, n := range []int{0, 1, 500} {
		r := NewRun("full-jitter", n, 1)
		for range n {
			r.RecordLatency(time.Duration(rng.ExpFloat64() * float64(time.Second)))
		}
		r.Delivered = r.Latency.TotalCount()
		rec, err := NewRunRecord(7, r, Setup{Bucket: time.Second})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, WriteRecord(&buf, &rec))
		written = append(written, buf.String())
	}
	require.Contains(t, written[2], `,"latency_buckets":[[`)
	head := written[1][:strings.LastIndex(written[1], `,"latency_buckets":`)]
	tests := []struct {
		name, data string
		fast       bool // read by hand, not left to ReadRecord
	}{
		{"no latencies", written[0], true},
		{"one", written[1], true},
		{"many", written[2], true},
		{"no newline", strings.TrimSuffix(written[2], "\n"), true},
		{"negative and zero", head + `,"latency_buckets":[[-3,0],[-0,7]]}`, true},
		{"spaces", head + `,"latency_buckets":[[1, 2]]}`, false},
		{"a third number", head + `,"latency_buckets":[[1,2,3]]}`, false},
		{"one number", head + `,"latency_buckets":[[1]]}`, false},
		{"a fraction", head + `,"latency_buckets":[[1.5,2]]}`, false},
		{"an exponent", head + `,"latency_buckets":[[1e3,2]]}`, false},
		{"a leading zero", head + `,"latency_buckets":[[01,2]]}`, false},
		{"past int64", head + `,"latency_buckets":[[9223372036854775808,2]]}`, false},
		{"null", head + `,"latency_buckets":null}`, false},
		{"a field after", head + `,"latency_buckets":[[1,2]],"latency_counts":[[3,4]]}`, false},
		{"cut short", head + `,"latency_buckets":[[1,2],[3`, false},
		{"no end", head + `,"latency_buckets":[[1,2]]`, false},
		{"an unknown field before", `{"point":1,"bogus":2,"latency_buckets":[[1,2]]}`, true},
		{"garbage before", `{"point":1,x,"latency_buckets":[[1,2]]}`, true},
		{"no buckets", `{"point":1,"strategy":"s","run":2}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := ReadRecord(strings.NewReader(tt.data))
			got, err := DecodeRecord([]byte(tt.data))
			if wantErr != nil {
				require.Error(t, err)
				assert.Equal(t, wantErr.Error(), err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
			i := strings.LastIndex(tt.data, `,"latency_buckets":`)
			_, fast := parseBuckets([]byte(tt.data[i+len(`,"latency_buckets":`):]))
			assert.Equal(t, tt.fast, i >= 0 && fast, "read by hand")
		})
	}
}

// BenchmarkDecodeRecord decodes a record of 500 latencies, by hand
// (DecodeRecord) and by encoding/json (ReadRecord).
func BenchmarkDecodeRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := NewRun("full-jitter", 0, 1)
	for range 500 {
		r.RecordLatency(time.Duration(rng.ExpFloat64() * float64(time.Second)))
	}
	r.Delivered = r.Latency.TotalCount()
	rec, err := NewRunRecord(7, r, Setup{Bucket: time.Second})
	require.NoError(b, err)
	var buf bytes.Buffer
	require.NoError(b, WriteRecord(&buf, &rec))
	data := buf.Bytes()
	b.Run("DecodeRecord", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadRecord", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadRecord(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
