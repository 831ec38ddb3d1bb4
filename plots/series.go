package plots

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/zeontools/herdlab/results"
)

// This file holds the data behind the charts: pure functions of the
// results, tested on their own.

// runsByStrategy groups runs by strategy, in the order of s.Strategies:
// element i holds the runs of s.Strategies[i], in the order given. Runs of
// strategies that the summary does not name are left out.
func runsByStrategy(s *results.Summary, runs []*results.Run) [][]*results.Run {
	index := make(map[string]int, len(s.Strategies))
	for i, st := range s.Strategies {
		if _, dup := index[st.Name]; !dup {
			index[st.Name] = i
		}
	}
	out := make([][]*results.Run, len(s.Strategies))
	for _, r := range runs {
		if r == nil {
			continue
		}
		if i, ok := index[r.Strategy]; ok {
			out[i] = append(out[i], r)
		}
	}
	return out
}

// bucketCount returns the number of buckets to draw: the longest series,
// or, with none, the horizon in buckets.
func bucketCount(s *results.Summary, runs []*results.Run) int {
	n := 0
	for _, r := range runs {
		if r != nil {
			n = max(n, len(r.Series))
		}
	}
	if n == 0 && s.BucketS > 0 && s.HorizonS > 0 {
		n = int(math.Ceil(s.HorizonS/s.BucketS - 1e-9))
	}
	return n
}

// loadSeries is the mean number of attempts per bucket of each outcome
// class over the runs of a strategy: classes[c][i] for class c, bucket i.
type loadSeries [numOutcomes][]float64

// meanLoad returns the mean over runs of the attempts of each outcome
// class in each of n buckets (results.Bucket.Breakdown). A run with a
// shorter series counts as 0 in the buckets it lacks. With no runs, every
// mean is 0.
func meanLoad(runs []*results.Run, n int) loadSeries {
	var l loadSeries
	for c := range l {
		l[c] = make([]float64, n)
	}
	for _, r := range runs {
		for i, b := range r.Series[:min(n, len(r.Series))] {
			d := b.Breakdown()
			for c, x := range [numOutcomes]int64{d.Succeeded, d.Failed, d.Rejected, d.Throttled, d.TimedOut, d.Unresolved} {
				l[c][i] += float64(x)
			}
		}
	}
	if len(runs) > 1 {
		k := float64(len(runs))
		for c := range l {
			for i := range l[c] {
				l[c][i] /= k
			}
		}
	}
	return l
}

// stacked returns the tops of the stacked bands: tops[c][i] is the sum of
// classes 0..c in bucket i, so tops[numOutcomes-1] is the total.
func (l loadSeries) stacked() [numOutcomes][]float64 {
	var tops [numOutcomes][]float64
	for c := range l {
		tops[c] = make([]float64, len(l[c]))
		for i, x := range l[c] {
			if c > 0 {
				x += tops[c-1][i]
			}
			tops[c][i] = x
		}
	}
	return tops
}

// total returns the attempts per bucket: the sum of the classes.
func (l loadSeries) total() []float64 {
	return l.stacked()[numOutcomes-1]
}

// present reports whether class c has any attempt in any bucket.
func (l loadSeries) present(c outcome) bool {
	for _, x := range l[c] {
		if x != 0 {
			return true
		}
	}
	return false
}

// meanBuckets returns the mean over runs of get(bucket) in each of n
// buckets; a run with a shorter series counts as 0 where it lacks buckets.
func meanBuckets(runs []*results.Run, n int, get func(results.Bucket) int64) []float64 {
	out := make([]float64, n)
	for _, r := range runs {
		for i, b := range r.Series[:min(n, len(r.Series))] {
			out[i] += float64(get(b))
		}
	}
	if len(runs) > 1 {
		for i := range out {
			out[i] /= float64(len(runs))
		}
	}
	return out
}

// meanAttempts returns the mean attempts per bucket over runs.
func meanAttempts(runs []*results.Run, n int) []float64 {
	return meanBuckets(runs, n, func(b results.Bucket) int64 { return b.Attempts })
}

// queueSeries is a strategy's server queue in each bucket, means over its
// runs.
type queueSeries struct {
	most []float64 // the most requests waiting at any instant (results.Bucket.QueueMax)
	mean []float64 // the time-weighted mean (results.Bucket.QueueMean)
	// measured is set when the strategy has runs and every one measured
	// the queue (results.Run.QueueTracked); when it is not, most and mean
	// are nil: no data, not an empty queue.
	measured bool
}

// queueStats returns the server queue of runs of a strategy in each of n
// buckets, means over the runs; a run with a shorter series counts as 0
// where it lacks buckets.
func queueStats(runs []*results.Run, n int) queueSeries {
	if len(runs) == 0 || slices.ContainsFunc(runs, func(r *results.Run) bool { return !r.QueueTracked }) {
		return queueSeries{}
	}
	q := queueSeries{most: make([]float64, n), mean: make([]float64, n), measured: true}
	for _, r := range runs {
		for i, b := range r.Series[:min(n, len(r.Series))] {
			q.most[i] += float64(b.QueueMax)
			q.mean[i] += b.QueueMean
		}
	}
	if k := float64(len(runs)); k > 1 {
		for i := range n {
			q.most[i] /= k
			q.mean[i] /= k
		}
	}
	return q
}

// queueLimit returns the most requests the server's queue holds, and
// false when it is unlimited.
func queueLimit(s *results.Summary) (float64, bool) {
	if s.QueueLimit == nil {
		return 0, false
	}
	return float64(*s.QueueLimit), true
}

// capacityPerBucket returns the server's capacity in requests per bucket
// (capacity per second x bucket width), and false when it is unlimited.
func capacityPerBucket(s *results.Summary) (float64, bool) {
	if s.CapacityPerS == nil || math.IsInf(*s.CapacityPerS, 0) || math.IsNaN(*s.CapacityPerS) {
		return 0, false
	}
	return *s.CapacityPerS * s.BucketS, true
}

// maxOf returns the largest of xs, and 0 for none.
func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// latencyCDF returns the cumulative distribution of the delivery
// latencies of runs, from the exact merge of their HDR histograms
// (microseconds) in a fresh histogram of the parameters every run uses,
// and how many latencies there are. Points are (x seconds, fraction of
// the latencies at or below x), x increasing, the fraction rising from 0
// at the lowest value of the first non-empty HDR bucket to 1 at the
// highest value of the last. Each non-empty HDR bucket gives a point at
// its top, so the first point to reach a fraction k/total is at the
// value the merged histogram gives for the k-th latency (its
// ValueAtQuantile), in seconds; a bucket after a gap of empty ones also
// gives a point at its bottom, level with the one before, so that a line
// through the points stays flat where no latency falls. No latencies give
// no points.
func latencyCDF(runs []*results.Run) (plotter.XYs, int64, error) {
	h := results.LatencyHistogram()
	for _, r := range runs {
		if r.Latency == nil {
			continue
		}
		if dropped := h.Merge(r.Latency); dropped > 0 {
			return nil, 0, fmt.Errorf("plots: merging the latencies of %s run %d: %d values out of range", r.Strategy, r.Run, dropped)
		}
	}
	total := h.TotalCount()
	if total == 0 {
		return nil, 0, nil
	}
	var xys plotter.XYs
	var seen, lastTo int64
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		if len(xys) == 0 || bar.From > lastTo+1 {
			xys = append(xys, plotter.XY{X: micros(max(bar.From, 1)), Y: float64(seen) / float64(total)})
		}
		lastTo = bar.To
		seen += bar.Count
		xys = append(xys, plotter.XY{X: micros(max(bar.To, bar.From, 1)), Y: float64(seen) / float64(total)})
	}
	return xys, total, nil
}

// thinCDF drops points of an increasing CDF that are closer than a factor
// ratio in x to the last point kept before them, keeping the last point
// of each such run, the first point and the last: the curve drawn through
// what is left is the same to the eye (ratio 1.005 is a fifth of a pixel
// on a log axis of 6 decades 1000 pixels wide) and passes through exact
// points of the distribution.
func thinCDF(xys plotter.XYs, ratio float64) plotter.XYs {
	if len(xys) <= 2 {
		return xys
	}
	out := plotter.XYs{xys[0]}
	for i := 1; i < len(xys); i++ {
		last := out[len(out)-1]
		if i < len(xys)-1 && xys[i+1].X < last.X*ratio {
			continue // the next point is still close: keep the later one
		}
		out = append(out, xys[i])
	}
	return out
}

func micros(us int64) float64 { return float64(us) / 1e6 }

// bar is one strategy's bar in a bar chart.
type bar struct {
	Name  string
	Index int // the strategy's colour index (see colorIndexes)
	// Value is the bar's height; when Missing is set the figure does not
	// exist (the server never recovered) and Value is meaningless.
	Value   float64
	Missing bool
	// Vacant, with Missing, marks a recovery that is no figure because
	// nothing was left to recover.
	Vacant bool
	// CI is the 95% confidence half-width, 0 when there is none.
	CI float64
	// Label is written above the bar; Note, when set, below the label
	// (partial recovery: "3 of 5 runs").
	Label, Note string
}

// recoveryBars returns a bar per strategy for its recovery time in
// seconds. A strategy whose server never recovered in any run is Missing,
// not 0. With several runs, CI is the half-width of CI95.RecoveryTimeS,
// and a strategy that recovered in some runs only is noted ("3 of 5 runs
// recovered"; its value is the mean over those runs).
func recoveryBars(s *results.Summary) []bar {
	bars := make([]bar, len(s.Strategies))
	colors := colorIndexes(s)
	for i, st := range s.Strategies {
		b := bar{Name: st.Name, Index: colors[i]}
		switch {
		case st.Recovery == results.NothingLeft:
			// Its 0 s is no speed: it had given up.
			b.Missing, b.Vacant = true, true
			b.Label = "nothing left to recover"
			if st.Requests > 0 {
				b.Note = fmt.Sprintf("%s%% given up in the outage", decimal(100*st.DeadLetteredInOutage/st.Requests, 3))
			}
		case st.RecoveryTimeS == nil || math.IsNaN(*st.RecoveryTimeS):
			b.Missing = true
			b.Label = "never recovered"
		default:
			b.Value = *st.RecoveryTimeS
			b.CI = ciOf(s, st, func(f *results.Figures) *float64 { return f.RecoveryTimeS })
			b.Label = secondsLabel(b.Value, b.CI)
		}
		if n := st.RecoveredRuns - st.NothingLeftRuns; st.Recovery == results.Mixed && n > 0 {
			b.Note = fmt.Sprintf("%d of %d runs recovered", n, s.Runs)
			if st.NothingLeftRuns > 0 {
				b.Note += fmt.Sprintf("; %d left nothing", st.NothingLeftRuns)
			}
		}
		bars[i] = b
	}
	return bars
}

// amplificationBars returns a bar per strategy for its amplification
// (attempts per request), with its CI95 half-width when runs > 1.
func amplificationBars(s *results.Summary) []bar {
	bars := make([]bar, len(s.Strategies))
	colors := colorIndexes(s)
	for i, st := range s.Strategies {
		ci := ciOf(s, st, func(f *results.Figures) *float64 { return &f.Amplification })
		bars[i] = bar{
			Name:  st.Name,
			Index: colors[i],
			Value: st.Amplification,
			CI:    ci,
			Label: ratioLabel(st.Amplification, ci),
		}
	}
	return bars
}

// ciOf returns the CI95 half-width of a figure of st, or 0 when there is
// none (one run, or the figure has no interval).
func ciOf(s *results.Summary, st results.StrategySummary, get func(*results.Figures) *float64) float64 {
	if s.Runs <= 1 || st.CI95 == nil {
		return 0
	}
	if p := get(st.CI95); p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) && *p > 0 {
		return *p
	}
	return 0
}

// barsMax returns the top of the highest bar that exists, whiskers
// included.
func barsMax(bars []bar) float64 {
	m := 0.0
	for _, b := range bars {
		if !b.Missing {
			m = max(m, b.Value+b.CI)
		}
	}
	return m
}
