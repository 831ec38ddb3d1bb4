// Package sweep runs a scenario at every point of a grid of values of
// some of its fields, to find where a retry strategy stops recovering on
// its own: the edge of metastable failure.
//
// A sweep is made of units: one run of one strategy at one point. Each
// unit's result is a results.RunRecord, kept in the segment files of the
// output folder's records/ (see store.go), so an interrupted sweep
// resumes where it stopped, a sweep can be split into shards that run
// anywhere, and Collect and Build turn the records of all shards into
// exactly the outputs of one unsharded sweep.
package sweep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// DefaultMetric is the figure a sweep charts unless told otherwise.
const DefaultMetric = "recovery_time_s"

// Spec is what identifies a sweep: the scenario, its points and
// strategies, runs and seed. It is in the folder's manifest.json; shards
// of one sweep have equal specs, and a folder is only resumed or merged
// by a sweep with the same spec.
type Spec struct {
	Scenario string `json:"scenario"`
	// Digest is a SHA-256 of every point's scenario: any change to the
	// file, the values or the flags gives another digest.
	Digest     string         `json:"digest"`
	Seed       uint64         `json:"seed"`
	Runs       int            `json:"runs"`
	Axes       []results.Axis `json:"vary"`
	Strategies []string       `json:"strategies"`
	// Indexes are the strategies' places in the scenario file.
	Indexes []int `json:"strategy_indexes"`
	Points  int   `json:"points"`
}

// Units returns how many units (runs of one strategy at one point) the
// sweep has.
func (s *Spec) Units() int { return s.Points * len(s.Strategies) * s.Runs }

// unit returns the point, strategy (index into Strategies) and run of
// unit k: units go point by point, then strategy by strategy, then run by
// run.
func (s *Spec) unit(k int) (point, strategy, run int) {
	run = k % s.Runs
	k /= s.Runs
	return k / len(s.Strategies), k % len(s.Strategies), run
}

// Plan is a sweep ready to run: its spec, and how to build the scenario
// of each point (one at a time: a point's scenario is built again when a
// unit needs it, not kept).
type Plan struct {
	Spec Spec
	// Metric is the figure the charts show.
	Metric string
	// MaxMemoryName is how Fit's messages name the memory limit; ""
	// names the CLI's flag, --max-memory.
	MaxMemoryName string
	base          *scenarios.Scenario
	settings      [][]scenarios.Setting // of each point
	strategies    []int                 // indexes into each point's strategies
	only          []string              // the strategies' names, for estimates
	worst         *scenarios.Scenario   // the point whose run needs the most memory
}

// NewPlan plans the sweep of sc over vary, charting metric (default
// recovery_time_s), with the strategies named in only (all when empty).
// sc's Runs and Seed, as loaded or overridden, hold at every point, but a
// varied seed wins. Every point is built and validated, one at a time: an
// error is bad input, reported before anything runs. A done ctx stops it.
func NewPlan(ctx context.Context, sc *scenarios.Scenario, vary []scenarios.Vary, metric string, only []string) (*Plan, error) {
	return newPlan(ctx, sc, vary, metric, only, true)
}

// Check checks the sweep of sc over vary as NewPlan does, then Fit with
// limit and maxEvents, with all of sc's strategies: what herdlab sweep
// refuses before it runs. It skips what only running needs (the digest
// of the points).
func Check(ctx context.Context, sc *scenarios.Scenario, vary []scenarios.Vary, metric string, limit, maxEvents int64) error {
	p, err := newPlan(ctx, sc, vary, metric, nil, false)
	if err != nil {
		return err
	}
	_, err = p.Fit(0, limit, maxEvents)
	return err
}

// newPlan is NewPlan; without digest, Spec.Digest is left empty.
func newPlan(ctx context.Context, sc *scenarios.Scenario, vary []scenarios.Vary, metric string, only []string, digested bool) (*Plan, error) {
	if len(vary) == 0 {
		return nil, errors.New("nothing to vary: give --vary PATH=VALUES or a sweep: section in the scenario")
	}
	if metric == "" {
		metric = DefaultMetric
	}
	if err := CheckMetric(metric); err != nil {
		return nil, err
	}
	if err := sim.CheckStrategies(sc, only); err != nil {
		return nil, err
	}
	p := &Plan{Spec: Spec{Scenario: sc.Name, Seed: sc.Seed, Runs: sc.Runs}, Metric: metric, base: sc, only: only}
	for i, st := range sc.Strategies {
		if len(only) == 0 || slices.Contains(only, st.Name) {
			p.strategies = append(p.strategies, i)
			p.Spec.Strategies = append(p.Spec.Strategies, st.Name)
			p.Spec.Indexes = append(p.Spec.Indexes, i)
		}
	}
	for _, v := range vary {
		p.Spec.Axes = append(p.Spec.Axes, results.Axis{Path: v.Path, Label: v.Label, Values: v.Values, Log: v.Log})
	}
	digest := sha256.New()
	var worst int64
	worstAt := -1
	// The points are only read here: they share what they do not vary
	// (EachPointShared); the one kept, the worst, is built again whole.
	err := sc.EachPointShared(ctx, vary, func(pt scenarios.Point) error {
		s, err := p.complete(pt)
		if err != nil {
			return err
		}
		if digested {
			// Struct fields marshal in a fixed order, maps sorted: the
			// digest is a function of the point's scenario alone.
			data, err := json.Marshal(s)
			if err != nil {
				return err
			}
			digest.Write(data)
		}
		p.settings = append(p.settings, pt.Settings)
		if n := sim.Estimate(s, sim.Options{Strategies: only}); n.PerRun+n.Kept > worst || worstAt < 0 {
			worst, worstAt = n.PerRun+n.Kept, len(p.settings)-1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if worstAt >= 0 {
		if p.worst, err = p.point(worstAt); err != nil {
			return nil, err
		}
	}
	p.Spec.Points = len(p.settings)
	p.Spec.Digest = hex.EncodeToString(digest.Sum(nil))
	return p, nil
}

// complete gives a point's scenario the sweep's runs and seed, and checks
// it.
func (p *Plan) complete(pt scenarios.Point) (*scenarios.Scenario, error) {
	s := pt.Scenario
	s.Runs = p.base.Runs
	if !slices.ContainsFunc(pt.Settings, func(set scenarios.Setting) bool { return set.Path == "seed" }) {
		s.Seed = p.base.Seed
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", settingsString(pt.Settings), err)
	}
	for i, st := range p.base.Strategies {
		if s.Strategies[i].Name != st.Name {
			return nil, fmt.Errorf("%s: renames strategy %s: a strategy keeps its name across a sweep", settingsString(pt.Settings), st.Name)
		}
	}
	// A point whose retries never wait (HL009) would spin until its
	// event budget, as run refuses it.
	if errs := scenarios.LintErrors(s, p.only); len(errs) > 0 {
		f := errs[0]
		return nil, fmt.Errorf("%s: %s: %s %s: %s; refused: it would only spin until its event budget", settingsString(pt.Settings), f.Path, f.Rule.ID, f.Rule.Name, f.Msg)
	}
	return s, nil
}

// point builds the scenario of point i.
func (p *Plan) point(i int) (*scenarios.Scenario, error) {
	s, err := p.base.With(p.settings[i]...)
	if err != nil {
		return nil, err
	}
	return p.complete(scenarios.Point{Settings: p.settings[i], Scenario: s})
}

// Fit returns how many units may run at once, at most parallel (0:
// GOMAXPROCS), for the sweep's runs to fit in limit bytes (0: no limit),
// going by the point whose run needs the most, with maxEvents the event
// budget of a run (0: the default); an error, naming the
// field, when one unit at a time does not fit.
func (p *Plan) Fit(parallel int, limit, maxEvents int64) (int, error) {
	n, err := sim.FitUnits(p.worst, sim.Options{Strategies: p.only, Parallel: parallel, MaxEvents: maxEvents, MaxMemoryName: p.MaxMemoryName}, limit)
	if err != nil {
		return 0, fmt.Errorf("at the point that needs the most memory: %w", err)
	}
	return n, nil
}

// Memory returns the memory parallel units at once take, going by the
// point whose run needs the most, as Fit estimates it with limit bytes
// of memory (0: no limit) and maxEvents the event budget of a run (0:
// the default): herdlab ui counts it against the memory it shares among
// the runs in flight.
func (p *Plan) Memory(parallel int, limit, maxEvents int64) int64 {
	n := sim.Estimate(p.worst, sim.Options{Strategies: p.only, Parallel: parallel, MaxEvents: maxEvents, MaxMemory: limit})
	n.Runs = n.AtOnce
	return n.Memory()
}

// CheckMetric reports a metric that is not a figure of summary.json.
func CheckMetric(metric string) error {
	if !slices.Contains(scenarios.Figures, metric) {
		return fmt.Errorf("--metric %q: not a figure of summary.json (one of %s)", metric, strings.Join(scenarios.Figures, ", "))
	}
	return nil
}

func settingsString(set []scenarios.Setting) string {
	parts := make([]string, len(set))
	for i, s := range set {
		parts[i] = s.Path + "=" + s.Value
	}
	return strings.Join(parts, " ")
}

// Shard is part I of N of a sweep's units, 1 <= I <= N: unit k belongs to
// shard k mod N + 1, so every shard gets a share of every region of the
// grid.
type Shard struct{ I, N int }

// All is the whole sweep, as one shard.
var All = Shard{1, 1}

// ParseShard parses "I/N".
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N, such as 2/4", s)
	}
	return Shard{i, n}, nil
}

func (sh Shard) String() string { return fmt.Sprintf("%d/%d", sh.I, sh.N) }

func (sh Shard) owns(k int) bool { return k%sh.N == sh.I-1 }

// Of returns how many of a sweep's units the shard owns.
func (sh Shard) Of(units int) int { return max(units-sh.I+sh.N, 0) / sh.N }

// Options says how to run a plan.
type Options struct {
	// Shard is the part of the sweep to run; the zero value means All.
	Shard Shard
	// Parallel is how many units run at once; 0 means GOMAXPROCS.
	Parallel int
	// Progress, when set, is called after each unit with the shard's
	// progress, from the units' goroutines, one call at a time.
	Progress func(Progress)
	// MaxMemory bounds the memory of the units running at once (see
	// Plan.Fit); 0 means no bound.
	MaxMemory int64
	// MaxEvents is each run's event budget; 0 means sim.DefaultMaxEvents.
	MaxEvents int64
	// Damaged, when set, is called with each record found damaged (a
	// file cut short by a crash, say), before its unit runs again.
	Damaged func(path string, err error)
}

// Progress is how far a shard of a sweep has come. A point is done when
// the shard's units at that point are.
type Progress struct {
	Units, UnitsDone   int
	Points, PointsDone int
}

// Stats says what Run did.
type Stats struct {
	Ran, Skipped int           // units run now, and found done before
	Events       int64         // events simulated by the units run now
	Wall         time.Duration // wall-clock time of Run
	// Records are the sweep's records, in memory, when Run made every
	// one (an unsharded sweep of a folder that held none) and they took
	// at most keepBudgetOf bytes written; nil otherwise. Merge into the
	// folder Run wrote then writes the sweep's outputs without reading
	// its records back, which took a tenth of the CPU of a sweep of
	// small runs; Collect reads them otherwise.
	Records *Records
}

// keepBudget bounds the records Run keeps in memory for Merge, in bytes
// of their encoding (decoded, they take about 1.5x: 427 KB for the 279
// KB of testdata/small.yaml's sweep), and so does a twelfth of
// Options.MaxMemory (an eighth decoded): past it they are read back from
// the folder, so that a sweep of any size is still gathered in the
// memory of a point's records. The AWS study's sweep (9,500 runs) writes
// 17 MB.
var keepBudget = int64(64 << 20) // a variable for its test

// keepBudgetOf returns the bytes of records Run keeps under a memory
// limit of maxMemory bytes (0: none).
func keepBudgetOf(maxMemory int64) int64 {
	if maxMemory > 0 {
		return min(keepBudget, maxMemory/12)
	}
	return keepBudget
}

// ErrOtherSweep is returned, wrapped, when a folder holds the records of
// a different sweep.
var ErrOtherSweep = errors.New("the folder holds another sweep")

// manifest is manifest.json: the spec, the shard that wrote the folder,
// and the metric to chart (which the records do not depend on).
type manifest struct {
	Spec   Spec   `json:"sweep"`
	Shard  string `json:"shard"`
	Metric string `json:"metric"`
}

// Run runs the units of the plan's shard that dir does not already hold,
// writing each one's record into dir/records/ as soon as it is done. A
// cancelled ctx stops it; what was done stays done, and running the same
// plan again resumes.
func (p *Plan) Run(ctx context.Context, dir string, opts Options) (Stats, error) {
	start := time.Now()
	shard := opts.Shard
	if shard == (Shard{}) {
		shard = All
	}
	// A sweep killed while it swapped its outputs in may have left its
	// records beside the folder: they are put back first.
	if err := results.Recover(dir); err != nil {
		return Stats{}, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "records"), 0o755); err != nil {
		return Stats{}, err
	}
	if err := claim(dir, manifest{p.Spec, shard.String(), p.Metric}); err != nil {
		return Stats{}, err
	}

	records := filepath.Join(dir, "records")
	if err := results.RemoveStale(records); err != nil {
		return Stats{}, err
	}
	have, err := readFolder(&p.Spec, dir)
	if err != nil {
		return Stats{}, err
	}
	// Parts cut short or garbled (a power loss before the records were
	// synced) are not done: they are cut away, said so, and run again.
	if err := have.repair(opts.Damaged); err != nil {
		return Stats{}, err
	}
	var todo []int
	var st Stats
	left := map[int]int{} // units left per point of the shard
	for k := range p.Spec.Units() {
		if !shard.owns(k) {
			continue
		}
		pt, _, _ := p.Spec.unit(k)
		if _, seen := left[pt]; !seen {
			left[pt] = 0
		}
		if have.units[k] != nil {
			st.Skipped++
			continue
		}
		left[pt]++
		todo = append(todo, k)
	}
	// kept holds the records made, by unit, while they fit keepBudget
	// (see Stats.Records); keptBytes counts their encodings.
	var kept []results.RunRecord
	var keptBytes atomic.Int64
	budget := keepBudgetOf(opts.MaxMemory)
	if n := p.Spec.Units(); shard == All && st.Skipped == 0 && int64(n)*int64(unsafe.Sizeof(results.RunRecord{})) <= budget {
		kept = make([]results.RunRecord, n)
	}
	var mu sync.Mutex
	prog := Progress{Units: st.Skipped + len(todo), UnitsDone: st.Skipped, Points: len(left)}
	for _, n := range left {
		if n == 0 {
			prog.PointsDone++
		}
	}
	report := func(k int) {
		mu.Lock()
		defer mu.Unlock()
		pt, _, _ := p.Spec.unit(k)
		prog.UnitsDone++
		if left[pt]--; left[pt] == 0 {
			prog.PointsDone++
		}
		if opts.Progress != nil {
			opts.Progress(prog)
		}
	}
	if opts.Progress != nil {
		opts.Progress(prog)
	}

	parallel, err := p.Fit(opts.Parallel, opts.MaxMemory, opts.MaxEvents)
	if err != nil {
		return st, err
	}
	// The first failure stops every unit (a full disk fails them all):
	// it is the one reported.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var events atomic.Int64
	segments := atomic.Int64{} // the number of the last segment created
	segments.Store(int64(have.next - 1))
	// Workers take the units in order from a counter, not a channel: a
	// unit can take microseconds, and handing each over woke a parked
	// worker, which at one worker cost a tenth of a sweep of small runs.
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range min(parallel, len(todo)) {
		wg.Go(func() {
			// Each worker appends its records to a segment of its own,
			// made durable when the sweep ends or stops.
			var seg *segment
			defer func() {
				if seg != nil {
					if err := seg.close(); err != nil {
						stop(err)
					}
				}
			}()
			var last *scenarios.Scenario // the scenario of the last unit's point
			lastPoint := -1
			for ctx.Err() == nil {
				i := int(taken.Add(1) - 1)
				if i >= len(todo) {
					break
				}
				k := todo[i]
				if pt, _, _ := p.Spec.unit(k); pt != lastPoint {
					sc, err := p.point(pt)
					if err != nil {
						stop(err)
						continue
					}
					last, lastPoint = sc, pt
				}
				rec, err := p.record(ctx, last, k, nil, opts.MaxEvents)
				var data []byte
				if err == nil {
					data, err = encodeRecord(&rec)
				}
				if err == nil && seg == nil {
					seg, err = createSegment(records, int(segments.Add(1)))
				}
				if err == nil {
					err = seg.append(data)
				}
				if err != nil {
					stop(err)
					continue
				}
				if kept != nil && keptBytes.Add(int64(len(data))) <= budget {
					kept[k] = rec
				}
				events.Add(rec.Events)
				report(k)
			}
		})
	}
	wg.Wait()
	st.Ran, st.Events, st.Wall = prog.UnitsDone-st.Skipped, events.Load(), time.Since(start)
	// The segments were synced as they closed, also when the sweep was
	// stopped; their names are made durable here. A record lost to a
	// power loss before this is found missing, or cut short, when the
	// sweep resumes, and made again.
	if err := syncDir(records); err != nil && context.Cause(ctx) == nil {
		return st, fmt.Errorf("syncing the records: %w", err)
	}
	if err := context.Cause(ctx); err != nil {
		return st, err
	}
	if kept != nil && keptBytes.Load() <= budget {
		st.Records = &Records{Spec: p.Spec, Metric: p.Metric, List: kept, in: filepath.Clean(dir)}
	}
	return st, nil
}

// record runs unit k, whose point's scenario is sc, and returns its
// record.
func (p *Plan) record(ctx context.Context, sc *scenarios.Scenario, k int, progress func(int), maxEvents int64) (results.RunRecord, error) {
	pt, si, run := p.Spec.unit(k)
	r, err := sim.RunOne(ctx, sc, p.strategies[si], run, progress, maxEvents)
	if err != nil {
		if ctx.Err() != nil {
			return results.RunRecord{}, context.Cause(ctx)
		}
		return results.RunRecord{}, fmt.Errorf("%s: %w", settingsString(p.settings[pt]), err)
	}
	return results.NewRunRecord(pt, r, sim.Setup(sc))
}

// Point returns the scenario of point i, as the sweep runs it.
func (p *Plan) Point(i int) (*scenarios.Scenario, error) { return p.point(i) }

// RunUnit runs unit k (Spec.Units: point by point, then strategy by
// strategy, then run by run), whose point's scenario is sc (Point), and
// returns the record that Run writes for it, without writing it: the
// browser app's workers each run some units, and Build makes the sweep
// of their records (in a Records of the plan's Spec, in unit order).
// progress, when set, gets the run's sim.ProgressUnits.
func (p *Plan) RunUnit(ctx context.Context, sc *scenarios.Scenario, k int, progress func(int), maxEvents int64) (results.RunRecord, error) {
	if k < 0 || k >= p.Spec.Units() {
		return results.RunRecord{}, fmt.Errorf("no unit %d: the sweep has %d", k, p.Spec.Units())
	}
	return p.record(ctx, sc, k, progress, maxEvents)
}

// Unit returns the point, strategy (index into Spec.Strategies) and run
// of unit k.
func (p *Plan) Unit(k int) (point, strategy, run int) { return p.Spec.unit(k) }

// claim writes dir's manifest, after checking that the one there, if
// any, is of the same sweep and shard.
func claim(dir string, m manifest) error {
	path := filepath.Join(dir, "manifest.json")
	have, err := readManifest(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case !sameSpec(&have.Spec, &m.Spec):
		return fmt.Errorf("%s: %w (%s); use another --out, or remove the folder to start again", dir, ErrOtherSweep, specDiff(&have.Spec, &m.Spec))
	case have.Shard != m.Shard:
		return fmt.Errorf("%s: %w: it holds shard %s, not %s; give each shard its own folder", dir, ErrOtherSweep, have.Shard, m.Shard)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFile(path, results.Raw(append(data, '\n')))
}

// readManifest reads dir's manifest.json.
func readManifest(dir string) (*manifest, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a sweep manifest: %v", path, err)
	}
	return &m, nil
}

func sameSpec(a, b *Spec) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// specDiff names the first difference between two specs.
func specDiff(have, want *Spec) string {
	switch {
	case have.Scenario != want.Scenario:
		return fmt.Sprintf("scenario %s, not %s", have.Scenario, want.Scenario)
	case have.Runs != want.Runs:
		return fmt.Sprintf("%d runs, not %d", have.Runs, want.Runs)
	case have.Seed != want.Seed:
		return fmt.Sprintf("seed %d, not %d", have.Seed, want.Seed)
	case !slices.Equal(have.Strategies, want.Strategies):
		return fmt.Sprintf("strategies %s, not %s", strings.Join(have.Strategies, ","), strings.Join(want.Strategies, ","))
	case have.Digest != want.Digest:
		return "other values, or the scenario file has changed"
	}
	return "a different sweep"
}
