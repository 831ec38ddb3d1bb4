package results

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChartData(t *testing.T) {
	// Two runs of a strategy, one of another: means per bucket, the
	// outcome classes, the queue only where measured, the latencies of
	// both runs merged, and a graph's services per strategy.
	s := &Summary{BucketS: 0.5, HorizonS: 1.5, Strategies: []StrategySummary{{Name: "a", Index: 1}, {Name: "b", Index: 0}}}
	a0, a1, b := NewRun("a", 0, 3), NewRun("a", 1, 3), NewRun("b", 0, 3)
	a0.Series[0] = Bucket{Attempts: 10, OK: 6, NotOK: 4, Rejected: 4, QueueMax: 8}
	a1.Series[0] = Bucket{Attempts: 20, OK: 20, QueueMax: 2}
	a1.Series[2] = Bucket{Attempts: 2, NotOK: 2, NotOKTimeout: 2}
	a0.QueueTracked, a1.QueueTracked = true, true
	for _, us := range []int64{1000, 1000, 2000} {
		a0.Latency.Record(us)
	}
	a1.Latency.Record(4000)
	a0.Services = []*ServiceRun{{Name: "db", Series: []Bucket{{Attempts: 4}, {Attempts: 2}}}}
	a1.Services = []*ServiceRun{{Name: "db", Series: []Bucket{{Attempts: 8}}}}
	b.Series[1] = Bucket{Attempts: 5, OK: 5}

	c, err := ChartData(s, []*Run{b, a1, a0})
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0.5, 1}, c.T)
	require.Len(t, c.Strategies, 2)
	sa, sb := c.Strategies[0], c.Strategies[1]
	assert.Equal(t, "a", sa.Name, "in the summary's order")
	assert.Equal(t, 1, sa.Index)
	assert.Equal(t, []float64{15, 0, 1}, sa.Attempts)
	assert.Equal(t, []float64{13, 0, 0}, sa.Outcomes.Succeeded)
	assert.Equal(t, []float64{2, 0, 0}, sa.Outcomes.Rejected)
	assert.Equal(t, []float64{0, 0, 1}, sa.Outcomes.TimedOut)
	assert.Equal(t, []float64{5, 0, 0}, sa.Queue)
	assert.Nil(t, sb.Queue, "b's queue was not measured")
	assert.Equal(t, int64(4), sa.Latency.Count)
	require.NotEmpty(t, sa.Latency.S)
	assert.Equal(t, 1.0, sa.Latency.P[len(sa.Latency.P)-1])
	assert.InEpsilon(t, 0.004, sa.Latency.S[len(sa.Latency.S)-1], 0.001)
	assert.Equal(t, int64(0), sb.Latency.Count)
	assert.Equal(t, []float64{}, sb.Latency.S, "no deliveries: an empty distribution, not null")
	require.Len(t, c.Services, 1)
	assert.Equal(t, map[string][]float64{"a": {6, 1, 0}}, c.Services[0].Attempts)

	var buf bytes.Buffer
	require.NoError(t, WriteCharts(&buf, c))
	var back map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.EqualValues(t, ChartsVersion, back["version"])
	assert.Contains(t, buf.String(), `"queue":null`)
	assert.Contains(t, buf.String(), `"timed_out":[0,0,1]`)
}

func TestRunsRoundTrip(t *testing.T) {
	// A run comes back whole: a pointer to 0 apart from nil, an empty
	// map apart from none, the latency histogram's counts, an unbounded
	// capacity, the services' replicas; and the runs given are left as
	// they were.
	zero := int64(0)
	var d time.Duration
	r := NewRun("a", 3, 2)
	r.Backlog, r.Drain = &zero, &d
	r.Series[1] = Bucket{Attempts: 7, QueueMean: 1.0 / 3}
	r.Latency.Record(1234)
	r.LatencySum = 0.1 + 0.2
	r.Services = []*ServiceRun{{Name: "db", Replica: -1, Capacity: math.Inf(1), Replicas: []*ServiceRun{{Name: "db", Replica: 0, Capacity: math.Inf(1)}}}}
	r.ClientRates = []ClientRate{{Limited: 2, Rate: 0.5}}
	other := &Run{Strategy: "b"}

	var buf bytes.Buffer
	require.NoError(t, EncodeRuns(&buf, []*Run{r, other}))
	assert.True(t, math.IsInf(r.Services[0].Replicas[0].Capacity, 1), "the run given is unchanged")
	back, err := DecodeRuns(&buf)
	require.NoError(t, err)
	require.Len(t, back, 2)
	got := back[0]
	require.NotNil(t, got.Backlog)
	assert.Equal(t, int64(0), *got.Backlog)
	require.NotNil(t, got.Drain)
	assert.Nil(t, got.Completion)
	assert.Equal(t, r.Latency.Histogram().Export(), got.Latency.Histogram().Export())
	assert.Equal(t, int64(1), got.Latency.TotalCount())
	got.Latency, r.Latency = nil, nil
	assert.Equal(t, r, got)
	assert.Equal(t, other, back[1])

	_, err = DecodeRuns(strings.NewReader(`{"version": 1, "runs": []}`))
	assert.ErrorContains(t, err, "version 1")
	_, err = DecodeRuns(strings.NewReader(`{"version": 2, "runs": [{}]}`))
	assert.ErrorContains(t, err, "run 0 is missing")
	_, err = DecodeRuns(strings.NewReader(`{"version": 2, "runs": [{"run": {}, "latency": [[-1, 1]]}]}`))
	assert.ErrorContains(t, err, "run 0's latencies")
}

func TestLatencyQuantilesMaxIsMax(t *testing.T) {
	// The 100th percentile that latencyQuantiles gives for the maximum is
	// the dense histogram's Max, on random latencies of many magnitudes,
	// one value, and values at the edges of the range.
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		h, l := LatencyHistogram(), NewLatencies()
		for range 1 + r.IntN(trial+1) {
			v := 1 + int64(math.Exp(r.Float64()*math.Log(8e12)))
			require.NoError(t, h.RecordValue(v))
			l.Record(v)
		}
		q := latencyQuantiles(l)
		assert.Equal(t, h.Max(), q[3], "trial %d", trial)
		assert.Equal(t, h.ValueAtQuantile(50), q[0], "trial %d", trial)
	}
	for _, v := range []int64{1, 2, 1023, 2048, 2049, latencyHighest} {
		h, l := LatencyHistogram(), NewLatencies()
		require.NoError(t, h.RecordValue(v))
		l.Record(v)
		assert.Equal(t, h.Max(), latencyQuantiles(l)[3], v)
	}
}

func TestLatenciesAnswerAsTheDenseHistogram(t *testing.T) {
	// Latencies, sparse or turned dense, hold the counts a dense
	// histogram would and give the same percentiles, at sizes below and
	// above the turn, with values clamped into the range.
	r := rand.New(rand.NewPCG(5, 6))
	ps := []float64{0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100}
	for _, n := range []int{0, 1, 2, 10, 500, denseAfter, denseAfter + 1, 3000, 50_000} {
		h, l := LatencyHistogram(), NewLatencies()
		for i := range n {
			v := int64(math.Exp(r.Float64() * math.Log(2e13))) // 1 µs to 230 days
			if i%7 == 0 {
				v = int64(r.IntN(3)) // 0, 1 and 2 µs
			}
			l.Record(v)
			require.NoError(t, h.RecordValue(min(max(v, 1), latencyHighest)))
		}
		assert.Equal(t, h.TotalCount(), l.TotalCount(), "n=%d", n)
		assert.Equal(t, h.ValueAtPercentilesSlice(ps), l.Percentiles(ps...), "n=%d", n)
		assert.Equal(t, h.Export(), l.Histogram().Export(), "n=%d", n)
		assert.Equal(t, l.dense != nil, l.sparse == nil, "n=%d: one or the other", n)
		if n >= 3000 {
			assert.NotNil(t, l.dense, "n=%d: turned dense", n)
		}
		if n <= 10 {
			assert.Nil(t, l.dense, "n=%d: still sparse", n)
		}
		// The buckets give the latencies back.
		back := NewLatencies()
		last := int64(-1)
		l.Buckets(func(v, c int64) bool {
			assert.Greater(t, v, last, "in increasing value")
			last = v
			require.NoError(t, back.Add(v, c))
			return true
		})
		assert.Equal(t, h.Export(), back.Histogram().Export(), "n=%d: from the buckets", n)
	}
	assert.Error(t, NewLatencies().Add(-1, 1))
	assert.Error(t, NewLatencies().Add(5, -1))
}

func TestRecordsKeepEveryLatencyCount(t *testing.T) {
	// A record gives back its run's histogram, count for count, from its
	// populated buckets; records of the older formats (nonzero counts by
	// index, the HDR encoding) still read; a damaged count is an error.
	r := NewRun("a", 0, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		r.Latency.Record(1 + int64(math.Exp(rng.Float64()*math.Log(1e10))))
	}
	want := r.Latency.Histogram().Export()
	rec, err := NewRunRecord(0, r, Setup{Bucket: time.Second})
	require.NoError(t, err)
	assert.Less(t, len(rec.LatencyBuckets), 5000)
	l, err := rec.Latencies()
	require.NoError(t, err)
	assert.Equal(t, want, l.Histogram().Export())

	var buf bytes.Buffer
	require.NoError(t, WriteRecord(&buf, &rec))
	back, err := ReadRecord(&buf)
	require.NoError(t, err)
	l, err = back.Latencies()
	require.NoError(t, err)
	assert.Equal(t, want, l.Histogram().Export(), "through the file")

	enc, err := r.Latency.Histogram().Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	encoded := RunRecord{Latency: enc}
	l, err = encoded.Latencies()
	require.NoError(t, err)
	assert.Equal(t, want, l.Histogram().Export(), "the HDR encoding")
	var byIndex RunRecord
	for i, c := range want.Counts {
		if c != 0 {
			byIndex.LatencyCounts = append(byIndex.LatencyCounts, [2]int64{int64(i), c})
		}
	}
	l, err = byIndex.Latencies()
	require.NoError(t, err)
	assert.Equal(t, want, l.Histogram().Export(), "counts by index")

	pooled, err := PooledLatency([]*RunRecord{&rec, &encoded, &byIndex})
	require.NoError(t, err)
	all := LatencyHistogram()
	for range 3 {
		r.Latency.MergeInto(all)
	}
	q := all.ValueAtPercentilesSlice([]float64{99, 100})
	assert.Equal(t, micros(q[0]), pooled.P99, "pooled as the merge of all")
	assert.Equal(t, micros(q[1]), pooled.Max)

	empty, err := NewRunRecord(0, NewRun("b", 0, 1), Setup{Bucket: time.Second})
	require.NoError(t, err)
	l, err = empty.Latencies()
	require.NoError(t, err)
	assert.Zero(t, l.TotalCount())

	for _, bad := range [][][2]int64{{{-1, 1}}, {{1 << 50, 1}}, {{5, 0}}, {{5, 1}, {5, 2}}, {{6, 1}, {5, 2}}} {
		_, err := (&RunRecord{LatencyCounts: bad}).Latencies()
		assert.Error(t, err, "by index: %v", bad)
		_, err = (&RunRecord{LatencyBuckets: bad}).Latencies()
		assert.Error(t, err, "by value: %v", bad)
	}
}
