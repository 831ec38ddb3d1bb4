package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/internal/outputs"
	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

var replayCmd = &command{
	summary: `Replay a scenario over real HTTP and compare it with the simulation.

Every strategy's workload is sent by real HTTP clients, driven by the same
strategies code as the simulator, on the wall clock, one run after another.
Without --target each run gets a fresh in-process test server (see herdlab
serve) that enforces the scenario's server model. With --target and
--control (a herdlab serve's metrics and control address), the target's
scenario clock is reset to 0 before each run; without --control only one
run can be replayed (one --strategy, --runs 1), its outages timed from
whenever the target started them.

A scenario with services is replayed against a whole graph of test servers
(see herdlab serve), in process for each run, or a herdlab serve of it
named with --target and --control (required: each service's figures come
from the control endpoint); every service's figures and every edge's
attempts are written as herdlab run writes them, and comparison.md
compares each service's peak load and amplification too.

Connections: one process plays every sender; an attempt in flight holds a
connection, pooled and shared, at most --max-conns at once (by default as
many as the simulation needs: the most attempts its server holds at once,
and a quarter more). A replay that cannot send the herd as simulated
refuses to start (exit 2), naming the limit that binds; one whose attempts
went out late all the same (a wait for a connection, a busy machine) says
so and exits 1.

With --time-scale every duration of the scenario is compressed (0.1: a
30 s outage takes 3 s); results are in scenario time. Writes the same files
as herdlab run, the dead letters as JSON lines (dlq.jsonl) and
comparison.md: the real figures beside the simulated ones. The output
folder is replaced whole, when the replay is done: an interrupted replay
leaves the old one as it was. SIGINT writes the partial results, marked
partial.`,
	usage: "FILE.yaml [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.StringP("out", "o", "", "output folder (default out/NAME-real)")
		fs.String("target", "", "send to this URL instead of an in-process test server")
		fs.String("control", "", "the target's control URL (herdlab serve's --metrics-addr, as it prints it): reset its clock before each run")
		fs.Float64("time-scale", 1, "multiply every duration of the scenario (0.1: ten times faster)")
		fs.StringArray("strategy", nil, "replay only this strategy (repeatable; default all)")
		fs.Int("max-conns", 0, "connections to the target at most (default: what the simulation needs, at least 256)")
		fs.Int("runs", 0, "independent replications (default: the scenario's runs)")
		fs.Uint64("seed", 0, "seed of the scenario; each run derives its own from it (default: the scenario's seed)")
		limitFlags(fs)
		fs.BoolP("quiet", "q", false, "print no table and no progress")
	},
	run: replay,
}

// replayOpts are replay's flags, checked.
type replayOpts struct {
	out, target, control string
	scale                float64
	only                 []string
	maxConns, runs       int
	seed                 uint64
	quiet                bool
}

func replayFlags(fs *flag.FlagSet) (replayOpts, error) {
	var o replayOpts
	o.out, _ = fs.GetString("out")
	o.target, _ = fs.GetString("target")
	o.control, _ = fs.GetString("control")
	o.scale, _ = fs.GetFloat64("time-scale")
	o.only, _ = fs.GetStringArray("strategy")
	o.maxConns, _ = fs.GetInt("max-conns")
	o.runs, _ = fs.GetInt("runs")
	o.seed, _ = fs.GetUint64("seed")
	o.quiet, _ = fs.GetBool("quiet")
	switch {
	case fs.NArg() != 1:
		return o, errors.New("name one scenario file")
	case !(o.scale > 0) || math.IsInf(o.scale, 1):
		return o, fmt.Errorf("--time-scale %v: want a finite number > 0", o.scale)
	case o.maxConns < 0:
		return o, fmt.Errorf("--max-conns %d: want a number >= 0 (0: what the simulation needs)", o.maxConns)
	case fs.Changed("runs") && o.runs < 1:
		return o, fmt.Errorf("--runs %d: want a number >= 1", o.runs)
	case o.control != "" && o.target == "":
		return o, errors.New("--control needs --target: the in-process test server is fresh for every run")
	}
	if o.target != "" {
		if err := realhttp.CheckTarget(o.target); err != nil {
			return o, fmt.Errorf("--target: %v", err)
		}
	}
	if o.control != "" {
		if err := realhttp.CheckControlURL(o.control); err != nil {
			return o, fmt.Errorf("--control: %v", err)
		}
	}
	return o, nil
}

func replay(c *cli, fs *flag.FlagSet) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab replay: "+format+"\n", args...)
		return code
	}
	// Everything is checked before anything is touched.
	o, err := replayFlags(fs)
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	lim, ok := readLimits(c, fs)
	if !ok {
		return exitBadInput
	}
	sc, err := scenarios.LoadContext(c.ctx, fs.Arg(0))
	if c.done("loading " + fs.Arg(0)) {
		return exitFailed
	}
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return exitBadInput
	}
	if fs.Changed("runs") {
		sc.Runs = o.runs
	}
	if fs.Changed("seed") {
		sc.Seed = o.seed
	}
	if err := sc.Validate(); err != nil {
		return fail(exitBadInput, "%s: %v", sc.Name, err)
	}
	if err := sim.CheckStrategies(sc, o.only); err != nil {
		return fail(exitBadInput, "%v", err)
	}
	if err := realhttp.CheckTimeScale(o.scale, sc); err != nil {
		return fail(exitBadInput, "--time-scale %v: %v", o.scale, err)
	}
	if sc.Graph() {
		for _, st := range replayed(sc, o.only) {
			if path, err := realhttp.GraphUnsupported(sc, st); err != nil {
				line, col := sc.Position(path)
				return fail(exitBadInput, "%s:%d:%d: %s: %v", sc.File(), line, col, path, err)
			}
		}
		if o.target != "" && o.control == "" {
			return fail(exitBadInput, "--target without --control: a graph's figures per service come from its control endpoint; name it with --control (herdlab serve prints it)")
		}
	}
	if sc.Server.Model == scenarios.ModelOCC && o.target == "" {
		return fail(exitBadInput, "the test server has no occ model: simulate it with herdlab run, or name a --target")
	}
	if !refuseLintErrors(c, []*scenarios.Scenario{sc}, o.only) || !lim.fit(c, []*scenarios.Scenario{sc}, sim.Options{Strategies: o.only}) {
		return exitBadInput
	}
	strategies := replayed(sc, o.only)
	if o.target != "" && o.control == "" && len(strategies)*sc.Runs > 1 {
		return fail(exitBadInput, "--target without --control: %d runs (%d strategies x %d) would share one scenario clock, and all but the first would miss the outages; "+
			"name the target's control URL with --control (herdlab serve prints it), or replay one run (--strategy NAME --runs 1)",
			len(strategies)*sc.Runs, len(strategies), sc.Runs)
	}
	var ctl *realhttp.Control
	if o.control != "" {
		ctl = &realhttp.Control{URL: o.control}
		if err := checkTarget(c.ctx, ctl, sc, o.scale); err != nil {
			return fail(exitBadInput, "--control %s: %v", o.control, err)
		}
	}
	if o.out == "" {
		o.out = filepath.Join("out", sc.Name+"-real")
	}
	stage, err := results.StageDir(o.out)
	if err != nil {
		return fail(exitBadInput, "--out: %v", err)
	}
	defer stage.Abort()

	// The simulation first: it sizes the connections, and is compared
	// with the replay.
	simulated, err := sim.Run(c.ctx, sc, lim.options(sim.Options{Strategies: o.only}))
	if err != nil {
		if c.ctx.Err() != nil {
			return fail(exitFailed, "interrupted while simulating: nothing written")
		}
		return fail(exitFailed, "simulating for the comparison: %v", err)
	}
	need := realhttp.DriverConnsNeeded(sc, simulated.Runs)
	conns := o.maxConns
	switch {
	case conns == 0:
		conns = max(realhttp.DriverDefaultMaxConns, need.Conns)
	case conns < need.Conns:
		return fail(exitBadInput, "--max-conns %d: %v; raise --max-conns to %d or more (or leave it out to size it so)", conns, need, need.Conns)
	}
	files := conns + 64
	if o.target == "" {
		files = 2*conns + 64 // the in-process server holds the other ends
	}
	if err := realhttp.DriverCheckFileLimit(files); err != nil {
		return fail(exitBadInput, "%d connections: %v", conns, err)
	}
	if o.target != "" && ctl == nil {
		fmt.Fprintln(c.stderr, "herdlab replay: note: without --control, the comparison assumes that the target's outages start when the replay does, "+
			"and processed, duplicates, wasted work and lost responses are left at 0: the target alone sees them")
	}

	dlq, err := os.Create(filepath.Join(stage.Path(), "dlq.jsonl"))
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	defer dlq.Close()
	buckets := len(simulated.Runs[0].Series)
	var bar *progress
	if !o.quiet {
		bar = startProgress(c.stderr, sc.Name+" over real HTTP", len(strategies)*sc.Runs*buckets)
	}
	rp := replayer{sc: sc, target: o.target, ctl: ctl, opts: realhttp.DriverOptions{TimeScale: o.scale, DLQ: dlq, MaxConns: conns}}
	var (
		groups  [][]*results.Run // the runs of each strategy replayed
		late    []string         // why runs could not keep time
		partial bool
		done    int // runs done
	)
	for _, st := range strategies {
		if partial {
			break
		}
		var group []*results.Run
		for run := 0; run < sc.Runs && !partial; run++ {
			first := done * buckets
			note := fmt.Sprintf("%s, run %d of %d", st.Name, run+1, sc.Runs)
			bar.set(first, note)
			rp.opts.Progress = func(n int) { bar.set(first+n, note) }
			r, stats, err := rp.replay(c.ctx, st, run)
			done++
			switch {
			case err != nil && c.ctx.Err() != nil: // SIGINT or SIGTERM
				partial = true
			case err != nil:
				bar.finish()
				return fail(exitFailed, "%s, run %d: %v", st.Name, run+1, err)
			}
			if err := stats.Check(); err != nil && !partial {
				late = append(late, fmt.Sprintf("%s, run %d: %v", st.Name, run+1, err))
			}
			if r != nil {
				group = append(group, r)
			}
		}
		if len(group) > 0 {
			groups = append(groups, group)
		}
	}
	bar.finish()
	if err := dlq.Sync(); err != nil {
		return fail(exitFailed, "dlq.jsonl: %v", err)
	}
	if err := dlq.Close(); err != nil {
		return fail(exitFailed, "dlq.jsonl: %v", err)
	}

	// Interrupted, every strategy keeps as many runs as the last one got.
	n := sc.Runs
	for _, g := range groups {
		n = min(n, len(g))
	}
	real := *sc
	real.Runs = max(n, 1)
	var runs []*results.Run
	for _, g := range groups {
		runs = append(runs, g[:min(len(g), real.Runs)]...)
	}
	res := &sim.Result{Summary: sim.Summary(&real, runs), Runs: runs}
	res.Summary.Partial = partial
	if err := writeReplay(stage, &real, res, simulated); err != nil {
		return fail(exitFailed, "%v", err)
	}
	if !o.quiet {
		fmt.Fprintf(c.stdout, "%s over real HTTP (time scale %v)\n\n", sc.Name, o.scale)
		results.WriteTable(c.stdout, res.Summary)
		fmt.Fprintf(c.stdout, "\nreport: %s; comparison with the simulation: %s\n", filepath.Join(stage.Dir(), "report.md"), filepath.Join(stage.Dir(), "comparison.md"))
	}
	for _, l := range late {
		fmt.Fprintf(c.stderr, "herdlab replay: %s\n", l)
	}
	switch {
	case partial:
		return fail(exitFailed, "interrupted: the results are partial")
	case len(late) > 0:
		return fail(exitFailed, "the herd did not go out as simulated: the figures above are not the scenario's")
	}
	return exitOK
}

// replayed returns the strategies to replay, in the file's order.
func replayed(sc *scenarios.Scenario, only []string) []*scenarios.Strategy {
	var out []*scenarios.Strategy
	for i := range sc.Strategies {
		if len(only) == 0 || slices.Contains(only, sc.Strategies[i].Name) {
			out = append(out, &sc.Strategies[i])
		}
	}
	return out
}

// checkTarget checks that the server behind ctl serves sc's server model
// at the time scale of the replay.
func checkTarget(ctx context.Context, ctl *realhttp.Control, sc *scenarios.Scenario, scale float64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := ctl.State(ctx)
	switch {
	case err != nil:
		return err
	case st.Fingerprint != realhttp.Fingerprint(sc) && sc.Graph():
		return fmt.Errorf("the target serves scenario %s with other services than %s (or a single server): serve the same file", st.Scenario, sc.File())
	case st.Fingerprint != realhttp.Fingerprint(sc):
		return fmt.Errorf("the target serves scenario %s with another server section (or other strategy timeouts) than %s: serve the same file", st.Scenario, sc.File())
	case st.TimeScale != scale:
		return fmt.Errorf("the target runs at time scale %v, the replay at %v: give both the same --time-scale", st.TimeScale, scale)
	case st.Counts() == nil:
		return errors.New("the target reports no counts (a herdlab serve older than this replay, or a bare test server): serve the scenario with this version of herdlab serve")
	}
	return nil
}

// replayer replays one run at a time: against a fresh in-process test
// server (a realhttp.Graph, of one service for a single server), or
// against the target, reset through its control endpoint when there is
// one.
type replayer struct {
	sc     *scenarios.Scenario
	target string
	ctl    *realhttp.Control
	opts   realhttp.DriverOptions
}

// replay replays run run of st, and adds what only the server sees to
// the run when it can know it.
func (p *replayer) replay(ctx context.Context, st *scenarios.Strategy, run int) (*results.Run, realhttp.DriverStats, error) {
	opts := p.opts
	if p.target == "" {
		return realhttp.ReplayGraph(ctx, p.sc, st, run, opts)
	}
	opts.Target = p.target
	if p.ctl == nil {
		return realhttp.Replay(ctx, p.sc, st, run, opts)
	}
	// Reset for the run's strategy (its edge policies, its deadline),
	// then the target's counts once it is idle.
	if _, err := p.ctl.ResetStrategy(ctx, sim.RunSeed(p.sc.Seed, run), st.Name); err != nil {
		return nil, realhttp.DriverStats{}, fmt.Errorf("resetting the target: %w", err)
	}
	r, stats, err := realhttp.Replay(ctx, p.sc, st, run, opts)
	if r != nil && err == nil {
		after, cerr := p.ctl.Idle(ctx)
		if cerr != nil {
			return r, stats, fmt.Errorf("reading the target's counts: %w", cerr)
		}
		counts := after.Counts()
		if counts == nil {
			return r, stats, errors.New("the target reports no counts: serve it with this version of herdlab serve")
		}
		counts.AddTo(r)
	}
	return r, stats, err
}

// writeReplay writes the replay's files, the comparison with the
// simulation among them, into the staged folder (beside dlq.jsonl), and
// swaps the folder in.
func writeReplay(stage *results.Stage, sc *scenarios.Scenario, real, simulated *sim.Result) error {
	files, err := outputs.Files(context.Background(), sc, real, &plots.Options{})
	if err != nil {
		return err
	}
	chart, err := plots.ComparisonChart(real.Summary, real.Runs, simulated.Runs, plots.Options{})
	if err != nil {
		return err
	}
	files = append(files,
		results.File{Name: "comparison.png", Write: results.Raw(chart.Data)},
		results.File{Name: "comparison.md", Write: func(w io.Writer) error {
			return results.WriteComparison(w, simulated.Summary, real.Summary, "comparison.png")
		}},
	)
	if err := stage.WriteFiles(files); err != nil {
		return err
	}
	return stage.Commit()
}
