package checks

import (
	"fmt"
	"math"

	"github.com/zeontools/herdlab/results"
)

// Watched are the figures a baseline comparison watches, and which way
// is worse: up (more load, longer recovery, more losses) or down.
var Watched = []struct {
	Figure string
	Worse  string // "up" or "down"
}{
	{"attempts", "up"},
	{"amplification", "up"},
	{"peak_load", "up"},
	{"peak_load_ratio", "up"},
	{"recovery_time_s", "up"},
	{"drain_time_s", "up"},
	{"completion_time_s", "up"},
	{"latency_s.p99", "up"},
	{"delivered_ratio", "down"},
	{"dead_lettered", "up"},
	{"unfinished", "up"},
	{"duplicates", "up"},
}

// WatchedServices are the figures of each service of a graph that a
// baseline comparison watches, as services.NAME.FIGURE; all are worse
// up.
var WatchedServices = []string{"attempts", "amplification", "peak_load", "peak_load_ratio", "recovery_time_s", "wasted_work", "late_work"}

// watched returns the figures watched for strategy st: Watched, then
// each of its services' (those of a graph), with which way is worse.
func watched(st *results.StrategySummary) (figures, worse []string) {
	for _, w := range Watched {
		figures, worse = append(figures, w.Figure), append(worse, w.Worse)
	}
	for _, sv := range st.Services {
		for _, f := range WatchedServices {
			figures, worse = append(figures, "services."+sv.Name+"."+f), append(worse, "up")
		}
	}
	return figures, worse
}

// How --tolerance applies to a baseline figure (Result.Tolerance).
const (
	// ToleranceRelative: the figure may get worse by the tolerance as a
	// fraction of the baseline's value (0.05: by 5% of it).
	ToleranceRelative = "relative"
	// ToleranceAbsolute: the figure may get worse by the tolerance itself,
	// in the figure's unit (0.05: by 0.05), where the baseline's value is
	// below 1 in magnitude: a ratio such as delivered_ratio, a count of 0,
	// a time under a second. A fraction of such a value would leave a
	// figure of 0 no room at all.
	ToleranceAbsolute = "absolute"
)

// slack returns how much worse than the baseline's value b a figure may
// get under tolerance, and whether that is relative or absolute: tolerance
// x |b|, or tolerance itself when |b| < 1.
func slack(b, tolerance float64) (float64, string) {
	if math.Abs(b) >= 1 {
		return tolerance * math.Abs(b), ToleranceRelative
	}
	return tolerance, ToleranceAbsolute
}

// Baseline compares the results s with an earlier summary, base, of the
// same scenario: a watched figure of a strategy present in both regresses
// when it is worse than the baseline's by more than its slack: tolerance
// as a fraction of the baseline's value, or where that value is below 1
// in magnitude, tolerance itself (see slack; each result says which in
// Tolerance). A figure that had a value and has none now (the server no
// longer recovers) regresses; the reverse is an improvement. A strategy
// of the baseline that s does not hold (it did not run) and one of s that
// the baseline does not hold give one skipped result each.
func Baseline(s, base *results.Summary, tolerance float64) []Result {
	old := map[string]figures{}
	for i := range base.Strategies {
		old[base.Strategies[i].Name] = newFigures(&base.Strategies[i], base.Runs)
	}
	ran := map[string]bool{}
	var out []Result
	for i := range s.Strategies {
		st := &s.Strategies[i]
		ran[st.Name] = true
		was, ok := old[st.Name]
		if !ok {
			out = append(out, Result{Strategy: st.Name, Figure: "baseline", Bound: "none", Text: "no baseline",
				Skipped: true, Note: st.Name + " is not in the baseline"})
			continue
		}
		now := newFigures(st, s.Runs)
		names, worse := watched(st)
		for k, figure := range names {
			b, v := was.get(figure), now.get(figure)
			r := Result{Strategy: st.Name, Figure: "baseline " + figure}
			r.setValue(v)
			switch {
			case !b.ok && !v.ok:
				continue // neither has it: nothing to compare
			case !b.ok:
				r.Bound, r.Pass = "none in the baseline ("+b.why+")", true
			case !v.ok:
				r.Bound, r.Note = "~ "+num(b.x), "had a value in the baseline"
				r.Baseline = &b.x
			default:
				d, kind := slack(b.x, tolerance)
				by := num(100*tolerance) + "% relative"
				if kind == ToleranceAbsolute {
					by = num(tolerance) + " absolute"
				}
				r.Baseline, r.Tolerance = &b.x, kind
				if worse[k] == "up" {
					limit := b.x + d
					r.Bound, r.Max, r.Pass = fmt.Sprintf("<= %s (baseline %s +%s)", num(limit), num(b.x), by), &limit, v.x <= limit
				} else {
					limit := b.x - d
					r.Bound, r.Min, r.Pass = fmt.Sprintf(">= %s (baseline %s -%s)", num(limit), num(b.x), by), &limit, v.x >= limit
				}
				if v.lacking != "" {
					r.Pass, r.Note = false, v.lacking
				}
			}
			out = append(out, r)
		}
	}
	for i := range base.Strategies {
		if name := base.Strategies[i].Name; !ran[name] {
			out = append(out, Result{Strategy: name, Figure: "baseline", Bound: "as in the baseline", Text: "not run",
				Skipped: true, Note: name + " was not run (--strategy), or is no longer in the scenario"})
		}
	}
	return out
}
