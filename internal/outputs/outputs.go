// Package outputs lists the files of a run's output folder: the
// summary, the time series, the charts and the reports, as herdlab run
// writes them. The CLI and herdtest both write them through it.
package outputs

import (
	"context"
	"io"
	"slices"

	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web"
)

// Files returns a run's files, with the charts drawn as opts says
// (none when opts is nil).
func Files(ctx context.Context, sc *scenarios.Scenario, res *sim.Result, opts *plots.Options) ([]results.File, error) {
	var images []results.Image
	var live *results.Interactive
	if opts != nil {
		charts, err := plots.RenderContext(ctx, res.Summary, res.Runs, *opts)
		if err != nil {
			return nil, err
		}
		images = plots.Images(charts, *opts)
		data, err := results.ChartData(res.Summary, res.Runs)
		if err != nil {
			return nil, err
		}
		live = &results.Interactive{Charts: data, Script: web.ChartScript(), Style: web.ChartStyle()}
	}
	files := []results.File{
		{Name: "summary.json", Write: func(w io.Writer) error { return results.WriteJSON(w, res.Summary) }},
		{Name: "summary.csv", Write: func(w io.Writer) error { return results.WriteSummaryCSV(w, res.Summary) }},
		{Name: "timeseries.csv", Write: func(w io.Writer) error { return results.WriteTimeseries(w, sc.Bucket, res.Runs) }},
	}
	if sc.Graph() {
		files = append(files, results.File{Name: "services.csv", Write: func(w io.Writer) error { return results.WriteServices(w, sc.Bucket, res.Runs) }})
	}
	if slices.ContainsFunc(res.Runs, func(r *results.Run) bool { return r.ClientRates != nil }) {
		files = append(files, results.File{Name: "client_rates.csv", Write: func(w io.Writer) error { return results.WriteClientRates(w, sc.Bucket, res.Runs) }})
	}
	files = append(files, results.ImageFiles(images)...)
	files = append(files,
		results.File{Name: "report.md", Write: func(w io.Writer) error { return results.WriteReport(w, res.Summary, images) }},
		results.File{Name: "report.html", Write: func(w io.Writer) error { return results.WriteHTML(w, res.Summary, images, live) }},
	)
	return files, nil
}
