package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/internal/outputs"
	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

var runCmd = &command{
	summary: `Simulate every strategy of each scenario and write the results.

Each strategy runs against the same server, outage and workload, on a
virtual clock. For each scenario, prints a summary table and writes
summary.json, summary.csv, timeseries.csv (and services.csv for a graph
of services, client_rates.csv for the AWS SDKs' adaptive rate limiter),
the charts (load, recovery, latency, queue, amplification), report.md
and a self-contained report.html into the output folder (default
out/NAME/; with several files and --out DIR, DIR/NAME/).
Every file is checked before anything runs: bad input exits 2 and writes
nothing. On a terminal, work of more than 2 s shows a progress bar with
the time left: it measures the runs' work (the requests finished against
the events they took), not simulated time, since a run ends as soon as
its last request is finished, often long before its duration.`,
	usage: "FILE.yaml... [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.StringP("out", "o", "", "output folder (default out/NAME)")
		fs.StringArray("strategy", nil, "run only this strategy (repeatable; default all)")
		simulationFlags(fs)
		fs.String("format", "png", "chart format: png or svg")
		fs.Bool("overlay", false, "load chart: strategies overlaid on one axis instead of a panel each")
		fs.Bool("no-charts", false, "write no charts")
		fs.String("save-baseline", "", "also write summary.json as the baseline DIR/NAME.json for check --baseline")
		fs.BoolP("quiet", "q", false, "print no table and no progress")
	},
	run: runScenarios,
}

func runScenarios(c *cli, fs *flag.FlagSet) int {
	if fs.NArg() == 0 {
		fmt.Fprintln(c.stderr, "herdlab run: name at least one scenario file")
		return exitBadInput
	}
	out, _ := fs.GetString("out")
	only, _ := fs.GetStringArray("strategy")
	baseline, _ := fs.GetString("save-baseline")
	parallel, _ := fs.GetInt("parallel")
	quiet, _ := fs.GetBool("quiet")
	var charts *plots.Options
	if off, _ := fs.GetBool("no-charts"); !off {
		format, _ := fs.GetString("format")
		if format != "png" && format != "svg" {
			fmt.Fprintf(c.stderr, "herdlab run: --format %q: want png or svg\n", format)
			return exitBadInput
		}
		overlay, _ := fs.GetBool("overlay")
		charts = &plots.Options{Format: format, Overlay: overlay}
	}

	lim, loaded, code := loadToSimulate(c, fs, only)
	if code != exitOK {
		return code
	}
	if !refuseLintErrors(c, loaded, only) {
		return exitBadInput
	}
	if !lim.fit(c, loaded, sim.Options{Strategies: only, Parallel: parallel}) {
		return exitBadInput
	}

	// Every output folder is known writable before anything runs, and is
	// replaced whole only when its run is done.
	stages, ok := stageOutputs(c, "run", out, loaded)
	if !ok {
		return exitBadInput
	}
	defer func() {
		for _, st := range stages {
			st.Abort()
		}
	}()
	if baseline != "" {
		if err := checkWritable(baseline); err != nil {
			fmt.Fprintf(c.stderr, "herdlab run: --save-baseline: %v\n", err)
			return exitBadInput
		}
	}

	ctx := c.ctx
	for i, sc := range loaded {
		dir := stages[i].Dir()
		opts := lim.options(sim.Options{Strategies: only, Parallel: parallel})
		var bar *progress
		if !quiet {
			bar = startProgress(c.stderr, fmt.Sprintf("%s (%d of %d)", sc.Name, i+1, len(loaded)), countRuns(sc, only)*sim.ProgressUnits)
			opts.Progress = bar.add
		}
		res, err := sim.Run(ctx, sc, opts)
		bar.finish()
		if c.done("simulating " + sc.Name) {
			return exitFailed
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab run: %s: %v\n", sc.Name, err)
			return exitFailed
		}
		if err := commitOutputs(ctx, stages[i], sc, res, charts); err != nil {
			if c.done("writing " + stages[i].Dir()) {
				return exitFailed
			}
			fmt.Fprintf(c.stderr, "herdlab run: %v\n", err)
			return exitFailed
		}
		if baseline != "" {
			if err := saveBaseline(baseline, res.Summary); err != nil {
				fmt.Fprintf(c.stderr, "herdlab run: %v\n", err)
				return exitFailed
			}
		}
		if !quiet {
			fmt.Fprintf(c.stdout, "%s: %s\n\n", sc.Name, describe(sc, only))
			results.WriteTable(c.stdout, res.Summary)
			fmt.Fprintf(c.stdout, "\nreport: %s (and report.html)\n", filepath.Join(dir, "report.md"))
			if charts != nil {
				names := "{load,recovery,latency,queue,amplification}."
				if sc.Graph() {
					names = "{load,recovery,latency,queue,amplification,services-load,layers,graph}."
				}
				fmt.Fprintf(c.stdout, "charts: %s\n", filepath.Join(dir, names+charts.Format))
			}
			fmt.Fprintln(c.stdout)
		}
	}
	return exitOK
}

// stageOutputs stages the output folder of each scenario: out/NAME by
// default, out itself for one scenario, out/NAME for several. It reports
// a folder that cannot be written or replaced, or that two scenarios
// share, and returns false then (having staged nothing).
func stageOutputs(c *cli, cmd, out string, loaded []*scenarios.Scenario) ([]*results.Stage, bool) {
	stages := make([]*results.Stage, 0, len(loaded))
	seen := map[string]string{}
	fail := func(format string, args ...any) ([]*results.Stage, bool) {
		fmt.Fprintf(c.stderr, "herdlab %s: "+format+"\n", append([]any{cmd}, args...)...)
		for _, st := range stages {
			st.Abort()
		}
		return nil, false
	}
	for _, sc := range loaded {
		dir := filepath.Join("out", sc.Name)
		switch {
		case out != "" && len(loaded) == 1:
			dir = out
		case out != "":
			dir = filepath.Join(out, sc.Name)
		}
		if other, dup := seen[filepath.Clean(dir)]; dup {
			return fail("%s and %s both write %s: give them different names", other, sc.File(), dir)
		}
		seen[filepath.Clean(dir)] = sc.File()
		st, err := results.StageDir(dir)
		if err != nil {
			return fail("%s: %v", sc.File(), err)
		}
		stages = append(stages, st)
	}
	return stages, true
}

// checkWritable reports whether files can be written in dir, made if
// need be.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".herdlab-write-test-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// countRuns returns how many runs sc makes with the strategies named in
// only (all when empty).
func countRuns(sc *scenarios.Scenario, only []string) int {
	n := len(sc.Strategies)
	if len(only) > 0 {
		n = len(only)
	}
	return n * sc.Runs
}

// saveBaseline writes s as the baseline of its scenario in dir.
func saveBaseline(dir string, s *results.Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return results.WriteFile(baselineFile(dir, s.Scenario), func(w io.Writer) error { return results.WriteJSON(w, s) })
}

// commitOutputs writes a run's files into its staged folder and swaps the
// folder in whole.
// A done ctx stops it before the swap, leaving the old folder.
func commitOutputs(ctx context.Context, st *results.Stage, sc *scenarios.Scenario, res *sim.Result, opts *plots.Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	files, err := outputs.Files(ctx, sc, res, opts)
	if err != nil {
		return err
	}
	for i := range files {
		write := files[i].Write
		files[i].Write = func(w io.Writer) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return write(w)
		}
	}
	if err := st.WriteFiles(files); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return st.Commit()
}

// describe is sc.Describe() naming only the strategies that run: those
// in only, or all when it is empty.
func describe(sc *scenarios.Scenario, only []string) string {
	if len(only) == 0 {
		return sc.Describe()
	}
	shown := *sc
	shown.Strategies = slices.DeleteFunc(slices.Clone(sc.Strategies), func(st scenarios.Strategy) bool { return !slices.Contains(only, st.Name) })
	return shown.Describe()
}
