package plots

import (
	"github.com/zeontools/herdlab/results"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// countTicks are gonum's default ticks labelled as counts: 50,000 rather
// than 50000.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = countLabel(t.Value)
		}
	}
	return ticks
}

// timeSteps are the steps in seconds that a time axis may tick at: round
// numbers of seconds, then of minutes and hours.
var timeSteps = []float64{
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
	1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
	3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600,
}

// maxTimeTicks is the most labelled ticks on a time axis.
const maxTimeTicks = 16

// timeTicks ticks a time axis in seconds at a round step (minutes from
// 5 min on, so that a herd at every 60 s falls on a tick), with a minor
// tick halfway, at most max labelled ticks (maxTimeTicks when 0). Without
// labels, the ticks are drawn but not labelled (the upper panels of a
// stack).
type timeTicks struct {
	labels bool
	max    int
}

func (t timeTicks) Ticks(lo, hi float64) []plot.Tick {
	most := t.max
	if most <= 0 {
		most = maxTimeTicks
	}
	step := timeStep(hi-lo, most)
	var ticks []plot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for k := 0; ; k++ {
		v := first + float64(k)*step
		if v > hi+step*1e-9 {
			break
		}
		label := ""
		if t.labels {
			label = decimal(v, 3)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
		if half := v + step/2; half <= hi {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	if half := first - step/2; half >= lo {
		ticks = append(ticks, plot.Tick{Value: half})
	}
	return ticks
}

// timeStep returns the smallest step of timeSteps that cuts span into at
// most most-1 intervals.
func timeStep(span float64, most int) float64 {
	k := float64(max(most, 2) - 1)
	for _, s := range timeSteps {
		if span/s <= k {
			return s
		}
	}
	return math.Pow(10, math.Ceil(math.Log10(span/k)))
}

// timeTicksFor returns the time ticks of an axis width wide: as many
// labelled ticks as fit with room between them, from 3 to maxTimeTicks.
func timeTicksFor(th theme, width vg.Length, labels bool) timeTicks {
	n := int(width / (1.5 * th.tick.Width("0000")))
	return timeTicks{labels: labels, max: min(max(n, 3), maxTimeTicks)}
}

// logTicks ticks a log axis at powers of ten, labelled in plain decimals
// (0.001, 1, 1000), with minor ticks at 2..9 times each; over two decades
// or fewer 2 and 5 are labelled too.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	few := math.Log10(hi/lo) < 2.01
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 || few && (m == 2 || m == 5) {
				label = decimal(v, 3)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// decimal formats x with sig significant digits (results.SigDecimal).
func decimal(x float64, sig int) string { return results.SigDecimal(x, sig) }

// countLabel formats a count (results.CountLabel).
func countLabel(x float64) string { return results.CountLabel(x) }

// secondsLabel formats a duration in seconds with its 95% half-width when
// not 0: "511 s", "24.5 s ± 3.1".
func secondsLabel(v, ci float64) string {
	s := decimal(v, 3) + " s"
	if ci > 0 {
		s += " ± " + decimal(ci, 2)
	}
	return s
}

// ratioLabel formats a ratio with its 95% half-width when not 0: "8.42×",
// "7.5× ± 0.12".
func ratioLabel(v, ci float64) string {
	s := decimal(v, 3) + "×"
	if ci > 0 {
		s += " ± " + decimal(ci, 2)
	}
	return s
}

// fractionTicks ticks an axis of fractions from 0 to 1: labels every 0.2,
// minor ticks every 0.1.
type fractionTicks struct{}

func (fractionTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := 0; k <= 10; k++ {
		v := float64(k) / 10
		if v < lo-1e-9 || v > hi+1e-9 {
			continue
		}
		label := ""
		if k%2 == 0 {
			label = decimal(v, 1)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// logRange returns the range of a log axis that shows lo to hi: from the
// largest of 1, 2 and 5 times a power of ten at or below lo to the
// smallest at or above hi, at least a factor 2 apart.
func logRange(lo, hi float64) (float64, float64) {
	if !(lo > 0) || !(hi > 0) {
		return 0.001, 1
	}
	lo, hi = min(lo, hi), max(lo, hi)
	nice := func(x float64, up bool) float64 {
		e := math.Floor(math.Log10(x))
		var best float64
		for _, k := range []float64{e - 1, e, e + 1} {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, k)
				switch {
				case !up && v <= x*(1+1e-9) && v > best:
					best = v
				case up && v >= x*(1-1e-9) && (best == 0 || v < best):
					best = v
				}
			}
		}
		return best
	}
	a, b := nice(lo, false), nice(hi, true)
	if b < 2*a {
		b = nice(2*a, true)
	}
	return a, b
}
