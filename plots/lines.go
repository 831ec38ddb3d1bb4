package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// LatencyChart draws the cumulative distribution of delivery latency
// (request creation to delivery) of each strategy, one line in its
// colour (see colorIndexes), from the exact merge of the latency
// histograms of its runs: x the latency in seconds on a log axis, y the
// fraction of the delivered requests delivered within x. Requests never
// delivered are not in it; the legend gives each strategy's delivered
// share.
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
	colors := colorIndexes(s)
	return render("latency", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range s.Strategies {
			label := fmt.Sprintf("%s (%s delivered)", st.Name, percent(st.DeliveredRatio))
			if len(cdfs[i]) == 0 {
				label = st.Name + " (none delivered)"
			}
			legend = append(legend, legendItem{label: label, thumb: lineThumb(th.lineStyle(colors[i]))})
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
			p.Add(polyline{xys: xys, style: th.lineStyle(colors[i])})
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

// QueueChart draws the server's queue per bucket: for each strategy, in
// its colour, the most requests waiting at any instant of each bucket (a
// thick line) and the queue's time-weighted mean over the bucket (a thin
// dotted line), means over runs when there are several; the queue limit
// as a dashed line when the queue is bounded (past it, attempts are
// rejected with 503); outages shaded. A queue that fills and empties
// within a bucket shows, as it would not in a sample at the bucket's end.
// A strategy whose runs did not measure the queue (results.Run.QueueTracked:
// real HTTP) is drawn as no line, and the legend says so: it is not an
// empty queue.
func QueueChart(s *results.Summary, runs []*results.Run, o Options) (Chart, error) {
	if err := checkInputs(s, o); err != nil {
		return Chart{}, err
	}
	title := s.Scenario + ": server queue"
	if target, ok := graphTarget(s); ok {
		title = s.Scenario + ": queue of " + target + ", the service the fleet calls"
	}
	groups := runsByStrategy(s, runs)
	n := bucketCount(s, runs)
	queues := make([]results.QueueSeries, len(groups))
	top, measured := 0.0, false
	for i, g := range groups {
		queues[i] = queueStats(g, n)
		top = max(top, maxOf(queues[i].Most))
		measured = measured || queues[i].Measured
	}
	limit, bounded := queueLimit(s)
	if bounded {
		top = max(top, limit)
	}
	if top == 0 {
		top = 1
	}
	colors := colorIndexes(s)
	return render("queue", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range s.Strategies {
			label := st.Name
			if !queues[i].Measured {
				label += " (queue not measured)"
			}
			legend = append(legend, legendItem{label: label, thumb: lineThumb(th.lineStyle(colors[i]))})
		}
		subtitle := "The server's queue was not measured in these runs: nothing to draw."
		if measured {
			legend = append(legend,
				legendItem{label: "most in each bucket", thumb: lineThumb(draw.LineStyle{Color: noteColor, Width: th.lineStyle(0).Width})},
				legendItem{label: "mean over each bucket", thumb: lineThumb(queueMeanStyle(th, noteColor))})
			subtitle = fmt.Sprintf("Requests waiting in the server's queue: the most at any instant of each %s bucket (thick) and the mean over the bucket (dotted)%s.",
				bucketLabel(s), runsNote(s))
		}
		if bounded {
			legend = append(legend, legendItem{label: fmt.Sprintf("queue limit (%s; past it, 503)", countLabel(limit)), thumb: lineThumb(capacityStyle(th))})
		}
		if len(s.Outages) > 0 {
			legend = append(legend, legendItem{label: "outage", thumb: swatch(outageFill)})
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: subtitle,
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
		for i, q := range queues {
			if !q.Measured {
				continue
			}
			p.Add(stepLine{ys: q.Mean, width: s.BucketS, style: queueMeanStyle(th, strategyColor(colors[i]))})
			p.Add(stepLine{ys: q.Most, width: s.BucketS, style: th.lineStyle(colors[i])})
		}
		if bounded {
			// Over the lines: a full queue's line runs along it.
			p.Add(hline{y: limit, style: capacityStyle(th)})
		}
		reserveTop(p, body, top, labelStrip(th), len(s.Outages) > 0)
		dc := p.DataCanvas(body)
		p.X.Tick.Marker = timeTicksFor(th, dc.Max.X-dc.Min.X, true)
		p.Draw(body)
	})
}

// queueMeanStyle is the style of a line of the mean queue in clr:
// thinner than a strategy's line, and dotted.
func queueMeanStyle(th theme, clr color.Color) draw.LineStyle {
	return draw.LineStyle{Color: clr, Width: th.lw, Dashes: []vg.Length{2 * th.lw, 1.5 * th.lw}}
}
