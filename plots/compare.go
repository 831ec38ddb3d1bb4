package plots

import (
	"fmt"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zeontools/herdlab/results"
)

// ComparisonChart draws the load of a real-HTTP replay beside its
// simulation on one axis: attempts per bucket, one colour per strategy,
// the real run solid and the simulated one dashed (means over runs),
// outages shaded. real names the strategies and their colours.
func ComparisonChart(real *results.Summary, realRuns, simRuns []*results.Run, o Options) (Chart, error) {
	if err := checkInputs(real, o); err != nil {
		return Chart{}, err
	}
	title := real.Scenario + ": real and simulated load"
	realGroups, simGroups := runsByStrategy(real, realRuns), runsByStrategy(real, simRuns)
	n := max(bucketCount(real, realRuns), bucketCount(real, simRuns))
	realLoad, simLoad := make([][]float64, len(realGroups)), make([][]float64, len(simGroups))
	top := 1.0
	for i := range real.Strategies {
		realLoad[i], simLoad[i] = meanAttempts(realGroups[i], n), meanAttempts(simGroups[i], n)
		top = max(top, maxOf(realLoad[i]), maxOf(simLoad[i]))
	}
	colors := colorIndexes(real)
	return render("comparison", title, o, func(c draw.Canvas, th theme) {
		var legend []legendItem
		for i, st := range real.Strategies {
			legend = append(legend,
				legendItem{label: st.Name + " (real)", thumb: lineThumb(th.lineStyle(colors[i]))},
				legendItem{label: st.Name + " (simulated)", thumb: lineThumb(dashed(th.lineStyle(colors[i]), th))})
		}
		if len(real.Outages) > 0 {
			legend = append(legend, legendItem{label: "outage", thumb: swatch(outageFill)})
		}
		f := figure{
			th:       th,
			title:    title,
			subtitle: fmt.Sprintf("Attempts that reached the server per %s bucket, over real HTTP (solid) and simulated (dashed)%s.", bucketLabel(real), runsNote(real)),
			legend:   legend,
		}
		body := f.frame(c)
		p := th.newPlot()
		p.X.Min, p.X.Max = 0, max(float64(n)*real.BucketS, real.BucketS)
		p.Y.Min, p.Y.Max = 0, top
		p.X.Tick.Marker = timeTicks{labels: true}
		p.Y.Tick.Marker = countTicks{}
		p.X.Label.Text = "time (s, scenario time)"
		p.Y.Label.Text = "attempts per " + bucketLabel(real) + " bucket"
		p.Add(grid{style: draw.LineStyle{Color: gridColor, Width: 0.6 * vg.Length(th.scale)}})
		p.Add(outages{windows: real.Outages, label: true, sty: th.annotation, pad: th.pad})
		for i := range realLoad {
			p.Add(stepLine{ys: simLoad[i], width: real.BucketS, style: dashed(th.lineStyle(colors[i]), th)})
			p.Add(stepLine{ys: realLoad[i], width: real.BucketS, style: th.lineStyle(colors[i])})
		}
		reserveTop(p, body, top, labelStrip(th), len(real.Outages) > 0)
		dc := p.DataCanvas(body)
		p.X.Tick.Marker = timeTicksFor(th, dc.Max.X-dc.Min.X, true)
		p.Draw(body)
	})
}

// dashed returns sty dashed.
func dashed(sty draw.LineStyle, th theme) draw.LineStyle {
	d := vg.Length(4 * th.scale)
	sty.Dashes = []vg.Length{d, d}
	return sty
}
