package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

var replayCmd = &command{
	summary: `Replay a scenario over real HTTP and compare it with the simulation.

Every strategy's workload is sent by real HTTP clients, driven by the same
strategies code as the simulator, on the wall clock. Without --target each
strategy run gets a fresh in-process test server (see herdlab serve) that
enforces the scenario's server model. With --time-scale every duration of
the scenario is compressed (0.1: a 30 s outage takes 3 s); results are in
scenario time. Writes the same files as herdlab run, the dead letters as
JSON lines (dlq.jsonl) and comparison.md: the real figures beside the
simulated ones. SIGINT writes the partial results, marked partial.`,
	usage: "FILE.yaml [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.StringP("out", "o", "", "output folder (default out/NAME-real)")
		fs.String("target", "", "send to this URL instead of an in-process test server")
		fs.Float64("time-scale", 1, "multiply every duration of the scenario (0.1: ten times faster)")
		fs.StringArray("strategy", nil, "replay only this strategy (repeatable; default all)")
		fs.Int("max-conns", realhttp.DriverDefaultMaxConns, "connections to the target at most")
		simulationFlags(fs)
		fs.BoolP("quiet", "q", false, "print no table")
	},
	run: replay,
}

func replay(c *cli, fs *flag.FlagSet) int {
	if fs.NArg() != 1 {
		fmt.Fprintln(c.stderr, "herdlab replay: name one scenario file")
		return exitBadInput
	}
	out, _ := fs.GetString("out")
	target, _ := fs.GetString("target")
	scale, _ := fs.GetFloat64("time-scale")
	only, _ := fs.GetStringArray("strategy")
	maxConns, _ := fs.GetInt("max-conns")
	quiet, _ := fs.GetBool("quiet")
	if scale <= 0 {
		fmt.Fprintf(c.stderr, "herdlab replay: --time-scale %v: want a number > 0\n", scale)
		return exitBadInput
	}
	loaded, ok := loadAll(c, fs.Args())
	if !ok || !override(c, fs, loaded) {
		return exitBadInput
	}
	sc := loaded[0]
	if err := sim.CheckStrategies(sc, only); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitBadInput
	}
	if sc.Server.Model == scenarios.ModelOCC && target == "" {
		fmt.Fprintln(c.stderr, "herdlab replay: the test server has no occ model: simulate it with herdlab run, or name a --target")
		return exitBadInput
	}
	if err := realhttp.DriverCheckFileLimit(2*maxConns + 64); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitBadInput
	}
	if out == "" {
		out = filepath.Join("out", sc.Name+"-real")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	dlq, err := os.Create(filepath.Join(out, "dlq.jsonl"))
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	defer dlq.Close()

	var groups [][]*results.Run // the runs of each strategy replayed
	partial := false
	for i := range sc.Strategies {
		st := &sc.Strategies[i]
		if partial || (len(only) > 0 && !slices.Contains(only, st.Name)) {
			continue
		}
		var group []*results.Run
		for run := 0; run < sc.Runs && !partial; run++ {
			r, err := replayOne(c.ctx, sc, st, run, target, realhttp.DriverOptions{TimeScale: scale, DLQ: dlq, MaxConns: maxConns})
			switch {
			case err != nil && c.ctx.Err() != nil: // SIGINT or SIGTERM
				partial = true
			case err != nil:
				fmt.Fprintf(c.stderr, "herdlab replay: %s: %v\n", st.Name, err)
				return exitFailed
			}
			if r != nil {
				group = append(group, r)
			}
		}
		if len(group) > 0 {
			groups = append(groups, group)
		}
	}
	// Interrupted, every strategy keeps as many runs as the last one got.
	n := sc.Runs
	for _, g := range groups {
		n = min(n, len(g))
	}
	sc.Runs = max(n, 1)
	var runs []*results.Run
	for _, g := range groups {
		runs = append(runs, g[:min(len(g), sc.Runs)]...)
	}
	real := &sim.Result{Summary: sim.Summary(sc, runs), Runs: runs}
	real.Summary.Partial = partial
	if err := writeOutputs(out, sc, real, &plots.Options{}); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	simulated, err := sim.Run(context.Background(), sc, sim.Options{Strategies: only})
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: simulating for the comparison: %v\n", err)
		return exitFailed
	}
	chart, err := plots.ComparisonChart(real.Summary, real.Runs, simulated.Runs, plots.Options{})
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	if err := results.WriteFile(filepath.Join(out, "comparison.png"), results.Raw(chart.Data)); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	if err := results.WriteFile(filepath.Join(out, "comparison.md"), func(w io.Writer) error {
		return results.WriteComparison(w, simulated.Summary, real.Summary, "comparison.png")
	}); err != nil {
		fmt.Fprintf(c.stderr, "herdlab replay: %v\n", err)
		return exitFailed
	}
	if !quiet {
		fmt.Fprintf(c.stdout, "%s over real HTTP (time scale %v)\n\n", sc.Name, scale)
		results.WriteTable(c.stdout, real.Summary)
		fmt.Fprintf(c.stdout, "\nreport: %s; comparison with the simulation: %s\n", filepath.Join(out, "report.md"), filepath.Join(out, "comparison.md"))
	}
	if partial {
		fmt.Fprintln(c.stderr, "herdlab replay: interrupted: the results are partial")
		return exitFailed
	}
	return exitOK
}

// replayOne replays one run of st, against target or a fresh in-process
// test server whose clock starts with the run.
func replayOne(ctx context.Context, sc *scenarios.Scenario, st *scenarios.Strategy, run int, target string, opts realhttp.DriverOptions) (*results.Run, error) {
	opts.Target = target
	if target == "" {
		srv, err := realhttp.NewServer(sc, realhttp.ServerOptions{TimeScale: opts.TimeScale, Seed: sim.RunSeed(sc.Seed, run)})
		if err != nil {
			return nil, err
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			return nil, err
		}
		opts.Target = srv.URL()
		r, _, err := realhttp.Replay(ctx, sc, st, run, opts)
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		if r != nil {
			// What only the server sees.
			stats := srv.Stats()
			r.Processed, r.Duplicates, r.Wasted, r.Lost = stats.Processed, stats.Duplicates, stats.Wasted, stats.Lost
		}
		return r, err
	}
	r, _, err := realhttp.Replay(ctx, sc, st, run, opts)
	return r, err
}
