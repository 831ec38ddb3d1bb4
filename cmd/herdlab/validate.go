package main

import (
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/scenarios"
)

var validateCmd = &command{
	summary: `Check scenario files without running them.

For each file, prints "FILE: ok" and a line describing what it will
simulate, or every problem found, as FILE:LINE:COL: field.path: problem.
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
			}
			lintErrors(c, "validate", []*scenarios.Scenario{s})
		}
		return code
	},
}
