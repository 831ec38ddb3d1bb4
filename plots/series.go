package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"

	"github.com/zeontools/herdlab/results"
)

// This file holds the data behind the charts: pure functions of the
// results, tested on their own.

// runsByStrategy is results.RunsByStrategy.
func runsByStrategy(s *results.Summary, runs []*results.Run) [][]*results.Run {
	return results.RunsByStrategy(s, runs)
}

// bucketCount is results.BucketCount.
func bucketCount(s *results.Summary, runs []*results.Run) int {
	return results.BucketCount(s, runs)
}

// loadSeries is the mean number of attempts per bucket of each outcome
// class over the runs of a strategy: classes[c][i] for class c, bucket i.
type loadSeries [numOutcomes][]float64

// meanLoad returns the mean over runs of the attempts of each outcome
// class in each of n buckets (results.MeanOutcomes, whose classes are in
// the order of the outcomes).
func meanLoad(runs []*results.Run, n int) loadSeries {
	return loadSeries(results.MeanOutcomes(runs, n))
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

// meanBuckets is results.MeanBuckets.
func meanBuckets(runs []*results.Run, n int, get func(results.Bucket) int64) []float64 {
	return results.MeanBuckets(runs, n, get)
}

// meanAttempts returns the mean attempts per bucket over runs.
func meanAttempts(runs []*results.Run, n int) []float64 {
	return meanBuckets(runs, n, func(b results.Bucket) int64 { return b.Attempts })
}

// queueStats is results.QueueStats.
func queueStats(runs []*results.Run, n int) results.QueueSeries {
	return results.QueueStats(runs, n)
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

// latencyCDF is results.LatencyCDF, as points to draw.
func latencyCDF(runs []*results.Run) (plotter.XYs, int64, error) {
	pts, total, err := results.LatencyCDF(runs)
	return xys(pts), total, err
}

// thinCDF is results.ThinCDF.
func thinCDF(in plotter.XYs, ratio float64) plotter.XYs {
	pts := make([]results.Point, len(in))
	for i, p := range in {
		pts[i] = results.Point{X: p.X, Y: p.Y}
	}
	return xys(results.ThinCDF(pts, ratio))
}

func xys(pts []results.Point) plotter.XYs {
	if pts == nil {
		return nil
	}
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i] = plotter.XY{X: p.X, Y: p.Y}
	}
	return out
}

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
		case st.Recovery == results.NoOutage:
			b.Missing, b.Vacant = true, true
			b.Label = "no outage"
		case st.RecoveryTimeS == nil || math.IsNaN(*st.RecoveryTimeS):
			b.Missing = true
			b.Label = "never recovered"
			if st.Delivered == 0 && st.Requests > 0 {
				b.Note = "nothing delivered"
			}
		default:
			b.Value = *st.RecoveryTimeS
			b.CI = ciOf(s, st, func(f *results.Figures) *float64 { return f.RecoveryTimeS })
			b.Label = secondsLabel(b.Value, b.CI)
		}
		if n := st.RecoveredRuns; st.Recovery == results.Mixed && n > 0 {
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
// (attempts per request), with its CI95 half-width when runs > 1. In a
// graph of two or more services, each strategy has the front's bar (the
// service the fleet calls), named "STRATEGY\nFRONT (front)", and beside
// it the bar of the service it hurts most (results.WorstOf), named
// "STRATEGY\nSERVICE (hurt most)", in the same colour, without whiskers
// (services have no intervals); one bar "(front, hurt most)" when that
// is the front.
func amplificationBars(s *results.Summary) []bar {
	bars := make([]bar, 0, len(s.Strategies))
	colors := colorIndexes(s)
	for i, st := range s.Strategies {
		ci := ciOf(s, st, func(f *results.Figures) *float64 { return &f.Amplification })
		b := bar{
			Name:  st.Name,
			Index: colors[i],
			Value: st.Amplification,
			CI:    ci,
			Label: ratioLabel(st.Amplification, ci),
		}
		w := st.Worst
		if w == nil {
			bars = append(bars, b)
			continue
		}
		front := st.Front()
		if w.Name == front {
			b.Name = st.Name + "\n" + front + " (front, hurt most)"
			bars = append(bars, b)
			continue
		}
		b.Name = st.Name + "\n" + front + " (front)"
		bars = append(bars, b, bar{
			Name:  st.Name + "\n" + w.Name + " (hurt most)",
			Index: colors[i],
			Value: w.Amplification,
			Label: ratioLabel(w.Amplification, 0),
		})
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
