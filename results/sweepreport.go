package results

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Boundary is where one strategy stops recovering along a sweep's first
// axis, with the other axes held at Given.
type Boundary struct {
	Strategy string
	// Given are the values of the second and later axes.
	Given []string
	// Recovered says, for each value of the first axis, whether the server
	// recovered in every run (from a backlog: see Sweep.Recovered).
	Recovered []bool
	// NothingLeft says, for each value of the first axis, whether every
	// run left nothing to recover: the strategy gave up on everything
	// during the outage.
	NothingLeft []bool
}

// Boundaries returns, for each strategy and each combination of the
// values of the second and later axes, where recovery stops along the
// first axis: strategy by strategy, combinations in grid order.
func (s *Sweep) Boundaries() []Boundary {
	if len(s.Axes) == 0 {
		return nil
	}
	n0 := len(s.Axes[0].Values)
	if n0 == 0 || len(s.Points)%n0 != 0 {
		return nil
	}
	rest := len(s.Points) / n0 // combinations of the other axes
	var bs []Boundary
	for si, name := range s.Strategies {
		for c := range rest {
			b := Boundary{Strategy: name, Recovered: make([]bool, n0), NothingLeft: make([]bool, n0)}
			for i := range n0 {
				p := &s.Points[i*rest+c]
				if i == 0 {
					b.Given = p.Values[1:]
				}
				b.Recovered[i] = s.Recovered(&p.Strategies[si])
				b.NothingLeft[i] = p.Strategies[si].Recovery == NothingLeft
			}
			bs = append(bs, b)
		}
	}
	return bs
}

// Sentence says where the strategy stops recovering, in words: "full-jitter
// recovers for outage up to 2m0s, not from 3m0s, at load = 2000".
func (b Boundary) Sentence(s *Sweep) string {
	axis := s.Axes[0]
	vals := axis.Values
	first := -1 // the first value without recovery
	for i, ok := range b.Recovered {
		if !ok {
			first = i
			break
		}
	}
	var text string
	switch {
	case first == -1:
		text = fmt.Sprintf("%s recovers for every value of %s tried, up to %s", b.Strategy, axis.Name(), vals[len(vals)-1])
	case first == 0 && b.NothingLeft[0]:
		text = fmt.Sprintf("%s gives up on every request during the outage for every value of %s tried from %s: nothing is left to recover", b.Strategy, axis.Name(), vals[0])
	case first == 0:
		text = fmt.Sprintf("%s recovers for no value of %s tried (from %s)", b.Strategy, axis.Name(), vals[0])
	case b.NothingLeft[first]:
		text = fmt.Sprintf("%s recovers for %s up to %s; from %s it gives up on every request during the outage (nothing left to recover)", b.Strategy, axis.Name(), vals[first-1], vals[first])
	default:
		text = fmt.Sprintf("%s recovers for %s up to %s, not from %s", b.Strategy, axis.Name(), vals[first-1], vals[first])
	}
	if first >= 0 {
		var again []string
		for i := first + 1; i < len(vals); i++ {
			if b.Recovered[i] {
				again = append(again, vals[i])
			}
		}
		if len(again) > 0 {
			text += " (but again at " + strings.Join(again, ", ") + ")"
		}
	}
	for i, v := range b.Given {
		sep := ", "
		if i == 0 {
			sep = ", at "
		}
		text += sep + s.Axes[i+1].Name() + " = " + v
	}
	return text
}

// BoundarySentences says, strategy by strategy, where each stops
// recovering: one sentence for a strategy that recovers at every point or
// at none, else a sentence per combination of the other axes' values.
func (s *Sweep) BoundarySentences() []string {
	noOutage := len(s.Points) > 0
	for i := range s.Points {
		for j := range s.Points[i].Strategies {
			noOutage = noOutage && s.Points[i].Strategies[j].Recovery == NoOutage
		}
	}
	if noOutage {
		return []string{"no point of the sweep has an outage or a load spike: there is nothing to recover from"}
	}
	var lines []string
	bs := s.Boundaries()
	for len(bs) > 0 {
		n := 1
		for n < len(bs) && bs[n].Strategy == bs[0].Strategy {
			n++
		}
		all, none := true, true
		for _, b := range bs[:n] {
			for _, ok := range b.Recovered {
				all, none = all && ok, none && !ok
			}
		}
		switch {
		case all && len(s.Axes) > 1:
			lines = append(lines, bs[0].Strategy+" recovers at every point of the sweep")
		case none && len(s.Axes) > 1:
			lines = append(lines, bs[0].Strategy+" recovers at no point of the sweep")
		default:
			for _, b := range bs[:n] {
				lines = append(lines, b.Sentence(s))
			}
		}
		bs = bs[n:]
	}
	return lines
}

// metricCell formats a point's value of the sweep's metric for a table:
// "never" where the server never recovered, the runs that recovered where
// only some did.
func (s *Sweep) metricCell(p *PointSummary) string {
	x, ok := p.Value(s.Metric)
	if s.Metric == "recovery_time_s" && p.Recovery == NothingLeft {
		return "nothing left"
	}
	if s.Metric == "recovery_time_s" && p.Recovery == NoOutage {
		return "no outage"
	}
	var cell string
	switch {
	case !ok && s.Metric == "recovery_time_s":
		cell = "never"
	case !ok:
		cell = "n/a"
	case strings.HasSuffix(s.Metric, "_s") || strings.HasPrefix(s.Metric, "latency_s."):
		cell = Seconds(&x, "")
	case x == float64(int64(x)):
		cell = Count(x)
	default:
		cell = Decimal(x)
	}
	switch {
	case !ok || s.Recovered(p) || s.Metric == "recovered_runs":
	case s.Runs > 1 && p.NothingLeftRuns > 0:
		cell += fmt.Sprintf(" (recovered in %d/%d runs, %d left nothing)", p.RecoveredRuns, s.Runs, p.NothingLeftRuns)
	case s.Runs > 1:
		cell += fmt.Sprintf(" (recovered in %d/%d runs)", p.RecoveredRuns, s.Runs)
	default:
		cell += " (no recovery)"
	}
	return cell
}

// WriteSweepReport writes a sweep's report.md: what was varied, where
// each strategy stops recovering, a table of the metric at every point,
// and the charts, embedded by file name.
func WriteSweepReport(w io.Writer, s *Sweep, images []Image) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s: sweep\n\n", s.Scenario)
	fmt.Fprintf(bw, "Seed %d, %d run(s) per point, %d point(s) x %d strategies; metric: %s.\n\n", s.Seed, s.Runs, len(s.Points), len(s.Strategies), s.Metric)
	bw.WriteString("Varied:\n\n")
	for _, a := range s.Axes {
		name := "`" + a.Path + "`"
		if a.Label != "" {
			name = a.Label + " (" + name + ")"
		}
		fmt.Fprintf(bw, "- %s: %s\n", name, strings.Join(a.Values, ", "))
	}
	bw.WriteString("\n## Where recovery stops\n\n")
	bw.WriteString("A strategy recovers at a point when the server recovered in every run there (see recovery_time_s in the README).\n\n")
	for _, line := range s.BoundarySentences() {
		bw.WriteString("- " + line + "\n")
	}
	fmt.Fprintf(bw, "\n## %s\n\n", s.Metric)
	var head []string
	for _, a := range s.Axes {
		head = append(head, a.Name())
	}
	rows := [][]string{append(head, s.Strategies...)}
	for i := range s.Points {
		p := &s.Points[i]
		row := append([]string{}, p.Values...)
		for j := range p.Strategies {
			row = append(row, s.metricCell(&p.Strategies[j]))
		}
		rows = append(rows, row)
	}
	writeTable(bw, rows)
	if s.Runs > 1 {
		bw.WriteString("\nFigures are means over the runs (over the runs that recovered, for recovery_time_s); sweep.json holds their 95% confidence half-widths (ci95).\n")
	}
	writeCharts(bw, images)
	bw.WriteString("\nFiles: sweep.csv (one row per point, strategy and run), sweep.json (figures per point and strategy), records/ (each run's figures and latency histogram, for merge).\n")
	return bw.Flush()
}
