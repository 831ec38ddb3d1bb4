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

// Baseline compares the results s with an earlier summary, base, of the
// same scenario: a watched figure of a strategy present in both regresses
// when it is worse than the baseline's by more than tolerance, a fraction
// of the baseline's value (with an absolute floor of tolerance itself, so
// that a figure of 0 may move a little). A figure that had a value and
// has none now (the server no longer recovers) regresses; the reverse is
// an improvement.
func Baseline(s, base *results.Summary, tolerance float64) []Result {
	old := map[string]figures{}
	for i := range base.Strategies {
		old[base.Strategies[i].Name] = newFigures(&base.Strategies[i])
	}
	var out []Result
	for i := range s.Strategies {
		st := &s.Strategies[i]
		was, ok := old[st.Name]
		if !ok {
			continue
		}
		now := newFigures(st)
		for _, w := range Watched {
			b, v := was.get(w.Figure), now.get(w.Figure)
			r := Result{Strategy: st.Name, Figure: "baseline " + w.Figure, Value: v.String()}
			switch {
			case !b.ok && !v.ok:
				continue // neither has it: nothing to compare
			case !b.ok:
				r.Bound, r.Pass = "none in the baseline ("+b.why+")", true
			case !v.ok:
				r.Bound, r.Note = "~ "+num(b.x), "had a value in the baseline"
			default:
				slack := tolerance * math.Max(math.Abs(b.x), 1)
				if w.Worse == "up" {
					r.Bound, r.Pass = fmt.Sprintf("<= %s (baseline %s +%s%%)", num(b.x+slack), num(b.x), num(100*tolerance)), v.x <= b.x+slack
				} else {
					r.Bound, r.Pass = fmt.Sprintf(">= %s (baseline %s -%s%%)", num(b.x-slack), num(b.x), num(100*tolerance)), v.x >= b.x-slack
				}
			}
			out = append(out, r)
		}
	}
	return out
}
