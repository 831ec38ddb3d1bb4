package main

import (
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/sweep"
)

var validateCmd = &command{
	summary: `Check scenario files without running them.

For each file, prints "FILE: ok", a line describing what it will
simulate and the most memory its runs will take, or every
problem found, as FILE:LINE:COL: field.path: problem.
A file is refused here for everything herdlab run would refuse it for
before running: its runs' memory beyond the limit (--max-memory), the
events of a graph's fan-outs and attempts beyond the event budget
(--max-events), more requests than herdlab counts (a closed loop's, a
poisson rate's), more rows than timeseries.csv or services.csv may
have, and retries that never wait (lint's HL009 retry-spin); and, for a
file with a sweep: section, what herdlab sweep refuses before running:
a point whose retries never wait, the point that needs the most memory.
Exits 2 when any file is invalid.`,
	usage: "FILE.yaml...",
	flags: func(fs *flag.FlagSet) {
		fs.BoolP("quiet", "q", false, "print only problems")
		limitFlags(fs)
	},
	run: func(c *cli, fs *flag.FlagSet) int {
		if fs.NArg() == 0 {
			fmt.Fprintln(c.stderr, "herdlab validate: name at least one scenario file")
			return exitBadInput
		}
		quiet, _ := fs.GetBool("quiet")
		lim, ok := readLimits(c, fs)
		if !ok {
			return exitBadInput
		}
		code := exitOK
		for _, file := range fs.Args() {
			s, err := scenarios.LoadContext(c.ctx, file)
			if c.done("checking " + file) {
				return exitFailed
			}
			if err != nil {
				fmt.Fprintln(c.stderr, err)
				code = exitBadInput
				continue
			}
			// What run refuses before it runs: the spins, then the
			// requests, events, rows and memory.
			loaded := []*scenarios.Scenario{s}
			if spins, fits := refuseLintErrors(c, loaded, nil), lim.fit(c, loaded, sim.Options{}); !spins || !fits {
				code = exitBadInput
				continue
			}
			// And what sweep refuses of the file's sweep: section: a
			// point that spins, the point that needs the most memory.
			if s.Sweep != nil {
				err := sweep.Check(c.ctx, s, s.Sweep.Vary, s.Sweep.Metric, lim.memory, lim.events)
				if c.done("checking the sweep of " + file) {
					return exitFailed
				}
				if err != nil {
					fmt.Fprintf(c.stderr, "%s: sweep: %v%s\n", file, err, lim.note())
					code = exitBadInput
					continue
				}
			}
			if !quiet {
				fmt.Fprintf(c.stdout, "%s: ok\n  %s: %s\n", file, s.Name, s.Describe())
				fmt.Fprintf(c.stdout, "  memory: %s\n", memoryLine(s, lim))
			}
		}
		return code
	},
}

// memoryLine says what running s with herdlab run's defaults (and the
// limits lim) may take at its peak: sim.Estimate, which --max-memory
// checks. It is an upper bound (it counts every pending event a request
// may have), so the line says "up to".
func memoryLine(s *scenarios.Scenario, lim limits) string {
	n := sim.Estimate(s, lim.options(sim.Options{}))
	runs := "runs"
	if n.Runs == 1 {
		runs = "run"
	}
	return fmt.Sprintf("up to %s (%d %s, %d at once: the estimate --max-memory checks)", sim.BytesText(n.Memory()), n.Runs, runs, n.AtOnce)
}
