package plots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"runtime"
	"strings"
	"sync"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/zeontools/herdlab/results"
)

// Options says how to draw the charts. The zero value draws PNG images of
// 1200 x 800 pixels, the load chart with one panel per strategy.
type Options struct {
	// Format is "png" (the default, when empty) or "svg".
	Format string
	// Width and Height are the image size in pixels (an SVG's in CSS
	// pixels), from 100 to 20000; 0 means 1200 and 800. Fonts and lines
	// scale with the smaller of Width/1200 and Height/800.
	Width, Height int
	// Overlay draws the load chart as one axis with a line of total
	// attempts per strategy, instead of a panel per strategy stacked by
	// outcome.
	Overlay bool
}

// Default image size in pixels.
const (
	DefaultWidth  = 1200
	DefaultHeight = 800
)

// ErrOptions is returned, wrapped, for options that cannot be drawn.
var ErrOptions = errors.New("plots: bad options")

// ErrSummary is returned, wrapped, for a summary that cannot be drawn
// (nil, or a bucket width that is not positive).
var ErrSummary = errors.New("plots: bad summary")

// format returns the image format: "png" or "svg".
func (o Options) format() string {
	if o.Format == "" {
		return "png"
	}
	return strings.ToLower(o.Format)
}

// size returns the image size in pixels, defaults applied.
func (o Options) size() (w, h int) {
	w, h = o.Width, o.Height
	if w == 0 {
		w = DefaultWidth
	}
	if h == 0 {
		h = DefaultHeight
	}
	return w, h
}

// check reports options that cannot be drawn.
func (o Options) check() error {
	if f := o.format(); f != "png" && f != "svg" {
		return fmt.Errorf("%w: format %q: want png or svg", ErrOptions, o.Format)
	}
	w, h := o.size()
	if w < 100 || h < 100 || w > 20000 || h > 20000 {
		return fmt.Errorf("%w: size %dx%d: want 100 to 20000 pixels a side", ErrOptions, w, h)
	}
	return nil
}

// Chart is one encoded chart.
type Chart struct {
	// Name is the file name without extension: "load", "recovery",
	// "latency", "queue" or "amplification", and for a service graph
	// "services-load", "layers" or "graph"; for a sweep, "sweep" or
	// "heatmap-" and a strategy's name.
	Name string
	// Title is the chart's title, which names the scenario; reports use it
	// as the caption.
	Title string
	// Data is the encoded image, in the format of the options it was
	// drawn with.
	Data []byte
}

// File returns the chart's file name in the format of o: Name + ".png" or
// Name + ".svg".
func (c Chart) File(o Options) string {
	return c.Name + "." + o.format()
}

// Images returns charts drawn with o as the images of a report.
func Images(charts []Chart, o Options) []results.Image {
	images := make([]results.Image, len(charts))
	for i, ch := range charts {
		images[i] = results.Image{File: ch.File(o), Caption: ch.Title, Data: ch.Data}
	}
	return images
}

// Render draws every chart of a run's results, in a fixed order: load,
// recovery, latency, queue, amplification, and for a service graph (a
// summary whose strategies have services) services-load, layers and
// graph. s is the summary; runs are the
// runs of its strategies, in any order (the simulator's: strategy by
// strategy, then run by run); a strategy without runs gets empty series.
// The same inputs and options give the same bytes.
func Render(s *results.Summary, runs []*results.Run, o Options) ([]Chart, error) {
	return RenderContext(context.Background(), s, runs, o)
}

// RenderContext is Render, stopped between two charts once ctx is done:
// the charts of a run of millions of buckets take seconds. The charts are
// drawn in parallel, one per CPU at a time; each is drawn alone, so the
// bytes do not depend on it.
func RenderContext(ctx context.Context, s *results.Summary, runs []*results.Run, o Options) ([]Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return nil, err
	}
	draws := []func() (Chart, error){
		func() (Chart, error) { return LoadChart(s, runs, o) },
		func() (Chart, error) { return RecoveryChart(s, o) },
		func() (Chart, error) { return LatencyChart(s, runs, o) },
		func() (Chart, error) { return QueueChart(s, runs, o) },
		func() (Chart, error) { return AmplificationChart(s, o) },
	}
	if hasGraph(s) {
		draws = append(draws,
			func() (Chart, error) { return ServicesLoadChart(s, runs, o) },
			func() (Chart, error) { return LayersChart(s, o) },
			func() (Chart, error) { return GraphChart(s, o) },
		)
	}
	charts := make([]Chart, len(draws))
	errs := make([]error, len(draws))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(draws)) {
		wg.Go(func() {
			for i := range next {
				if errs[i] = ctx.Err(); errs[i] == nil {
					charts[i], errs[i] = draws[i]()
				}
			}
		})
	}
	for i := range draws {
		next <- i
	}
	close(next)
	wg.Wait()
	// The first chart's error, as drawing them in turn would report.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return charts, nil
}

// checkInputs reports a summary or options that cannot be drawn.
func checkInputs(s *results.Summary, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("%w: no summary", ErrSummary)
	}
	if !(s.BucketS > 0) || math.IsInf(s.BucketS, 0) {
		return fmt.Errorf("%w: bucket width %v s", ErrSummary, s.BucketS)
	}
	return nil
}

// render draws a chart with body on a canvas of the options' format and
// size, and encodes it.
func render(name, title string, o Options, body func(c draw.Canvas, th theme)) (Chart, error) {
	w, h := o.size()
	return renderIn(name, title, o, newTheme(w, h), body)
}

// renderIn is render in theme th, whatever the options' size: a chart
// drawn on a canvas larger than asked for keeps the fonts of the size
// asked for.
func renderIn(name, title string, o Options, th theme, body func(c draw.Canvas, th theme)) (Chart, error) {
	w, h := o.size()
	var buf bytes.Buffer
	switch o.format() {
	case "png":
		vc := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, w, h))), vgimg.UseDPI(vgimg.DefaultDPI))
		body(draw.New(vc), th)
		if _, err := (vgimg.PngCanvas{Canvas: vc}).WriteTo(&buf); err != nil {
			return Chart{}, fmt.Errorf("plots: encoding %s: %w", name, err)
		}
	case "svg":
		// A CSS pixel is 3/4 of a point.
		vc := vgsvg.New(vg.Length(w)*0.75, vg.Length(h)*0.75)
		body(draw.New(vc), th)
		if _, err := vc.WriteTo(&buf); err != nil {
			return Chart{}, fmt.Errorf("plots: encoding %s: %w", name, err)
		}
		// Text is laid out with Liberation Sans's metrics; where it is not
		// installed, fonts of the same metrics (Arimo, Arial, Helvetica)
		// keep labels from running into each other.
		return Chart{Name: name, Title: title, Data: bytes.ReplaceAll(buf.Bytes(), svgFont, svgFonts)}, nil
	}
	return Chart{Name: name, Title: title, Data: buf.Bytes()}, nil
}

var (
	svgFont  = []byte("font-family:Liberation Sans;")
	svgFonts = []byte("font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")
)

// bucketLabel names the bucket width: "1 s".
func bucketLabel(s *results.Summary) string {
	return decimal(s.BucketS, 3) + " s"
}

// runsNote says what a per-bucket figure is with several runs.
func runsNote(s *results.Summary) string {
	if s.Runs > 1 {
		return fmt.Sprintf(", mean of %d runs", s.Runs)
	}
	return ""
}

// lastOutageEnd returns the end of the last outage in seconds, 0 with
// none.
func lastOutageEnd(s *results.Summary) float64 {
	end := 0.0
	for _, w := range s.Outages {
		end = max(end, w.EndS)
	}
	return end
}
