package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// LatencyChart draws the cumulative distribution of delivery latency
// (request creation to delivery) of each strategy, one line in its
// colour, from the exact merge of the latency histograms of its runs: x
// the latency in seconds on a log axis, y the fraction of the delivered
// requests delivered within x. Requests never delivered are not in it;
// the legend gives each strategy's delivered share.
func LatencyChart(s *results.Summary, runs []*results.Run, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": delivery latency"
	groups := runsByStrategy(s, runs)
	cdfs := make([]plotter.XYs, len(groups))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, g := range groups {
		xys, _, err := latencyCDF(g)
		if err != nil {
			return Chart{}, err
		}
		cdfs[i] = thinCDF(xys, 1.005)
		if len(xys) > 0 {
			lo, hi = min(lo, xys[0].X), max(hi, xys[len(xys)-1].X)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.001, 1
	}
	return render("latency", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range s.Strategies {
			label := fmt.Sprintf("%s (%s delivered)", st.Name, percent(st.DeliveredRatio))
			if len(cdfs[i]) == 0 {
				label = st.Name + " (none delivered)"
			}
			legend = append(legend, legendItem{label: label, thumb: lineThumb(th.lineStyle(i))})
		}
		f := figure{
			th:    th,
			title: title,
			subtitle: "Cumulative distribution of the time from a request's creation to its delivery, delivered requests only" +
				mergedNote(s) + "; a line ends at the slowest delivery.",
			legend: legend,
		}
		body := f.frame(c)
		p := th.newPlot()
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.X.Min, p.X.Max = logRange(lo, hi)
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = fractionTicks{}
		p.Y.Padding = 4 * vg.Length(th.scale)
		p.X.Label.Text = "latency (s, log scale)"
		p.Y.Label.Text = "fraction of delivered requests within x"
		p.Add(grid{x: true, style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
		for i, xys := range cdfs {
			if len(xys) == 0 {
				continue
			}
			p.Add(polyline{xys: xys, style: th.lineStyle(i)})
		}
		p.Draw(body)
	})
}

// mergedNote says how runs were combined in the latency chart.
func mergedNote(s *results.Summary) string {
	if s.Runs > 1 {
		return fmt.Sprintf(" (%d runs merged)", s.Runs)
	}
	return ""
}

// QueueChart draws the server queue at the end of each bucket, one line
// per strategy in its colour (the mean over runs when there are several),
// outages shaded.
func QueueChart(s *results.Summary, runs []*results.Run, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": server queue"
	groups := runsByStrategy(s, runs)
	n := bucketCount(s, runs)
	queues := make([][]float64, len(groups))
	top := 0.0
	for i, g := range groups {
		queues[i] = meanQueue(g, n)
		top = max(top, maxOf(queues[i]))
	}
	if top == 0 {
		top = 1
	}
	return render("queue", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range s.Strategies {
			legend = append(legend, legendItem{label: st.Name, thumb: lineThumb(th.lineStyle(i))})
		}
		if len(s.Outages) > 0 {
			legend = append(legend, legendItem{label: "outage", thumb: swatch(outageFill)})
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: fmt.Sprintf("Requests waiting in the server's queue at the end of each %s bucket%s.", bucketLabel(s), runsNote(s)),
			legend:   legend,
		}
		body := f.frame(c)
		p := th.newPlot()
		p.X.Min, p.X.Max = 0, max(float64(n)*s.BucketS, s.BucketS)
		p.Y.Min, p.Y.Max = 0, top
		p.X.Tick.Marker = timeTicks{labels: true}
		p.Y.Tick.Marker = countTicks{}
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = "requests in the queue"
		p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
		p.Add(outages{windows: s.Outages, label: true, sty: th.annotation, pad: th.pad})
		for i := range queues {
			p.Add(stepLine{ys: queues[i], width: s.BucketS, style: th.lineStyle(i)})
		}
		reserveTop(p, body, top, labelStrip(th), len(s.Outages) > 0)
		dc := p.DataCanvas(body)
		p.X.Tick.Marker = timeTicksFor(th, dc.Max.X-dc.Min.X, true)
		p.Draw(body)
	})
}
