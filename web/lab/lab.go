// Package lab is what the browser app's engines answer, in Go: the
// problems and controls of a scenario as it is typed, and a run's
// summary.json and chart data. herdlab ui's server and the simulator in
// WebAssembly (web/wasm) both call it, so the page gets the same answers
// from either. It holds no model logic: it parses with scenarios and runs
// with sim, as the CLI does. The JSON is described in web/README.md.
package lab

import (
	"context"
	"errors"
	"sync"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// Problem is a problem of a scenario file, at its line and column (from
// 1), as herdlab validate prints it.
type Problem struct {
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Path    string `json:"path"`
	Message string `json:"message"`
	// Rule names the lint rule of a warning (HL001...); "" for a
	// problem that makes the file invalid.
	Rule string `json:"rule,omitempty"`
}

// Validation is the answer to validate: the file's problems (none for a
// valid file, with Error then empty), lint's warnings (findings the file
// does not silence), what the scenario simulates, and its controls.
type Validation struct {
	Problems []Problem `json:"problems"`
	Error    string    `json:"error,omitempty"`
	Warnings []Problem `json:"warnings"`
	Describe string    `json:"describe,omitempty"`
	Controls []Control `json:"controls"`
	// Units are the runs a valid scenario makes: strategies x runs (see
	// RunUnits).
	Units int `json:"units,omitempty"`
	// SweepUnits and SweepPoints are, for a scenario with a sweep:
	// section, the runs its sweep makes and its points (see SweepUnits).
	SweepUnits  int `json:"sweep_units,omitempty"`
	SweepPoints int `json:"sweep_points,omitempty"`
	// Graph is, for a valid scenario with services:, the shape of its
	// graph, which the page draws before any run (see GraphOf).
	Graph *Graph `json:"graph,omitempty"`
}

// Validate parses and validates the scenario src, named file in messages.
func Validate(src, file string) Validation {
	return ValidateContext(context.Background(), src, file)
}

// ValidateContext is Validate, stopped once ctx is done (checking the
// points of a large sweep takes a while), with ctx's error as the
// validation's Error: herdlab ui's, which stops when its request ends.
func ValidateContext(ctx context.Context, src, file string) Validation {
	v := Validation{Problems: []Problem{}, Warnings: []Problem{}, Controls: Controls(src)}
	sc, err := scenarios.ParseContext(ctx, file, []byte(src))
	if err != nil {
		v.Problems, v.Error = problems(err), err.Error()
		return v
	}
	v.Describe, v.Units = sc.Describe(), len(sc.Strategies)*sc.Runs
	v.SweepUnits, v.SweepPoints = sweepUnits(sc)
	v.Graph = GraphOf(sc)
	for _, f := range scenarios.Lint(sc) {
		if f.Silenced == "" {
			v.Warnings = append(v.Warnings, Problem{Line: f.Line, Col: f.Col, Path: f.Path, Message: f.Rule.Name + ": " + f.Msg, Rule: f.Rule.ID})
		}
	}
	return v
}

// Result is the answer to run: summary.json as herdlab run writes it,
// byte for byte, and the chart data; or the error that stopped it, with
// the problems of the file when it is the file's.
type Result struct {
	Summary  string          `json:"summary,omitempty"`
	Charts   *results.Charts `json:"charts,omitempty"`
	Error    string          `json:"error,omitempty"`
	Problems []Problem       `json:"problems,omitempty"`
}

// Options bound a run.
type Options struct {
	// MaxMemory is the memory the runs may take, as sim.Fit estimates it;
	// a scenario whose one run at a time does not fit is refused. 0: no
	// bound.
	MaxMemory int64
	// MaxMemoryName is how messages name MaxMemory ("--max-memory"
	// when empty).
	MaxMemoryName string
	// MaxEvents is the event budget of one run; 0: sim.DefaultMaxEvents.
	MaxEvents int64
	// Parallel is how many runs go at once; 0: one per CPU.
	Parallel int
	// Admit, when set, admits Run's or Sweep's runs before they start,
	// once the scenario is valid and fits MaxMemory alone (herdlab ui
	// shares one budget among every run in flight): need(p) is the
	// memory, as sim estimates it, that p runs at once take, and most
	// the runs at once MaxMemory and Parallel allow. It returns how many
	// may go at once, from 1 to most, and the function that releases
	// what it granted, which is called when the runs end; or an error
	// that refuses them, which is the result's Error.
	Admit func(need func(parallel int) int64, most int) (parallel int, release func(), err error)
	// Progress, when set, is called with the share of the work done,
	// from 0 to 1, from the runs' goroutines, one call at a time; none
	// after Run returns.
	Progress func(done float64)
}

// Run parses, validates and simulates the scenario src (named file in
// messages), with the scenario's seed and runs, every strategy: what
// herdlab run FILE does.
func Run(ctx context.Context, src, file string, o Options) Result {
	sc, err := scenarios.ParseContext(ctx, file, []byte(src))
	if err != nil {
		return failure(err)
	}
	if res, spins := spinning(sc); spins {
		return res
	}
	opts := sim.Options{MaxMemory: o.MaxMemory, MaxMemoryName: o.MaxMemoryName, MaxEvents: o.MaxEvents, Parallel: o.Parallel}
	if o.Progress != nil {
		total := float64(sim.ProgressUnits * sc.Runs * len(sc.Strategies))
		var mu sync.Mutex
		done := 0
		opts.Progress = func(units int) {
			mu.Lock()
			defer mu.Unlock()
			done += units
			o.Progress(min(float64(done)/total, 1))
		}
	}
	if o.Admit != nil {
		most, err := sim.Fit(sc, opts, o.MaxMemory)
		if err != nil {
			return failure(err)
		}
		parallel, release, err := o.Admit(func(p int) int64 {
			at := opts
			at.Parallel = p
			return sim.Estimate(sc, at).Memory()
		}, most)
		if err != nil {
			return Result{Error: err.Error()}
		}
		defer release()
		opts.Parallel = parallel
	}
	res, err := sim.Run(ctx, sc, opts)
	if err != nil {
		return failure(err)
	}
	return summarize(res.Summary, res.Runs)
}

// spinning refuses, as the CLI does, a scenario that lint's error rules
// find fault with (HL009: retries that never wait): its runs would only
// spin until their event budget, minutes of CPU for nothing.
func spinning(sc *scenarios.Scenario) (Result, bool) {
	found := scenarios.LintErrors(sc, nil)
	if len(found) == 0 {
		return Result{}, false
	}
	res := Result{Problems: []Problem{}}
	for i, f := range found {
		if i == 0 {
			res.Error = f.String() + "; refused: it would only spin until its event budget"
		}
		res.Problems = append(res.Problems, Problem{Line: f.Line, Col: f.Col, Path: f.Path, Message: f.Msg, Rule: f.Rule.ID})
	}
	return res, true
}

// failure is the result of a run that err stopped.
func failure(err error) Result {
	return Result{Error: err.Error(), Problems: problems(err)}
}

// problems lists err's problems, each placed where scenarios placed it.
func problems(err error) []Problem {
	out := []Problem{}
	for _, e := range unjoin(err) {
		var se *scenarios.Error
		if errors.As(e, &se) {
			out = append(out, Problem{Line: se.Line, Col: se.Col, Path: se.Path, Message: se.Msg})
		}
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
