package main

import (
	"fmt"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/scenarios"
)

// The reference and the schema in docs/ are what this writes now; the
// tests of package main fail when they are stale.
//go:generate sh -c "go run . help scenario --markdown > ../../docs/scenario-reference.md"
//go:generate sh -c "go run . help scenario --schema > ../../docs/scenario.schema.json"

// helpScenario prints the scenario file reference: whole, or the field
// args names and its children; --markdown writes the page of
// docs/scenario-reference.md, --schema the JSON Schema.
func (c *cli) helpScenario(args []string) int {
	fs := flag.NewFlagSet("help scenario", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {}
	markdown := fs.Bool("markdown", false, "write the whole reference as Markdown (docs/scenario-reference.md)")
	schema := fs.Bool("schema", false, "write the JSON Schema of a scenario file (docs/scenario.schema.json)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintf(c.stdout, "Usage: herdlab help scenario [FIELD] [--markdown | --schema]\n\n"+
				"Print the scenario file reference: every field, or FIELD and its children\n"+
				"(such as strategies.backoff, strategies[].backoff or backoff.cap).\n\nFlags:\n%s", fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(c.stderr, "herdlab help scenario: %v\n", err)
		return exitBadInput
	}
	if fs.NArg() > 1 || (*markdown || *schema) && fs.NArg() > 0 || *markdown && *schema {
		fmt.Fprintln(c.stderr, "herdlab help scenario: want one FIELD, or --markdown, or --schema alone")
		return exitBadInput
	}
	ref := scenarios.ScenarioReference()
	switch {
	case *schema:
		b, err := scenarios.Schema()
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab help scenario: %v\n", err)
			return exitFailed
		}
		_, _ = c.stdout.Write(b)
		return exitOK
	case *markdown:
		_ = scenarios.WriteReference(c.stdout, ref, true, true)
		return exitOK
	case fs.NArg() == 0:
		_ = scenarios.WriteReference(c.stdout, ref, false, true)
		return exitOK
	}
	f, near, ok := scenarios.LookupField(ref, fs.Arg(0))
	if !ok {
		fmt.Fprintf(c.stderr, "herdlab help scenario: no field %q; nearest: %s\nRun 'herdlab help scenario' for every field.\n", fs.Arg(0), strings.Join(near, ", "))
		return exitBadInput
	}
	_ = scenarios.WriteReference(c.stdout, []*scenarios.Field{f}, false, false)
	return exitOK
}
