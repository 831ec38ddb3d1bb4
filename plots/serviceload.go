package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// ServicesLoadChart draws the load on every service of a graph: a grid of
// panels, a row per strategy and a column per service (in layer order,
// the fleet's side first), each the attempts that reached the service
// per bucket over time, stacked by outcome in the load chart's colours,
// with the service's capacity per bucket as a dashed line where it is
// limited and the load comes within capacityReach of it. The panels of a
// column share their count axis, every panel the time axis, cut after
// the last bucket in which any service saw an attempt. Each outage is
// shaded in the column of the service it hits (results.Window.Service;
// one that names none, in the column of the service the fleet calls).
// With several runs a bucket is the mean over the runs of its strategy.
//
// When o leaves the width or the height at 0, the image grows from the
// default with the grid (about servicePanelW x servicePanelH pixels a
// panel), in the fonts of the default size. It is an error for s to have
// no services.
func ServicesLoadChart(s *results.Summary, runs []*results.Run, o Options) (Chart, error) {
	if err := checkGraph(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": load per service"
	g := newGraphLayout(s)
	names := g.services()
	d := newServiceLoads(s, runs, names)
	w, h := o.size()
	th := newTheme(w, h)
	grown := growForGrid(o, th, len(names), len(s.Strategies))
	return renderIn("services-load", title, grown, th, func(c draw.Canvas, th theme) {
		drawServicePanels(c, th, s, title, g, names, d)
	})
}

// Sizes of the services-load grid at the nominal font sizes, in pixels:
// the least room a panel takes, and the room around the grid (legend,
// titles, axis labels).
const (
	servicePanelW, servicePanelH = 330, 185
	serviceMarginW               = 110
	serviceMarginH               = 190
)

// growForGrid returns o with the width and height that it leaves at 0
// set to what a grid of cols x rows panels takes in th (no less than the
// defaults, no more than the largest size).
func growForGrid(o Options, th theme, cols, rows int) Options {
	if o.Width == 0 {
		need := th.scale * float64(serviceMarginW+cols*servicePanelW)
		o.Width = min(max(DefaultWidth, int(math.Ceil(need))), 20000)
	}
	if o.Height == 0 {
		need := th.scale * float64(serviceMarginH+rows*servicePanelH)
		o.Height = min(max(DefaultHeight, int(math.Ceil(need))), 20000)
	}
	return o
}

// capacityReach is how close to its capacity a service's load must come
// for its panels to scale to the capacity line: within a factor 3. A
// service far below its capacity has its load drawn to scale, and the
// ratio written, rather than a flat line at the bottom of the panel.
const capacityReach = 3

// serviceLoads is what the services-load chart draws, per strategy (in
// the summary's order) and service (in the chart's column order).
type serviceLoads struct {
	loads    [][]loadSeries // [strategy][service]
	totals   [][][]float64  // [strategy][service]: attempts per bucket
	capacity []float64      // [service]: requests per bucket, 0 when unlimited
	top      []float64      // [service]: the top of the column's count axis, never 0
	showCap  []bool         // [service]: the capacity line is drawn
	n        int            // buckets
	xmax     float64        // the end of the time axis, in seconds
}

// newServiceLoads computes the load on each of names (services of s) per
// strategy: means over the strategy's runs of the services' series.
func newServiceLoads(s *results.Summary, runs []*results.Run, names []string) serviceLoads {
	groups := runsByStrategy(s, runs)
	d := serviceLoads{
		loads:    make([][]loadSeries, len(groups)),
		totals:   make([][][]float64, len(groups)),
		capacity: make([]float64, len(names)),
		top:      make([]float64, len(names)),
		showCap:  make([]bool, len(names)),
	}
	for _, r := range runs {
		if r == nil {
			continue
		}
		for _, sr := range r.Services {
			d.n = max(d.n, len(sr.Series))
		}
	}
	if d.n == 0 && s.HorizonS > 0 {
		d.n = int(math.Ceil(s.HorizonS/s.BucketS - 1e-9))
	}
	for j, name := range names {
		for _, r := range runs {
			if sr := serviceRun(r, name); sr != nil && sr.Capacity > 0 && !math.IsInf(sr.Capacity, 0) && !math.IsNaN(sr.Capacity) {
				d.capacity[j] = sr.Capacity * s.BucketS
				break
			}
		}
	}
	last := -1 // the last bucket with an attempt anywhere
	for i, grp := range groups {
		d.loads[i] = make([]loadSeries, len(names))
		d.totals[i] = make([][]float64, len(names))
		for j, name := range names {
			// meanLoad reads a run's Series: the service's stand in.
			var sruns []*results.Run
			for _, r := range grp {
				if sr := serviceRun(r, name); sr != nil {
					sruns = append(sruns, &results.Run{Series: sr.Series})
				}
			}
			d.loads[i][j] = meanLoad(sruns, d.n)
			// A run without the service counts as no load in it.
			if k := len(grp); k > len(sruns) && len(sruns) > 0 {
				scale := float64(len(sruns)) / float64(k)
				for c := range d.loads[i][j] {
					for b := range d.loads[i][j][c] {
						d.loads[i][j][c][b] *= scale
					}
				}
			}
			t := d.loads[i][j].total()
			d.totals[i][j] = t
			d.top[j] = max(d.top[j], maxOf(t))
			for b := len(t) - 1; b > last; b-- {
				if t[b] > 0 {
					last = b
					break
				}
			}
		}
	}
	for j := range names {
		if c := d.capacity[j]; c > 0 && c <= capacityReach*d.top[j] {
			d.showCap[j] = true
			d.top[j] = max(d.top[j], c)
		}
		if d.top[j] == 0 {
			d.top[j] = 1
		}
	}
	d.xmax = timeAxisEnd(s, d.n, last)
	return d
}

// serviceOutages returns the outages of s that hit the service named
// name: those that name it, and, for the service the fleet calls, those
// that name none (a summary written before outages named their
// service).
func serviceOutages(s *results.Summary, g graphLayout, name string) []results.Window {
	var out []results.Window
	for _, w := range s.Outages {
		if w.Service == name || w.Service == "" && name == g.target {
			out = append(out, w)
		}
	}
	return out
}

// serviceRun returns the service named name of run r, nil when it has
// none.
func serviceRun(r *results.Run, name string) *results.ServiceRun {
	if r == nil {
		return nil
	}
	for _, sr := range r.Services {
		if sr != nil && sr.Name == name {
			return sr
		}
	}
	return nil
}

// timeAxisEnd returns the end of the time axis of n buckets of which
// last is the last with an attempt (-1: none): the end of the buckets,
// or, when the last tenth or more of them are empty, a round time a
// little after the last attempt and the outages.
func timeAxisEnd(s *results.Summary, n, last int) float64 {
	full := max(float64(n)*s.BucketS, s.BucketS)
	if last < 0 {
		return full
	}
	end := max(float64(last+1)*s.BucketS, lastOutageEnd(s))
	if end >= 0.9*full {
		return full
	}
	step := timeStep(end, 8)
	return min(math.Ceil(end*1.04/step)*step, full)
}

// drawServicePanels draws the grid.
func drawServicePanels(c draw.Canvas, th theme, s *results.Summary, title string, g graphLayout, names []string, d serviceLoads) {
	var present [numOutcomes]bool
	for _, row := range d.loads {
		for _, l := range row {
			for k := range numOutcomes {
				present[k] = present[k] || l.present(k)
			}
		}
	}
	var legend []legendItem
	for k := range numOutcomes {
		if k != unresolved || present[k] {
			legend = append(legend, legendItem{label: outcomeNames[k], thumb: swatch(outcomeColors[k])})
		}
	}
	anyCap := false
	for _, b := range d.showCap {
		anyCap = anyCap || b
	}
	if anyCap {
		legend = append(legend, legendItem{label: fmt.Sprintf("service capacity per %s bucket", bucketLabel(s)), thumb: lineThumb(capacityStyle(th))})
	}
	windows := make([][]results.Window, len(names))
	anyOutage := false
	for j, name := range names {
		windows[j] = serviceOutages(s, g, name)
		anyOutage = anyOutage || len(windows[j]) > 0
	}
	if anyOutage {
		legend = append(legend, legendItem{label: "outage of the service", thumb: swatch(outageFill)})
	}
	cut := ""
	if full := float64(d.n) * s.BucketS; d.xmax < full {
		cut = fmt.Sprintf(" Time shown to %s s of %s: no attempt after.", decimal(d.xmax, 4), decimal(full, 6))
	}
	f := figure{
		th:    th,
		title: title,
		subtitle: fmt.Sprintf("Attempts that reached each service per %s bucket, by outcome%s; a row per strategy, a column per service, "+
			"each column on its own scale. The capacity line is drawn where the load comes within %d× of it.%s",
			bucketLabel(s), runsNote(s), capacityReach, cut),
		legend: legend,
	}
	body := f.frame(c)
	rows, cols := len(s.Strategies), len(names)
	if rows == 0 || cols == 0 {
		return
	}

	ylabel := fmt.Sprintf("attempts per %s bucket", bucketLabel(s))
	ysty := withAlign(th.label, draw.XCenter, draw.YTop)
	ysty.Rotation = math.Pi / 2
	c.FillText(ysty, vg.Point{X: body.Min.X, Y: (body.Min.Y + body.Max.Y) / 2}, ylabel)
	body.Min.X += ysty.Height(ylabel) + th.pad

	header := withAlign(th.annotation, draw.XLeft, draw.YBottom)
	headerH := header.Height("Mg") + th.pad/2
	plots := make([][]*plot.Plot, rows)
	for i := range rows {
		plots[i] = make([]*plot.Plot, cols)
		for j := range cols {
			p := th.newPlot()
			p.X.Min, p.X.Max = 0, d.xmax
			p.Y.Min, p.Y.Max = 0, d.top[j]
			p.X.Tick.Marker = timeTicks{labels: i == rows-1, max: 6}
			p.Y.Tick.Marker = countTicks{}
			if i == rows-1 {
				p.X.Label.Text = "time (s)"
			}
			p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
			if len(windows[j]) > 0 {
				p.Add(outages{windows: windows[j], label: true, sty: th.annotation, pad: th.pad})
			}
			p.Add(stackedSteps{tops: d.loads[i][j].stacked(), colors: outcomeColors, width: s.BucketS})
			if d.showCap[j] {
				p.Add(hline{y: d.capacity[j], style: capacityStyle(th)})
			}
			plots[i][j] = p
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 3 * th.pad, PadY: headerH + th.pad/2, PadTop: headerH}
	canvases := alignPanels(plots, tiles, body)
	// Headroom for the outage labels in the columns of services with
	// outages.
	for j := range cols {
		if len(windows[j]) == 0 {
			continue
		}
		dc := plots[0][j].DataCanvas(canvases[0][j])
		if hh := dc.Max.Y - dc.Min.Y; hh > 2*labelStrip(th) {
			for i := range rows {
				plots[i][j].Y.Max = d.top[j] * float64(hh/(hh-labelStrip(th)))
			}
		}
	}
	for i := range rows {
		for j := range cols {
			dc := plots[i][j].DataCanvas(canvases[i][j])
			tt := timeTicksFor(th, dc.Max.X-dc.Min.X, i == rows-1)
			plots[i][j].X.Tick.Marker = tt
		}
	}
	canvases = alignPanels(plots, tiles, body)
	colors := colorIndexes(s)
	for i, st := range s.Strategies {
		for j, name := range names {
			dc := plots[i][j].DataCanvas(canvases[i][j])
			plots[i][j].Draw(canvases[i][j])
			fig, _ := serviceFigures(st, name)
			drawServiceHeader(c, th, header, vg.Point{X: dc.Min.X, Y: dc.Max.Y + th.pad/3}, dc.Max.X-dc.Min.X, st.Name, colors[i], fig, j == 0)
		}
	}
}

// drawServiceHeader writes the strategy's name in its colour and the
// service's in bold, then the longest text of the service's figures that
// fits in width, all shrunk (to no less than 0.7 of their size) when not
// even the shortest fits. When the names do not fit either, the
// strategy is named in the first panel of its row only (first), and
// what still does not fit is cut short.
func drawServiceHeader(c draw.Canvas, th theme, sty text.Style, at vg.Point, width vg.Length, strategy string, clr int, f results.ServiceFigures, first bool) {
	strat := withFont(withColor(sty, strategyColor(clr)), bold)
	svc := withFont(sty, bold)
	gap := sty.Font.Size * 0.6
	figures := serviceFiguresText(f)
	shortest := figures[len(figures)-1]
	if need := strat.Width(strategy) + gap + svc.Width(f.Name) + sty.Font.Size + sty.Width(shortest); need > width {
		k := max(0.98*float64(width/need), 0.7)
		strat, svc, sty = shrink(strat, k), shrink(svc, k), shrink(sty, k)
		gap = sty.Font.Size * 0.6
	}
	x, end := at.X, at.X+width
	if strat.Width(strategy)+gap+svc.Width(f.Name) > width && !first {
		strategy = ""
	}
	if strategy != "" {
		name := ellipsis(strat, strategy, end-x)
		c.FillText(strat, vg.Point{X: x, Y: at.Y}, name)
		x += strat.Width(name) + gap
	}
	if x >= end {
		return
	}
	name := ellipsis(svc, f.Name, end-x)
	c.FillText(svc, vg.Point{X: x, Y: at.Y}, name)
	x += svc.Width(name) + sty.Font.Size
	rest := withColor(sty, noteColor)
	for _, txt := range figures {
		if x+rest.Width(txt) <= end {
			c.FillText(rest, vg.Point{X: x, Y: at.Y}, txt)
			return
		}
	}
}

// ellipsis returns txt, or as much of it as fits in width in sty
// followed by "…"; "" when not even that fits.
func ellipsis(sty text.Style, txt string, width vg.Length) string {
	if sty.Width(txt) <= width {
		return txt
	}
	r := []rune(txt)
	for n := len(r) - 1; n > 0; n-- {
		if t := string(r[:n]) + "…"; sty.Width(t) <= width {
			return t
		}
	}
	return ""
}

// serviceFiguresText returns the texts of figures that may be written
// beside a service's name in its panel, the longest first: the first
// that fits is.
func serviceFiguresText(f results.ServiceFigures) []string {
	amp := decimal(f.Amplification, 3) + " per fleet request"
	if f.PeakLoadRatio == nil {
		peak := "peak " + countLabel(f.PeakLoad)
		return []string{peak + "  ·  " + amp, peak}
	}
	ratio := ratioText(*f.PeakLoadRatio) + "×"
	return []string{"peak " + ratio + " capacity  ·  " + amp, "peak " + ratio + " capacity", "peak " + ratio}
}
