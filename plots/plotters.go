package plots

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// The plotters here draw in data coordinates of a plot whose axes the
// chart sets itself: none of them is a DataRanger.

// stackedSteps draws stacked bands as filled steps, bucket i spanning
// [i*width, (i+1)*width): a stacked bar chart of any number of buckets at
// the cost of one polygon per band. tops[c] is the top of band c (the
// sum of the bands below and c); bands are painted from the top one down,
// each from 0, so that neighbours share edges without seams.
type stackedSteps struct {
	tops   [numOutcomes][]float64
	colors [numOutcomes]color.Color
	width  float64
	clip   float64 // bands are cut off at this height; 0: not at all
}

func (s stackedSteps) Plot(c draw.Canvas, p *plot.Plot) {
	for k := numOutcomes - 1; k >= 0; k-- {
		if !s.hasBand(k) {
			continue
		}
		ys := s.tops[k]
		if s.clip > 0 {
			ys = clipped(ys, s.clip)
		}
		pts := stepOutline(c, p, ys, s.width)
		if len(pts) == 0 {
			continue
		}
		c.FillPolygon(s.colors[k], pts)
	}
}

// hasBand reports whether band k is not empty: its top is above the top
// of the band below somewhere.
func (s stackedSteps) hasBand(k outcome) bool {
	for i, t := range s.tops[k] {
		below := 0.0
		if k > 0 {
			below = s.tops[k-1][i]
		}
		if t > below {
			return true
		}
	}
	return false
}

// stepOutline returns the outline of the area under the step function
// ys (bucket i spanning [i*width, (i+1)*width)) down to y = 0, in canvas
// coordinates, with no redundant vertices.
func stepOutline(c draw.Canvas, p *plot.Plot, ys []float64, width float64) []vg.Point {
	if len(ys) == 0 {
		return nil
	}
	tx, ty := p.Transforms(&c)
	base := ty(0)
	pts := make([]vg.Point, 0, 2*len(ys)+2)
	pts = append(pts, vg.Point{X: tx(0), Y: base})
	prev := 0.0
	for i, y := range ys {
		if i == 0 || y != prev {
			x := tx(float64(i) * width)
			pts = append(pts, vg.Point{X: x, Y: ty(prev)}, vg.Point{X: x, Y: ty(y)})
			prev = y
		}
	}
	end := tx(float64(len(ys)) * width)
	pts = append(pts, vg.Point{X: end, Y: ty(prev)}, vg.Point{X: end, Y: base})
	return pts
}

// stepLine draws ys as a step line, bucket i spanning [i*width,
// (i+1)*width).
type stepLine struct {
	ys    []float64
	width float64
	style draw.LineStyle
}

func (s stepLine) Plot(c draw.Canvas, p *plot.Plot) {
	if len(s.ys) == 0 {
		return
	}
	tx, ty := p.Transforms(&c)
	pts := make([]vg.Point, 0, 2*len(s.ys)+1)
	prev := s.ys[0]
	pts = append(pts, vg.Point{X: tx(0), Y: ty(prev)})
	for i, y := range s.ys[1:] {
		if y != prev {
			x := tx(float64(i+1) * s.width)
			pts = append(pts, vg.Point{X: x, Y: ty(prev)}, vg.Point{X: x, Y: ty(y)})
			prev = y
		}
	}
	pts = append(pts, vg.Point{X: tx(float64(len(s.ys)) * s.width), Y: ty(prev)})
	c.StrokeLines(s.style, pts)
}

// outages shades each outage window over the plot's full height in a
// translucent grey, labelled with its mode at the top when label is set.
// A label that would overlap the previous one is left out.
type outages struct {
	windows []results.Window
	label   bool
	sty     text.Style
	pad     vg.Length
}

func (o outages) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	for _, w := range o.windows {
		x0, x1 := max(tx(w.StartS), c.Min.X), min(tx(w.EndS), c.Max.X)
		if x1 <= x0 {
			continue
		}
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x1, Y: c.Max.Y}}
		c.SetColor(outageFill)
		c.Fill(r.Path())
	}
	if !o.label {
		return
	}
	sty := withAlign(o.sty, draw.XLeft, draw.YTop)
	for _, l := range o.labels(c, p) {
		c.FillText(sty, vg.Point{X: l.x, Y: c.Max.Y - o.pad/3}, l.text)
	}
}

// outageLabelAt is a label of an outage and where it starts.
type outageLabelAt struct {
	x    vg.Length
	text string
}

// labels returns the labels of the outages and where they go: at the
// start of each window, or left of the plot's right edge when there is
// no room; a label that would overlap the previous one is left out.
func (o outages) labels(c draw.Canvas, p *plot.Plot) []outageLabelAt {
	tx, _ := p.Transforms(&c)
	sty := withAlign(o.sty, draw.XLeft, draw.YTop)
	var out []outageLabelAt
	lastEnd := c.Min.X - 1
	for _, w := range o.windows {
		x0, x1 := max(tx(w.StartS), c.Min.X), min(tx(w.EndS), c.Max.X)
		if x1 <= x0 {
			continue
		}
		txt := outageLabel(w)
		x := x0 + o.pad/2
		if tw := sty.Width(txt); x+tw > c.Max.X {
			x = max(c.Max.X-tw, c.Min.X)
		}
		if x <= lastEnd {
			continue
		}
		out = append(out, outageLabelAt{x: x, text: txt})
		lastEnd = x + sty.Width(txt) + o.pad
	}
	return out
}

// labelsEnd returns where the last outage label ends, with a gap: the
// left edge of the plot when there is none.
func (o outages) labelsEnd(c draw.Canvas, p *plot.Plot) vg.Length {
	end := c.Min.X
	if !o.label {
		return end
	}
	sty := withAlign(o.sty, draw.XLeft, draw.YTop)
	for _, l := range o.labels(c, p) {
		end = max(end, l.x+sty.Width(l.text)+o.pad)
	}
	return end
}

// outageLabel labels an outage with its mode, and in a graph the
// service it hits.
func outageLabel(w results.Window) string {
	switch {
	case w.Service != "" && w.Mode != "":
		return w.Service + ": " + w.Mode
	case w.Mode == "":
		return "outage"
	}
	return "outage: " + w.Mode
}

// hline draws a horizontal line across the plot at y.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	y := ty(h.y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// grid draws horizontal grid lines at the labelled ticks of the Y axis,
// and vertical ones at those of the X axis when x is set.
type grid struct {
	x     bool
	style draw.LineStyle
}

func (g grid) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if t.IsMinor() {
			continue
		}
		if y := ty(t.Value); y >= c.Min.Y && y <= c.Max.Y {
			c.StrokeLine2(g.style, c.Min.X, y, c.Max.X, y)
		}
	}
	if !g.x {
		return
	}
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.IsMinor() {
			continue
		}
		if x := tx(t.Value); x >= c.Min.X && x <= c.Max.X {
			c.StrokeLine2(g.style, x, c.Min.Y, x, c.Max.Y)
		}
	}
}

// barsPlot draws a bar per strategy at x = 0, 1, ...: filled in the
// strategy's colour, with 95% whiskers when CI > 0 and its label above;
// a Missing bar is hatched red over the plot's full height, labelled at
// its top.
type barsPlot struct {
	bars  []bar
	width float64 // in x units (a bar's slot is 1)
	th    theme
}

func (b barsPlot) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	th := b.th
	label := withAlign(th.annotation, draw.XCenter, draw.YBottom)
	whisker := draw.LineStyle{Color: color.Black, Width: th.lw}
	for i, d := range b.bars {
		x0, x1 := tx(float64(i)-b.width/2), tx(float64(i)+b.width/2)
		xc := (x0 + x1) / 2
		if d.Missing {
			clr := neverColor
			if d.Vacant {
				clr = vacantColor
			}
			r := vg.Rectangle{Min: vg.Point{X: x0, Y: ty(0)}, Max: vg.Point{X: x1, Y: c.Max.Y}}
			hatch(c, r, clr, th)
			txt := d.Label
			if d.Note != "" {
				txt += "\n" + d.Note
			}
			sty := withColor(withAlign(th.annotation, draw.XCenter, draw.YTop), clr)
			sty = withFont(sty, bold)
			textBox(c, sty, vg.Point{X: xc, Y: c.Max.Y - th.pad}, wrapLabel(sty, txt, (x1-x0)*1.6), th.pad/2)
			continue
		}
		top := ty(d.Value)
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: ty(0)}, Max: vg.Point{X: x1, Y: top}}
		if r.Max.Y > r.Min.Y {
			c.SetColor(strategyColor(d.Index))
			c.Fill(r.Path())
		}
		above := top
		if d.CI > 0 {
			lo, hi := ty(max(d.Value-d.CI, p.Y.Min)), ty(d.Value+d.CI)
			capW := (x1 - x0) / 6
			c.StrokeLine2(whisker, xc, lo, xc, hi)
			c.StrokeLine2(whisker, xc-capW, lo, xc+capW, lo)
			c.StrokeLine2(whisker, xc-capW, hi, xc+capW, hi)
			above = max(above, hi)
		}
		txt := d.Label
		if d.Note != "" {
			txt += "\n" + d.Note
		}
		c.FillText(label, vg.Point{X: xc, Y: above + th.pad/2}, wrapLabel(label, txt, (x1-x0)*1.6))
	}
}

// wrapLabel wraps each line of txt to width w.
func wrapLabel(sty text.Style, txt string, w vg.Length) string {
	return strings.Join(wrap(sty, txt, w), "\n")
}

// polyline draws a line through xys, clipped to the plot.
type polyline struct {
	xys   plotter.XYs
	style draw.LineStyle
}

func (l polyline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	pts := make([]vg.Point, len(l.xys))
	for i, xy := range l.xys {
		pts[i] = vg.Point{X: tx(xy.X), Y: ty(xy.Y)}
	}
	c.StrokeLines(l.style, c.ClipLinesXY(pts)...)
}

// clipped returns ys with every value above top lowered to top.
func clipped(ys []float64, top float64) []float64 {
	out := make([]float64, len(ys))
	for i, y := range ys {
		out[i] = min(y, top)
	}
	return out
}

// cutMarks marks the buckets whose ys rise above clip, cut off at the top
// of the plot: a small triangle at the top of each run of such buckets,
// and a note at the top right giving the tallest.
type cutMarks struct {
	ys      []float64
	width   float64
	clip    float64
	sty     text.Style
	pad     vg.Length
	outages outages // whose labels the note must not overlap
}

func (m cutMarks) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	y := ty(m.clip)
	size := m.sty.Font.Size * 0.45
	tallest := 0.0
	for i := 0; i < len(m.ys); i++ {
		if m.ys[i] <= m.clip {
			continue
		}
		j := i
		for j+1 < len(m.ys) && m.ys[j+1] > m.clip {
			j++
		}
		for _, v := range m.ys[i : j+1] {
			tallest = max(tallest, v)
		}
		x := (tx(float64(i)*m.width) + tx(float64(j+1)*m.width)) / 2
		// Inside the data area, below the labels above it.
		c.FillPolygon(color.Black, []vg.Point{
			{X: x - size/2, Y: y - size}, {X: x + size/2, Y: y - size}, {X: x, Y: y},
		})
		i = j
	}
	if tallest == 0 {
		return
	}
	// The note, as long as there is room for, right of the outage labels.
	sty := withColor(withAlign(m.sty, draw.XRight, draw.YTop), noteColor)
	room := c.Max.X - m.pad/2 - m.outages.labelsEnd(c, p)
	for _, note := range []string{
		"▲ cut off at the top: up to " + countLabel(tallest) + " per bucket during the outage",
		"▲ cut off: up to " + countLabel(tallest),
		"▲ " + countLabel(tallest),
	} {
		if sty.Width(note) <= room {
			c.FillText(sty, vg.Point{X: c.Max.X - m.pad/2, Y: c.Max.Y - m.pad/3}, note)
			return
		}
	}
}
