package results

import (
	"fmt"
	"math"
	"slices"
)

// This file holds the series behind the charts, the static ones (plots)
// and the interactive ones (Charts) alike: pure functions of the runs.

// RunsByStrategy groups runs by strategy, in the order of s.Strategies:
// element i holds the runs of s.Strategies[i], in the order given. Runs
// of strategies that the summary does not name are left out.
func RunsByStrategy(s *Summary, runs []*Run) [][]*Run {
	index := make(map[string]int, len(s.Strategies))
	for i, st := range s.Strategies {
		if _, dup := index[st.Name]; !dup {
			index[st.Name] = i
		}
	}
	out := make([][]*Run, len(s.Strategies))
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

// BucketCount returns the number of buckets to draw: the longest series,
// or, with none, the horizon in buckets.
func BucketCount(s *Summary, runs []*Run) int {
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

// MeanOutcomes returns the mean over runs of the attempts of each
// outcome class in each of n buckets (Bucket.Breakdown), in the order
// succeeded, failed, rejected, throttled, timed out, unresolved. A run
// with a shorter series counts as 0 in the buckets it lacks. With no
// runs, every mean is 0.
func MeanOutcomes(runs []*Run, n int) [6][]float64 {
	var l [6][]float64
	for c := range l {
		l[c] = make([]float64, n)
	}
	for _, r := range runs {
		for i, b := range r.Series[:min(n, len(r.Series))] {
			d := b.Breakdown()
			for c, x := range [6]int64{d.Succeeded, d.Failed, d.Rejected, d.Throttled, d.TimedOut, d.Unresolved} {
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

// MeanBuckets returns the mean over runs of get(bucket) in each of n
// buckets; a run with a shorter series counts as 0 where it lacks
// buckets.
func MeanBuckets(runs []*Run, n int, get func(Bucket) int64) []float64 {
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

// QueueSeries is a strategy's server queue in each bucket, means over its
// runs.
type QueueSeries struct {
	Most []float64 // the most requests waiting at any instant (Bucket.QueueMax)
	Mean []float64 // the time-weighted mean (Bucket.QueueMean)
	// Measured is set when the strategy has runs and every one measured
	// the queue (Run.QueueTracked); when it is not, Most and Mean are
	// nil: no data, not an empty queue.
	Measured bool
}

// QueueStats returns the server queue of runs of a strategy in each of n
// buckets, means over the runs; a run with a shorter series counts as 0
// where it lacks buckets.
func QueueStats(runs []*Run, n int) QueueSeries {
	if len(runs) == 0 || slices.ContainsFunc(runs, func(r *Run) bool { return !r.QueueTracked }) {
		return QueueSeries{}
	}
	q := QueueSeries{Most: make([]float64, n), Mean: make([]float64, n), Measured: true}
	for _, r := range runs {
		for i, b := range r.Series[:min(n, len(r.Series))] {
			q.Most[i] += float64(b.QueueMax)
			q.Mean[i] += b.QueueMean
		}
	}
	if k := float64(len(runs)); k > 1 {
		for i := range n {
			q.Most[i] /= k
			q.Mean[i] /= k
		}
	}
	return q
}

// Point is a point of a cumulative distribution: X seconds, Y the
// fraction at or below X.
type Point struct{ X, Y float64 }

// LatencyCDF returns the cumulative distribution of the delivery
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
func LatencyCDF(runs []*Run) ([]Point, int64, error) {
	h := LatencyHistogram()
	for _, r := range runs {
		if r.Latency == nil {
			continue
		}
		if dropped := r.Latency.MergeInto(h); dropped > 0 {
			return nil, 0, fmt.Errorf("results: merging the latencies of %s run %d: %d values out of range", r.Strategy, r.Run, dropped)
		}
	}
	total := h.TotalCount()
	if total == 0 {
		return nil, 0, nil
	}
	var pts []Point
	var seen, lastTo int64
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		if len(pts) == 0 || bar.From > lastTo+1 {
			pts = append(pts, Point{X: micros(max(bar.From, 1)), Y: float64(seen) / float64(total)})
		}
		lastTo = bar.To
		seen += bar.Count
		pts = append(pts, Point{X: micros(max(bar.To, bar.From, 1)), Y: float64(seen) / float64(total)})
	}
	return pts, total, nil
}

// ThinCDF drops points of an increasing CDF that are closer than a
// factor ratio in x to the last point kept before them, keeping the last
// point of each such run, the first point and the last: the curve drawn
// through what is left is the same to the eye (ratio 1.005 is a fifth of
// a pixel on a log axis of 6 decades 1000 pixels wide) and passes through
// exact points of the distribution.
func ThinCDF(pts []Point, ratio float64) []Point {
	if len(pts) <= 2 {
		return pts
	}
	out := []Point{pts[0]}
	for i := 1; i < len(pts); i++ {
		last := out[len(out)-1]
		if i < len(pts)-1 && pts[i+1].X < last.X*ratio {
			continue // the next point is still close: keep the later one
		}
		out = append(out, pts[i])
	}
	return out
}
