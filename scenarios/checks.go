package scenarios

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Check is one item of a scenario's checks: bounds on figures of one
// strategy (or of every strategy, with Strategy "*"), or a comparison
// between strategies. `herdlab check` runs the scenario and judges them.
//
//	checks:
//	  - strategy: fixed-60s
//	    why: the fixed retry comes back as a herd
//	    peak_load_ratio: {min: 10}
//	  - strategy: full-jitter
//	    peak_load_ratio: {max: 1.5}
//	  - compare: full-jitter.peak_load <= 0.5 * fixed-60s.peak_load
type Check struct {
	// Strategy names the strategy whose figures are bounded; "*" means
	// every strategy. Empty for a comparison.
	Strategy string
	// Bounds are the figures bounded, in the order written.
	Bounds []Bound
	// Compare is a comparison between strategies' figures, such as
	// `full-jitter.peak_load <= 0.5 * fixed-60s.peak_load`.
	Compare string
	// Why says what the check shows, for people reading its result.
	Why string

	figureKeys int // figures written, known or not
}

// Bound is an interval a figure must lie in: Min <= value <= Max, either
// end optional (nil).
type Bound struct {
	Figure   string // a figure of summary.json, such as peak_load_ratio or latency_s.p99
	Min, Max *float64
}

// bound is how a Bound is written: {min: X, max: Y}.
type bound struct {
	Min *float64 `yaml:"min"`
	Max *float64 `yaml:"max"`
}

// Figures lists the figures of summary.json that checks may name: every
// number of a strategy's summary. dead_lettered_by.REASON names the dead
// letters of one reason.
var Figures = []string{
	"requests", "attempts", "delivered", "delivered_ratio", "dead_lettered", "unfinished",
	"duplicates", "amplification", "peak_load", "peak_load_ratio", "peak_at_s", "peak_load_overall",
	"recovery_time_s", "drain_time_s", "completion_time_s",
	"latency_s.mean", "latency_s.p50", "latency_s.p90", "latency_s.p99", "latency_s.max",
	"processed", "wasted_work", "short_circuited", "rejected", "throttled", "timed_out",
	"responses_lost", "replayed", "recovered_runs",
	"backlog_at_outage_end", "dead_lettered_in_outage", "nothing_left_runs",
	"dead_lettered_by.not_retryable", "dead_lettered_by.max_attempts",
	"dead_lettered_by.max_elapsed", "dead_lettered_by.budget", "dead_lettered_by.breaker",
	"dead_lettered_by.client_rejected", "dead_lettered_by.pushback",
	"client_rejected", "rate_limited", "shared_budget_denied", "hedges", "hedge_wins",
}

// ServiceFigures lists the figures of one service of a graph that checks
// may name, as services.NAME.FIGURE (such as services.db.amplification).
var ServiceFigures = []string{
	"attempts", "delivered", "rejected", "throttled", "amplification",
	"peak_load", "peak_load_ratio", "peak_at_s", "peak_load_overall", "recovery_time_s", "recovered_runs",
	"attempts_after_outage", "processed", "duplicates", "wasted_work", "late_work", "deadline_dropped", "responses_lost",
	"shed", "queue_delay_s", "cache_hit_ratio",
}

// ServiceFigure splits a figure services.NAME.FIGURE into the service's
// name and its figure; false for any other name.
func ServiceFigure(name string) (service, figure string, ok bool) {
	rest, ok := strings.CutPrefix(name, "services.")
	if !ok {
		return "", "", false
	}
	for _, f := range ServiceFigures {
		if s, ok := strings.CutSuffix(rest, "."+f); ok && s != "" {
			return s, f, true
		}
	}
	return "", "", false
}

// IsFigure reports whether checks may name the figure name: one of
// Figures, or a service's figure.
func IsFigure(name string) bool {
	_, _, ok := ServiceFigure(name)
	return ok || slices.Contains(Figures, name)
}

func (c *Check) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "want a mapping such as {strategy: NAME, FIGURE: {max: X}} or {compare: EXPRESSION}, got %s", kindName(n))
		return true
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		sub := join(path, key.Value)
		if first, dup := seen[key.Value]; dup {
			d.failAt(key, sub, "duplicate field (first set on line %d)", first)
			continue
		}
		seen[key.Value] = key.Line
		switch key.Value {
		case "strategy", "compare", "why":
			var s string
			d.decodeInto(val, &s, sub)
			switch key.Value {
			case "strategy":
				c.Strategy = s
			case "compare":
				c.Compare = s
			default:
				c.Why = s
			}
		default:
			c.figureKeys++
			if !IsFigure(key.Value) {
				d.failAt(key, sub, "unknown figure%s", suggestFigure(key.Value))
				continue
			}
			var b bound
			d.decodeInto(val, &b, sub)
			c.Bounds = append(c.Bounds, Bound{Figure: key.Value, Min: b.Min, Max: b.Max})
		}
	}
	return true
}

// suggestFigure names the figure nearest to an unknown one, or lists them.
func suggestFigure(name string) string {
	if rest, ok := strings.CutPrefix(name, "services."); ok {
		return fmt.Sprintf(" (a service's figure is services.NAME.FIGURE, with FIGURE one of %s; got %s)", strings.Join(ServiceFigures, ", "), rest)
	}
	for _, f := range Figures {
		if strings.HasSuffix(f, "."+name) || strings.ReplaceAll(f, "_", "") == strings.ReplaceAll(name, "_", "") {
			return fmt.Sprintf(" (did you mean %s?)", f)
		}
	}
	return " (want one of " + strings.Join(Figures, ", ") + ")"
}

// validate reports the problems of check i of s.
func (c *Check) validate(p *problems, s *Scenario, i int) {
	path := fmt.Sprintf("checks[%d]", i)
	names := make([]string, len(s.Strategies))
	for k, st := range s.Strategies {
		names[k] = st.Name
	}
	switch {
	case c.Compare != "" && (c.Strategy != "" || len(c.Bounds) > 0):
		p.add(path+".compare", "a comparison stands alone: put strategy bounds in a check of their own")
	case c.Compare != "":
		cmp, err := ParseComparison(c.Compare)
		if err != nil {
			p.add(path+".compare", "%v", err)
			return
		}
		for _, op := range []Operand{cmp.Left, cmp.Right} {
			if op.Strategy != "" && !slices.Contains(names, op.Strategy) {
				p.add(path+".compare", "no strategy %q (the scenario has %s)", op.Strategy, strings.Join(names, ", "))
			}
			s.checkServiceFigure(p, path+".compare", op.Figure)
		}
	case c.Strategy == "":
		p.add(path+".strategy", "missing: name a strategy (or * for all) and bound its figures, or write compare: EXPRESSION")
	default:
		if c.Strategy != "*" && !slices.Contains(names, c.Strategy) {
			p.add(path+".strategy", "no strategy %q (the scenario has %s)", c.Strategy, strings.Join(names, ", "))
		}
		if c.figureKeys == 0 && len(c.Bounds) == 0 {
			p.add(path, "bound at least one figure, such as peak_load_ratio: {max: 1.5}")
		}
		for _, b := range c.Bounds {
			bp := path + "." + b.Figure
			s.checkServiceFigure(p, bp, b.Figure)
			switch {
			case b.Min == nil && b.Max == nil:
				p.add(bp, "give min, max or both")
			case b.Min != nil && b.Max != nil && *b.Min > *b.Max:
				p.add(bp+".max", "must be >= min (%v), got %v", *b.Min, *b.Max)
			}
		}
	}
}

// checkServiceFigure reports a service figure naming no service of s.
func (s *Scenario) checkServiceFigure(p *problems, path, figure string) {
	name, _, ok := ServiceFigure(figure)
	if !ok {
		return
	}
	if !s.Graph() {
		p.add(path, "%s names a service, and the scenario has one server: services.NAME figures are for graphs", figure)
	} else if s.ServiceIndex(name) < 0 {
		p.add(path, "no service %q (the graph has %s)", name, strings.Join(s.serviceNames(), ", "))
	}
}

// Comparison is a parsed `compare:` expression: Left Op Right, where each
// side is Factor * Strategy.Figure, or a plain number (Strategy empty).
type Comparison struct {
	Left, Right Operand
	Op          string // <=, <, >= or >
}

// Operand is one side of a comparison.
type Operand struct {
	Factor   float64 // the number alone when Strategy is empty
	Strategy string
	Figure   string
}

func (o Operand) String() string {
	switch {
	case o.Strategy == "":
		return strconv.FormatFloat(o.Factor, 'g', -1, 64)
	case o.Factor == 1:
		return o.Strategy + "." + o.Figure
	}
	return strconv.FormatFloat(o.Factor, 'g', -1, 64) + " * " + o.Strategy + "." + o.Figure
}

func (c Comparison) String() string { return c.Left.String() + " " + c.Op + " " + c.Right.String() }

// Holds reports whether left Op right.
func (c Comparison) Holds(left, right float64) bool {
	switch c.Op {
	case "<=":
		return left <= right
	case "<":
		return left < right
	case ">=":
		return left >= right
	}
	return left > right
}

// ParseComparison parses `A.figure OP [k *] B.figure`, where A and B are
// strategy names, OP is <=, <, >= or >, and either side may also be a
// plain number.
func ParseComparison(s string) (Comparison, error) {
	var c Comparison
	for _, op := range []string{"<=", ">=", "<", ">"} {
		if l, r, ok := strings.Cut(s, op); ok {
			c.Op = op
			var err error
			if c.Left, err = parseOperand(l); err != nil {
				return c, err
			}
			if c.Right, err = parseOperand(r); err != nil {
				return c, err
			}
			if c.Left.Strategy == "" && c.Right.Strategy == "" {
				return c, fmt.Errorf("%q compares two numbers: name a strategy's figure on one side", s)
			}
			return c, nil
		}
	}
	return c, fmt.Errorf("%q has no comparison: want A.figure <= 0.5 * B.figure (or <, >=, >)", s)
}

func parseOperand(s string) (Operand, error) {
	s = strings.TrimSpace(s)
	o := Operand{Factor: 1}
	if k, rest, ok := strings.Cut(s, "*"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(k), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return o, fmt.Errorf("%q: want a number before *", s)
		}
		o.Factor, s = f, strings.TrimSpace(rest)
	} else if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Operand{Factor: f}, nil
	}
	// A service's figure: STRATEGY.services.NAME.FIGURE.
	if i := strings.Index(s, ".services."); i > 0 {
		if _, _, ok := ServiceFigure(s[i+1:]); ok {
			o.Strategy, o.Figure = s[:i], s[i+1:]
			return o, nil
		}
	}
	// The figure is the longest known figure the operand ends with: a
	// strategy's name may hold dots too.
	figures := slices.Clone(Figures)
	sort.Slice(figures, func(i, j int) bool { return len(figures[i]) > len(figures[j]) })
	for _, f := range figures {
		if name, ok := strings.CutSuffix(s, "."+f); ok && name != "" {
			o.Strategy, o.Figure = name, f
			return o, nil
		}
	}
	return o, fmt.Errorf("%q: want STRATEGY.FIGURE with a figure of summary.json, such as full-jitter.peak_load", s)
}
