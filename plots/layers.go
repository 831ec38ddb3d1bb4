package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// LayersChart draws the amplification of a graph by layer: for each
// service, in layer order (the fleet's side first), a group of bars, one
// per strategy in its colour, of the attempts that reached the service
// per fleet request (ServiceFigures.Amplification), each with its value
// above it, and a reference line at 1. Retries at every layer multiply
// down the graph; the bars show by how much. It is an error for s to
// have no services.
func LayersChart(s *results.Summary, o Options) (Chart, error) {
	if err := checkGraph(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": amplification by layer"
	g := newGraphLayout(s)
	names := g.services()
	values := make([][]float64, len(s.Strategies))
	top := 1.0
	for i, st := range s.Strategies {
		values[i] = make([]float64, len(names))
		for j, name := range names {
			if f, ok := serviceFigures(st, name); ok {
				values[i][j] = f.Amplification
				top = max(top, f.Amplification)
			}
		}
	}
	colors := colorIndexes(s)
	return render("layers", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range s.Strategies {
			legend = append(legend, legendItem{label: st.Name, thumb: swatch(strategyColor(colors[i]))})
		}
		legend = append(legend, legendItem{label: "1: one attempt per fleet request", thumb: lineThumb(referenceStyle(th))})
		f := figure{
			th:    th,
			title: title,
			subtitle: "Attempts that reached each service per request of the fleet" + runsNote(s) +
				"; services in layers from the fleet (the longest path in calls), one bar per strategy.",
			legend: legend,
		}
		body := f.frame(c)
		ticks := make([]string, len(names))
		for j, name := range names {
			ticks[j] = fmt.Sprintf("%s\nlayer %d", name, g.layerOf(name))
		}
		drawGroupedBars(c, body, th, ticks, values, colors, top)
	})
}

// drawGroupedBars draws a group of bars per x tick, bar i of a group in
// the colour of colour index colors[i], values[i][j] the height of bar i
// of group j, scaled to top, each with its value above it (upright, or
// turned up the bar where it is wider than the bar).
func drawGroupedBars(c, body draw.Canvas, th theme, ticks []string, values [][]float64, colors []int, top float64) {
	if len(ticks) == 0 || len(values) == 0 {
		return
	}
	p := th.newPlot()
	p.NominalX(ticks...)
	p.X.Min, p.X.Max = -0.5, float64(len(ticks))-0.5
	p.Y.Min, p.Y.Max = 0, top
	p.Y.Padding = 0
	p.Y.Label.Text = "attempts per fleet request"
	p.Y.Tick.Marker = countTicks{}
	p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
	gb := groupedBars{values: values, colors: colors, group: 0.8, th: th}

	// Names wider than their slot slant, with room on the left for the
	// first.
	dc := p.DataCanvas(body)
	slot := 0.95 * (dc.Max.X - dc.Min.X) / vg.Length(len(ticks))
	sty := p.X.Tick.Label
	lines := make([]string, 0, 2*len(ticks))
	for _, t := range ticks {
		lines = append(lines, strings.Split(t, "\n")...)
	}
	if widest(sty, lines) > slot {
		const angle = math.Pi / 8
		p.X.Tick.Label.Rotation = angle
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
		w := widest(sty, strings.Split(ticks[0], "\n")) * vg.Length(math.Cos(angle))
		if over := w - (dc.Min.X - body.Min.X) - slot/2; over > 0 {
			body.Min.X += over
		}
		dc = p.DataCanvas(body)
	}

	// Room above the tallest bar for its value, upright or turned.
	barW := (dc.Max.X - dc.Min.X) / vg.Length(len(ticks)) * vg.Length(gb.group) / vg.Length(len(values))
	label := gb.labelStyle()
	var texts []string
	for _, row := range values {
		for _, v := range row {
			texts = append(texts, valueText(v))
		}
	}
	strip := label.Height("Mg") + th.pad
	if widest(label, texts) > barW {
		gb.turned = true
		strip = widest(label, texts) + th.pad
	}
	p.Add(gb)
	p.Add(hline{y: 0, style: draw.LineStyle{Color: color.Black, Width: 0.8 * vg.Length(th.scale)}})
	p.Add(hline{y: 1, style: referenceStyle(th)})
	// The values over the reference line, on a translucent box.
	gb.values, gb.labels = values, true
	p.Add(gb)
	reserveTop(p, body, top, strip, true)
	p.Draw(body)
}

// valueText writes an amplification above its bar: "4.67×".
func valueText(v float64) string {
	return decimal(v, 3) + "×"
}

// groupedBars draws values[i][j] as bar i of group j, groups at x = 0,
// 1, ..., each group a fraction group of its slot wide.
type groupedBars struct {
	values [][]float64
	colors []int
	group  float64
	turned bool // values written up the bars, not across
	labels bool // draw the values only, not the bars
	th     theme
}

func (b groupedBars) labelStyle() text.Style {
	return withAlign(b.th.annotation, draw.XCenter, draw.YBottom)
}

func (b groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	th := b.th
	n := float64(len(b.values))
	w := b.group / n
	label := b.labelStyle()
	if b.turned {
		label = withAlign(b.th.annotation, draw.XLeft, draw.YCenter)
		label.Rotation = math.Pi / 2
	}
	for i, row := range b.values {
		for j, v := range row {
			x0 := float64(j) - b.group/2 + float64(i)*w
			l, r := tx(x0), tx(x0+w)
			// A hairline between neighbours of a group.
			gap := min(0.6*vg.Length(th.scale), (r-l)/8)
			if !b.labels {
				rect := vg.Rectangle{Min: vg.Point{X: l + gap/2, Y: ty(0)}, Max: vg.Point{X: r - gap/2, Y: ty(v)}}
				if rect.Max.Y > rect.Min.Y {
					c.SetColor(strategyColor(b.colors[i]))
					c.Fill(rect.Path())
				}
				continue
			}
			xc := (l + r) / 2
			at := vg.Point{X: xc, Y: ty(v) + th.pad/3}
			if b.turned {
				// Rotated a quarter turn, XLeft/YCenter anchor the text's
				// start at the point, centred on the bar.
				at.Y = ty(v) + th.pad/2
			}
			if ref := ty(1); !b.turned && math.Abs(float64(at.Y-ref)) < float64(label.Height("Mg")) ||
				b.turned && at.Y < ref && at.Y+label.Width(valueText(v)) > ref {
				// Over the reference line: on a box that hides it.
				labelBox(c, label, at, valueText(v), th.pad/4, ty(v))
			}
			c.FillText(label, at, valueText(v))
		}
	}
}

// labelBox fills the box of txt in sty at pt, with pad around it and
// its bottom no lower than floor (the top of a bar), in the legend's
// translucent white: text over a line stays legible.
func labelBox(c draw.Canvas, sty text.Style, pt vg.Point, txt string, pad, floor vg.Length) {
	r := sty.Rectangle(txt) // turned with the text
	box := vg.Rectangle{
		Min: vg.Point{X: pt.X + r.Min.X - pad, Y: pt.Y + r.Min.Y - pad},
		Max: vg.Point{X: pt.X + r.Max.X + pad, Y: pt.Y + r.Max.Y + pad},
	}
	box.Min.Y = max(box.Min.Y, floor)
	c.SetColor(legendFill)
	c.Fill(box.Path())
}
