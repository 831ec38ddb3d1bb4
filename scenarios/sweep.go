package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Sweep is a scenario's sweep: section: the fields to vary and the figure
// to chart. A sweep runs the scenario once for every combination of the
// values (see Scenario.Points).
//
//	sweep:
//	  metric: recovery_time_s
//	  vary:
//	    - path: workload.arrival.schedule[0].until
//	      label: trigger end
//	      values: 21s..35s:8
//	    - {path: "workload.arrival.schedule[0].rate", values: [600, 900, 1200, 1500]}
//
// In a { } mapping, as in the last line, a path with [ ] must be quoted:
// YAML reads an unquoted [ there as the start of a list.
type Sweep struct {
	// Vary lists the fields varied: the first is the outermost
	// (slowest-changing) loop, the last the innermost.
	Vary []Vary `yaml:"vary"`
	// Metric is the figure charted against the values: a name from
	// Figures. Load and Parse set recovery_time_s when the file gives
	// none; Validate rejects an empty one.
	Metric string `yaml:"metric"`
}

func (sw *Sweep) setDefaults() { sw.Metric = "recovery_time_s" }

// Vary is one varied field. In a file it is {path, label, values}, where
// values is either a list of scalars or one string in the syntax of
// ParseValues.
type Vary struct {
	// Path is the field varied, such as server.outages[0].duration; see
	// Scenario.With for the syntax.
	Path string
	// Label names the field in reports, such as "trigger end"; "" means
	// Path.
	Label string
	// Values are the values the field takes, in order, ranges expanded,
	// each a YAML scalar such as 10s, 1000 or true.
	Values []string
	// Log is true when the values come from a log range, best charted on
	// a log axis.
	Log bool
}

// Setting sets the field at Path (see Scenario.With) to Value, a YAML
// scalar.
type Setting struct{ Path, Value string }

// text writes st as PATH=VALUE, as in messages.
func (st Setting) text() string { return st.Path + "=" + st.Value }

// Point is one point of a sweep: the settings that make it, in the order
// of the sweep's Vary, and the scenario they give.
type Point struct {
	Settings []Setting
	Scenario *Scenario
}

// Limits on a sweep, so that a mistaken range cannot make Parse build
// millions of scenarios.
const (
	maxPoints   = 10_000 // points in a sweep, all fields' values multiplied
	maxProblems = 10     // distinct problems reported for a sweep's points
)

// varyFields is how a Vary is written.
type varyFields struct {
	Path   string    `yaml:"path"`
	Label  string    `yaml:"label"`
	Values valueList `yaml:"values"`
}

// valueList is a Vary's values as written: a list of scalars or one
// string in the syntax of ParseValues.
type valueList struct {
	values []string
	log    bool
}

func (v *Vary) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	var f varyFields
	d.decodeInto(n, &f, path)
	*v = Vary{Path: f.Path, Label: f.Label, Values: f.Values.values, Log: f.Values.log}
	return true
}

func (l *valueList) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		values, log, err := ParseValues(n.Value)
		if err != nil {
			d.failAt(n, path, "%v", err)
			return true
		}
		l.values, l.log = values, log
	case yaml.SequenceNode:
		seen := map[string]bool{}
		for i, item := range n.Content {
			d.nodes++
			if item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			// Problems are reported at the item but under the path of
			// the values, which validation then leaves alone.
			switch {
			case item.Kind != yaml.ScalarNode:
				d.failAt(item, path, "want a value such as 10s or 100, got %s", kindName(item))
			case strings.TrimSpace(item.Value) == "":
				d.failAt(item, path, "value %d is empty", i+1)
			case strings.Contains(item.Value, ".."):
				d.failAt(item, path, "%q is a range: write it as the whole of values, as in values: %s", item.Value, item.Value)
			case seen[item.Value]:
				d.failAt(item, path, "%s is listed twice", item.Value)
			}
			seen[item.Value] = true
			l.values = append(l.values, item.Value)
		}
	default:
		d.failAt(n, path, "want a list of values, such as [10s, 30s, 2m], or a range, such as 10s..5m:8, got %s", kindName(n))
	}
	return true
}

// validate reports the problems of a scenario's sweep.
func (sw *Sweep) validate(p *problems) {
	if len(sw.Vary) == 0 {
		p.add("sweep.vary", "missing: list the fields to vary, as in [{path: server.outages[0].duration, values: 10s..5m:8}]")
	}
	first := map[string]int{}
	for i, v := range sw.Vary {
		path := fmt.Sprintf("sweep.vary[%d]", i)
		if v.Path == "" {
			p.add(path+".path", "missing: name the field to vary, such as server.outages[0].duration")
		} else if _, err := parsePath(v.Path); err != nil {
			p.add(path+".path", "%v", err)
		} else if j, dup := first[v.Path]; dup {
			p.add(path+".path", "%s is varied twice (also sweep.vary[%d])", v.Path, j)
		} else {
			first[v.Path] = i
		}
		if err := checkValues(v.Values); err != nil {
			p.add(path+".values", "%v", err)
		}
	}
	if n, ok := countPoints(sw.Vary); !ok {
		p.add("sweep.vary", "%s points is too many (at most %d): ask for fewer values", n, maxPoints)
	}
	switch {
	case sw.Metric == "":
		p.add("sweep.metric", "missing: name a figure such as recovery_time_s")
	case !slices.Contains(Figures, sw.Metric):
		p.add("sweep.metric", "unknown figure%s", suggestFigure(sw.Metric))
	}
}

// checkValues reports an empty list of values, an empty value or one
// listed twice.
func checkValues(values []string) error {
	if len(values) == 0 {
		return errors.New("missing: give a list, such as [10s, 30s, 2m], or a range, such as 10s..5m:8")
	}
	seen := map[string]bool{}
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			return errors.New("a value is empty")
		}
		if seen[v] {
			return fmt.Errorf("%s is listed twice", v)
		}
		seen[v] = true
	}
	return nil
}

// countPoints returns the number of points of a sweep over vary, as text,
// and whether it is at most maxPoints.
func countPoints(vary []Vary) (string, bool) {
	n := 1
	for i, v := range vary {
		n *= max(len(v.Values), 1)
		if n > maxPoints {
			more := ""
			if i < len(vary)-1 {
				more = "more than "
			}
			return more + strconv.Itoa(n), false
		}
	}
	return strconv.Itoa(n), true
}

// ParseVary parses the --vary flag, PATH=VALUES, such as
// server.outages[0].duration=10s..5m:8: a field path (see Scenario.With)
// and its values (see ParseValues). The Vary has no Label.
func ParseVary(flag string) (Vary, error) {
	path, spec, ok := strings.Cut(flag, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Vary{}, fmt.Errorf("%q: want PATH=VALUES, as in server.outages[0].duration=10s..5m:8", flag)
	}
	if _, err := parsePath(path); err != nil {
		return Vary{}, fmt.Errorf("%s: %w", path, err)
	}
	values, log, err := ParseValues(spec)
	if err != nil {
		return Vary{}, fmt.Errorf("%s: %w", path, err)
	}
	return Vary{Path: path, Values: values, Log: log}, nil
}

// ParseValues parses the values of a varied field, written as
//
//   - a list, A,B,C: 10s,30s,2m or 100,200,500 or true,false; each
//     value is trimmed, none may be empty or listed twice;
//   - a linear range, A..B:N: N >= 2 evenly spaced values from A to B,
//     both included: A + (B-A)*i/(N-1) for i = 0..N-1, such as 10s..5m:8;
//   - a log range, A..B:log:N: N values in geometric progression from A
//     to B, both > 0: A * (B/A)^(i/(N-1)), such as 1e3..1e6:log:7, which
//     gives 1000, 3162, 10000, 31623, 100000, 316228, 1000000; log is
//     true.
//
// A range's ends are both durations or both numbers. Durations are Go
// duration strings; the values are written as time.Duration.String
// writes them, such as 51.429s, and those between the ends are rounded
// to the millisecond, or to the microsecond when the range spans less
// than a second. The values of a number range are integers, rounded to
// the nearest, unless an end is written with a decimal point: then they
// are rounded to 6 significant digits and written as
// strconv.FormatFloat(x, 'g', -1, 64) writes them. A range has at most
// 10,000 points, and rounding may not make two of them equal.
func ParseValues(spec string) (values []string, log bool, err error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return nil, false, errors.New("no values: give a list, such as 10s,30s,2m, or a range, such as 10s..5m:8")
	case strings.Contains(spec, ".."):
		return parseRange(spec)
	}
	seen := map[string]bool{}
	for i, v := range strings.Split(spec, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			return nil, false, fmt.Errorf("%q: value %d of the list is empty", spec, i+1)
		case seen[v]:
			return nil, false, fmt.Errorf("%q: %s is listed twice", spec, v)
		}
		seen[v] = true
		values = append(values, v)
	}
	return values, false, nil
}

// parseRange parses A..B:N and A..B:log:N.
func parseRange(spec string) ([]string, bool, error) {
	fail := func(format string, args ...any) ([]string, bool, error) {
		return nil, false, fmt.Errorf("%q: %s", spec, fmt.Sprintf(format, args...))
	}
	if strings.Contains(spec, ",") {
		return fail("a range stands alone: write a list, such as 10s,30s,2m, or a range, such as 10s..5m:8, not both")
	}
	a, rest, _ := strings.Cut(spec, "..")
	parts := strings.Split(rest, ":")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	a, b := strings.TrimSpace(a), parts[0]
	var log bool
	var count string
	switch {
	case len(parts) == 1:
		return fail("a range needs a point count, as in %s:8", spec)
	case len(parts) == 2 && parts[1] == "log":
		return fail("a log range needs a point count, as in %s:8", spec)
	case len(parts) == 2:
		count = parts[1]
	case len(parts) == 3 && parts[1] == "log":
		log, count = true, parts[2]
	default:
		return fail("want A..B:N or A..B:log:N, such as 10s..5m:8 or 1e3..1e6:log:7")
	}
	if a == "" || b == "" {
		return fail("want A..B with both ends, such as 10s..5m:8")
	}
	n, err := strconv.Atoi(count)
	switch {
	case err != nil:
		return fail("the point count %q is not a whole number", count)
	case n < 2:
		return fail("a range needs at least 2 points, got %d (write a single value alone)", n)
	case n > maxPoints:
		return fail("%d points is too many (at most %d)", n, maxPoints)
	}

	// The ends: both numbers, else both durations.
	var lo, hi float64
	var format func(float64) string // a value between the ends
	var ends [2]string              // the ends, when written as they are
	var rounding, advice string
	x, errX := parseNumber(a)
	y, errY := parseNumber(b)
	da, errA := parseDuration(a)
	db, errB := parseDuration(b)
	switch {
	case errX == nil && errY == nil:
		lo, hi = x, y
		if strings.Contains(a, ".") || strings.Contains(b, ".") {
			format = func(v float64) string {
				r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
				return strconv.FormatFloat(r, 'g', -1, 64)
			}
			rounding, advice = "to 6 significant digits", "ask for fewer points"
		} else {
			format = func(v float64) string {
				v = math.Round(v)
				if v == 0 {
					v = 0 // not -0
				}
				return strconv.FormatFloat(v, 'f', 0, 64)
			}
			rounding = "to integers"
			advice = fmt.Sprintf("ask for fewer points, or write an end with a decimal point (as in %s..%s:%d) for fractional values", withPoint(a), b, n)
		}
		ends = [2]string{format(lo), format(hi)}
	case errA == nil && errB == nil:
		lo, hi = float64(da), float64(db)
		unit, name := time.Millisecond, "millisecond"
		if (db - da).Abs() < time.Second {
			unit, name = time.Microsecond, "microsecond"
		}
		format = func(v float64) string {
			return (time.Duration(math.Round(v/float64(unit))) * unit).String()
		}
		rounding, advice = "to the "+name, "ask for fewer points"
		ends = [2]string{da.String(), db.String()} // not rounded
	case errX != nil && errA != nil:
		return fail("%q is neither a duration, such as 10s, nor a number", a)
	case errY != nil && errB != nil:
		return fail("%q is neither a duration, such as 5m, nor a number", b)
	default:
		return fail("want both ends durations, such as 10s..5m:8, or both numbers, such as 100..2000:5")
	}
	if log && (lo <= 0 || hi <= 0) {
		return fail("a log range needs both ends > 0")
	}
	if lo == hi {
		return fail("the range starts and ends at the same value")
	}

	values := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range n {
		t := float64(i) / float64(n-1)
		switch {
		case i == 0:
			values[i] = ends[0]
		case i == n-1:
			values[i] = ends[1]
		case log:
			values[i] = format(math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*t))
		default:
			values[i] = format(lo + (hi-lo)*t)
		}
		if seen[values[i]] {
			return fail("rounding %s makes two values equal (%s): %s", rounding, values[i], advice)
		}
		seen[values[i]] = true
	}
	return values, log, nil
}

// parseNumber parses a finite number, allowing 50_000.
func parseNumber(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = fmt.Errorf("%q is not a finite number", s)
	}
	return f, err
}

// withPoint writes the number s with a decimal point: 1 -> 1.0, 1e3 ->
// 1.0e3.
func withPoint(s string) string {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return s[:i] + ".0" + s[i:]
	}
	return s + ".0"
}

// A field path is dot-separated keys, each followed by any number of
// selectors: [N] (an index), [NAME] (the element whose name is NAME) or
// [*] (every element).
type step struct {
	kind stepKind
	key  string // the key, or the name selected
	i    int    // the index selected
}

type stepKind int

const (
	stepKey   stepKind = iota // .key
	stepIndex                 // [N]
	stepName                  // [NAME]
	stepAll                   // [*]
)

func (st step) String() string {
	switch st.kind {
	case stepKey:
		return st.key
	case stepIndex:
		return "[" + strconv.Itoa(st.i) + "]"
	case stepAll:
		return "[*]"
	}
	return "[" + st.key + "]"
}

// pathString writes steps back as a path.
func pathString(steps []step) string {
	var b strings.Builder
	for i, st := range steps {
		if i > 0 && st.kind == stepKey {
			b.WriteByte('.')
		}
		b.WriteString(st.String())
	}
	return b.String()
}

var keyRE = regexp.MustCompile(`^[A-Za-z0-9_>-]+$`)

// reserved says why the fields that a sweep may not vary are set aside.
var reserved = map[string]string{
	"name":   "name names the output folder, which the points share",
	"runs":   "runs is set for the whole sweep, with --runs",
	"sweep":  "a sweep's points do not sweep",
	"checks": "checks judge results and do not change the simulation",
	"lint":   "lint settings do not change the simulation",
}

// parsePath parses a field path and rejects the reserved ones. Its
// errors do not repeat the path.
func parsePath(path string) ([]step, error) {
	fail := func(format string, args ...any) ([]step, error) {
		return nil, fmt.Errorf(format, args...)
	}
	if path == "" {
		return fail("the path is empty: name a field, such as server.outages[0].duration")
	}
	var steps []step
	rest := path
	for {
		key := rest
		if i := strings.IndexAny(rest, ".["); i >= 0 {
			key = rest[:i]
		}
		switch {
		case key == "" && len(steps) == 0:
			return fail("want a field name first, such as server")
		case key == "":
			return fail("a field name is missing after %q", pathString(steps)+".")
		case !keyRE.MatchString(key):
			return fail("want field names of letters, digits, _, - and > (in an edge, a->b), joined by '.', got %q", key)
		}
		steps = append(steps, step{kind: stepKey, key: key})
		rest = rest[len(key):]
		for strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return fail("[ is not closed by ]")
			}
			sel := rest[1:end]
			switch {
			case sel == "*":
				steps = append(steps, step{kind: stepAll})
			case sel != "" && strings.Trim(sel, "0123456789") == "":
				i, err := strconv.Atoi(sel)
				if err != nil || i > maxNodes {
					return fail("index %s is out of range", sel)
				}
				steps = append(steps, step{kind: stepIndex, i: i})
			case nameRE.MatchString(sel):
				steps = append(steps, step{kind: stepName, key: sel})
			default:
				return fail("want an index, a name or * in [], got [%s]", sel)
			}
			rest = rest[end+1:]
		}
		if rest == "" {
			break
		}
		if rest[0] != '.' {
			return fail("want . or [ after %q, got %q", pathString(steps), rest[:1])
		}
		rest = rest[1:]
	}
	if why, ok := reserved[steps[0].key]; ok {
		return fail("cannot be varied: %s", why)
	}
	return steps, nil
}

// settingError is a setting whose path does not lead to a field of the
// scenario's file.
type settingError struct {
	index int // of the setting
	path  string
	msg   string
}

func (e *settingError) Error() string { return e.path + ": " + e.msg }

var errNoSource = errors.New("scenarios: only a scenario loaded from a file can be varied: one built in Go has no YAML to change")

// With returns the scenario that s's file describes with each setting
// applied in turn, decoded and validated as Parse does, under the same
// file name. s is not changed. The result has no sweep, the same name as
// s, and positions of its own (see Position): those of s's file, where a
// field the settings created takes the position of the mapping it was
// added to.
//
// A setting's path is dot-separated keys, each followed by any number of
// selectors: server.outages[0].duration (an index),
// strategies[full-jitter].backoff.base (the element whose name is
// full-jitter), strategies[*].max_attempts (every element). A key the
// file leaves out, or writes empty, is added; an existing field, even a
// mapping such as a distribution, is replaced by the setting's value, a
// plain YAML scalar read as if written in the file: 1000 is a number, 10s
// a duration, null leaves the default. Paths may not start with name,
// runs, sweep, checks or lint.
//
// With fails for a scenario built in Go, for a path that does not lead
// to a field (an index out of range, a name no element has, a field of a
// scalar, a reserved path), and with the usual joined *Error list when
// the result does not decode or validate.
func (s *Scenario) With(settings ...Setting) (*Scenario, error) {
	return s.with(settings, nil)
}

// with is With, decoding the nodes that memo has decoded before from it
// (nil: every node); a bad path comes back as a *settingError, joined.
func (s *Scenario) with(settings []Setting, memo *decodeMemo) (*Scenario, error) {
	if s.src == nil || s.src.root == nil {
		return nil, errNoSource
	}
	root := clone(s.src.root)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "sweep" {
			root.Content = slices.Delete(root.Content, i, i+2)
			break
		}
	}
	var errs []error
	for i, st := range settings {
		steps, err := parsePath(st.Path)
		if err == nil {
			var changed *yaml.Node
			if changed, err = set(root, steps, st.Value, 0); err == nil {
				root = changed
			}
		}
		if err != nil {
			errs = append(errs, &settingError{index: i, path: st.Path, msg: err.Error()})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	fields := len(s.src.where)
	if memo != nil {
		fields = 0 // the positions inside what it has are not recorded
	}
	v, err := buildWith(s.src.file, root, fields, memo, s.src.from)
	if err != nil {
		return nil, err
	}
	v.Name = s.Name // the same unless changed in Go: name cannot be varied
	return v, nil
}

// clone returns a copy of n, an alias's target for an alias, that can be
// changed without changing n: its Content is its own, though the nodes
// in it are n's.
func clone(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	c := *n
	c.Anchor = ""
	c.Content = slices.Clone(n.Content)
	return &c
}

// set returns n with the field at steps[k:] set to value: n and every node
// on the way are copied, the others shared, so no node is changed. The
// first k steps led to n.
func set(n *yaml.Node, steps []step, value string, k int) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if k == len(steps) {
		// Tag "" makes a plain scalar read as if written in the file.
		return &yaml.Node{Kind: yaml.ScalarNode, Value: value, Line: n.Line, Column: n.Column}, nil
	}
	// The paths walked, for messages.
	st := steps[k]
	here := func() string { return pathString(steps[:k]) }
	through := func() string { return pathString(steps[:k+1]) }
	if st.kind == stepKey {
		if st.key == "from" && k > 0 && (steps[0].key == "strategies" || steps[k-1].key == "retry") {
			// Read when the file loads, into the fields beside it: a new
			// from: would change the field names, not the policy.
			return nil, fmt.Errorf("%s names the configuration file read when the scenario loads: a sweep cannot vary it; vary the fields it gives instead, such as %s.max_attempts", through(), here())
		}
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			n = &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
		}
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s is %s, not a mapping with fields, so it has no field %s", here(), describeNode(n), st.key)
		}
		c := clone(n)
		for i := 0; i+1 < len(c.Content); i += 2 {
			if c.Content[i].Value == st.key {
				v, err := set(c.Content[i+1], steps, value, k+1)
				if err != nil {
					return nil, err
				}
				c.Content[i+1] = v
				return c, nil
			}
		}
		if k+1 < len(steps) && steps[k+1].kind != stepKey {
			return nil, fmt.Errorf("the file has no %s, so there is no %s", through(), pathString(steps[:k+2]))
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: st.key, Line: c.Line, Column: c.Column}
		v, err := set(&yaml.Node{Kind: yaml.MappingNode, Line: c.Line, Column: c.Column}, steps, value, k+1)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, key, v)
		return c, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s is %s, not a list, so it has no element %s", here(), describeNode(n), st)
	}
	c := clone(n)
	var err error
	switch st.kind {
	case stepIndex:
		if st.i >= len(c.Content) {
			return nil, fmt.Errorf("%s is out of range: %s has %s", through(), here(), elements(len(c.Content)))
		}
		c.Content[st.i], err = set(c.Content[st.i], steps, value, k+1)
	case stepName:
		var names []string
		for i, e := range c.Content {
			name := nameOf(e)
			if name == st.key {
				c.Content[i], err = set(e, steps, value, k+1)
				return c, err
			}
			if name != "" {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no element of %s has a name, so there is no %s", here(), through())
		}
		return nil, fmt.Errorf("no element of %s is named %s (the names are %s)", here(), st.key, strings.Join(names, ", "))
	case stepAll:
		if len(c.Content) == 0 {
			return nil, fmt.Errorf("%s is empty, so %s selects nothing", here(), through())
		}
		for i, e := range c.Content {
			if c.Content[i], err = set(e, steps, value, k+1); err != nil {
				break
			}
		}
	}
	return c, err
}

// nameOf returns the name field of a sequence element, or "".
func nameOf(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := n.Content[i+1]; n.Content[i].Value == "name" && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

func describeNode(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("a value (%q)", n.Value)
	}
	return kindName(n)
}

func elements(n int) string {
	switch n {
	case 0:
		return "none"
	case 1:
		return "1 element"
	}
	return fmt.Sprintf("%d elements", n)
}

// Points returns the points of a sweep over vary: one for every
// combination of the values, the first Vary the outermost
// (slowest-changing) loop and the last the innermost, each with its
// Settings in the order of vary and its Scenario from With. Points(nil)
// returns one point without settings.
//
// It fails when a vary is wrong (see ParseVary), when the sweep has more
// than 10,000 points, and when any point's scenario does not build: the
// error then lists every distinct problem (the first ten, then how many
// more), each after the settings that cause it, such as
// `server.outages[0].duration=-5s: FILE:LINE:COL: server.outages[0].duration: must be > 0, got -5s`.
func (s *Scenario) Points(vary []Vary) ([]Point, error) {
	var points []Point
	err := s.EachPoint(context.Background(), vary, func(pt Point) error {
		points = append(points, pt)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return points, nil
}

// EachPoint builds the points of a sweep over vary one at a time, in the
// order of Points, and calls fn with each, keeping none: a sweep of
// 10,000 points holds one at a time. It fails as Points does (after
// calling fn with the points before the first bad one), with fn's first
// error, or with ctx's once it is done.
func (s *Scenario) EachPoint(ctx context.Context, vary []Vary, fn func(Point) error) error {
	return s.eachPoint(ctx, vary, fn, false)
}

// EachPointShared is EachPoint for points that are only read (checked,
// estimated, marshalled), never run nor changed beyond their top-level
// fields: each point decodes what varies, and shares the rest of the
// file, decoded once, with the other points (10,000 points of a file of
// 2,000 schedule steps take a second, not 40). Positions inside what a
// point shares are not kept: Position gives the nearest enclosing field
// written at that point. Build the point again with With to run it.
func (s *Scenario) EachPointShared(ctx context.Context, vary []Vary, fn func(Point) error) error {
	return s.eachPoint(ctx, vary, fn, true)
}

func (s *Scenario) eachPoint(ctx context.Context, vary []Vary, fn func(Point) error, shared bool) error {
	probs, err := s.points(ctx, vary, fn, shared)
	if err != nil {
		return err
	}
	if len(probs) == 0 {
		return nil
	}
	var errs []error
	for i, pr := range probs {
		if i == maxProblems {
			errs = append(errs, fmt.Errorf("and %d more problems", len(probs)-maxProblems))
			break
		}
		if prefix, _ := pr.settings(vary); prefix != "" {
			errs = append(errs, fmt.Errorf("%s: %w", prefix, pr.err))
		} else {
			errs = append(errs, pr.err)
		}
	}
	return errors.Join(errs...)
}

// pointProblem is one distinct problem of a sweep's points.
type pointProblem struct {
	err   error     // a *settingError, or an *Error of a point's scenario
	first []Setting // the settings of the first point it happens at
	at    []int     // each vary's value index at those points; -1 where they differ
	count int       // how many points it happens at
}

// settings says which settings cause the problem, for its message: those
// every point with the problem shares, when every point that shares them
// has it; otherwise the first point's settings and how many more points
// have it. only is the vary that alone causes it, or -1.
func (pr *pointProblem) settings(vary []Vary) (prefix string, only int) {
	var se *settingError
	if errors.As(pr.err, &se) {
		return "", se.index
	}
	var shared []string
	only, want := -1, 1
	for i, at := range pr.at {
		if at < 0 {
			want *= len(vary[i].Values)
			continue
		}
		shared = append(shared, pr.first[i].text())
		only = i
	}
	if want == pr.count {
		if len(shared) != 1 {
			only = -1
		}
		return strings.Join(shared, ", "), only
	}
	all := make([]string, len(pr.first))
	for i, st := range pr.first {
		all[i] = st.text()
	}
	more := "points"
	if pr.count == 2 {
		more = "point"
	}
	return fmt.Sprintf("%s (and %d more %s)", strings.Join(all, ", "), pr.count-1, more), -1
}

// points builds every point of a sweep over vary, one at a time, and
// calls fn (when not nil) with each until one fails to build. err is a
// problem with vary itself, fn's error or ctx's; probs are the distinct
// problems of the points, in the order first found.
func (s *Scenario) points(ctx context.Context, vary []Vary, fn func(Point) error, shared bool) (probs []*pointProblem, err error) {
	if s.src == nil {
		return nil, errNoSource
	}
	var errs []error
	seen := map[string]bool{}
	for _, v := range vary {
		if _, err := parsePath(v.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.Path, err))
		} else if seen[v.Path] {
			errs = append(errs, fmt.Errorf("%s is varied twice", v.Path))
		}
		seen[v.Path] = true
		if err := checkValues(v.Values); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.Path, err))
		}
	}
	if n, ok := countPoints(vary); !ok {
		errs = append(errs, fmt.Errorf("%s points is too many (at most %d): ask for fewer values", n, maxPoints))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Points only checked (or only read) are built from what varies: the
	// rest of the file is decoded once (see decodeMemo).
	var memo *decodeMemo
	if fn == nil || shared {
		memo = &decodeMemo{values: map[memoKey]memoValue{}}
	}
	byText := map[string]*pointProblem{}
	at := make([]int, len(vary))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		settings := make([]Setting, len(vary))
		for i, v := range vary {
			settings[i] = Setting{Path: v.Path, Value: v.Values[at[i]]}
		}
		sc, err := s.with(settings, memo)
		if err == nil && fn != nil && len(probs) == 0 {
			if err := fn(Point{Settings: settings, Scenario: sc}); err != nil {
				return nil, err
			}
		}
		for _, e := range unjoinAll(err) {
			text := e.Error()
			pr := byText[text]
			if pr == nil {
				pr = &pointProblem{err: e, first: settings, at: slices.Clone(at)}
				byText[text] = pr
				probs = append(probs, pr)
			}
			pr.count++
			for i := range pr.at {
				if pr.at[i] != at[i] {
					pr.at[i] = -1
				}
			}
		}
		var se *settingError
		if errors.As(err, &se) {
			// A path leads nowhere whatever the values: one point tells.
			return probs, nil
		}
		i := len(at) - 1
		for ; i >= 0; i-- {
			if at[i]++; at[i] < len(vary[i].Values) {
				break
			}
			at[i] = 0
		}
		if i < 0 {
			break
		}
	}
	return probs, nil
}

// checkPoints reports every distinct problem of the points of s's sweep,
// placed at the vary entry that causes it, or at the sweep.
func (s *Scenario) checkPoints(ctx context.Context) error {
	d := &decoder{file: s.src.file, where: s.src.where}
	vary := s.Sweep.Vary
	probs, err := s.points(ctx, vary, nil, true)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// Validate has reported these already; this is a safeguard.
		for _, e := range unjoin(err) {
			d.placeAt("sweep", e.Error())
		}
		return d.err()
	}
	for k, pr := range probs {
		if k == maxProblems {
			d.placeAt("sweep", fmt.Sprintf("and %d more problems in other points", len(probs)-maxProblems))
			break
		}
		prefix, only := pr.settings(vary)
		var le *Error
		var se *settingError
		switch {
		case errors.As(pr.err, &se):
			d.placeAt(fmt.Sprintf("sweep.vary[%d].path", se.index), se.msg)
		case !errors.As(pr.err, &le):
			d.placeAt("sweep", pr.err.Error())
		case only >= 0:
			d.placeAt(fmt.Sprintf("sweep.vary[%d].values", only), prefix+": "+le.relativeTo(vary[only].Path))
		case prefix != "":
			d.placeAt("sweep", prefix+": "+le.relativeTo(""))
		default:
			// Every point has the problem: it is the path's.
			field := "sweep"
			for i, v := range vary {
				if within(le.Path, v.Path) || within(v.Path, le.Path) {
					field = fmt.Sprintf("sweep.vary[%d].path", i)
					break
				}
			}
			d.placeAt(field, le.relativeTo(""))
		}
	}
	return d.err()
}

// placeAt records a problem at the position of field.
func (d *decoder) placeAt(field, msg string) {
	p := d.locate(field)
	d.errorAt(p, field, msg)
}

// relativeTo returns the error's path and message, the message alone
// when the path is path.
func (e *Error) relativeTo(path string) string {
	if e.Path == "" || e.Path == path {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// unjoinAll lists the errors joined in err; none for nil.
func unjoinAll(err error) []error {
	if err == nil {
		return nil
	}
	return unjoin(err)
}

// within reports whether the field path is at or within the field base.
func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+".") || strings.HasPrefix(path, base+"[")
}
