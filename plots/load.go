package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// LoadChart draws the load on the server: the attempts that reached it
// per bucket over time. By default, one panel per strategy, stacked
// vertically on a shared time axis and a shared count axis, each bar
// stacked by outcome (succeeded, failed, rejected 503, throttled 429,
// timed out, unresolved) in the same colours in every panel, under one
// legend; with Options.Overlay, one axis with a line of total attempts
// per strategy. Both draw the server's capacity per bucket as a dashed
// line (when limited) and shade the outage windows. With several runs a
// bucket is the mean over the runs of its strategy.
func LoadChart(s *results.Summary, runs []*results.Run, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": load on the server"
	if target, ok := graphTarget(s); ok {
		title = s.Scenario + ": load on " + target + ", the service the fleet calls"
		s = withoutFarCapacity(s, runs)
	}
	groups := runsByStrategy(s, runs)
	n := bucketCount(s, runs)
	if o.Overlay {
		return render("load", title, o, func(c draw.Canvas, th theme) {
			drawLoadOverlay(c, th, s, title, groups, n)
		})
	}
	return render("load", title, o, func(c draw.Canvas, th theme) {
		drawLoadPanels(c, th, s, title, groups, n)
	})
}

// graphTarget returns the service the fleet calls, for a summary of a
// graph of services.
func graphTarget(s *results.Summary) (string, bool) {
	if !hasGraph(s) || len(s.Strategies[0].Edges) == 0 {
		return "", false
	}
	return s.Strategies[0].Edges[0].To, true
}

// withoutFarCapacity returns s without its capacity when no bucket of
// runs comes within capacityReach of it: a gateway's capacity can be a
// thousand times its load, and a scale up to it would flatten the load
// to nothing. The panels' headers still give the peak's ratio.
func withoutFarCapacity(s *results.Summary, runs []*results.Run) *results.Summary {
	perBucket, ok := capacityPerBucket(s)
	if !ok {
		return s
	}
	var most int64
	for _, r := range runs {
		for _, b := range r.Series {
			most = max(most, b.Attempts)
		}
	}
	if float64(most)*capacityReach >= perBucket {
		return s
	}
	c := *s
	c.CapacityPerS = nil
	return &c
}

// capacityStyle is the style of the capacity line.
func capacityStyle(th theme) draw.LineStyle {
	return draw.LineStyle{Color: color.Black, Width: 1.3 * th.lw, Dashes: []vg.Length{5 * th.lw, 3 * th.lw}}
}

// loadLegendTail returns the legend entries of the capacity line and the
// outages.
func loadLegendTail(s *results.Summary, th theme) []legendItem {
	var items []legendItem
	if perBucket, ok := capacityPerBucket(s); ok {
		items = append(items, legendItem{
			label: fmt.Sprintf("server capacity (%s per %s bucket)", countLabel(perBucket), bucketLabel(s)),
			thumb: lineThumb(capacityStyle(th)),
		})
	}
	if len(s.Outages) > 0 {
		items = append(items, legendItem{label: "outage", thumb: swatch(outageFill)})
	}
	return items
}

// drawLoadPanels draws a panel per strategy.
func drawLoadPanels(c draw.Canvas, th theme, s *results.Summary, title string, groups [][]*results.Run, n int) {
	loads := make([]loadSeries, len(groups))
	totals := make([][]float64, len(groups))
	var present [numOutcomes]bool
	for i, g := range groups {
		loads[i] = meanLoad(g, n)
		for k := range numOutcomes {
			present[k] = present[k] || loads[i].present(k)
		}
		totals[i] = loads[i].total()
	}
	capacity, limited := capacityPerBucket(s)
	top, cut := loadScale(totals, afterOutage(s), capacity)
	colors := colorIndexes(s)

	var legend []legendItem
	for k := range numOutcomes {
		// Unresolved only when some attempt is; the others always, so that
		// the legend reads the same across charts and runs.
		if k != unresolved || present[k] {
			legend = append(legend, legendItem{label: outcomeNames[k], thumb: swatch(outcomeColors[k])})
		}
	}
	legend = append(legend, loadLegendTail(s, th)...)
	f := figure{
		th:    th,
		title: title,
		subtitle: fmt.Sprintf("Attempts that reached the server per %s bucket, by outcome%s; one panel per strategy, same scales.",
			bucketLabel(s), runsNote(s)),
		legend: legend,
	}
	body := f.frame(c)
	if len(groups) == 0 {
		return
	}

	// The shared y label, rotated, at the left.
	ylabel := fmt.Sprintf("attempts per %s bucket", bucketLabel(s))
	ysty := withAlign(th.label, draw.XCenter, draw.YTop)
	ysty.Rotation = math.Pi / 2
	c.FillText(ysty, vg.Point{X: body.Min.X, Y: (body.Min.Y + body.Max.Y) / 2}, ylabel)
	body.Min.X += ysty.Height(ylabel) + th.pad

	xmax := float64(n) * s.BucketS
	header := withAlign(th.annotation, draw.XLeft, draw.YBottom)
	headerH := header.Height("Mg") + th.pad/2
	marks := outages{windows: s.Outages, label: true, sty: th.annotation, pad: th.pad}
	panel := func(i int, bottom bool) *plot.Plot {
		p := th.newPlot()
		p.X.Min, p.X.Max = 0, max(xmax, s.BucketS)
		p.Y.Min, p.Y.Max = 0, top
		p.X.Tick.Marker = timeTicks{labels: bottom}
		p.Y.Tick.Marker = countTicks{}
		if bottom {
			p.X.Label.Text = "time (s)"
		}
		p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
		p.Add(marks)
		p.Add(stackedSteps{tops: loads[i].stacked(), colors: outcomeColors, width: s.BucketS, clip: top})
		if cut {
			p.Add(cutMarks{ys: totals[i], width: s.BucketS, clip: top, sty: th.annotation, pad: th.pad, outages: marks})
		}
		if limited {
			p.Add(hline{y: capacity, style: capacityStyle(th)})
		}
		return p
	}

	// Panels in one column, or, when they would be too flat to read, in
	// as many columns as it takes (at most maxPanelColumns), filled down
	// each column in the strategies' order.
	var (
		plots    [][]*plot.Plot
		index    [][]int // the strategy of each panel, -1 for none
		tiles    draw.Tiles
		canvases [][]draw.Canvas
	)
	minH := 3 * labelStrip(th)
	for cols := 1; cols <= maxPanelColumns; cols++ {
		rows := (len(groups) + cols - 1) / cols
		plots, index = make([][]*plot.Plot, rows), make([][]int, rows)
		for r := range rows {
			plots[r], index[r] = make([]*plot.Plot, cols), make([]int, cols)
			for col := range cols {
				index[r][col] = -1
			}
		}
		for i := range groups {
			r, col := i%rows, i/rows
			plots[r][col] = panel(i, r == rows-1 || i == len(groups)-1)
			index[r][col] = i
		}
		// Empty cells get a panel that is laid out but not drawn: Align
		// places a column with holes off by a little.
		for r := range rows {
			for col := range cols {
				if plots[r][col] == nil {
					plots[r][col] = panel(0, true)
				}
			}
		}
		tiles = draw.Tiles{Rows: rows, Cols: cols, PadX: 3 * th.pad, PadY: headerH + th.pad/2, PadTop: headerH}
		canvases = alignPanels(plots, tiles, body)
		dc := plots[0][0].DataCanvas(canvases[0][0])
		if dc.Max.Y-dc.Min.Y >= minH {
			break
		}
	}

	// Headroom for the labels: raise the top of every panel (they share
	// one scale) so a strip of a label's height stays free above the data,
	// then lay out again with the new ticks.
	if len(s.Outages) > 0 || cut {
		dc := plots[0][0].DataCanvas(canvases[0][0])
		strip := labelStrip(th)
		if h := dc.Max.Y - dc.Min.Y; h > 2*strip {
			for _, row := range plots {
				for _, p := range row {
					p.Y.Max = top * float64(h/(h-strip))
				}
			}
			canvases = alignPanels(plots, tiles, body)
		}
	}
	// As many time ticks as the panels' width takes, and a last layout
	// with them.
	for r, row := range plots {
		for col, p := range row {
			bottom := r == len(plots)-1 || index[r][col] == len(groups)-1 || index[r][col] < 0
			dc := p.DataCanvas(canvases[r][col])
			p.X.Tick.Marker = timeTicksFor(th, dc.Max.X-dc.Min.X, bottom)
		}
	}
	canvases = alignPanels(plots, tiles, body)
	for r, row := range plots {
		for col, p := range row {
			if index[r][col] < 0 {
				continue
			}
			dc := p.DataCanvas(canvases[r][col])
			p.Draw(canvases[r][col])
			drawPanelHeader(c, th, header, vg.Point{X: dc.Min.X, Y: dc.Max.Y + th.pad/3}, dc.Max.X-dc.Min.X, s, index[r][col], colors[index[r][col]])
		}
	}
}

// maxPanelColumns is the most columns of panels in the load chart.
const maxPanelColumns = 4

// drawPanelHeader writes the name of strategy i of s in the colour of
// colour index clr, then as many of its figures as fit in width.
func drawPanelHeader(c draw.Canvas, th theme, sty text.Style, at vg.Point, width vg.Length, s *results.Summary, i, clr int) {
	st := s.Strategies[i]
	drawHeader(c, sty, at, width, st.Name, clr, panelFigures(s, st))
}

// drawHeader writes a strategy's name in bold in its colour clr, then as
// many of parts as fit in width, joined by dots.
func drawHeader(c draw.Canvas, sty text.Style, at vg.Point, width vg.Length, strategy string, clr int, parts []string) {
	name := withFont(withColor(sty, strategyColor(clr)), bold)
	c.FillText(name, at, strategy)
	x := at.X + name.Width(strategy) + sty.Font.Size
	// The figures in one text, so that no font can make them overlap.
	rest := withColor(sty, noteColor)
	txt := ""
	for _, part := range parts {
		try := part
		if txt != "" {
			try = txt + "  ·  " + part
		}
		if x+rest.Width(try) > at.X+width {
			break
		}
		txt = try
	}
	c.FillText(rest, vg.Point{X: x, Y: at.Y}, txt)
}

// panelFigures returns the figures written beside a strategy's name.
func panelFigures(s *results.Summary, st results.StrategySummary) []string {
	peak := fmt.Sprintf("peak after the outage %s at %s s", countLabel(st.PeakLoad), decimal(st.PeakAtS, 4))
	switch {
	case st.PeakLoad == 0 && len(s.Outages) > 0:
		peak = "no attempt after the outage"
	case st.PeakLoad == 0:
		peak = "no attempt"
	case len(s.Outages) == 0:
		peak = fmt.Sprintf("peak %s at %s s", countLabel(st.PeakLoad), decimal(st.PeakAtS, 4))
	}
	if st.PeakLoadRatio != nil && st.PeakLoad > 0 {
		peak += fmt.Sprintf(" (%s× capacity)", decimal(*st.PeakLoadRatio, 3))
	}
	parts := []string{peak}
	switch {
	case st.Recovery == results.NothingLeft:
		parts = append(parts, "nothing left to recover")
	case st.Recovery == results.NoOutage:
		parts = append(parts, "no outage to recover from")
	case st.RecoveryTimeS != nil && st.Recovery == results.Mixed:
		parts = append(parts, fmt.Sprintf("recovered in %d of %d runs (after %s)", st.RecoveredRuns, s.Runs, secondsLabel(*st.RecoveryTimeS, 0)))
	case st.RecoveryTimeS != nil:
		parts = append(parts, "recovery "+secondsLabel(*st.RecoveryTimeS, 0))
	default:
		parts = append(parts, "never recovered")
	}
	parts = append(parts,
		fmt.Sprintf("%s delivered", percent(st.DeliveredRatio)),
		fmt.Sprintf("%s attempts per request", decimal(st.Amplification, 3)))
	return parts
}

// percent formats a ratio as a percentage: 39.6%.
func percent(r float64) string {
	return decimal(100*r, 3) + "%"
}

// drawLoadOverlay draws every strategy's total attempts per bucket on one
// axis.
func drawLoadOverlay(c draw.Canvas, th theme, s *results.Summary, title string, groups [][]*results.Run, n int) {
	var legend []legendItem
	p := th.newPlot()
	top := 0.0
	totals := make([][]float64, len(groups))
	colors := colorIndexes(s)
	for i, g := range groups {
		totals[i] = meanAttempts(g, n)
		top = max(top, maxOf(totals[i]))
		legend = append(legend, legendItem{label: s.Strategies[i].Name, thumb: lineThumb(th.lineStyle(colors[i]))})
	}
	capacity, limited := capacityPerBucket(s)
	if limited {
		top = max(top, capacity)
	}
	if top == 0 {
		top = 1
	}
	legend = append(legend, loadLegendTail(s, th)...)
	f := figure{
		th:    th,
		title: title,
		subtitle: fmt.Sprintf("Attempts that reached the server per %s bucket, all outcomes%s; one line per strategy.",
			bucketLabel(s), runsNote(s)),
		legend: legend,
	}
	body := f.frame(c)

	p.X.Min, p.X.Max = 0, max(float64(n)*s.BucketS, s.BucketS)
	p.Y.Min, p.Y.Max = 0, top
	p.X.Tick.Marker = timeTicks{labels: true}
	p.Y.Tick.Marker = countTicks{}
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = fmt.Sprintf("attempts per %s bucket", bucketLabel(s))
	p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
	p.Add(outages{windows: s.Outages, label: true, sty: th.annotation, pad: th.pad})
	for i := range totals {
		p.Add(stepLine{ys: totals[i], width: s.BucketS, style: th.lineStyle(colors[i])})
	}
	if limited {
		p.Add(hline{y: capacity, style: capacityStyle(th)})
	}
	reserveTop(p, body, top, labelStrip(th), len(s.Outages) > 0)
	dc := p.DataCanvas(body)
	p.X.Tick.Marker = timeTicksFor(th, dc.Max.X-dc.Min.X, true)
	p.Draw(body)
}

// reserveTop raises p.Y.Max from top so that a strip of height strip
// stays free above the data when p is drawn in c (for labels), if need.
func reserveTop(p *plot.Plot, c draw.Canvas, top float64, strip vg.Length, need bool) {
	if !need {
		return
	}
	dc := p.DataCanvas(c)
	if h := dc.Max.Y - dc.Min.Y; h > 2*strip {
		p.Y.Max = p.Y.Min + (top-p.Y.Min)*float64(h/(h-strip))
	}
}

// cutFactor is how much taller than the tallest bucket after the outage a
// bucket during the outage must be for the panels' scale to cut it off.
const cutFactor = 1.25

// loadScale returns the top of the count axis of the load panels, given
// every strategy's total attempts per bucket, the first bucket after the
// last outage, and the capacity per bucket (0 when unlimited): the
// tallest bucket, or, when buckets before after (during the outage,
// where refused attempts cost the server little) are more than cutFactor
// times taller than every later one and the capacity, the tallest later
// bucket or the capacity, with cut set: taller buckets are drawn cut off
// at the top. It is never 0.
func loadScale(totals [][]float64, after int, capacity float64) (top float64, cut bool) {
	all, later := capacity, capacity
	for _, t := range totals {
		all = max(all, maxOf(t))
		if after < len(t) {
			later = max(later, maxOf(t[max(after, 0):]))
		}
	}
	if after > 0 && later > 0 && all > cutFactor*later {
		return later, true
	}
	if all == 0 {
		return 1, false
	}
	return all, false
}

// afterOutage returns the first bucket that starts at or after the end of
// the last outage, 0 with none.
func afterOutage(s *results.Summary) int {
	end := lastOutageEnd(s)
	if end <= 0 {
		return 0
	}
	return int(math.Ceil(end/s.BucketS - 1e-9))
}

// labelStrip is the height kept free above the data for a line of labels
// (outages, cut-off notes).
func labelStrip(th theme) vg.Length {
	return th.annotation.Height("Mg") + th.pad
}

// alignPanels lays plots out in tiles like plot.Align, then evens out what
// Align leaves uneven (it assumes the margins around a data area do not
// depend on the canvas, which gonum's padding for tick labels breaks by a
// point or two): every data area gets the same height and width, the
// tops of a row and the left edges of a column lined up.
func alignPanels(plots [][]*plot.Plot, tiles draw.Tiles, body draw.Canvas) [][]draw.Canvas {
	canvases := plot.Align(plots, tiles, body)
	for range 2 {
		dcs := make([][]draw.Canvas, len(plots))
		var h, w vg.Length = -1, -1
		for r, row := range plots {
			dcs[r] = make([]draw.Canvas, len(row))
			for col, p := range row {
				dc := p.DataCanvas(canvases[r][col])
				dcs[r][col] = dc
				if sz := dc.Size(); h < 0 || sz.Y < h {
					h = sz.Y
				}
				if sz := dc.Size(); w < 0 || sz.X < w {
					w = sz.X
				}
			}
		}
		tops := make([]vg.Length, len(plots))
		lefts := make([]vg.Length, len(plots[0]))
		for r, row := range dcs {
			for col, dc := range row {
				if col == 0 || dc.Max.Y < tops[r] {
					tops[r] = dc.Max.Y
				}
				if r == 0 || dc.Min.X > lefts[col] {
					lefts[col] = dc.Min.X
				}
			}
		}
		for r, row := range dcs {
			for col, dc := range row {
				c := &canvases[r][col]
				c.Max.Y += tops[r] - dc.Max.Y
				c.Min.Y += tops[r] - h - dc.Min.Y
				c.Min.X += lefts[col] - dc.Min.X
				c.Max.X += lefts[col] + w - dc.Max.X
			}
		}
	}
	return canvases
}
