package main

import (
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

var validateCmd = &command{
	summary: `Check scenario files without running them.

For each file, prints "FILE: ok", a line describing what it will
simulate and the most memory its runs will take, or every
problem found, as FILE:LINE:COL: field.path: problem.
Exits 2 when any file is invalid. Settings that lint calls errors (retries
that never wait: HL009) are printed too; the file is valid, and runs
within its event budget, but 'herdlab check' fails it.`,
	usage: "FILE.yaml...",
	flags: func(fs *flag.FlagSet) {
		fs.BoolP("quiet", "q", false, "print only problems")
	},
	run: func(c *cli, fs *flag.FlagSet) int {
		if fs.NArg() == 0 {
			fmt.Fprintln(c.stderr, "herdlab validate: name at least one scenario file")
			return exitBadInput
		}
		quiet, _ := fs.GetBool("quiet")
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
			if !quiet {
				fmt.Fprintf(c.stdout, "%s: ok\n  %s: %s\n", file, s.Name, s.Describe())
				fmt.Fprintf(c.stdout, "  memory: %s\n", memoryLine(s))
			}
			lintErrors(c, "validate", []*scenarios.Scenario{s})
		}
		return code
	},
}

// memoryLine says what running s with herdlab run's defaults may take at
// its peak: sim.Estimate, which --max-memory checks. It is an upper
// bound (it counts every pending event a request may have), so the line
// says "up to".
func memoryLine(s *scenarios.Scenario) string {
	n := sim.Estimate(s, sim.Options{})
	runs := "runs"
	if n.Runs == 1 {
		runs = "run"
	}
	return fmt.Sprintf("up to %s (%d %s, %d at once: the estimate --max-memory checks)", results.Bytes(n.Memory()), n.Runs, runs, n.AtOnce)
}
