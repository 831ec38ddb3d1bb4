package lab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/sweep"
)

// A scenario with a sweep: section is swept as herdlab sweep FILE sweeps
// it: every point of its grid, every strategy, the scenario's runs. Its
// units are the sweep's (sweep.Plan.RunUnit); SweepUnits runs some, and
// SweepSummarize builds the sweep of them all, which is sweep.json of
// herdlab sweep, and the heatmap data the page draws.

// SweepPart is the answer to SweepUnits: its records (a JSON array of
// results.RunRecord, as herdlab sweep writes each), or the error.
type SweepPart struct {
	Records  []byte    `json:"records,omitempty"`
	Error    string    `json:"error,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
}

// SweepResult is the answer to a sweep: sweep.json and the heatmap data,
// or the error that stopped it.
type SweepResult struct {
	Sweep    *results.Sweep        `json:"sweep,omitempty"`
	Heatmap  *results.SweepHeatmap `json:"heatmap,omitempty"`
	Error    string                `json:"error,omitempty"`
	Problems []Problem             `json:"problems,omitempty"`
}

// sweepFailure is the result of a sweep that err stopped.
func sweepFailure(err error) SweepResult {
	return SweepResult{Error: err.Error(), Problems: problems(err)}
}

// sweepUnits returns the units of the scenario's sweep, from its grid
// alone (points x strategies x runs): what validate says as you type,
// without building every point.
func sweepUnits(sc *scenarios.Scenario) (units, points int) {
	if sc.Sweep == nil || len(sc.Sweep.Vary) == 0 {
		return 0, 0
	}
	points = 1
	for _, v := range sc.Sweep.Vary {
		points *= len(v.Values)
	}
	return points * len(sc.Strategies) * sc.Runs, points
}

// plan parses src and plans its sweep, every point checked; o names
// the memory limit.
func plan(ctx context.Context, src, file string, o Options) (*sweep.Plan, error) {
	sc, err := scenarios.ParseContext(ctx, file, []byte(src))
	if err != nil {
		return nil, err
	}
	if sc.Sweep == nil {
		return nil, errors.New("the scenario has no sweep: section to sweep")
	}
	p, err := sweep.NewPlan(ctx, sc, sc.Sweep.Vary, sc.Sweep.Metric, nil)
	if err != nil {
		return nil, err
	}
	p.MaxMemoryName = o.MaxMemoryName
	return p, nil
}

// SweepUnits runs the units of the sweep of src named by their numbers,
// one after another. Progress is the share of these units done.
func SweepUnits(ctx context.Context, src, file string, units []int, o Options) SweepPart {
	fail := func(err error) SweepPart { return SweepPart{Error: err.Error(), Problems: problems(err)} }
	p, err := plan(ctx, src, file, o)
	if err != nil {
		return fail(err)
	}
	if _, err := p.Fit(1, o.MaxMemory, o.MaxEvents); err != nil {
		return fail(err)
	}
	recs := make([]results.RunRecord, 0, len(units))
	done := 0
	point, at := -1, (*scenarios.Scenario)(nil)
	for _, k := range units {
		if k < 0 || k >= p.Spec.Units() {
			return fail(fmt.Errorf("no unit %d: the sweep has %d", k, p.Spec.Units()))
		}
		if pt, _, _ := p.Unit(k); pt != point {
			if at, err = p.Point(pt); err != nil {
				return fail(err)
			}
			point = pt
		}
		var progress func(int)
		if o.Progress != nil {
			progress = func(n int) {
				done += n
				o.Progress(min(float64(done)/float64(sim.ProgressUnits*len(units)), 1))
			}
		}
		rec, err := p.RunUnit(ctx, at, k, progress, o.MaxEvents)
		if err != nil {
			return fail(err)
		}
		recs = append(recs, rec)
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return fail(err)
	}
	return SweepPart{Records: b}
}

// SweepSummarize builds the sweep of src from parts (SweepUnits'
// records, in any order), which must hold every unit once.
func SweepSummarize(src, file string, parts [][]byte) SweepResult {
	p, err := plan(context.Background(), src, file, Options{})
	if err != nil {
		return sweepFailure(err)
	}
	var recs []results.RunRecord
	for _, part := range parts {
		var rs []results.RunRecord
		if err := json.Unmarshal(part, &rs); err != nil {
			return sweepFailure(fmt.Errorf("decoding a part's records: %w", err))
		}
		recs = append(recs, rs...)
	}
	return build(p, recs)
}

// Sweep runs every unit of the sweep of src, o.Parallel at once (0: one
// per CPU), and builds the sweep: herdlab ui's sweeps.
func Sweep(ctx context.Context, src, file string, o Options) SweepResult {
	p, err := plan(ctx, src, file, o)
	if err != nil {
		return sweepFailure(err)
	}
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	if parallel, err = p.Fit(parallel, o.MaxMemory, o.MaxEvents); err != nil {
		return sweepFailure(err)
	}
	if o.Admit != nil {
		granted, release, err := o.Admit(func(q int) int64 { return p.Memory(q, o.MaxMemory, o.MaxEvents) }, parallel)
		if err != nil {
			return SweepResult{Error: err.Error()}
		}
		defer release()
		parallel = granted
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	n := p.Spec.Units()
	recs := make([]results.RunRecord, n)
	var mu sync.Mutex
	done := 0
	progress := func(units int) {
		if o.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done += units
		o.Progress(min(float64(done)/float64(sim.ProgressUnits*n), 1))
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Go(func() {
			point, at := -1, (*scenarios.Scenario)(nil)
			for k := range next {
				pt, _, _ := p.Unit(k)
				if pt != point {
					s, err := p.Point(pt)
					if err != nil {
						stop(err)
						continue
					}
					point, at = pt, s
				}
				rec, err := p.RunUnit(ctx, at, k, progress, o.MaxEvents)
				if err != nil {
					stop(err)
					continue
				}
				recs[k] = rec
			}
		})
	}
feed:
	for k := range n {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return sweepFailure(err)
	}
	return build(p, recs)
}

// build builds the sweep of p from its records, in any order, which must
// hold every unit once.
func build(p *sweep.Plan, recs []results.RunRecord) SweepResult {
	index := map[string]int{}
	for i, name := range p.Spec.Strategies {
		index[name] = i
	}
	unit := func(r *results.RunRecord) int {
		return (r.Point*len(p.Spec.Strategies)+index[r.Strategy])*p.Spec.Runs + r.Run
	}
	slices.SortFunc(recs, func(a, b results.RunRecord) int { return cmp.Compare(unit(&a), unit(&b)) })
	if len(recs) != p.Spec.Units() {
		return SweepResult{Error: fmt.Sprintf("the parts hold %d runs, the sweep makes %d", len(recs), p.Spec.Units())}
	}
	for k := range recs {
		if _, ok := index[recs[k].Strategy]; !ok || unit(&recs[k]) != k {
			return SweepResult{Error: fmt.Sprintf("the parts do not hold every run of the sweep once: unit %d is missing or twice", k)}
		}
	}
	s, err := sweep.Build(&sweep.Records{Spec: p.Spec, Metric: p.Metric, List: recs}, p.Metric)
	if err != nil {
		return sweepFailure(err)
	}
	return SweepResult{Sweep: s, Heatmap: results.SweepHeatmapOf(s)}
}
