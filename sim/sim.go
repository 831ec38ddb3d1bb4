package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// Options changes how a scenario is run. The zero value runs every
// strategy of the scenario, with its seed and runs, on every core.
type Options struct {
	// Strategies names the strategies to run; none means all.
	Strategies []string
	// Parallel is how many runs go at once; 0 means GOMAXPROCS.
	Parallel int
	// Progress, when set, is called from the runs' goroutines with units
	// of work done; a run is ProgressUnits units. A run's units measure
	// its work, not its simulated time (a run ends when its last request
	// is finished, often long before its horizon): the share of its
	// expected requests finished, against the events they took, and
	// until the first finishes the share of the horizon passed. They are
	// reported every 65,536 events, and the rest when the run ends.
	Progress func(units int)
	// MaxMemory bounds the memory the runs may take, in bytes, as Fit
	// estimates it: fewer runs go at once if need be, and Run refuses a
	// scenario whose one run at a time does not fit. 0 means no bound.
	MaxMemory int64
	// MaxMemoryName is how messages name MaxMemory; "" names the CLI's
	// flag, --max-memory.
	MaxMemoryName string
	// MaxEvents is the event budget of one run: a run that reaches it
	// stops with an error (ErrEventBudget). 0 means DefaultMaxEvents.
	MaxEvents int64
}

// limitName is how messages name the memory limit.
func (o Options) limitName() string {
	if o.MaxMemoryName == "" {
		return "--max-memory"
	}
	return o.MaxMemoryName
}

// bigWorld is the memory of a run (as Estimate counts it) from which its
// world is collected as soon as it ends: a collection costs some
// milliseconds, a run this big takes seconds.
const bigWorld = 64 << 20

// DefaultMaxEvents is the event budget of a run unless Options says
// otherwise: about three minutes of simulation, two orders of magnitude
// more than the largest shipped scenario takes (scenarios/million.yaml,
// 9.3 million events).
const DefaultMaxEvents = 1_000_000_000

// ProgressUnits is the work of one run in Options.Progress.
const ProgressUnits = 100

// Result is what Run returns: the summary, and every run with its time
// series, in the order strategy by strategy, then run by run.
type Result struct {
	Summary *results.Summary
	Runs    []*results.Run
}

// Run simulates every strategy of the scenario sc, sc.Runs times each,
// and summarises. Runs go in parallel, each in one goroutine; the result
// is the same as a sequential run's, whatever the parallelism. sc must be
// valid (see scenarios.Scenario.Validate).
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Result, error) {
	strats, err := pick(sc, opts.Strategies)
	if err != nil {
		return nil, err
	}
	type job struct{ strategy, run int }
	jobs := make([]job, 0, len(strats)*sc.Runs)
	for s := range strats {
		for r := range sc.Runs {
			jobs = append(jobs, job{s, r})
		}
	}
	needs := Estimate(sc, opts)
	if err := needs.check(sc, opts.MaxMemory, false, opts.limitName()); err != nil {
		return nil, err
	}
	parallel := needs.fit(opts.MaxMemory)
	// A finished run keeps its figures, time series and histogram, not
	// its world; a big world is collected at once, before the next run
	// allocates its own beside the garbage (which would double the
	// peak memory of a scenario with several runs).
	big := needs.PerRun >= bigWorld
	// The first failure (or ctx) stops every run: it is the error.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	runs := make([]*results.Run, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, len(jobs)) {
		wg.Go(func() {
			for k := range next {
				j := jobs[k]
				r, err := runOne(ctx, sc, strats[j.strategy], j.run, opts.Progress, opts.MaxEvents)
				if big {
					runtime.GC()
				}
				if err != nil {
					stop(err)
					continue
				}
				runs[k] = r
			}
		})
	}
feed:
	for k := range jobs {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return &Result{Summary: Summary(sc, runs), Runs: runs}, nil
}

// RunOne simulates replication run of the strategy of sc at index
// strategy, in the calling goroutine; it is one of the runs Run makes, and
// gives the same result. progress, when not nil, is called with units of
// work done, ProgressUnits in all. maxEvents is the run's event budget (0:
// DefaultMaxEvents). sc must be valid.
func RunOne(ctx context.Context, sc *scenarios.Scenario, strategy, run int, progress func(units int), maxEvents int64) (*results.Run, error) {
	if strategy < 0 || strategy >= len(sc.Strategies) || run < 0 {
		return nil, fmt.Errorf("scenario %s has no strategy %d, run %d", sc.Name, strategy, run)
	}
	return runOne(ctx, sc, strategy, run, progress, maxEvents)
}

// runOne runs the graph engine: a single server is a graph of one
// service (oneService), as the server is the scenario's.
func runOne(ctx context.Context, sc *scenarios.Scenario, strategy, run int, progress func(units int), maxEvents int64) (*results.Run, error) {
	g := newRun(sc, strategy, run, RunSeed(sc.Seed, run))
	g.setLimits(progress, expectedRequests(sc), maxEvents)
	return g.simulate(ctx)
}

// newRun prepares run number run of sc's strategy at index strategy,
// with seed: on sc's graph, or on its server as a graph of one service
// whose run reports no services or edges (and keeps no series of the
// service's own, which would only repeat the run's).
func newRun(sc *scenarios.Scenario, strategy, run int, seed uint64) *graph {
	if sc.Graph() {
		return newGraph(sc, &sc.Strategies[strategy], run, seed, true)
	}
	g := oneService(sc)
	return newGraph(g, &g.Strategies[strategy], run, seed, false)
}

// Summary summarises the runs of a scenario: runs holds sc.Runs runs of
// each strategy, strategy by strategy, as Run returns them (and as the
// real-HTTP driver does), of every strategy or only some. Each
// strategy's Index is its place in sc.Strategies.
func Summary(sc *scenarios.Scenario, runs []*results.Run) *results.Summary {
	summary := &results.Summary{
		Scenario:    sc.Name,
		Description: sc.Description,
		Seed:        sc.Seed,
		Runs:        sc.Runs,
		BucketS:     sc.Bucket.Seconds(),
		HorizonS:    sc.Duration.Seconds(),
		Outages:     []results.Window{},
	}
	if sc.Graph() {
		// Every service's outages, by their end, as the figures count
		// recovery from the last of them.
		for _, svc := range sc.Services {
			for _, o := range svc.Outages {
				summary.Outages = append(summary.Outages, results.Window{StartS: o.Start.Seconds(), EndS: o.End().Seconds(), Mode: o.Mode, Service: svc.Name, Replicas: o.Replicas})
			}
		}
		slices.SortStableFunc(summary.Outages, func(a, b results.Window) int { return cmp.Compare(a.EndS, b.EndS) })
	} else {
		for _, o := range sc.Server.Outages {
			summary.Outages = append(summary.Outages, results.Window{StartS: o.Start.Seconds(), EndS: o.End().Seconds(), Mode: o.Mode})
		}
	}
	for _, f := range sc.ReadFrom() {
		summary.ReadFrom = append(summary.ReadFrom, results.ReadField{Field: f.Field, At: f.At.String()})
	}
	setup := Setup(sc)
	if !math.IsInf(setup.Capacity, 1) {
		summary.CapacityPerS = &setup.Capacity
	}
	if q := sc.Target().Queue; !q.Unlimited() {
		limit := int64(q)
		summary.QueueLimit = &limit
	}
	for i := 0; i+sc.Runs <= len(runs); i += sc.Runs {
		st := Summarize(runs[i:i+sc.Runs], strategySetup(sc, setup, runs[i].Strategy))
		st.Index = slices.IndexFunc(sc.Strategies, func(x scenarios.Strategy) bool { return x.Name == st.Name })
		summary.Strategies = append(summary.Strategies, st)
	}
	return summary
}

// pick returns the indexes of the named strategies, in the scenario's
// order, or all of them when names is empty.
func pick(sc *scenarios.Scenario, names []string) ([]int, error) {
	if err := CheckStrategies(sc, names); err != nil {
		return nil, err
	}
	var idx []int
	for i, st := range sc.Strategies {
		if len(names) == 0 || slices.Contains(names, st.Name) {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// CheckStrategies reports a name in names that is not a strategy of sc.
func CheckStrategies(sc *scenarios.Scenario, names []string) error {
	for _, name := range names {
		if !slices.ContainsFunc(sc.Strategies, func(st scenarios.Strategy) bool { return st.Name == name }) {
			all := make([]string, len(sc.Strategies))
			for i, st := range sc.Strategies {
				all[i] = st.Name
			}
			return fmt.Errorf("scenario %s has no strategy %q (it has %s)", sc.Name, name, strings.Join(all, ", "))
		}
	}
	return nil
}

// RunSeed derives the seed of replication run from the scenario's seed,
// with the SplitMix64 finaliser, so that runs are independent.
func RunSeed(seed uint64, run int) uint64 {
	z := seed + uint64(run+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Setup returns what the figures of sc's runs need to know.
func Setup(sc *scenarios.Scenario) results.Setup {
	s := results.Setup{Bucket: sc.Bucket, Capacity: sc.TargetCapacity()}
	if t := sc.Target(); !t.Concurrency.Unlimited() {
		s.Concurrency = int(t.Concurrency)
		if sc.Graph() {
			s.Concurrency *= sc.Services[sc.TargetIndex()].Replicas
		}
	}
	if all := sc.AllOutages(); len(all) > 0 {
		s.LastOutageEnd = all[len(all)-1].End()
	} else {
		// Without an outage, a load spike (a schedule of arrival rates)
		// is what a server may latch under and recover from; without
		// either, there is nothing to recover from.
		s.NoOutage = len(sc.Workload.Arrival.Schedule) == 0
	}
	return s
}

// strategySetup returns the setup of strategy name's figures: the
// scenario's, with the capacity of the target as the strategy deploys it
// (its services section may change it).
func strategySetup(sc *scenarios.Scenario, setup results.Setup, name string) results.Setup {
	k := slices.IndexFunc(sc.Strategies, func(x scenarios.Strategy) bool { return x.Name == name })
	if !sc.Graph() || k < 0 || len(sc.Strategies[k].Services.ByName) == 0 {
		return setup
	}
	t := sc.ServicesFor(&sc.Strategies[k])[sc.TargetIndex()]
	setup.Capacity = t.Capacity()
	setup.Concurrency = 0
	if !t.Concurrency.Unlimited() {
		setup.Concurrency = int(t.Concurrency) * t.Replicas
	}
	return setup
}

// Summarize computes one strategy's summary from its runs: the figures of
// the run, or with several runs their means and, in CI95, the half-widths
// of their 95% confidence intervals (Student's t). A figure that does not
// exist in some runs (recovery in a run that never recovered) is averaged
// over the runs where it does; it is nil when it exists in none.
func Summarize(runs []*results.Run, setup results.Setup) results.StrategySummary {
	figs := make([]results.Figures, len(runs))
	for i, r := range runs {
		figs[i] = r.Figures(setup)
	}
	s := SummarizeFigures(runs[0].Strategy, figs)
	for _, r := range runs {
		s.Engine.Events += r.Events
		s.Engine.WallS += r.Wall.Seconds()
	}
	for k := range runs[0].Services {
		per := make([]results.ServiceFigures, len(runs))
		for i, r := range runs {
			per[i] = r.Services[k].FiguresUnder(setup, r.Requests)
		}
		s.Services = append(s.Services, results.MeanServiceFigures(per))
	}
	s.Edges = results.MeanEdgeFigures(runs)
	s.Worst = results.WorstOf(s.Services)
	return s
}

// SummarizeFigures summarises one strategy from the figures of its runs,
// as Summarize does, without the engine's costs.
func SummarizeFigures(name string, figs []results.Figures) results.StrategySummary {
	s := results.StrategySummary{Name: name}
	for i := range figs {
		switch {
		case figs[i].NothingLeft():
			s.NothingLeftRuns++ // healthy, maybe, but no recovery
		case figs[i].RecoveryTimeS != nil:
			s.RecoveredRuns++
		}
	}
	s.Recovery = results.RecoveryOf(len(figs), s.RecoveredRuns, s.NothingLeftRuns)
	if len(figs) > 0 && figs[0].NoOutage {
		s.Recovery = results.NoOutage
	}
	if len(figs) == 1 {
		s.Figures = figs[0]
		return s
	}
	mean, ci := aggregate(figs)
	mean.NoOutage = figs[0].NoOutage
	s.Figures, s.CI95 = mean, &ci
	s.RunsWithout = runsWithout(figs, s.RecoveredRuns)
	return s
}

// runsWithout counts, for each figure that some of figs have and others
// lack, the runs that lack it (see StrategySummary.RunsWithout); nil when
// none does. A run has a recovery time when it recovered from a backlog
// (recovered of them did).
func runsWithout(figs []results.Figures, recovered int) map[string]int {
	out := map[string]int{}
	count := func(name string, has func(f *results.Figures) bool) {
		n := 0
		for i := range figs {
			if !has(&figs[i]) {
				n++
			}
		}
		if n > 0 && n < len(figs) {
			out[name] = n
		}
	}
	if !figs[0].NoOutage && recovered < len(figs) && recovered > 0 {
		out["recovery_time_s"] = len(figs) - recovered
	}
	count("drain_time_s", func(f *results.Figures) bool { return f.DrainTimeS != nil })
	count("completion_time_s", func(f *results.Figures) bool { return f.CompletionTimeS != nil })
	count("latency_s", func(f *results.Figures) bool { return f.Delivered > 0 })
	if len(out) == 0 {
		return nil
	}
	return out
}

// aggregate returns the means of the figures and the half-widths of their
// 95% confidence intervals.
func aggregate(figs []results.Figures) (mean, ci results.Figures) {
	plain := func(get func(f *results.Figures) *float64) {
		xs := make([]float64, len(figs))
		for i := range figs {
			xs[i] = *get(&figs[i])
		}
		*get(&mean), *get(&ci) = meanCI(xs)
	}
	optional := func(get func(f *results.Figures) **float64) {
		var xs []float64
		for i := range figs {
			if p := *get(&figs[i]); p != nil {
				xs = append(xs, *p)
			}
		}
		if len(xs) == 0 {
			return
		}
		m, h := meanCI(xs)
		*get(&mean), *get(&ci) = &m, &h
	}
	plain(func(f *results.Figures) *float64 { return &f.Requests })
	plain(func(f *results.Figures) *float64 { return &f.Attempts })
	plain(func(f *results.Figures) *float64 { return &f.Delivered })
	plain(func(f *results.Figures) *float64 { return &f.DeliveredRatio })
	plain(func(f *results.Figures) *float64 { return &f.DeadLettered })
	plain(func(f *results.Figures) *float64 { return &f.Unfinished })
	plain(func(f *results.Figures) *float64 { return &f.Duplicates })
	plain(func(f *results.Figures) *float64 { return &f.Amplification })
	plain(func(f *results.Figures) *float64 { return &f.PeakLoad })
	plain(func(f *results.Figures) *float64 { return &f.PeakAtS })
	plain(func(f *results.Figures) *float64 { return &f.PeakLoadOverall })
	// Latency over the runs that delivered something: a run that
	// delivered nothing has no latency, not one of 0 s.
	latency := func(get func(f *results.Figures) *float64) {
		var xs []float64
		for i := range figs {
			if figs[i].Delivered > 0 {
				xs = append(xs, *get(&figs[i]))
			}
		}
		if len(xs) > 0 {
			*get(&mean), *get(&ci) = meanCI(xs)
		}
	}
	latency(func(f *results.Figures) *float64 { return &f.LatencyS.Mean })
	latency(func(f *results.Figures) *float64 { return &f.LatencyS.P50 })
	latency(func(f *results.Figures) *float64 { return &f.LatencyS.P90 })
	latency(func(f *results.Figures) *float64 { return &f.LatencyS.P99 })
	latency(func(f *results.Figures) *float64 { return &f.LatencyS.Max })
	plain(func(f *results.Figures) *float64 { return &f.Processed })
	plain(func(f *results.Figures) *float64 { return &f.Wasted })
	plain(func(f *results.Figures) *float64 { return &f.ShortCircuited })
	plain(func(f *results.Figures) *float64 { return &f.Rejected })
	plain(func(f *results.Figures) *float64 { return &f.Throttled })
	plain(func(f *results.Figures) *float64 { return &f.TimedOut })
	plain(func(f *results.Figures) *float64 { return &f.Lost })
	plain(func(f *results.Figures) *float64 { return &f.Replayed })
	plain(func(f *results.Figures) *float64 { return &f.ClientRejected })
	plain(func(f *results.Figures) *float64 { return &f.RateLimited })
	plain(func(f *results.Figures) *float64 { return &f.SharedBudgetDenied })
	plain(func(f *results.Figures) *float64 { return &f.Hedges })
	plain(func(f *results.Figures) *float64 { return &f.HedgeWins })
	optional(func(f *results.Figures) **float64 { return &f.PeakLoadRatio })
	// Recovery is averaged over the runs that recovered from a backlog:
	// the vacuous 0 s of a run that left nothing to recover is no speed
	// (unless every run left nothing).
	withBacklog := slices.DeleteFunc(slices.Clone(figs), func(f results.Figures) bool { return f.NothingLeft() })
	if len(withBacklog) == 0 {
		withBacklog = figs
	}
	var recovery []float64
	for _, f := range withBacklog {
		if f.RecoveryTimeS != nil {
			recovery = append(recovery, *f.RecoveryTimeS)
		}
	}
	if len(recovery) > 0 {
		m, h := meanCI(recovery)
		mean.RecoveryTimeS, ci.RecoveryTimeS = &m, &h
	}
	optional(func(f *results.Figures) **float64 { return &f.BacklogAtOutageEnd })
	plain(func(f *results.Figures) *float64 { return &f.DeadLetteredInOutage })
	optional(func(f *results.Figures) **float64 { return &f.DrainTimeS })
	optional(func(f *results.Figures) **float64 { return &f.CompletionTimeS })

	mean.DeadLetteredBy, ci.DeadLetteredBy = map[string]float64{}, map[string]float64{}
	reasons := map[string]bool{}
	for _, f := range figs {
		for k := range f.DeadLetteredBy {
			reasons[k] = true
		}
	}
	for k := range reasons {
		xs := make([]float64, len(figs))
		for i, f := range figs {
			xs[i] = f.DeadLetteredBy[k]
		}
		mean.DeadLetteredBy[k], ci.DeadLetteredBy[k] = meanCI(xs)
	}
	return mean, ci
}

// meanCI returns the mean of xs and the half-width of its 95% confidence
// interval: t(0.975, n-1) * s / sqrt(n). One value has a half-width of 0.
func meanCI(xs []float64) (mean, half float64) {
	mean, sd := meanSD(xs)
	n := float64(len(xs))
	if len(xs) < 2 || sd == 0 {
		return mean, 0
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(n)
}

// meanSD returns the mean and the sample standard deviation of xs, by
// gonum's corrected two-pass algorithm (stat.MeanStdDev) with its sums
// taken in order: gonum's own sum is assembly on amd64, whose order (and
// so its last bits) differ from the pure Go of other platforms, and the
// WebAssembly build must write the CLI's summary.json byte for byte.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss, c float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
		c += d
	}
	return mean, math.Sqrt((ss - c*c/float64(len(xs))) / float64(len(xs)-1))
}
