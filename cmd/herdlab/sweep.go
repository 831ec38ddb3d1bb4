package main

import (
	"errors"
	"fmt"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sweep"
)

var sweepCmd = &command{
	summary: `Run a scenario over a grid of values of its fields: where recovery stops.

Runs every strategy at every point of the grid, to find where each stops
recovering on its own.

Each --vary PATH=VALUES names a field of the scenario and its values:
  --vary server.outages[0].duration=10s,30s,2m        a list
  --vary workload.arrival.rate=100..2000:8            a linear range of 8 points
  --vary workload.requests=1e3..1e6:log:7             a log range of 7 points
PATH selects list items by index or by name:
strategies[full-jitter].backoff.base, strategies[*].max_attempts. Without
--vary, the scenario's sweep: section says what to vary. Every point is
every strategy of the scenario, run --runs times.

Writes into the output folder (default out/NAME/sweep/): sweep.csv (one row
per point, strategy and run), sweep.json (figures per point and strategy),
report.md (where each strategy stops recovering), and with one --vary a line
chart of --metric, with two a heatmap per strategy. Points run in parallel;
each run is kept in records/ (written out as the sweep goes, all of them
when it ends or is stopped), so an interrupted sweep resumes when run
again. --shard I/N runs a part of the runs only, for several machines;
'herdlab merge' combines the shards' folders into the outputs of one
unsharded sweep.`,
	usage: "FILE.yaml [--vary PATH=VALUES]... [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.StringArray("vary", nil, "a field and its values, PATH=VALUES (repeatable; default: the scenario's sweep: section)")
		fs.String("metric", "", "figure of summary.json to chart (default: the sweep: section's, else recovery_time_s)")
		fs.StringP("out", "o", "", "output folder (default out/NAME/sweep)")
		fs.StringArray("strategy", nil, "run only this strategy (repeatable; default all)")
		simulationFlags(fs)
		fs.String("shard", "", "run part I of N of the sweep's runs, I/N (then 'herdlab merge' the N folders)")
		chartFlags(fs)
		fs.BoolP("quiet", "q", false, "print no summary and no progress")
	},
	run: sweepScenario,
}

var mergeCmd = &command{
	summary: `Combine the folders of a sharded sweep into the outputs of one sweep.

The folders of 'herdlab sweep --shard I/N' merge into the outputs of one
unsharded sweep: the same sweep.csv, sweep.json and report.md, byte for
byte, with the runs' latency histograms merged exactly. Every shard must
be complete; a missing one is named.`,
	usage: "DIR... [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.StringP("out", "o", "", "output folder (default out/NAME/sweep)")
		fs.String("metric", "", "figure of summary.json to chart (default: the sweep's)")
		chartFlags(fs)
		fs.BoolP("quiet", "q", false, "print no summary")
	},
	run: mergeSweeps,
}

// sweepCharts draws a sweep's charts as o says; none when o is nil.
func sweepCharts(o *plots.Options) sweep.Charts {
	if o == nil {
		return nil
	}
	return func(s *results.Sweep) ([]results.Image, error) {
		cs, err := plots.SweepCharts(s, *o)
		if err != nil {
			return nil, err
		}
		return plots.Images(cs, *o), nil
	}
}

// chartFlags adds --format and --no-charts.
func chartFlags(fs *flag.FlagSet) {
	fs.String("format", "png", "chart format: png or svg")
	fs.Bool("no-charts", false, "write no charts")
}

// chartOptions reads --format and --no-charts: nil for no charts.
func chartOptions(c *cli, fs *flag.FlagSet) (*plots.Options, bool) {
	if off, _ := fs.GetBool("no-charts"); off {
		return nil, true
	}
	format, _ := fs.GetString("format")
	if format != "png" && format != "svg" {
		fmt.Fprintf(c.stderr, "herdlab %s: --format %q: want png or svg\n", fs.Name(), format)
		return nil, false
	}
	return &plots.Options{Format: format}, true
}

func sweepScenario(c *cli, fs *flag.FlagSet) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab sweep: "+format+"\n", args...)
		return exitBadInput
	}
	if fs.NArg() != 1 {
		return fail("name one scenario file")
	}
	charts, ok := chartOptions(c, fs)
	if !ok {
		return exitBadInput
	}
	shard := sweep.All
	if s, _ := fs.GetString("shard"); s != "" {
		var err error
		if shard, err = sweep.ParseShard(s); err != nil {
			return fail("%v", err)
		}
	}
	only, _ := fs.GetStringArray("strategy")
	lim, loaded, code := loadToSimulate(c, fs, only)
	if code != exitOK {
		return code
	}
	sc := loaded[0]
	if !refuseLintErrors(c, loaded, only) {
		return exitBadInput
	}

	var vary []scenarios.Vary
	metric, _ := fs.GetString("metric")
	flags, _ := fs.GetStringArray("vary")
	for _, f := range flags {
		v, err := scenarios.ParseVary(f)
		if err != nil {
			return fail("--vary %s: %v", f, err)
		}
		vary = append(vary, v)
	}
	if len(vary) == 0 && sc.Sweep != nil {
		vary = sc.Sweep.Vary
	}
	if metric == "" && sc.Sweep != nil {
		metric = sc.Sweep.Metric
	}
	plan, err := sweep.NewPlan(c.ctx, sc, vary, metric, only)
	if c.done("checking the sweep's points") {
		return exitFailed
	}
	if err != nil {
		return fail("%s: %v", sc.File(), err)
	}
	parallel, _ := fs.GetInt("parallel")
	if _, err := plan.Fit(parallel, lim.memory, lim.events); err != nil {
		return fail("%v%s", err, lim.note())
	}

	dir, _ := fs.GetString("out")
	if dir == "" {
		dir = filepath.Join("out", sc.Name, "sweep")
	}
	quiet, _ := fs.GetBool("quiet")
	opts := sweep.Options{Shard: shard, Parallel: parallel, MaxMemory: lim.memory, MaxEvents: lim.events,
		Damaged: func(path string, err error) {
			fmt.Fprintf(c.stderr, "herdlab sweep: %s is damaged (%v): the runs it lost run again\n", path, err)
		}}
	var bar *progress
	if !quiet {
		title := sc.Name + " sweep"
		if shard != sweep.All {
			title += " (shard " + shard.String() + ")"
		}
		bar = startProgress(c.stderr, title, shard.Of(plan.Spec.Units()))
		opts.Progress = func(p sweep.Progress) {
			bar.set(p.UnitsDone, fmt.Sprintf("%d/%d points", p.PointsDone, p.Points))
		}
	}
	stats, err := plan.Run(c.ctx, dir, opts)
	bar.finish()
	switch {
	case errors.Is(err, sweep.ErrOtherSweep):
		return fail("%v", err)
	case c.ctx.Err() != nil:
		fmt.Fprintf(c.stderr, "herdlab sweep: interrupted; %d runs kept in %s: run the same command again to resume\n", stats.Ran+stats.Skipped, dir)
		return exitFailed
	case err != nil:
		fmt.Fprintf(c.stderr, "herdlab sweep: %v\n", err)
		return exitFailed
	}
	if !quiet {
		fmt.Fprintf(c.stdout, "%s: %d points x %d strategies x %d runs: ran %d runs (%s events) in %.1fs, %d found done before\n",
			sc.Name, plan.Spec.Points, len(plan.Spec.Strategies), plan.Spec.Runs, stats.Ran, results.Count(float64(stats.Events)), stats.Wall.Seconds(), stats.Skipped)
	}
	if shard != sweep.All {
		if !quiet {
			fmt.Fprintf(c.stdout, "shard %s written to %s; when every shard is done: herdlab merge FOLDER...\n", shard, dir)
		}
		return exitOK
	}
	rs := stats.Records // when Run kept them, they need not be read back
	if rs == nil {
		if rs, err = sweep.Collect(dir); err != nil {
			fmt.Fprintf(c.stderr, "herdlab sweep: %v\n", err)
			return exitFailed
		}
	}
	s, err := sweep.Merge(dir, rs, plan.Metric, sweepCharts(charts))
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab sweep: %v\n", err)
		return exitFailed
	}
	if !quiet {
		printSweep(c, s, dir)
	}
	return exitOK
}

func mergeSweeps(c *cli, fs *flag.FlagSet) int {
	if fs.NArg() == 0 {
		fmt.Fprintln(c.stderr, "herdlab merge: name the folders of the sweep's shards")
		return exitBadInput
	}
	charts, ok := chartOptions(c, fs)
	if !ok {
		return exitBadInput
	}
	metric, _ := fs.GetString("metric")
	if err := sweep.CheckMetric(metric); metric != "" && err != nil {
		fmt.Fprintf(c.stderr, "herdlab merge: %v\n", err)
		return exitBadInput
	}
	rs, err := sweep.Collect(fs.Args()...)
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab merge: %v\n", err)
		return exitBadInput
	}
	out, _ := fs.GetString("out")
	if out == "" {
		out = filepath.Join("out", rs.Spec.Scenario, "sweep")
	}
	s, err := sweep.Merge(out, rs, metric, sweepCharts(charts))
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab merge: %v\n", err)
		if errors.Is(err, sweep.ErrOtherSweep) {
			return exitBadInput
		}
		return exitFailed
	}
	if quiet, _ := fs.GetBool("quiet"); !quiet {
		printSweep(c, s, out)
	}
	return exitOK
}

// printSweep prints where each strategy stops recovering, and the files.
func printSweep(c *cli, s *results.Sweep, dir string) {
	fmt.Fprintln(c.stdout, "\nWhere recovery stops (recovered = in every run):")
	for _, line := range s.BoundarySentences() {
		fmt.Fprintln(c.stdout, "  "+line)
	}
	fmt.Fprintf(c.stdout, "\nreport: %s\ndata:   %s, %s\n", filepath.Join(dir, "report.md"), filepath.Join(dir, "sweep.csv"), filepath.Join(dir, "sweep.json"))
	if n := len(s.Axes); n > 2 {
		fmt.Fprintf(c.stdout, "(no charts for %d varied fields: the report has the table)\n", n)
	}
}
