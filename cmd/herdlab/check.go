package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/checks"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

var checkCmd = &command{
	summary: `Run scenarios and judge their checks: a gate for CI.

Lints each scenario's retry settings (no simulation), runs it, and judges
its checks: section, printing one row per check (strategy, figure, bound,
value, PASS or FAIL). With runs > 1 a check passes only when the whole 95%
confidence interval satisfies it. Exits 0 when every check passes, 1 when
one fails, 2 for bad input. Lint findings are warnings unless --strict.`,
	usage: "FILE.yaml... [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("format", "text", "output: text, json or junit (JUnit XML, for CI systems)")
		fs.Bool("lint", false, "lint only: no simulation")
		fs.Bool("strict", false, "lint findings that are not silenced fail the check")
		fs.String("baseline", "", "also fail when a figure regresses from the baseline DIR/NAME.json (see run --save-baseline)")
		fs.Float64("tolerance", 0.05, "how much worse than the baseline a figure may get, as a fraction")
		simulationFlags(fs)
	},
	run: checkScenarios,
}

func checkScenarios(c *cli, fs *flag.FlagSet) int {
	if fs.NArg() == 0 {
		fmt.Fprintln(c.stderr, "herdlab check: name at least one scenario file")
		return exitBadInput
	}
	format, _ := fs.GetString("format")
	lintOnly, _ := fs.GetBool("lint")
	strict, _ := fs.GetBool("strict")
	baseline, _ := fs.GetString("baseline")
	tolerance, _ := fs.GetFloat64("tolerance")
	parallel, _ := fs.GetInt("parallel")
	write := map[string]func(*cli, []*checks.Report) error{
		"text":  func(c *cli, r []*checks.Report) error { return checks.WriteText(c.stdout, r) },
		"json":  func(c *cli, r []*checks.Report) error { return checks.WriteJSON(c.stdout, r) },
		"junit": func(c *cli, r []*checks.Report) error { return checks.WriteJUnit(c.stdout, r) },
	}[format]
	if write == nil {
		fmt.Fprintf(c.stderr, "herdlab check: --format %q: want text, json or junit\n", format)
		return exitBadInput
	}
	if tolerance < 0 {
		fmt.Fprintf(c.stderr, "herdlab check: --tolerance %v: want a fraction >= 0\n", tolerance)
		return exitBadInput
	}
	loaded, ok := loadAll(c, fs.Args())
	if !ok || !override(c, fs, loaded) {
		return exitBadInput
	}

	ctx := c.ctx
	var reports []*checks.Report
	failed := 0
	for i, sc := range loaded {
		r := &checks.Report{File: sc.File(), Scenario: sc.Name, Runs: sc.Runs, Strict: strict, Checks: []checks.Result{}, Lint: []checks.Finding{}}
		for _, f := range scenarios.Lint(sc) {
			r.Lint = append(r.Lint, checks.Finding{Rule: f.Rule.ID, Name: f.Rule.Name, Path: f.Path,
				Line: f.Line, Col: f.Col, Message: f.Msg, Silenced: f.Silenced})
		}
		if !lintOnly {
			bar := startProgress(c.stderr, fmt.Sprintf("%s (%d of %d)", sc.Name, i+1, len(loaded)), countRuns(sc, nil)*sim.ProgressUnits)
			res, err := sim.Run(ctx, sc, sim.Options{Parallel: parallel, Progress: bar.add})
			bar.finish()
			if err != nil {
				fmt.Fprintf(c.stderr, "herdlab check: %s: %v\n", sc.Name, err)
				return exitFailed
			}
			r.Checks = append(r.Checks, checks.Evaluate(sc, res.Summary)...)
			if baseline != "" {
				base, err := readBaseline(baseline, sc.Name)
				switch {
				case errors.Is(err, os.ErrNotExist):
					fmt.Fprintf(c.stderr, "herdlab check: no baseline for %s in %s: skipped (write one with herdlab run --save-baseline %s)\n", sc.Name, baseline, baseline)
				case err != nil:
					fmt.Fprintf(c.stderr, "herdlab check: %v\n", err)
					return exitBadInput
				default:
					r.Checks = append(r.Checks, checks.Baseline(res.Summary, base, tolerance)...)
				}
			}
		}
		failed += r.Failed()
		reports = append(reports, r)
	}
	if err := write(c, reports); err != nil {
		fmt.Fprintf(c.stderr, "herdlab check: %v\n", err)
		return exitFailed
	}
	if format == "text" {
		passed := 0
		for _, r := range reports {
			for _, ch := range r.Checks {
				if ch.Pass {
					passed++
				}
			}
		}
		fmt.Fprintf(c.stdout, "check: %d passed, %d failed\n", passed, failed)
	}
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

// simulationFlags adds the flags of the commands that simulate: --runs,
// --seed (see override) and --parallel.
func simulationFlags(fs *flag.FlagSet) {
	fs.Int("runs", 0, "independent replications (default: the scenario's runs)")
	fs.Uint64("seed", 0, "seed of the scenario; each run derives its own from it (default: the scenario's seed)")
	fs.Int("parallel", 0, "runs at once (default: the number of CPUs)")
}

// override applies --runs and --seed to the scenarios and validates them
// again; false when one is now invalid (reported).
func override(c *cli, fs *flag.FlagSet, loaded []*scenarios.Scenario) bool {
	runs, _ := fs.GetInt("runs")
	seed, _ := fs.GetUint64("seed")
	for _, sc := range loaded {
		if fs.Changed("runs") {
			sc.Runs = runs
		}
		if fs.Changed("seed") {
			sc.Seed = seed
		}
		if err := sc.Validate(); err != nil {
			fmt.Fprintf(c.stderr, "herdlab %s: %s: %v\n", fs.Name(), sc.Name, err)
			return false
		}
	}
	return true
}

// baselineFile is where a scenario's baseline lives in dir.
func baselineFile(dir, name string) string { return filepath.Join(dir, name+".json") }

// readBaseline reads the baseline summary of scenario name from dir.
func readBaseline(dir, name string) (*results.Summary, error) {
	f, err := os.Open(baselineFile(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := results.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", f.Name(), err)
	}
	return s, nil
}
