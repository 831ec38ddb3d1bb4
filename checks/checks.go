// Package checks judges a scenario's results against its checks: bounds
// on the figures of summary.json, comparisons between strategies, and
// regressions from a baseline. `herdlab check` is built on it, so that
// a pull request that changes a backoff base, a cap or a breaker
// threshold shows before it merges that the fleet still does not
// stampede its dependency.
//
// With several runs, a figure is a mean with a 95% confidence interval,
// and a check passes only when the whole interval satisfies it: a gate
// that the interval straddles fails as inconclusive, so that it does not
// flip with the seed.
//
// A check on a strategy that did not run (check --strategy) is skipped:
// reported as such, neither passed nor failed.
//
// A figure never passes a check that it cannot support: a recovery,
// drain or recovered-runs check fails on a strategy that delivered
// nothing (its clients gave up on every request, and an idle server is no
// recovery) or left nothing to recover, and on a scenario without an
// outage (a drain still counts where dead letters were replayed); a load
// check fails on a strategy that delivered nothing; and a
// check on a figure that some runs lack (one run never recovered) fails,
// since the mean of the others says nothing of them.
package checks

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// Result is the judgement of one bound, comparison or baseline figure.
type Result struct {
	Strategy string `json:"strategy"` // empty for a comparison
	Figure   string `json:"figure"`   // a figure of summary.json, or the comparison
	Bound    string `json:"bound"`    // the bound as text, such as "<= 1.5" or "in [0.9, 1]"
	// Min and Max are the bound as numbers, either nil for none: a
	// bound's ends, or for a baseline figure the limit it may reach. Both
	// are nil for a comparison and for a figure new since the baseline.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Value is the figure's value (with several runs, the mean); nil when
	// it does not exist (Text says why), when the check was skipped, and
	// for a comparison (see Left and Right).
	Value *float64 `json:"value"`
	// CI95 is the half-width of Value's 95% confidence interval: 0 with
	// one run.
	CI95 float64 `json:"ci95,omitempty"`
	// Left and Right are a comparison's two sides, each scaled by its
	// factor; nil where a side has no value.
	Left  *float64 `json:"left,omitempty"`
	Right *float64 `json:"right,omitempty"`
	// Text is the value as the text report writes it, such as "1.03",
	// "1.03 ± 0.02", "never recovered", "2065 <= 25000" or "not run".
	Text string `json:"value_text"`
	// Baseline is a baseline figure's value in the baseline; nil when it
	// had none.
	Baseline *float64 `json:"baseline,omitempty"`
	// Tolerance says how --tolerance applied to a baseline figure:
	// ToleranceRelative or ToleranceAbsolute (see Baseline).
	Tolerance string `json:"tolerance,omitempty"`
	Pass      bool   `json:"pass"`
	// Skipped is set when the check was not judged: its strategy (or one
	// of a comparison's) did not run. A skipped check has Pass false but
	// does not fail.
	Skipped bool `json:"skipped,omitempty"`
	// Note says why a check failed or was skipped beyond its value: no
	// value, an interval that straddles the bound, a strategy not run.
	Note string `json:"note,omitempty"`
	Why  string `json:"why,omitempty"`
	// Line and Col locate the check in its scenario file (0 when built in
	// Go or for a baseline).
	Line int `json:"line,omitempty"`
	Col  int `json:"col,omitempty"`
}

// Status returns PASS, FAIL or SKIP.
func (r Result) Status() string {
	switch {
	case r.Skipped:
		return "SKIP"
	case r.Pass:
		return "PASS"
	}
	return "FAIL"
}

// Failed reports whether the check failed: judged, and not passed.
func (r Result) Failed() bool { return !r.Pass && !r.Skipped }

// skip marks r skipped: strategy did not run.
func (r *Result) skip(strategy string) {
	r.Skipped, r.Text, r.Note = true, "not run", strategy+" was not run (--strategy)"
}

// value is a figure of one strategy: a mean, the half-width of its 95%
// confidence interval (0 with one run), or none.
type value struct {
	x, ci float64
	ok    bool
	why   string // why there is none
	// lacking says which runs lack the figure, whose mean is over the
	// others: a check on it fails.
	lacking string
}

func (v value) lo() float64 { return v.x - v.ci }
func (v value) hi() float64 { return v.x + v.ci }

func (v value) String() string {
	if !v.ok {
		return v.why
	}
	if v.ci > 0 {
		return num(v.x) + " ± " + num(v.ci)
	}
	return num(v.x)
}

// Evaluate judges the checks of sc against its results s, in the order
// the checks are written; a check on every strategy ("*") gives one
// result per strategy of sc. A check on a strategy that s does not hold
// (it did not run), or a comparison naming one, is skipped.
func Evaluate(sc *scenarios.Scenario, s *results.Summary) []Result {
	figs := map[string]figures{}
	for i := range s.Strategies {
		figs[s.Strategies[i].Name] = newFigures(&s.Strategies[i], s.Runs)
	}
	var out []Result
	for i, c := range sc.Checks {
		line, col := sc.Position(fmt.Sprintf("checks[%d]", i))
		if c.Compare != "" {
			r := compare(c.Compare, figs)
			r.Why, r.Line, r.Col = c.Why, line, col
			out = append(out, r)
			continue
		}
		names := []string{c.Strategy}
		if c.Strategy == "*" {
			names = names[:0]
			for _, st := range sc.Strategies {
				names = append(names, st.Name)
			}
		}
		for _, name := range names {
			f, ok := figs[name]
			for _, b := range c.Bounds {
				r := Result{Strategy: name, Figure: b.Figure, Bound: boundString(b), Min: b.Min, Max: b.Max, Why: c.Why, Line: line, Col: col}
				if !ok {
					r.skip(name)
				} else {
					v := f.get(b.Figure)
					r.setValue(v)
					r.Pass, r.Note = judge(v, b.Min, b.Max)
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// setValue sets r's value, its interval and its text from v.
func (r *Result) setValue(v value) {
	r.Text = v.String()
	if v.ok {
		r.Value, r.CI95 = &v.x, v.ci
	}
}

// judge decides whether v lies in [min, max] (either end may be nil).
func judge(v value, min, max *float64) (bool, string) {
	if !v.ok {
		return false, "no value"
	}
	if v.lacking != "" {
		return false, v.lacking
	}
	pass, fail := true, false
	if min != nil {
		pass = pass && v.lo() >= *min
		fail = fail || v.hi() < *min
	}
	if max != nil {
		pass = pass && v.hi() <= *max
		fail = fail || v.lo() > *max
	}
	if !pass && !fail {
		return false, "the 95% interval straddles the bound: add runs or move the bound"
	}
	return pass, ""
}

// compare judges a comparison between strategies: it holds when it holds
// for every pair of values in the two intervals. It is skipped when it
// names a strategy that did not run.
func compare(expr string, figs map[string]figures) Result {
	r := Result{Figure: expr, Bound: "holds"}
	c, err := scenarios.ParseComparison(expr)
	if err != nil {
		r.Text, r.Note = "invalid", err.Error()
		return r
	}
	for _, o := range []scenarios.Operand{c.Left, c.Right} {
		if _, ok := figs[o.Strategy]; o.Strategy != "" && !ok {
			r.skip(o.Strategy)
			return r
		}
	}
	l, rv := operand(c.Left, figs), operand(c.Right, figs)
	r.Text = l.String() + " " + c.Op + " " + rv.String()
	if l.ok {
		r.Left = &l.x
	}
	if rv.ok {
		r.Right = &rv.x
	}
	if !l.ok || !rv.ok {
		r.Note = "no value"
		return r
	}
	if l.lacking != "" || rv.lacking != "" {
		r.Note = strings.TrimPrefix(l.lacking+"; "+rv.lacking, "; ")
		r.Note = strings.TrimSuffix(r.Note, "; ")
		return r
	}
	// The worst case for the comparison: the left interval's far end
	// against the right's.
	worstL, worstR := l.hi(), rv.lo()
	bestL, bestR := l.lo(), rv.hi()
	if c.Op == ">=" || c.Op == ">" {
		worstL, worstR, bestL, bestR = l.lo(), rv.hi(), l.hi(), rv.lo()
	}
	r.Pass = c.Holds(worstL, worstR)
	if !r.Pass && c.Holds(bestL, bestR) {
		r.Note = "the 95% intervals overlap: add runs or move the bound"
	}
	return r
}

// operand returns the value of one side of a comparison, scaled by its
// factor.
func operand(o scenarios.Operand, figs map[string]figures) value {
	if o.Strategy == "" {
		return value{x: o.Factor, ok: true}
	}
	v := figs[o.Strategy].get(o.Figure)
	v.x, v.ci = o.Factor*v.x, math.Abs(o.Factor)*v.ci
	return v
}

// figures are the figures of one strategy, and their 95% half-widths, by
// their names in summary.json.
type figures struct {
	mean, ci results.Named
	// nothingLeft: the strategy left nothing to recover, so its
	// recovery, drain and recovered runs are no figures to hold to a
	// bound; nothingDelivered: it delivered nothing, so neither are they
	// nor its load; noOutage: there was no outage to recover from.
	nothingLeft, nothingDelivered, noOutage bool
	// replayed: dead letters were replayed, so a strategy that left
	// nothing at the end of the outage still drains them.
	replayed bool
	runs     int
	without  map[string]int
}

func newFigures(st *results.StrategySummary, runs int) figures {
	f := figures{mean: results.NamedFigures(st), nothingLeft: st.Recovery == results.NothingLeft,
		nothingDelivered: st.Delivered == 0 && st.Requests > 0, noOutage: st.Recovery == results.NoOutage,
		replayed: st.Replayed > 0, runs: runs, without: st.RunsWithout}
	if st.CI95 != nil {
		f.ci = results.NamedFigures(st.CI95)
	}
	return f
}

// unsupported says why a strategy's figure, though it has a value,
// supports no check, or "".
func (f figures) unsupported(name string) string {
	recovery := name == "recovery_time_s" || name == "recovered_runs"
	switch {
	case f.noOutage && recovery:
		return "no outage: there was nothing to recover from"
	case f.nothingDelivered && (recovery || name == "drain_time_s" || name == "peak_load_ratio"):
		return "delivered nothing: its clients gave up on every request, and an idle server is no recovery, no drain and no calm"
	case f.nothingLeft && (recovery || name == "drain_time_s" && !f.replayed):
		return "nothing left to recover: every request was given up or delivered before the outage ended"
	}
	return ""
}

// get returns the figure named name, such as peak_load_ratio or
// latency_s.p99.
func (f figures) get(name string) value {
	if why := f.unsupported(name); why != "" {
		return value{why: why}
	}
	if svc, fig, ok := scenarios.ServiceFigure(name); ok && fig == "recovery_time_s" {
		if n, ok := f.mean.Get("services." + svc + ".attempts_after_outage"); ok && n == 0 {
			return value{why: "no load: nothing reached " + svc + " after the outage"}
		}
	}
	x, ok := f.mean.Get(name)
	if !ok {
		return value{why: noValue(name)}
	}
	v := value{x: x, ok: true}
	if ci, ok := f.ci.Get(name); ok {
		v.ci = ci
	}
	key := name
	if strings.HasPrefix(name, "latency_s.") {
		key = "latency_s"
	}
	if n := f.without[key]; n > 0 {
		v.lacking = fmt.Sprintf("%d of %d runs have no %s (%s): the mean of the others says nothing of them", n, f.runs, name, noValue(name))
	}
	return v
}

// noValue says why a figure has no value.
func noValue(name string) string {
	if _, fig, ok := scenarios.ServiceFigure(name); ok {
		name = fig
	}
	switch name {
	case "recovery_time_s":
		return "never recovered"
	case "drain_time_s", "completion_time_s":
		return "unfinished requests"
	case "peak_load_ratio":
		return "no capacity (unlimited)"
	}
	if strings.HasPrefix(name, "latency_s.") {
		return "nothing delivered"
	}
	return "no value"
}

// boundString shows a bound as written: 0.99999 stays 0.99999.
func boundString(b scenarios.Bound) string {
	switch {
	case b.Min != nil && b.Max != nil:
		return "in [" + exact(*b.Min) + ", " + exact(*b.Max) + "]"
	case b.Min != nil:
		return ">= " + exact(*b.Min)
	}
	return "<= " + exact(*b.Max)
}

// exact formats x in the fewest digits that give it back.
func exact(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// num formats a figure: up to four significant decimals, more where four
// would round a fraction to a whole number (0.99997 is not 1).
func num(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	text := strconv.FormatFloat(x, 'g', 4, 64)
	if y, err := strconv.ParseFloat(text, 64); err == nil && y == math.Trunc(y) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return text
}
