package plots

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

func TestRunsByStrategy(t *testing.T) {
	s := &results.Summary{Strategies: []results.StrategySummary{{Name: "b"}, {Name: "a"}, {Name: "c"}}}
	runs := []*results.Run{
		{Strategy: "a", Run: 0}, {Strategy: "a", Run: 1},
		{Strategy: "b", Run: 0}, nil, {Strategy: "unknown"},
	}
	got := runsByStrategy(s, runs)
	require.Len(t, got, 3)
	assert.Equal(t, []*results.Run{runs[2]}, got[0], "by the summary's order, not the runs'")
	assert.Equal(t, []*results.Run{runs[0], runs[1]}, got[1])
	assert.Empty(t, got[2], "a strategy without runs")
}

func TestMeanLoadStacksToAttempts(t *testing.T) {
	s, runs := fixture(3)
	groups := runsByStrategy(s, runs)
	for k, g := range groups {
		l := meanLoad(g, 60)
		want := meanAttempts(g, 60)
		tops := l.stacked()
		for i := range 60 {
			sum := 0.0
			for c := range numOutcomes {
				assert.GreaterOrEqual(t, l[c][i], 0.0)
				sum += l[c][i]
				if c > 0 {
					assert.GreaterOrEqual(t, tops[c][i], tops[c-1][i], "stacked tops never go down")
				}
			}
			assert.InDelta(t, want[i], sum, 1e-9, "strategy %d bucket %d: classes add up to the attempts", k, i)
			assert.InDelta(t, want[i], tops[numOutcomes-1][i], 1e-9)
			assert.InDelta(t, want[i], l.total()[i], 1e-9)
		}
	}
}

func TestMeanLoadClasses(t *testing.T) {
	r := results.NewRun("x", 0, 2)
	r.Series[0] = results.Bucket{Attempts: 10, OK: 4, NotOK: 6, Rejected: 1, Throttled: 2, NotOKTimeout: 1} // failed 2
	r.Series[1] = results.Bucket{Attempts: 5, OK: 1}                                                        // 4 unresolved
	l := meanLoad([]*results.Run{r}, 2)
	assert.Equal(t, []float64{4, 1}, l[succeeded])
	assert.Equal(t, []float64{2, 0}, l[failed])
	assert.Equal(t, []float64{1, 0}, l[rejected])
	assert.Equal(t, []float64{2, 0}, l[throttled])
	assert.Equal(t, []float64{1, 0}, l[timedOut])
	assert.Equal(t, []float64{0, 4}, l[unresolved])
	assert.True(t, l.present(unresolved))
	assert.False(t, meanLoad([]*results.Run{r}, 1).present(unresolved), "only in the buckets drawn")
}

func TestMeanOverRuns(t *testing.T) {
	a := results.NewRun("x", 0, 3)
	b := results.NewRun("x", 1, 2) // shorter: its third bucket counts as 0
	a.QueueTracked, b.QueueTracked = true, true
	for i, q := range []int64{2, 4, 6} {
		a.Series[i] = results.Bucket{Attempts: q, OK: q, QueueMax: 10 * q, QueueMean: 0.5 * float64(q)}
	}
	for i, q := range []int64{4, 8} {
		b.Series[i] = results.Bucket{Attempts: q, OK: q, QueueMax: 10 * q, QueueMean: 0.5 * float64(q)}
	}
	runs := []*results.Run{a, b}
	assert.Equal(t, []float64{3, 6, 3}, meanAttempts(runs, 3))
	q := queueStats(runs, 3)
	assert.True(t, q.Measured)
	assert.Equal(t, []float64{30, 60, 30}, q.Most)
	assert.Equal(t, []float64{1.5, 3, 1.5}, q.Mean)
	assert.Equal(t, []float64{3, 6, 3}, meanLoad(runs, 3)[succeeded])
	assert.Equal(t, []float64{3, 6}, meanAttempts(runs, 2), "n cuts the series")
	assert.Equal(t, []float64{2, 4, 6, 0}, meanAttempts(runs[:1], 4), "one run: itself, padded")
	assert.Equal(t, []float64{0, 0}, meanAttempts(nil, 2), "no runs: zeros")
}

func TestQueueStats(t *testing.T) {
	// A queue that fills and empties within the bucket: nothing at its
	// end, 2,000 at its most.
	r := results.NewRun("x", 0, 2)
	r.QueueTracked = true
	r.Series[0] = results.Bucket{Queue: 0, QueueMax: 2000, QueueMean: 400}
	r.Series[1] = results.Bucket{Queue: 1, QueueMax: 1, QueueMean: 1}
	q := queueStats([]*results.Run{r}, 2)
	assert.True(t, q.Measured)
	assert.Equal(t, []float64{2000, 1}, q.Most, "the most, not the end-of-bucket sample")
	assert.Equal(t, []float64{400, 1}, q.Mean)

	// Runs that did not measure the queue (real HTTP) have no data: not
	// an empty queue.
	real := results.NewRun("x", 1, 2)
	real.Series[0].Queue = 7
	for _, tt := range []struct {
		name string
		runs []*results.Run
	}{{"not measured", []*results.Run{real}}, {"one of two not measured", []*results.Run{r, real}}, {"no runs", nil}} {
		q := queueStats(tt.runs, 2)
		assert.False(t, q.Measured, tt.name)
		assert.Nil(t, q.Most, tt.name)
		assert.Nil(t, q.Mean, tt.name)
	}
}

func TestQueueLimit(t *testing.T) {
	_, ok := queueLimit(&results.Summary{})
	assert.False(t, ok, "unlimited")
	limit := int64(2000)
	got, ok := queueLimit(&results.Summary{QueueLimit: &limit})
	assert.True(t, ok)
	assert.Equal(t, 2000.0, got)
}

func TestBucketCount(t *testing.T) {
	s := &results.Summary{BucketS: 0.5, HorizonS: 30}
	assert.Equal(t, 60, bucketCount(s, nil), "from the horizon without runs")
	assert.Equal(t, 3, bucketCount(s, []*results.Run{results.NewRun("x", 0, 2), results.NewRun("x", 1, 3)}), "the longest series")
}

func TestCapacityPerBucket(t *testing.T) {
	tests := []struct {
		name     string
		capacity *float64
		bucket   float64
		want     float64
		ok       bool
	}{
		{"unlimited", nil, 1, 0, false},
		{"infinite", ptr(math.Inf(1)), 1, 0, false},
		{"one second", ptr(2000), 1, 2000, true},
		{"half a second", ptr(2000), 0.5, 1000, true},
		{"ten seconds", ptr(12.5), 10, 125, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := capacityPerBucket(&results.Summary{CapacityPerS: tt.capacity, BucketS: tt.bucket})
			assert.Equal(t, tt.ok, ok)
			assert.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

func TestLoadScale(t *testing.T) {
	tests := []struct {
		name     string
		totals   [][]float64
		after    int
		capacity float64
		top      float64
		cut      bool
	}{
		{"no outage", [][]float64{{5, 50, 10}, {1, 2, 3}}, 0, 0, 50, false},
		{"outage not much taller", [][]float64{{60, 50, 10}}, 1, 0, 60, false},
		{"outage far taller: cut at the herd after it", [][]float64{{500, 50, 10}, {400, 20, 80}}, 1, 0, 80, true},
		{"capacity counts as later", [][]float64{{500, 50, 10}}, 1, 300, 300, true},
		{"capacity above all", [][]float64{{5, 5}}, 1, 100, 100, false},
		{"nothing at all", [][]float64{{0, 0}}, 1, 0, 1, false},
		{"outage until the end", [][]float64{{9, 9}}, 5, 0, 9, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top, cut := loadScale(tt.totals, tt.after, tt.capacity)
			assert.InDelta(t, tt.top, top, 1e-9)
			assert.Equal(t, tt.cut, cut)
		})
	}
}

func TestAfterOutage(t *testing.T) {
	s := &results.Summary{BucketS: 2}
	assert.Equal(t, 0, afterOutage(s))
	s.Outages = []results.Window{{StartS: 0, EndS: 10}, {StartS: 20, EndS: 31}}
	assert.Equal(t, 16, afterOutage(s), "the first bucket starting at or after 31 s")
	s.Outages = s.Outages[:1]
	assert.Equal(t, 5, afterOutage(s))
}

func TestLatencyCDF(t *testing.T) {
	s, runs := fixture(3)
	for k, g := range runsByStrategy(s, runs) {
		xys, total, err := latencyCDF(g)
		require.NoError(t, err)
		merged := results.LatencyHistogram()
		var want int64
		for _, r := range g {
			want += r.Latency.TotalCount()
			r.Latency.MergeInto(merged)
		}
		require.Equal(t, want, total, "strategy %d: the runs merged", k)
		require.NotEmpty(t, xys)
		assert.Equal(t, 0.0, xys[0].Y, "starts at 0")
		assert.Equal(t, 1.0, xys[len(xys)-1].Y, "ends at 1")
		for i := 1; i < len(xys); i++ {
			assert.GreaterOrEqual(t, xys[i].X, xys[i-1].X, "x increases")
			assert.GreaterOrEqual(t, xys[i].Y, xys[i-1].Y, "monotone")
		}
		assert.InDelta(t, float64(merged.Max())/1e6, xys[len(xys)-1].X, 1e-3*xys[len(xys)-1].X, "ends at the slowest")
		for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
			// The histogram's quantile q is the value of the rank
			// round(q * total): the first point whose fraction reaches
			// that rank's is at it.
			rank := max(math.Floor(q*float64(total)+0.5), 1)
			i := 0
			for i < len(xys) && xys[i].Y*float64(total) < rank-1e-6 {
				i++
			}
			require.Less(t, i, len(xys))
			assert.InDelta(t, float64(merged.ValueAtQuantile(100*q))/1e6, xys[i].X, 1e-9, "strategy %d q %v", k, q)
		}
	}
}

func TestLatencyCDFExact(t *testing.T) {
	r := results.NewRun("x", 0, 1)
	for _, ms := range []int{100, 100, 200, 400} {
		r.RecordLatency(time.Duration(ms) * time.Millisecond)
	}
	xys, total, err := latencyCDF([]*results.Run{r, {Strategy: "no histogram"}})
	require.NoError(t, err)
	assert.Equal(t, int64(4), total)
	require.Len(t, xys, 6, "the bottom and top of three buckets apart")
	for i, want := range []struct{ x, y float64 }{{0.1, 0}, {0.1, 0.5}, {0.2, 0.5}, {0.2, 0.75}, {0.4, 0.75}, {0.4, 1}} {
		assert.InDelta(t, want.x, xys[i].X, want.x*1e-3, "point %d: within the histogram's 3 digits", i)
		assert.InDelta(t, want.y, xys[i].Y, 1e-12, "point %d: flat between buckets", i)
	}
	assert.Less(t, xys[0].X, xys[1].X, "a bucket has a width")

	xys, total, err = latencyCDF([]*results.Run{results.NewRun("x", 0, 1)})
	require.NoError(t, err)
	assert.Zero(t, total)
	assert.Empty(t, xys, "nothing delivered: no curve")
}

func TestThinCDF(t *testing.T) {
	s, runs := fixture(1)
	xys, _, err := latencyCDF(runsByStrategy(s, runs)[1])
	require.NoError(t, err)
	thin := thinCDF(xys, 1.05)
	require.Less(t, len(thin), len(xys))
	assert.Equal(t, xys[0], thin[0], "keeps the first")
	assert.Equal(t, xys[len(xys)-1], thin[len(thin)-1], "keeps the last")
	j := 0
	for i, p := range thin {
		for j < len(xys) && xys[j] != p {
			j++
		}
		require.Less(t, j, len(xys), "point %d is a point of the CDF", i)
		if i > 0 && j+1 < len(xys) {
			// A point is dropped only when the next is within the factor
			// of the last kept: a kept point is the last such.
			assert.GreaterOrEqual(t, xys[j+1].X, thin[i-1].X*1.05, "point %d", i)
		}
	}
	assert.Len(t, thinCDF(xys[:2], 10), 2)
}

func TestRecoveryBars(t *testing.T) {
	s, _ := fixture(3)
	bars := recoveryBars(s)
	require.Len(t, bars, 3)

	assert.False(t, bars[0].Missing)
	require.NotNil(t, s.Strategies[0].RecoveryTimeS)
	assert.Equal(t, *s.Strategies[0].RecoveryTimeS, bars[0].Value)
	assert.InDelta(t, 1.5, bars[0].CI, 1e-12, "whiskers from CI95")
	assert.Empty(t, bars[0].Note)

	assert.Equal(t, "2 of 3 runs recovered", bars[1].Note, "partial recovery")

	assert.True(t, bars[2].Missing, "never recovered is marked, not 0")
	assert.Equal(t, "never recovered", bars[2].Label)
	assert.Zero(t, bars[2].CI)
	for i, b := range bars {
		assert.Equal(t, i, b.Index, "colour by the strategy's index")
		assert.Equal(t, s.Strategies[i].Name, b.Name)
	}
	assert.InDelta(t, max(bars[0].Value+bars[0].CI, bars[1].Value+bars[1].CI), barsMax(bars), 1e-9, "missing bars do not scale the axis")
	assert.Zero(t, barsMax([]bar{{Missing: true, Value: 100}}))

	one, _ := fixture(1)
	for _, b := range recoveryBars(one) {
		assert.Zero(t, b.CI, "no whiskers for one run")
		assert.Empty(t, b.Note)
	}

	// A strategy that gave up on everything during the outage recovers
	// "at once": no bar of 0 s, which would read as the fastest.
	gaveUp := one.Strategies[0]
	gaveUp.Recovery, gaveUp.NothingLeftRuns = results.NothingLeft, 1
	gaveUp.RecoveryTimeS, gaveUp.Requests, gaveUp.DeadLetteredInOutage = ptr(0), 500, 500
	one.Strategies[0] = gaveUp
	b := recoveryBars(one)[0]
	assert.True(t, b.Missing && b.Vacant, "nothing left is no value")
	assert.Equal(t, "nothing left to recover", b.Label)
	assert.Equal(t, "100% given up in the outage", b.Note)
	assert.Zero(t, barsMax([]bar{b}))
}

func TestAmplificationBars(t *testing.T) {
	s, _ := fixture(3)
	bars := amplificationBars(s)
	require.Len(t, bars, 3)
	for i, b := range bars {
		assert.Equal(t, s.Strategies[i].Amplification, b.Value)
		assert.InDelta(t, 0.15*float64(i+1), b.CI, 1e-12)
		assert.False(t, b.Missing)
	}
	assert.InDelta(t, 36, bars[2].Value, 1e-9, "300 attempts a second for 60 s over 500 requests")
	s.Runs = 1
	assert.Zero(t, amplificationBars(s)[0].CI, "one run: no interval even if CI95 is set")
}

func TestStrategyColor(t *testing.T) {
	seen := map[any]int{}
	for i := range len(strategyPalette) {
		c := strategyColor(i)
		if j, dup := seen[c]; dup {
			t.Errorf("strategies %d and %d share colour %v", j, i, c)
		}
		seen[c] = i
		assert.Equal(t, c, strategyColor(i), "stable")
		assert.Equal(t, c, strategyColor(i+len(strategyPalette)), "cycles")
	}
	th := newTheme(1200, 800)
	assert.Nil(t, strategyDashes(0, th))
	assert.NotNil(t, strategyDashes(len(strategyPalette), th), "repeated colours are dashed")
	assert.Equal(t, strategyColor(2), th.lineStyle(2).Color, "lines in the strategy's colour")

	// The colour follows the strategy's index in the summary, whatever
	// order the runs come in.
	s, runs := fixture(1)
	reversed := []*results.Run{runs[2], runs[1], runs[0]}
	for i, g := range runsByStrategy(s, reversed) {
		assert.Equal(t, s.Strategies[i].Name, g[0].Strategy)
	}
	for i, b := range recoveryBars(s) {
		assert.Equal(t, strategyColor(i), strategyColor(b.Index))
	}
}

func TestOutcomeColorsDistinct(t *testing.T) {
	seen := map[any]bool{}
	for c := range numOutcomes {
		assert.False(t, seen[outcomeColors[c]], "class %s", outcomeNames[c])
		seen[outcomeColors[c]] = true
	}
}

func TestPanelFigures(t *testing.T) {
	s, _ := fixture(1)
	st := s.Strategies[0]
	assert.Contains(t, panelFigures(s, st)[0], "peak after the outage")

	st.PeakLoad, st.Recovery = 0, results.NothingLeft
	got := panelFigures(s, st)
	assert.Equal(t, "no attempt after the outage", got[0], "not a peak of 0 at 0 s")
	assert.Equal(t, "nothing left to recover", got[1], "not a recovery of 0 s")

	s.Outages = nil
	st.PeakLoad, st.PeakAtS, st.Recovery = 40, 3, results.Recovered
	assert.Equal(t, "peak 40 at 3 s", panelFigures(s, st)[0][:len("peak 40 at 3 s")])
}
