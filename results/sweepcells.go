package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file holds what a sweep's charts show at each point, the static
// ones (plots) and the interactive ones (SweepHeatmapOf) alike.

// SweepCell is a strategy's metric at a point of a sweep.
type SweepCell struct {
	V float64
	// Has is set when the metric exists there and is finite.
	Has bool
	// Partial is set when it exists but the server did not recover in
	// every run: recovery_time_s is then the mean over the runs that
	// recovered.
	Partial bool
	// Recovered counts the runs in which the server recovered.
	Recovered int
	// Vacant is set, for the recovery metric, when every run left
	// nothing to recover: Has is then false, and the cell says so.
	Vacant bool
}

// NeverMetric is the metric that a server that never recovered has not.
const NeverMetric = "recovery_time_s"

// SweepCells returns strategy j's metric at every point, in point order.
func SweepCells(s *Sweep, j int) []SweepCell {
	cells := make([]SweepCell, len(s.Points))
	for i := range s.Points {
		ps := &s.Points[i].Strategies[j]
		v, ok := ps.Value(s.Metric)
		ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0)
		cells[i] = SweepCell{Recovered: ps.RecoveredRuns}
		if s.Metric == NeverMetric && ps.Recovery == NothingLeft {
			// A recovery of 0 s that is no speed: nothing was left.
			cells[i].Vacant = true
			continue
		}
		if ok {
			cells[i].V, cells[i].Has, cells[i].Partial = v, true, !s.Recovered(ps)
		}
	}
	return cells
}

// SweepMissingLabel is the legend entry of points without the metric.
func SweepMissingLabel(metric string) string {
	if metric == NeverMetric {
		return "never recovered"
	}
	return "no value"
}

// SweepMissingText is the text of a heatmap cell without the metric.
func SweepMissingText(metric string) string {
	if metric == NeverMetric {
		return "never"
	}
	return "none"
}

// SweepVacantLabel is the legend entry of points that left nothing to
// recover.
const SweepVacantLabel = "nothing left to recover (every request given up by the end of the outage)"

// SweepVacantText is the text of a heatmap cell that left nothing to
// recover.
const SweepVacantText = "gave up"

// SweepPartialLabel is the legend entry of points whose server did not
// recover in every run.
func SweepPartialLabel(metric string) string {
	if metric == NeverMetric {
		return "recovered in only some runs (mean of those)"
	}
	return "server did not recover in every run"
}

// SweepRunsNote says what the figures are with several runs.
func SweepRunsNote(s *Sweep) string {
	switch {
	case s.Runs <= 1:
		return ""
	case s.Metric == "recovered_runs":
		return fmt.Sprintf(" (of %d runs)", s.Runs)
	}
	return fmt.Sprintf(" (mean of %d runs)", s.Runs)
}

// SweepValueLabel formats a value of metric: seconds for a figure in
// seconds (a name whose first part ends in _s: "12.5 s"), a count
// otherwise ("3,100", "0.95").
func SweepValueLabel(metric string, v float64) string {
	if IsSeconds(metric) {
		return SigDecimal(v, 3) + " s"
	}
	return CountLabel(v)
}

// IsSeconds reports whether metric is in seconds: recovery_time_s,
// latency_s.p99.
func IsSeconds(metric string) bool {
	first, _, _ := strings.Cut(metric, ".")
	return strings.HasSuffix(first, "_s")
}

// SigDecimal formats x with sig significant digits, or all its integer
// digits when it has more, and no trailing zeros: 0.001, 2.5, 60, 1500.
func SigDecimal(x float64, sig int) string {
	if x == 0 {
		return "0" // and not "-0"
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	digits := max(sig-1-int(math.Floor(math.Log10(math.Abs(x)))), 0)
	s := strconv.FormatFloat(x, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// CountLabel formats a count: rounded to a whole number with thousands
// separators from 1000 on (50,000), with up to 3 significant digits below
// (a mean over runs: 12.4, 0.5).
func CountLabel(x float64) string {
	if math.Abs(x) < 999.5 {
		return SigDecimal(x, 3)
	}
	return Count(math.Round(x))
}

// SweepHeatmap is what the browser app draws of a sweep (web/README.md):
// every strategy's cells, marked and labelled as the static charts mark
// and label them.
type SweepHeatmap struct {
	Metric     string               `json:"metric"`
	Note       string               `json:"note"`
	Axes       []Axis               `json:"axes"`
	Labels     map[string]string    `json:"labels"`
	Strategies []SweepHeatmapSeries `json:"strategies"`
}

// SweepHeatmapSeries is one strategy's cells, in point order.
type SweepHeatmapSeries struct {
	Name  string             `json:"name"`
	Index int                `json:"index"`
	Cells []SweepHeatmapCell `json:"cells"`
}

// SweepHeatmapCell is a cell: its value (nil without one), how it is
// marked (value, partial, missing or vacant), its text, and the runs
// that recovered.
type SweepHeatmapCell struct {
	V         *float64 `json:"v"`
	Mark      string   `json:"mark"`
	Text      string   `json:"text"`
	Recovered int      `json:"recovered"`
}

// SweepHeatmapOf returns the heatmap data of a sweep.
func SweepHeatmapOf(s *Sweep) *SweepHeatmap {
	h := &SweepHeatmap{Metric: s.Metric, Note: SweepRunsNote(s), Axes: s.Axes,
		Labels: map[string]string{"missing": SweepMissingLabel(s.Metric), "partial": SweepPartialLabel(s.Metric), "vacant": SweepVacantLabel}}
	for j, name := range s.Strategies {
		series := SweepHeatmapSeries{Name: name, Cells: []SweepHeatmapCell{}}
		if j < len(s.StrategyIndexes) {
			series.Index = s.StrategyIndexes[j]
		}
		for _, c := range SweepCells(s, j) {
			hc := SweepHeatmapCell{Recovered: c.Recovered}
			switch {
			case c.Vacant:
				hc.Mark, hc.Text = "vacant", SweepVacantText
			case !c.Has:
				hc.Mark, hc.Text = "missing", SweepMissingText(s.Metric)
			case c.Partial:
				v := c.V
				hc.V, hc.Mark, hc.Text = &v, "partial", SweepValueLabel(s.Metric, c.V)+"*"
			default:
				v := c.V
				hc.V, hc.Mark, hc.Text = &v, "value", SweepValueLabel(s.Metric, c.V)
			}
			series.Cells = append(series.Cells, hc)
		}
		h.Strategies = append(h.Strategies, series)
	}
	return h
}
