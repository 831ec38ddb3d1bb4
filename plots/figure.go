package plots

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is the frame of a chart: a title and subtitle at the top, then a
// legend in a strip of its own, then the chart's body, then notes at the
// bottom. The legend sits outside the data area, so it never hides data.
type figure struct {
	th       theme
	title    string
	subtitle string
	legend   []legendItem
	notes    []string
}

// legendItem is an entry of a legend: a thumbnail and its label.
type legendItem struct {
	label string
	thumb func(c draw.Canvas) // draws the thumbnail in c
}

// frame paints the background, draws the title, subtitle, legend and
// notes on c, and returns the canvas left for the body.
func (f figure) frame(c draw.Canvas) draw.Canvas {
	th := f.th
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	body := draw.Crop(c, th.pad*1.5, -th.pad*1.5, th.pad, -th.pad)

	// Title and subtitle, centred.
	y := body.Max.Y
	if f.title != "" {
		c.FillText(th.title, vg.Point{X: c.Center().X, Y: y}, f.title)
		y -= th.title.Height(f.title) + th.pad/2
	}
	if f.subtitle != "" {
		for _, line := range wrap(th.subtitle, f.subtitle, body.Size().X) {
			c.FillText(th.subtitle, vg.Point{X: c.Center().X, Y: y}, line)
			y -= th.subtitle.Height(line)
		}
		y -= th.pad / 2
	}
	if len(f.legend) > 0 {
		y -= f.drawLegend(c, body.Min.X, body.Max.X, y) + th.pad
	}
	body.Max.Y = y

	// Notes, wrapped, from the bottom up.
	var lines []string
	for _, n := range f.notes {
		lines = append(lines, wrap(th.note, n, body.Size().X)...)
	}
	yb := body.Min.Y
	for i := len(lines) - 1; i >= 0; i-- {
		c.FillText(th.note, vg.Point{X: body.Min.X, Y: yb}, lines[i])
		yb += th.note.Height(lines[i])
	}
	if len(lines) > 0 {
		yb += th.pad
	}
	body.Min.Y = yb
	return body
}

// drawLegend draws the legend in rows between x0 and x1, each row
// centred, the first row's top at y, on a translucent white box, and
// returns its height.
func (f figure) drawLegend(c draw.Canvas, x0, x1, y vg.Length) vg.Length {
	th := f.th
	sty := withAlign(th.legend, draw.XLeft, draw.YBottom)
	thumbW := 2.2 * sty.Font.Size
	gap := sty.Font.Size * 0.4 // between a thumbnail and its label
	sep := sty.Font.Size * 1.4 // between entries
	inner := th.pad
	rowH := sty.FontExtents().Height * 1.15
	width := func(it legendItem) vg.Length { return thumbW + gap + sty.Width(it.label) }

	// Fill rows greedily.
	var rows [][]legendItem
	var rowW []vg.Length
	avail := x1 - x0 - 2*inner
	for _, it := range f.legend {
		w := width(it)
		if n := len(rows); n > 0 && rowW[n-1]+sep+w <= avail {
			rows[n-1] = append(rows[n-1], it)
			rowW[n-1] += sep + w
			continue
		}
		rows = append(rows, []legendItem{it})
		rowW = append(rowW, w)
	}
	widest := vg.Length(0)
	for _, w := range rowW {
		widest = max(widest, w)
	}
	h := vg.Length(len(rows))*rowH + 2*inner*0.6
	cx := (x0 + x1) / 2
	box := vg.Rectangle{
		Min: vg.Point{X: cx - widest/2 - inner, Y: y - h},
		Max: vg.Point{X: cx + widest/2 + inner, Y: y},
	}
	c.SetColor(legendFill)
	c.Fill(box.Path())
	c.SetLineStyle(draw.LineStyle{Color: legendBorder, Width: 0.6 * vg.Length(th.scale)})
	c.Stroke(box.Path())

	desc := sty.FontExtents().Descent
	for r, row := range rows {
		x := cx - rowW[r]/2
		top := y - inner*0.6 - vg.Length(r)*rowH
		base := top - rowH + (rowH-sty.FontExtents().Height)/2 + desc
		for _, it := range row {
			th := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: top - rowH*0.85},
				Max: vg.Point{X: x + thumbW, Y: top - rowH*0.15},
			}}
			it.thumb(th)
			c.FillText(sty, vg.Point{X: x + thumbW + gap, Y: base - desc}, it.label)
			x += width(it) + sep
		}
	}
	return h
}

// swatch returns a legend thumbnail filled with clr.
func swatch(clr color.Color) func(draw.Canvas) {
	return func(c draw.Canvas) {
		c.SetColor(clr)
		c.Fill(c.Rectangle.Path())
	}
}

// hatchSwatch returns a legend thumbnail hatched in clr, as a missing
// figure is drawn.
func hatchSwatch(clr color.Color, th theme) func(draw.Canvas) {
	return func(c draw.Canvas) {
		hatch(c, c.Rectangle, clr, th)
	}
}

// lineThumb returns a legend thumbnail of a horizontal line.
func lineThumb(sty draw.LineStyle) func(draw.Canvas) {
	return func(c draw.Canvas) {
		y := c.Center().Y
		c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
	}
}

// hatch draws r hatched with diagonal lines in clr, with an outline.
func hatch(c draw.Canvas, r vg.Rectangle, clr color.Color, th theme) {
	if r.Max.X <= r.Min.X || r.Max.Y <= r.Min.Y {
		return
	}
	// Under the lines, a pale tint of clr: a tenth of it over white.
	cr, cg, cb, _ := clr.RGBA()
	tint := func(x uint32) uint8 { return uint8(0xFF - (0xFF-x>>8)/10) }
	c.SetColor(color.NRGBA{R: tint(cr), G: tint(cg), B: tint(cb), A: 0xFF})
	c.Fill(r.Path())
	sty := draw.LineStyle{Color: clr, Width: th.lw}
	step := 5 * vg.Length(th.scale)
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	// Lines x - y = k for k from -h to w, clipped to r.
	for k := -h + step/2; k < w; k += step {
		x0, x1 := max(k, 0), min(w, k+h)
		c.StrokeLine2(sty, r.Min.X+x0, r.Min.Y+x0-k, r.Min.X+x1, r.Min.Y+x1-k)
	}
	c.SetLineStyle(draw.LineStyle{Color: clr, Width: th.lw})
	c.Stroke(r.Path())
}

// textBox draws txt at pt in sty on a translucent white box.
func textBox(c draw.Canvas, sty text.Style, pt vg.Point, txt string, pad vg.Length) vg.Rectangle {
	r := sty.Rectangle(txt)
	r = vg.Rectangle{
		Min: vg.Point{X: pt.X + r.Min.X - pad, Y: pt.Y + r.Min.Y - pad/2},
		Max: vg.Point{X: pt.X + r.Max.X + pad, Y: pt.Y + r.Max.Y + pad/2},
	}
	c.SetColor(legendFill)
	c.Fill(r.Path())
	c.FillText(sty, pt, txt)
	return r
}

// wrap breaks s into lines no wider than w in sty, at spaces.
func wrap(sty text.Style, s string, w vg.Length) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		words := strings.Fields(para)
		line := ""
		for _, word := range words {
			try := word
			if line != "" {
				try = line + " " + word
			}
			if line != "" && sty.Width(try) > w {
				lines = append(lines, line)
				line = word
				continue
			}
			line = try
		}
		lines = append(lines, line)
	}
	return lines
}
