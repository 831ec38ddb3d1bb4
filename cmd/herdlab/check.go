package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

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
value, PASS, FAIL or SKIP). With runs > 1 a check passes only when the
whole 95% confidence interval satisfies it. With --strategy, only those
strategies run, and checks on the others (comparisons naming one
included) are skipped: neither passed nor failed. Exits 0 when no check
fails, 1 when one does, 2 for bad input. Lint findings are warnings
unless --strict, but for those of error rules (HL009 retry-spin), which
always fail; a scenario with one is not run (exit 2, as herdlab run
refuses it): only --lint reports it as a failed check.

With --baseline, a watched figure fails when it gets worse than the
baseline by more than --tolerance: relative to the baseline's value where
that is 1 or more (0.05: by 5% of it), absolute, in the figure's own unit,
where it is below 1 (0.05: by 0.05), as for ratios such as
delivered_ratio, counts of 0 and times under a second. Each baseline row
says which ("+5% relative", "-0.05 absolute").`,
	usage: "FILE.yaml... [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("format", "text", "output: text, json or junit (JUnit XML, for CI systems)")
		fs.Bool("lint", false, "lint only: no simulation")
		fs.Bool("strict", false, "lint findings that are not silenced fail the check")
		fs.String("baseline", "", "also fail when a figure regresses from the baseline DIR/NAME.json (see run --save-baseline)")
		fs.Float64("tolerance", 0.05, "how much worse than the baseline a figure may get: a fraction of the baseline's value where it is >= 1, the figure's own units where it is below 1 (ratios, zeros)")
		fs.StringArray("strategy", nil, "run and judge only this strategy (repeatable; default all); checks on the others are skipped")
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
	only, _ := fs.GetStringArray("strategy")
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
	if !(tolerance >= 0) || math.IsInf(tolerance, 1) {
		fmt.Fprintf(c.stderr, "herdlab check: --tolerance %v: want a finite fraction >= 0\n", tolerance)
		return exitBadInput
	}
	lim, loaded, code := loadToSimulate(c, fs, only)
	if code != exitOK {
		return code
	}
	if !lintOnly && (!refuseLintErrors(c, loaded, only) || !lim.fit(c, loaded, sim.Options{Strategies: only, Parallel: parallel})) {
		return exitBadInput
	}

	ctx := c.ctx
	var reports []*checks.Report
	failed := 0
	for i, sc := range loaded {
		r := &checks.Report{File: sc.File(), Scenario: sc.Name, Runs: sc.Runs, Only: ran(sc, only), Strict: strict, Checks: []checks.Result{}, Lint: []checks.Finding{}}
		for _, f := range scenarios.Lint(sc) {
			cf := checks.Finding{Rule: f.Rule.ID, Name: f.Rule.Name, Path: f.Path,
				Line: f.Line, Col: f.Col, Message: f.Msg, Silenced: f.Silenced, Error: f.Rule.Error}
			if f.File != sc.File() {
				cf.File = f.File // in a configuration file the scenario reads
			}
			r.Lint = append(r.Lint, cf)
		}
		if !lintOnly {
			bar := startProgress(c.stderr, fmt.Sprintf("%s (%d of %d)", sc.Name, i+1, len(loaded)), countRuns(sc, only)*sim.ProgressUnits)
			res, err := sim.Run(ctx, sc, lim.options(sim.Options{Strategies: only, Parallel: parallel, Progress: bar.add}))
			bar.finish()
			if c.done("simulating " + sc.Name) {
				return exitFailed
			}
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
					r.Checks = append(r.Checks, checks.Result{Figure: "baseline", Bound: "as in the baseline", Text: "no baseline",
						Skipped: true, Note: "no baseline for " + sc.Name + " in " + baseline})
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
		passed, skipped := 0, 0
		for _, r := range reports {
			passed += r.Passed()
			skipped += r.Skipped()
		}
		fmt.Fprintf(c.stdout, "check: %s\n", checks.Tally(passed, failed, skipped))
	}
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

// ran returns the names of sc's strategies in only, in the scenario's
// order, or nil when only is empty (all run).
func ran(sc *scenarios.Scenario, only []string) []string {
	var names []string
	for _, st := range sc.Strategies {
		if slices.Contains(only, st.Name) {
			names = append(names, st.Name)
		}
	}
	return names
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
