package lab

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// The browser has several cores and WebAssembly one thread: the static
// site's page runs a scenario's runs in several workers, each some of
// them (RunUnits), and one summarises them all (Summarize), which gives
// what Run gives, summary.json byte for byte. A unit is one run of one
// strategy; unit k of a scenario is run k % runs of strategy k / runs, in
// the order sim.Run makes them.

// Part is the answer to RunUnits: its runs, encoded (results.EncodeRuns),
// or the error that stopped it.
type Part struct {
	Runs     []byte    `json:"runs,omitempty"`
	Error    string    `json:"error,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
}

// RunUnits simulates the units of the scenario src named by their
// numbers, one after another. Progress is the share of these units done.
func RunUnits(ctx context.Context, src, file string, units []int, o Options) Part {
	sc, err := scenarios.ParseContext(ctx, file, []byte(src))
	if err != nil {
		return Part{Error: err.Error(), Problems: problems(err)}
	}
	if res, spins := spinning(sc); spins {
		return Part{Error: res.Error, Problems: res.Problems}
	}
	total := len(sc.Strategies) * sc.Runs
	for _, k := range units {
		if k < 0 || k >= total {
			return Part{Error: fmt.Sprintf("no unit %d: the scenario has %d (strategies x runs)", k, total)}
		}
	}
	// What must fit is one run at a time, and the runs done.
	if o.MaxMemory > 0 {
		if _, err := sim.Fit(sc, sim.Options{Parallel: 1, MaxMemoryName: o.MaxMemoryName}, o.MaxMemory); err != nil {
			return Part{Error: err.Error(), Problems: problems(err)}
		}
	}
	var done int
	runs := make([]*results.Run, 0, len(units))
	for _, k := range units {
		var progress func(int)
		if o.Progress != nil {
			progress = func(n int) {
				done += n
				o.Progress(min(float64(done)/float64(sim.ProgressUnits*len(units)), 1))
			}
		}
		r, err := sim.RunOne(ctx, sc, k/sc.Runs, k%sc.Runs, progress, o.MaxEvents)
		if err != nil {
			return Part{Error: err.Error(), Problems: problems(err)}
		}
		runs = append(runs, r)
	}
	var b bytes.Buffer
	if err := results.EncodeRuns(&b, runs); err != nil {
		return Part{Error: err.Error()}
	}
	return Part{Runs: b.Bytes()}
}

// Summarize summarises the runs of parts (RunUnits' answers, in any
// order), which must hold every unit of the scenario src once: the
// result is Run's.
func Summarize(src, file string, parts [][]byte) Result {
	sc, err := scenarios.Parse(file, []byte(src))
	if err != nil {
		return failure(err)
	}
	index := map[string]int{}
	for i, st := range sc.Strategies {
		index[st.Name] = i
	}
	var runs []*results.Run
	for _, p := range parts {
		rs, err := results.DecodeRuns(bytes.NewReader(p))
		if err != nil {
			return failure(err)
		}
		runs = append(runs, rs...)
	}
	unit := func(r *results.Run) int { return index[r.Strategy]*sc.Runs + r.Run }
	slices.SortFunc(runs, func(a, b *results.Run) int { return cmp.Compare(unit(a), unit(b)) })
	for k := range len(sc.Strategies) * sc.Runs {
		if k >= len(runs) || unit(runs[k]) != k || runs[k].Run >= sc.Runs {
			return Result{Error: fmt.Sprintf("the parts do not hold every run of the scenario once: unit %d (strategy %s, run %d) is missing or twice", k, sc.Strategies[k/sc.Runs].Name, k%sc.Runs)}
		}
	}
	if len(runs) != len(sc.Strategies)*sc.Runs {
		return Result{Error: fmt.Sprintf("the parts hold %d runs, the scenario makes %d", len(runs), len(sc.Strategies)*sc.Runs)}
	}
	return summarize(sim.Summary(sc, runs), runs)
}

// summarize returns the result of a run: summary.json and the chart data.
func summarize(s *results.Summary, runs []*results.Run) Result {
	var b bytes.Buffer
	if err := results.WriteJSON(&b, s); err != nil {
		return failure(err)
	}
	charts, err := results.ChartData(s, runs)
	if err != nil {
		return failure(err)
	}
	return Result{Summary: b.String(), Charts: charts}
}
