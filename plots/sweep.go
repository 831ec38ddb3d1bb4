package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// SweepCharts draws the charts of a sweep: with one axis, one line chart
// of the metric against the axis, a line per strategy (Name "sweep");
// with two axes, a heatmap per strategy (Name "heatmap-" + strategy
// name), x = first axis, y = second, on one colour scale shared by every
// strategy's heatmap; with no axis or more than two, none.
//
// A point where the metric does not exist (recovery_time_s of a server
// that never recovered) is never drawn as a number: the line breaks
// there and a cross marks it above the data, and its heatmap cell is
// hatched red. A point where the metric exists but the server did not
// recover in every run is drawn hollow in the line chart and outlined
// in red with an asterisk in the heatmap.
//
// It returns an error wrapping ErrOptions for options that cannot be
// drawn, and ErrSummary for a nil sweep, one without strategies or a
// metric, or points that do not match the axes and strategies. The same
// inputs and options give the same bytes.
func SweepCharts(s *results.Sweep, o Options) ([]Chart, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := checkSweep(s); err != nil {
		return nil, err
	}
	switch len(s.Axes) {
	case 1:
		c, err := sweepLineChart(s, o)
		if err != nil {
			return nil, err
		}
		return []Chart{c}, nil
	case 2:
		return heatmapCharts(s, o)
	}
	return nil, nil
}

// checkSweep reports a sweep that cannot be drawn: nil, without
// strategies or metric, with an axis without values, or with points that
// are not the grid of its axes in grid order, each with a summary per
// strategy.
func checkSweep(s *results.Sweep) error {
	if s == nil {
		return fmt.Errorf("%w: no sweep", ErrSummary)
	}
	if len(s.Strategies) == 0 {
		return fmt.Errorf("%w: sweep without strategies", ErrSummary)
	}
	if s.Metric == "" {
		return fmt.Errorf("%w: sweep without a metric", ErrSummary)
	}
	n := 1
	for _, a := range s.Axes {
		if len(a.Values) == 0 {
			return fmt.Errorf("%w: sweep axis %s has no values", ErrSummary, a.Name())
		}
		n *= len(a.Values)
	}
	if len(s.Points) != n {
		return fmt.Errorf("%w: sweep has %d points, want %d for its axes", ErrSummary, len(s.Points), n)
	}
	for i := range s.Points {
		pt := &s.Points[i]
		if len(pt.Values) != len(s.Axes) {
			return fmt.Errorf("%w: sweep point %d has %d values, want one per axis (%d)", ErrSummary, i, len(pt.Values), len(s.Axes))
		}
		// Grid order, the first axis changing slowest.
		rest := i
		for k := len(s.Axes) - 1; k >= 0; k-- {
			vals := s.Axes[k].Values
			if want := vals[rest%len(vals)]; pt.Values[k] != want {
				return fmt.Errorf("%w: sweep point %d has %s = %q, want %q (points in grid order)", ErrSummary, i, s.Axes[k].Name(), pt.Values[k], want)
			}
			rest /= len(vals)
		}
		if len(pt.Strategies) != len(s.Strategies) {
			return fmt.Errorf("%w: sweep point %d has %d strategies, want %d", ErrSummary, i, len(pt.Strategies), len(s.Strategies))
		}
		for j := range pt.Strategies {
			if name := pt.Strategies[j].Name; name != "" && name != s.Strategies[j] {
				return fmt.Errorf("%w: sweep point %d has strategy %q at %d, want %q", ErrSummary, i, name, j, s.Strategies[j])
			}
		}
	}
	return nil
}

// cell is a strategy's metric at a point of a sweep (results.SweepCell).
type cell struct {
	v                    float64
	has, partial, vacant bool
	recovered            int
}

// sweepCells returns strategy j's metric at every point, in point order
// (results.SweepCells).
func sweepCells(s *results.Sweep, j int) []cell {
	in := results.SweepCells(s, j)
	cells := make([]cell, len(in))
	for i, c := range in {
		cells[i] = cell{v: c.V, has: c.Has, partial: c.Partial, vacant: c.Vacant, recovered: c.Recovered}
	}
	return cells
}

// neverMetric is the metric that a server that never recovered has not.
const neverMetric = results.NeverMetric

// missingLabel is the legend entry of points without the metric.
func missingLabel(metric string) string { return results.SweepMissingLabel(metric) }

// missingText is the text of a heatmap cell without the metric.
func missingText(metric string) string { return results.SweepMissingText(metric) }

// vacantLabel is the legend entry of points that left nothing to
// recover.
const vacantLabel = results.SweepVacantLabel

// partialLabel is the legend entry of points whose server did not
// recover in every run.
func partialLabel(metric string) string { return results.SweepPartialLabel(metric) }

// sweepRunsNote says what the figures are with several runs.
func sweepRunsNote(s *results.Sweep) string { return results.SweepRunsNote(s) }

// valueLabel formats a value of metric (results.SweepValueLabel).
func valueLabel(metric string, v float64) string { return results.SweepValueLabel(metric, v) }

// isSeconds reports whether metric is in seconds (results.IsSeconds).
func isSeconds(metric string) bool { return results.IsSeconds(metric) }

// axisKind is how a sweep axis's values are placed on a line chart.
type axisKind int

const (
	// axisSeconds: every value is a Go duration, placed at its seconds.
	axisSeconds axisKind = iota
	// axisNumber: every value is a number, placed at it.
	axisNumber
	// axisIndex: values of neither kind, placed at 0..n-1 and labelled
	// with their text.
	axisIndex
)

// axisX returns where the values of a go on the x axis of a line chart:
// seconds when every value parses as a Go duration (time.ParseDuration:
// "500ms", "2m"), the numbers when every value parses as a float, or else
// the index of each value.
func axisX(a results.Axis) ([]float64, axisKind) {
	xs := make([]float64, len(a.Values))
	if allParse(a.Values, xs, func(v string) (float64, error) {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		return d.Seconds(), err
	}) {
		return xs, axisSeconds
	}
	if allParse(a.Values, xs, func(v string) (float64, error) {
		return strconv.ParseFloat(strings.TrimSpace(v), 64)
	}) {
		return xs, axisNumber
	}
	for i := range xs {
		xs[i] = float64(i)
	}
	return xs, axisIndex
}

// allParse parses every value into xs, and reports whether each parsed
// to a finite number.
func allParse(vals []string, xs []float64, parse func(string) (float64, error)) bool {
	for i, v := range vals {
		x, err := parse(v)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		xs[i] = x
	}
	return true
}

// segments returns the runs of the line through cells in the order of
// order (indexes into cells): each run is consecutive cells with a value,
// so the line breaks at every cell without one. A run may be one cell
// long (a marker without a line).
func segments(cells []cell, order []int) [][]int {
	var runs [][]int
	var cur []int
	for _, i := range order {
		if !cells[i].has {
			if len(cur) > 0 {
				runs = append(runs, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, i)
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// xOrder returns the indexes of xs sorted by x, equal xs in their order.
func xOrder(xs []float64) []int {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	return order
}

// valueRange returns the least and greatest value of cells that have
// one, false when none has.
func valueRange(cells ...[]cell) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, cs := range cells {
		for _, c := range cs {
			if c.has {
				lo, hi, ok = min(lo, c.v), max(hi, c.v), true
			}
		}
	}
	if !ok {
		return 0, 0, false
	}
	return lo, hi, true
}

// sweepColors returns the colour index of each of the sweep's
// strategies, in the order of s.Strategies: their places in the scenario
// file (StrategyIndexes), so that a sweep of some strategies (--strategy)
// colours them as every chart does; their positions in s.Strategies for
// a sweep.json without them.
func sweepColors(s *results.Sweep) []int {
	if idx := s.StrategyIndexes; len(idx) == len(s.Strategies) && distinct(idx) {
		return idx
	}
	idx := make([]int, len(s.Strategies))
	for j := range idx {
		idx[j] = j
	}
	return idx
}

// distinct reports whether the indexes are distinct and not negative.
func distinct(idx []int) bool {
	seen := map[int]bool{}
	for _, i := range idx {
		if i < 0 || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

// sweepLineChart draws the metric of a one-axis sweep against its axis,
// a line per strategy.
func sweepLineChart(s *results.Sweep, o Options) (Chart, error) {
	ax := s.Axes[0]
	title := fmt.Sprintf("%s: %s by %s%s", s.Scenario, s.Metric, ax.Name(), sweepRunsNote(s))
	xs, kind := axisX(ax)
	logX := ax.Log && kind != axisIndex && !slices.ContainsFunc(xs, func(x float64) bool { return x <= 0 })
	order := xOrder(xs)
	series := make([][]cell, len(s.Strategies))
	missing, partial, vacant := false, false, false
	for j := range s.Strategies {
		series[j] = sweepCells(s, j)
		for _, c := range series[j] {
			missing = missing || (!c.has && !c.vacant)
			partial = partial || c.partial
			vacant = vacant || c.vacant
		}
	}
	ylo, yhi, ok := valueRange(series...)
	if !ok {
		ylo, yhi = 0, 1
	}
	ylo = min(ylo, 0)
	if yhi <= ylo {
		yhi = ylo + 1
	}
	xlabel := ax.Name()
	switch {
	case kind == axisSeconds && logX:
		xlabel += " (s, log scale)"
	case kind == axisSeconds:
		xlabel += " (s)"
	case logX:
		xlabel += " (log scale)"
	}

	colors := sweepColors(s)
	return render("sweep", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for j, name := range s.Strategies {
			legend = append(legend, legendItem{label: name, thumb: markerThumb(th.lineStyle(colors[j]), markerStyle{shape: colors[j], clr: strategyColor(colors[j])}, th)})
		}
		if missing {
			legend = append(legend, legendItem{label: missingLabel(s.Metric), thumb: crossThumb(th)})
		}
		if vacant {
			legend = append(legend, legendItem{label: vacantLabel, thumb: ringThumb(th)})
		}
		if partial {
			legend = append(legend, legendItem{label: partialLabel(s.Metric), thumb: markerThumb(draw.LineStyle{}, markerStyle{clr: noteColor, hollow: true}, th)})
		}
		subtitle := fmt.Sprintf("%s at each value of %s, one line per strategy%s", s.Metric, ax.Name(), sweepRunsNote(s))
		if missing || vacant {
			subtitle += "; a cross above the data marks a point with no " + s.Metric + ", where the line breaks"
		}
		f := figure{th: th, title: title, subtitle: subtitle + ".", legend: legend}
		body := f.frame(c)

		p := th.newPlot()
		p.X.Min, p.X.Max = xRange(xs, kind, logX)
		if logX {
			p.X.Scale = plot.LogScale{}
		}
		p.Y.Min, p.Y.Max = ylo, yhi
		p.Y.Tick.Marker = cappedTicks{ticker: countTicks{}, max: yhi}
		p.Y.Padding = 0
		p.X.Label.Text = xlabel
		p.Y.Label.Text = s.Metric
		labels := xTickLabels(ax, xs, kind)
		p.X.Tick.Marker = plot.ConstantTicks(valueTicks(xs, labels, nil))
		p.Add(grid{x: true, style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
		rows := 0
		for _, cs := range series {
			if slices.ContainsFunc(cs, func(c cell) bool { return !c.has }) {
				rows++
			}
		}
		// Room above the data for the markers at the top, and for the
		// band of crosses, a row per strategy with some, at most a
		// quarter of the plot's height.
		mark := sweepMarks{series: series, colors: colors, xs: xs, order: order, rowH: 3 * markerRadius(th), th: th}
		if rows > 0 {
			dc := p.DataCanvas(body)
			mark.band = min(vg.Length(rows)*mark.rowH+th.pad/2, (dc.Max.Y-dc.Min.Y)/4)
			mark.rowH = (mark.band - th.pad/2) / vg.Length(rows)
		}
		reserveTop(p, body, yhi, mark.band+2*markerRadius(th), true)
		p.Add(mark)

		// Label the swept values that fit without overlapping.
		dc := p.DataCanvas(body)
		at := func(x float64) vg.Length { return dc.Min.X + vg.Length(p.X.Norm(x))*(dc.Max.X-dc.Min.X) }
		p.X.Tick.Marker = plot.ConstantTicks(valueTicks(xs, labels, func(i int) (vg.Length, vg.Length) {
			w := p.X.Tick.Label.Width(labels[i])
			return at(xs[i]) - w/2, at(xs[i]) + w/2
		}))
		p.Draw(body)
	})
}

// xRange returns the x range of a line chart of values xs: their range
// with a margin, so that markers at the ends are whole.
func xRange(xs []float64, kind axisKind, logX bool) (float64, float64) {
	lo, hi := slices.Min(xs), slices.Max(xs)
	switch {
	case kind == axisIndex:
		return lo - 0.4, hi + 0.4
	case logX:
		if hi == lo {
			return lo / 2, hi * 2
		}
		f := math.Pow(hi/lo, 0.04)
		return lo / f, hi * f
	case hi == lo:
		d := max(math.Abs(lo)/2, 1)
		return lo - d, hi + d
	}
	d := (hi - lo) * 0.04
	return lo - d, hi + d
}

// xTickLabels returns the tick label of each value of a: the value
// itself for an index axis, else its number: seconds for durations.
func xTickLabels(a results.Axis, xs []float64, kind axisKind) []string {
	labels := make([]string, len(xs))
	for i, x := range xs {
		if kind == axisIndex {
			labels[i] = a.Values[i]
		} else {
			labels[i] = decimal(x, 4)
		}
	}
	return labels
}

// valueTicks returns a tick at each of xs, labelled with labels: from the
// least x up, a label is left out when extent (giving the left and right
// edges of label i) says it would overlap the last one kept, or the same
// x is labelled already. A nil extent keeps every label.
func valueTicks(xs []float64, labels []string, extent func(i int) (vg.Length, vg.Length)) []plot.Tick {
	ticks := make([]plot.Tick, 0, len(xs))
	var last vg.Length
	first := true
	prev := math.NaN()
	for _, i := range xOrder(xs) {
		t := plot.Tick{Value: xs[i]}
		if xs[i] != prev {
			t.Label = labels[i]
			if extent != nil {
				l, r := extent(i)
				if !first && l < last {
					t.Label = ""
				} else {
					last, first = r+vg.Length(4), false
				}
			}
		}
		prev = xs[i]
		ticks = append(ticks, t)
	}
	return ticks
}

// bandFill is the tint of a line chart's band of points without a value.
var bandFill = color.NRGBA{R: 0xFF, G: 0xEC, B: 0xEC, A: 0xFF}

// cappedTicks are ticker's ticks up to max only: none in the band above
// the data.
type cappedTicks struct {
	ticker plot.Ticker
	max    float64
}

func (t cappedTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.ticker.Ticks(lo, min(hi, t.max))
	return slices.DeleteFunc(ticks, func(tk plot.Tick) bool { return tk.Value > t.max })
}

// markerStyle is how a point of a line chart is marked: shape is the
// strategy's colour index (a circle, a square or a triangle, in turn), hollow a
// point whose server did not recover in every run.
type markerStyle struct {
	shape  int
	clr    color.Color
	hollow bool
}

// drawMarker draws a marker of radius r centred on pt.
func drawMarker(c draw.Canvas, m markerStyle, pt vg.Point, r vg.Length, th theme) {
	var path vg.Path
	switch m.shape % 3 {
	case 0:
		path.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		path.Arc(pt, r, 0, 2*math.Pi)
	case 1:
		h := r * 0.85
		path.Move(vg.Point{X: pt.X - h, Y: pt.Y - h})
		path.Line(vg.Point{X: pt.X + h, Y: pt.Y - h})
		path.Line(vg.Point{X: pt.X + h, Y: pt.Y + h})
		path.Line(vg.Point{X: pt.X - h, Y: pt.Y + h})
	case 2:
		h := r * 1.15
		path.Move(vg.Point{X: pt.X, Y: pt.Y + h})
		path.Line(vg.Point{X: pt.X - h*0.866, Y: pt.Y - h/2})
		path.Line(vg.Point{X: pt.X + h*0.866, Y: pt.Y - h/2})
	}
	path.Close()
	if m.hollow {
		c.SetColor(color.White)
		c.Fill(path)
		c.SetLineStyle(draw.LineStyle{Color: m.clr, Width: 1.2 * th.lw})
		c.Stroke(path)
		return
	}
	c.SetColor(m.clr)
	c.Fill(path)
}

// drawCross draws a cross of half-width r centred on pt.
func drawCross(c draw.Canvas, clr color.Color, pt vg.Point, r vg.Length, th theme) {
	sty := draw.LineStyle{Color: clr, Width: 1.6 * th.lw}
	c.StrokeLine2(sty, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(sty, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// drawRing draws a ring of radius r at pt in clr: a point that left
// nothing to recover.
func drawRing(c draw.Canvas, clr color.Color, pt vg.Point, r vg.Length, th theme) {
	var ring vg.Path
	ring.Move(vg.Point{X: pt.X + r, Y: pt.Y})
	ring.Arc(pt, r, 0, 2*math.Pi)
	ring.Close()
	c.SetLineStyle(draw.LineStyle{Color: clr, Width: 1.6 * th.lw, Dashes: []vg.Length{1.5 * th.lw, 1.5 * th.lw}})
	c.Stroke(ring)
}

// ringThumb is the legend thumbnail of a point that left nothing.
func ringThumb(th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		drawRing(c, noteColor, c.Center(), markerRadius(th), th)
	}
}

// markerRadius is the radius of a line chart's markers.
func markerRadius(th theme) vg.Length { return 4 * vg.Length(th.scale) }

// markerThumb returns a legend thumbnail of a line (none when its width
// is 0) with a marker in the middle.
func markerThumb(line draw.LineStyle, m markerStyle, th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		mid := c.Center()
		if line.Width > 0 {
			c.StrokeLine2(line, c.Min.X, mid.Y, c.Max.X, mid.Y)
		}
		drawMarker(c, m, mid, markerRadius(th), th)
	}
}

// crossThumb returns the legend thumbnail of a point without the metric.
func crossThumb(th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		drawCross(c, noteColor, c.Center(), markerRadius(th), th)
	}
}

// sweepMarks draws a line chart's series: each strategy's line, in the
// colour of its colour index, through its points in x order, broken at points without a value, a marker at
// every point with one (hollow where the server did not recover in every
// run), and in a tinted band at the top of the plot, band high, a row
// per strategy with points without a value, a cross at each.
type sweepMarks struct {
	series [][]cell
	colors []int // the colour index of each strategy
	xs     []float64
	order  []int
	band   vg.Length // the band's height, 0 without one
	rowH   vg.Length // the height of a row of the band
	th     theme
}

func (m sweepMarks) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	th := m.th
	r := markerRadius(th)
	if m.band > 0 {
		y := c.Max.Y - m.band
		band := vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: y}, Max: c.Max}
		c.SetColor(bandFill)
		c.Fill(band.Path())
		c.StrokeLine2(draw.LineStyle{Color: neverColor, Width: 0.6 * vg.Length(th.scale), Dashes: []vg.Length{3 * th.lw, 2 * th.lw}}, c.Min.X, y, c.Max.X, y)
	}
	row := 0
	for j, cells := range m.series {
		for _, seg := range segments(cells, m.order) {
			xys := make(plotter.XYs, len(seg))
			for k, i := range seg {
				xys[k] = plotter.XY{X: m.xs[i], Y: cells[i].v}
			}
			polyline{xys: xys, style: th.lineStyle(m.colors[j])}.Plot(c, p)
		}
		for _, i := range m.order {
			if cl := cells[i]; cl.has {
				drawMarker(c, markerStyle{shape: m.colors[j], clr: strategyColor(m.colors[j]), hollow: cl.partial}, vg.Point{X: tx(m.xs[i]), Y: ty(cl.v)}, r, th)
			}
		}
		if !slices.ContainsFunc(cells, func(c cell) bool { return !c.has }) {
			continue
		}
		y := c.Max.Y - th.pad/4 - (vg.Length(row)+0.5)*m.rowH
		for _, i := range m.order {
			switch {
			case cells[i].vacant:
				drawRing(c, strategyColor(m.colors[j]), vg.Point{X: tx(m.xs[i]), Y: y}, r, th)
			case !cells[i].has:
				drawCross(c, strategyColor(m.colors[j]), vg.Point{X: tx(m.xs[i]), Y: y}, r, th)
			}
		}
		row++
	}
}

// heatColors are the control colours of the heatmaps' scale, from the
// greatest value to the least: ColorBrewer's YlGnBu, dark blue to pale
// yellow, far from the red of cells without a value. Their luminance
// rises, as moreland.NewLuminance needs.
var heatColors = []color.Color{
	rgb(0x081D58), rgb(0x253494), rgb(0x225EA8), rgb(0x1D91C0),
	rgb(0x41B6C4), rgb(0x7FCDBB), rgb(0xC7E9B4), rgb(0xEDF8B1), rgb(0xFFFFD9),
}

// colorScale maps values from lo to hi to colours, pale to dark.
type colorScale struct {
	lo, hi float64
	cmap   palette.ColorMap
}

// newColorScale returns the scale of values from lo to hi; when they are
// equal, it is widened around them.
func newColorScale(lo, hi float64) (colorScale, error) {
	if hi <= lo {
		d := max(math.Abs(lo)*0.1, 0.5)
		if lo >= 0 && lo-d < 0 {
			lo, hi = 0, hi+d
		} else {
			lo, hi = lo-d, hi+d
		}
	}
	cmap, err := moreland.NewLuminance(heatColors)
	if err != nil {
		return colorScale{}, fmt.Errorf("plots: heatmap colours: %w", err)
	}
	cmap.SetMin(0)
	cmap.SetMax(1)
	return colorScale{lo: lo, hi: hi, cmap: cmap}, nil
}

// at returns the colour of v, clamped to the scale.
func (s colorScale) at(v float64) color.Color {
	t := (v - s.lo) / (s.hi - s.lo)
	t = min(max(t, 0), 1)
	clr, err := s.cmap.At(1 - t)
	if err != nil {
		return color.Black
	}
	return clr
}

// isDark reports whether clr is dark enough for white text on it.
func isDark(clr color.Color) bool {
	r, g, b, _ := clr.RGBA()
	lum := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xFFFF
	return lum < 0.4
}

// heatmapCharts draws a heatmap per strategy of a two-axis sweep.
func heatmapCharts(s *results.Sweep, o Options) ([]Chart, error) {
	cells := make([][]cell, len(s.Strategies))
	for j := range s.Strategies {
		cells[j] = sweepCells(s, j)
	}
	lo, hi, ok := valueRange(cells...)
	if !ok {
		lo, hi = 0, 1
	}
	scale, err := newColorScale(lo, hi)
	if err != nil {
		return nil, err
	}
	charts := make([]Chart, 0, len(s.Strategies))
	for j, name := range s.Strategies {
		c, err := heatmapChart(s, name, cells[j], scale, ok, o)
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	return charts, nil
}

// heatmapChart draws one strategy's heatmap: a cell per point, x the
// first axis, y the second, with a colour bar of scale when withBar is
// set (some strategy has a value).
func heatmapChart(s *results.Sweep, name string, cells []cell, scale colorScale, withBar bool, o Options) (Chart, error) {
	ax, ay := s.Axes[0], s.Axes[1]
	title := fmt.Sprintf("%s, %s: %s%s", s.Scenario, name, s.Metric, sweepRunsNote(s))
	missing := slices.ContainsFunc(cells, func(c cell) bool { return !c.has && !c.vacant })
	vacant := slices.ContainsFunc(cells, func(c cell) bool { return c.vacant })
	partial := slices.ContainsFunc(cells, func(c cell) bool { return c.partial })
	return render("heatmap-"+name, title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		if missing {
			legend = append(legend, legendItem{label: missingLabel(s.Metric), thumb: hatchSwatch(neverColor, th)})
		}
		if vacant {
			legend = append(legend, legendItem{label: vacantLabel, thumb: hatchSwatch(vacantColor, th)})
		}
		if partial {
			legend = append(legend, legendItem{label: "* " + partialLabel(s.Metric), thumb: partialThumb(scale, th)})
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: fmt.Sprintf("%s of %s at each %s (x) and %s (y); one colour scale for every strategy's heatmap.", s.Metric, name, ax.Name(), ay.Name()),
			legend:   legend,
		}
		body := f.frame(c)
		bar := newColorBar(scale, s.Metric, th)
		if withBar {
			body.Max.X -= bar.width()
		}
		p := th.newPlot()
		nx, ny := len(ax.Values), len(ay.Values)
		p.X.Min, p.X.Max = -0.5, float64(nx)-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(ny)-0.5
		p.X.Tick.Marker = plot.ConstantTicks(indexTicks(ax.Values))
		p.Y.Tick.Marker = plot.ConstantTicks(indexTicks(ay.Values))
		p.X.Label.Text = ax.Name()
		p.Y.Label.Text = ay.Name()
		p.Add(heatCells{cells: cells, ny: ny, scale: scale, metric: s.Metric, runs: s.Runs, th: th})
		// Slant the x labels that do not fit their cells.
		dc := p.DataCanvas(body)
		if widest(p.X.Tick.Label, ax.Values) > 0.95*(dc.Max.X-dc.Min.X)/vg.Length(nx) {
			const angle = math.Pi / 6
			p.X.Tick.Label.Rotation = angle
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YTop
			dc = p.DataCanvas(body)
		}
		p.Draw(body)
		if withBar {
			bar.draw(c, body.Max.X, dc.Min.Y, dc.Max.Y)
		}
	})
}

// indexTicks returns a tick at 0..n-1 labelled with each value.
func indexTicks(values []string) []plot.Tick {
	ticks := make([]plot.Tick, len(values))
	for i, v := range values {
		ticks[i] = plot.Tick{Value: float64(i), Label: v}
	}
	return ticks
}

// cellMark is how a heatmap cell is drawn.
type cellMark int

const (
	cellValue   cellMark = iota // filled in the colour of its value
	cellPartial                 // as cellValue, outlined in red, with an asterisk
	cellMissing                 // hatched red: no value
	cellVacant                  // hatched grey: nothing left to recover
)

// markOf returns how a cell is drawn.
func markOf(c cell) cellMark {
	switch {
	case c.vacant:
		return cellVacant
	case !c.has:
		return cellMissing
	case c.partial:
		return cellPartial
	}
	return cellValue
}

// heatCells draws a heatmap's cells: cell i (in point order) at x = i /
// ny, y = i % ny, each a unit square with a small gap around it, with its
// value printed when it fits.
type heatCells struct {
	cells  []cell
	ny     int
	scale  colorScale
	metric string
	runs   int
	th     theme
}

func (h heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	th := h.th
	gap := th.lw
	for i, cl := range h.cells {
		x, y := float64(i/h.ny), float64(i%h.ny)
		r := vg.Rectangle{
			Min: vg.Point{X: tx(x-0.5) + gap, Y: ty(y-0.5) + gap},
			Max: vg.Point{X: tx(x+0.5) - gap, Y: ty(y+0.5) - gap},
		}
		if r.Max.X <= r.Min.X || r.Max.Y <= r.Min.Y {
			continue
		}
		var lines []string
		sty := withAlign(th.annotation, draw.XCenter, draw.YCenter)
		switch markOf(cl) {
		case cellMissing:
			hatch(c, r, neverColor, th)
			sty = withColor(withFont(sty, bold), neverColor)
			lines = []string{missingText(h.metric)}
		case cellVacant:
			hatch(c, r, vacantColor, th)
			sty = withColor(withFont(sty, bold), vacantColor)
			lines = []string{results.SweepVacantText}
		case cellPartial:
			bg := h.scale.at(cl.v)
			c.SetColor(bg)
			c.Fill(r.Path())
			partialOutline(c, r, th)
			if isDark(bg) {
				sty = withColor(sty, color.White)
			}
			lines = []string{valueLabel(h.metric, cl.v) + "*", fmt.Sprintf("%d of %d recovered", cl.recovered, h.runs)}
		default:
			bg := h.scale.at(cl.v)
			c.SetColor(bg)
			c.Fill(r.Path())
			if isDark(bg) {
				sty = withColor(sty, color.White)
			}
			lines = []string{valueLabel(h.metric, cl.v)}
		}
		// As many lines as fit, at least the first, or none.
		mid := vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}
		for len(lines) > 0 {
			txt := strings.Join(lines, "\n")
			if sty.Width(txt) <= r.Max.X-r.Min.X-th.pad && sty.Height(txt) <= r.Max.Y-r.Min.Y-th.pad/2 {
				if m := markOf(cl); m == cellMissing || m == cellVacant {
					textBox(c, sty, mid, txt, th.pad/3)
				} else {
					c.FillText(sty, mid, txt)
				}
				break
			}
			lines = lines[:len(lines)-1]
		}
	}
}

// partialOutline outlines r inside in red: a cell whose server did not
// recover in every run.
func partialOutline(c draw.Canvas, r vg.Rectangle, th theme) {
	w := 2 * th.lw
	in := vg.Rectangle{
		Min: vg.Point{X: r.Min.X + w/2, Y: r.Min.Y + w/2},
		Max: vg.Point{X: r.Max.X - w/2, Y: r.Max.Y - w/2},
	}
	c.SetLineStyle(draw.LineStyle{Color: neverColor, Width: w, Dashes: []vg.Length{3 * w, 1.5 * w}})
	c.Stroke(in.Path())
}

// partialThumb returns the legend thumbnail of a cell whose server did
// not recover in every run.
func partialThumb(scale colorScale, th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		c.SetColor(scale.at((scale.lo + scale.hi) / 2))
		c.Fill(c.Rectangle.Path())
		partialOutline(c, c.Rectangle, th)
	}
}

// colorBar is the colour bar of a heatmap's scale, at the right of the
// heatmap: a gradient with the scale's numbers and the metric's name.
type colorBar struct {
	scale  colorScale
	metric string
	ticks  []plot.Tick
	labels []string
	th     theme
}

func newColorBar(scale colorScale, metric string, th theme) colorBar {
	b := colorBar{scale: scale, metric: metric, ticks: colorBarTicks(scale), th: th}
	for _, t := range b.ticks {
		b.labels = append(b.labels, t.Label)
	}
	return b
}

func (b colorBar) barWidth() vg.Length { return 3 * b.th.pad }
func (b colorBar) tickLen() vg.Length  { return 4 * vg.Length(b.th.scale) }
func (b colorBar) tickStyle() text.Style {
	return withAlign(b.th.tick, draw.XLeft, draw.YCenter)
}

// width returns the width the bar takes, with the gap on its left.
func (b colorBar) width() vg.Length {
	th := b.th
	return 3*th.pad + b.barWidth() + b.tickLen() + th.pad/2 + widest(b.tickStyle(), b.labels) + th.pad + th.label.Height(b.metric)
}

// draw draws the bar from y0 to y1, its gap starting at x.
func (b colorBar) draw(c draw.Canvas, x, y0, y1 vg.Length) {
	th, scale := b.th, b.scale
	x0 := x + 3*th.pad
	barW, tickLen := b.barWidth(), b.tickLen()
	if y1-y0 < 2*th.pad {
		return
	}
	const strips = 128
	h := (y1 - y0) / strips
	for k := range strips {
		// Each strip a little taller than its share, so no seams show.
		v := scale.lo + (float64(k)+0.5)/strips*(scale.hi-scale.lo)
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: y0 + vg.Length(k)*h}, Max: vg.Point{X: x0 + barW, Y: min(y0+vg.Length(k+1)*h+h/2, y1)}}
		c.SetColor(scale.at(v))
		c.Fill(r.Path())
	}
	line := draw.LineStyle{Color: color.Black, Width: 0.8 * vg.Length(th.scale)}
	frame := vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x0 + barW, Y: y1}}
	c.SetLineStyle(line)
	c.Stroke(frame.Path())
	for _, t := range b.ticks {
		y := y0 + vg.Length((t.Value-scale.lo)/(scale.hi-scale.lo))*(y1-y0)
		c.StrokeLine2(line, x0+barW, y, x0+barW+tickLen, y)
		c.FillText(b.tickStyle(), vg.Point{X: x0 + barW + tickLen + th.pad/2, Y: y}, t.Label)
	}
	// The metric's name reads upwards, right of the numbers.
	label := withAlign(th.label, draw.XCenter, draw.YTop)
	label.Rotation = math.Pi / 2
	lx := x0 + barW + tickLen + th.pad/2 + widest(b.tickStyle(), b.labels) + th.pad
	c.FillText(label, vg.Point{X: lx, Y: (y0 + y1) / 2}, b.metric)
}

// colorBarTicks returns the labelled ticks of a colour bar: gonum's
// default ticks within the scale, labelled as counts; its two ends when
// fewer than two fall within it.
func colorBarTicks(scale colorScale) []plot.Tick {
	var ticks []plot.Tick
	for _, t := range (countTicks{}).Ticks(scale.lo, scale.hi) {
		if t.Label != "" {
			ticks = append(ticks, t)
		}
	}
	if len(ticks) < 2 {
		ticks = []plot.Tick{{Value: scale.lo, Label: countLabel(scale.lo)}, {Value: scale.hi, Label: countLabel(scale.hi)}}
	}
	return ticks
}
