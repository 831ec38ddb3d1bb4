package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// strategyPalette is the colour of a strategy by its place in the
// scenario file (see colorIndexes): the Okabe-Ito colour-blind-safe
// palette, ordered so that neighbours contrast, with its yellow (too
// faint for lines on white) replaced by a dark grey. Past its end colours
// repeat, with dashes.
var strategyPalette = []color.Color{
	rgb(0x0072B2), // blue
	rgb(0xD55E00), // vermillion
	rgb(0x009E73), // bluish green
	rgb(0xCC79A7), // reddish purple
	rgb(0xE69F00), // orange
	rgb(0x56B4E9), // sky blue
	rgb(0x000000), // black
	rgb(0x7F7F7F), // grey
}

// strategyColor returns the colour of the strategy of colour index i
// (see colorIndexes): the same in every chart.
func strategyColor(i int) color.Color {
	return strategyPalette[max(i, 0)%len(strategyPalette)]
}

// colorIndexes returns the colour index of each strategy of s, in the
// order of s.Strategies: its Index, its place in the scenario file, so
// that a strategy keeps its colour whichever others ran. When the
// indexes are not distinct (a summary written before they existed has 0
// for every strategy) or one is negative (not in the file), the
// positions in s.Strategies instead.
func colorIndexes(s *results.Summary) []int {
	idx := make([]int, len(s.Strategies))
	seen := make(map[int]bool, len(s.Strategies))
	distinct := true
	for i, st := range s.Strategies {
		idx[i] = st.Index
		distinct = distinct && st.Index >= 0 && !seen[st.Index]
		seen[st.Index] = true
	}
	if !distinct {
		for i := range idx {
			idx[i] = i
		}
	}
	return idx
}

// strategyDashes returns the dash pattern of the lines of strategy i:
// solid for the first len(strategyPalette) strategies, then dashed
// patterns, so that strategies that share a colour still differ.
func strategyDashes(i int, th theme) []vg.Length {
	switch max(i, 0) / len(strategyPalette) % 3 {
	case 1:
		return []vg.Length{6 * th.lw, 3 * th.lw}
	case 2:
		return []vg.Length{1.5 * th.lw, 2.5 * th.lw}
	}
	return nil
}

// outcome is a class of attempts in the load chart.
type outcome int

const (
	succeeded outcome = iota
	failed
	rejected
	throttled
	timedOut
	unresolved
	numOutcomes
)

// outcomeNames and outcomeColors label and colour the outcome classes, in
// stacking order (succeeded at the bottom). The colours are Paul Tol's
// vibrant scheme, apart from the strategies' palette.
var (
	outcomeNames = [numOutcomes]string{
		"succeeded",
		"failed (refused, 5xx, reset)",
		"rejected (503, queue full)",
		"throttled (429)",
		"timed out",
		"unresolved at the end",
	}
	outcomeColors = [numOutcomes]color.Color{
		rgb(0x117733), // green
		rgb(0xCC3311), // red
		rgb(0xEE7733), // orange
		rgb(0xAA3377), // purple
		rgb(0x33BBEE), // cyan
		rgb(0xBBBBBB), // grey
	}
)

// Colours of the other elements.
var (
	outageFill    = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x48}
	outageText    = rgb(0x505050)
	neverColor    = rgb(0xCC0000)
	vacantColor   = rgb(0x707070) // nothing left to recover
	gridColor     = rgb(0xE4E4E4)
	noteColor     = rgb(0x404040)
	legendFill    = color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0xD8}
	legendBorder  = rgb(0xC8C8C8)
	referenceLine = rgb(0x303030)
)

func rgb(x uint32) color.Color {
	return color.RGBA{R: uint8(x >> 16), G: uint8(x >> 8), B: uint8(x), A: 0xFF}
}

// sans is the typeface of every text.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// bold is sans in bold. The weight is golang.org/x/image/font.WeightBold,
// written as its value so as not to import that package.
var bold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: 3}

// theme holds the sizes of a chart drawn at a given size in pixels:
// fonts and line widths grow and shrink with the image, so that a chart
// looks the same at 600x400 as at 1200x800, only smaller.
type theme struct {
	scale float64
	lw    vg.Length // a standard line width
	pad   vg.Length // a standard gap

	title, subtitle, label, tick, legend, annotation, note text.Style
}

// refWidth and refHeight are the size in pixels at which fonts have their
// nominal sizes (14 pt titles, 12 pt labels).
const refWidth, refHeight = 1200, 800

// newTheme returns the theme of a chart of w x h pixels.
func newTheme(w, h int) theme {
	s := math.Min(float64(w)/refWidth, float64(h)/refHeight)
	s = math.Max(0.4, math.Min(s, 4))
	style := func(f font.Font, size float64, clr color.Color) text.Style {
		return text.Style{
			Color:   clr,
			Font:    font.From(f, vg.Length(size*s)),
			Handler: plot.DefaultTextHandler,
		}
	}
	th := theme{
		scale:      s,
		lw:         vg.Length(1.2 * s),
		pad:        vg.Length(6 * s),
		title:      style(bold, 15, color.Black),
		subtitle:   style(sans, 11.5, noteColor),
		label:      style(sans, 12.5, color.Black),
		tick:       style(sans, 11.5, color.Black),
		legend:     style(sans, 12, color.Black),
		annotation: style(sans, 11, color.Black),
		note:       style(sans, 11, noteColor),
	}
	th.title.XAlign, th.title.YAlign = draw.XCenter, draw.YTop
	th.subtitle.XAlign, th.subtitle.YAlign = draw.XCenter, draw.YTop
	th.note.XAlign, th.note.YAlign = draw.XLeft, draw.YBottom
	return th
}

// newPlot returns a plot without a title, in the theme's fonts, with a
// transparent background (the figure paints the background once).
func (th theme) newPlot() *plot.Plot {
	p := plot.New()
	p.BackgroundColor = nil
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = th.label.Font
		a.Label.Padding = th.pad / 2
		a.Tick.Label.Font = th.tick.Font
		a.Tick.Length = 4 * vg.Length(th.scale)
		a.Tick.Width = 0.8 * vg.Length(th.scale)
		a.Width = 0.8 * vg.Length(th.scale)
		a.Padding = 0
	}
	p.Title.TextStyle.Font = th.label.Font
	return p
}

// lineStyle is the style of the lines of the strategy of colour index i.
func (th theme) lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: strategyColor(i), Width: 1.6 * th.lw, Dashes: strategyDashes(i, th)}
}

// withAlign returns sty aligned as given.
func withAlign(sty text.Style, x draw.XAlignment, y draw.YAlignment) text.Style {
	sty.XAlign, sty.YAlign = x, y
	return sty
}

// withColor returns sty in colour clr.
func withColor(sty text.Style, clr color.Color) text.Style {
	sty.Color = clr
	return sty
}

// withFont returns sty in typeface f, at its size.
func withFont(sty text.Style, f font.Font) text.Style {
	size := sty.Font.Size
	sty.Font = font.From(f, size)
	return sty
}
