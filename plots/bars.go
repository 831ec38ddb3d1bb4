package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// RecoveryChart draws each strategy's recovery time: a bar in the
// strategy's colour, with 95% confidence whiskers over runs when there
// are several. A strategy whose server never recovered within the run
// has no recovery time: it is drawn as a hatched red bar over the full
// height labelled "never recovered", never as 0; one that left nothing
// to recover (it had given up, or delivered, everything by the end of the
// outage) is drawn so too, in grey, labelled "nothing left to recover",
// not as a 0 s bar that would read as the fastest. A strategy that
// recovered in some runs only is noted ("3 of 5 runs recovered"); its
// bar is the mean over those runs.
func RecoveryChart(s *results.Summary, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": recovery time"
	if target, ok := graphTarget(s); ok {
		title = s.Scenario + ": recovery of " + target + ", the service the fleet calls"
	}
	bars := recoveryBars(s)
	after := "the end of the outage"
	if len(s.Outages) > 1 {
		after = "the end of the last outage"
	} else if len(s.Outages) == 0 {
		after = "the start"
	}
	return render("recovery", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		if s.Runs > 1 {
			legend = append(legend, legendItem{label: fmt.Sprintf("95%% confidence interval over %d runs", s.Runs), thumb: whiskerThumb(th)})
		}
		never, vacant := false, false
		for _, b := range bars {
			never = never || (b.Missing && !b.Vacant)
			vacant = vacant || b.Vacant
		}
		if never {
			legend = append(legend, legendItem{label: "never recovered within the run (no recovery time, not 0)", thumb: hatchSwatch(neverColor, th)})
		}
		if vacant {
			legend = append(legend, legendItem{label: "nothing left to recover: every request given up or delivered by the end of the outage (not a fast recovery)", thumb: hatchSwatch(vacantColor, th)})
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: "Time from " + after + " until the server recovered" + runsNote(s) + ".",
			legend:   legend,
			notes: []string{fmt.Sprintf("Recovered at t: from t to the end of the %s s run, every bucket's attempts succeed at %s%% or more and the server queue does not grow.",
				decimal(s.HorizonS, 6), decimal(100*results.SuccessThreshold, 3))},
		}
		body := f.frame(c)
		top := barsMax(bars)
		if top == 0 {
			// Nothing to scale by: every bar is 0 or missing. Scale to the
			// longest recovery the run could have shown.
			top = max(s.HorizonS-lastOutageEnd(s), 1)
		}
		drawBars(c, body, th, s, bars, top, fmt.Sprintf("recovery time after %s (s)", after), false)
	})
}

// AmplificationChart draws each strategy's amplification, attempts per
// request: a bar in the strategy's colour with 95% confidence whiskers
// over runs when there are several, and a reference line at 1 (every
// request delivered at its first attempt). In a graph of two or more
// services, each strategy has two bars, named: the front's (the service
// the fleet calls) and the service's it hurts most (results.WorstOf),
// whose attempts per fleet request may be many times the front's.
func AmplificationChart(s *results.Summary, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": retry amplification"
	bars := amplificationBars(s)
	return render("amplification", title, o, func(c draw.Canvas, th theme) {
		legend := []legendItem{{label: "1: one attempt per request, no retries", thumb: lineThumb(referenceStyle(th))}}
		if s.Runs > 1 {
			legend = append(legend, legendItem{label: fmt.Sprintf("95%% confidence interval over %d runs", s.Runs), thumb: whiskerThumb(th)})
		}
		subtitle, ylabel := "Attempts that reached the server per request"+runsNote(s)+".", "attempts per request"
		if hasWorst(s) {
			subtitle = "Attempts that reached the front (the service the fleet calls) and the service each strategy hurts most, per fleet request" + runsNote(s) + "."
			ylabel = "attempts per fleet request"
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: subtitle,
			legend:   legend,
		}
		body := f.frame(c)
		drawBars(c, body, th, s, bars, max(barsMax(bars), 1), ylabel, true)
	})
}

// hasWorst reports whether s is of a graph of two or more services,
// whose strategies name the service they hurt most.
func hasWorst(s *results.Summary) bool {
	return len(s.Strategies) > 0 && s.Strategies[0].Worst != nil
}

// referenceStyle is the style of the reference line at 1.
func referenceStyle(th theme) draw.LineStyle {
	return draw.LineStyle{Color: referenceLine, Width: 1.2 * th.lw, Dashes: []vg.Length{4 * th.lw, 2.5 * th.lw}}
}

// whiskerThumb is the legend thumbnail of a confidence whisker.
func whiskerThumb(th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		sty := draw.LineStyle{Color: color.Black, Width: th.lw}
		x := c.Center().X
		w := (c.Max.X - c.Min.X) / 4
		c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
		c.StrokeLine2(sty, x-w, c.Min.Y, x+w, c.Min.Y)
		c.StrokeLine2(sty, x-w, c.Max.Y, x+w, c.Max.Y)
	}
}

// drawBars draws bars in body, scaled to top, with a free strip above it
// for their labels, and a reference line at 1 when ref is set.
func drawBars(c, body draw.Canvas, th theme, s *results.Summary, bars []bar, top float64, ylabel string, ref bool) {
	if len(bars) == 0 {
		return
	}
	p := th.newPlot()
	names := make([]string, len(bars))
	for i, b := range bars {
		names[i] = b.Name
	}
	p.NominalX(names...)
	p.Y.Padding = 0
	p.X.Min, p.X.Max = -0.5, float64(len(bars))-0.5
	p.Y.Min, p.Y.Max = 0, top
	p.Y.Label.Text = ylabel
	p.Y.Tick.Marker = countTicks{}
	p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
	width := 0.6
	p.Add(barsPlot{bars: bars, width: width, th: th})
	p.Add(hline{y: 0, style: draw.LineStyle{Color: color.Black, Width: 0.8 * vg.Length(th.scale)}})
	if ref {
		p.Add(hline{y: 1, style: referenceStyle(th)})
	}

	// Strategy names that do not fit their slots: broken at hyphens, or,
	// when that is not enough, slanted, with room on the left for the
	// first.
	dc := p.DataCanvas(body)
	slot := 0.95 * (dc.Max.X - dc.Min.X) / vg.Length(len(bars))
	sty := p.X.Tick.Label
	if widest(sty, names) > slot {
		broken := make([]string, len(names))
		for i, n := range names {
			broken[i] = strings.Join(breakName(sty, n, slot), "\n")
		}
		if widest(sty, broken) <= slot {
			p.NominalX(broken...)
		} else {
			const angle = math.Pi / 8
			p.X.Tick.Label.Rotation = angle
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YTop
			w := sty.Width(names[0]) * vg.Length(math.Cos(angle))
			if over := w - (dc.Min.X - body.Min.X) - slot/2; over > 0 {
				body.Min.X += over
			}
		}
		p.Y.Padding = 0
	}

	// Room above the highest bar for its label (two lines with a note).
	lines := 1
	for _, b := range bars {
		if !b.Missing {
			lines = max(lines, 1+strings.Count(b.Label, "\n")+boolInt(b.Note != ""))
		}
	}
	strip := vg.Length(lines)*th.annotation.Height("Mg") + th.pad
	reserveTop(p, body, top, strip, true)
	p.Draw(body)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// widest returns the width of the widest of texts in sty.
func widest(sty text.Style, texts []string) vg.Length {
	w := vg.Length(0)
	for _, t := range texts {
		w = max(w, sty.Width(t))
	}
	return w
}

// breakName breaks a strategy name into lines no wider than w where it
// can, after hyphens: "decorrelated-" "jitter".
func breakName(sty text.Style, name string, w vg.Length) []string {
	parts := strings.SplitAfter(name, "-")
	var lines []string
	line := ""
	for _, part := range parts {
		if line != "" && sty.Width(line+part) > w {
			lines = append(lines, line)
			line = ""
		}
		line += part
	}
	return append(lines, line)
}
