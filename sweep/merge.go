package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/sim"
)

// Records are the records of a whole sweep: those of the folders of its
// shards, as Collect finds them, or records made in memory (List).
type Records struct {
	Spec Spec
	// Metric is the metric of the first folder's manifest.
	Metric string
	// List, when set, holds one record per unit, in unit order: records
	// made in memory (the browser app's). Collect leaves it empty: Build
	// and Write read the records from the folders a point at a time, so
	// that a sweep of any size is gathered in the memory of a point's
	// records.
	List []results.RunRecord
	// in is the folder that holds every record of List, when Run made
	// them there (Stats.Records): Merge into it writes only the outputs.
	in string
	// units are where the folders hold the records, by unit.
	units []*stored
	// folders are the folders read, by path, with what they hold.
	folders map[string]*folder
	// csv is sweep.csv of the sweep Build last made from the folders,
	// written in the same pass over the records, so that Write need not
	// read them again; nil when it outgrew csvBudget.
	csv *builtCSV
}

// builtCSV is sweep.csv as Build wrote it, for the sweep it returned.
type builtCSV struct {
	sweep *results.Sweep
	data  []byte
}

// csvBudget bounds the sweep.csv that Build keeps for Write: past it,
// Write reads the records again, so that a sweep of any size is still
// gathered in the memory of a point's records. 9,500 records (the AWS
// study's sweep) take 3 MB.
var csvBudget = 32 << 20 // a variable for its test

// Collect reads the records of a sweep from the folders of its shards (or
// the one folder of an unsharded sweep). The folders must hold the same
// sweep and, between them, every unit; a unit found in two folders must
// have the same record in both.
func Collect(dirs ...string) (*Records, error) {
	if len(dirs) == 0 {
		return nil, errors.New("name at least one sweep folder")
	}
	var rs *Records
	var shards []Shard
	for _, dir := range dirs {
		if err := results.Recover(dir); err != nil {
			return nil, err
		}
		m, err := readManifest(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: not a sweep folder (no manifest.json)", dir)
		}
		if err != nil {
			return nil, err
		}
		if rs == nil {
			rs = &Records{Spec: m.Spec, Metric: m.Metric}
		} else if !sameSpec(&rs.Spec, &m.Spec) {
			return nil, fmt.Errorf("%s: %w than %s (%s)", dir, ErrOtherSweep, dirs[0], specDiff(&m.Spec, &rs.Spec))
		}
		sh, err := ParseShard(m.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: manifest.json: %v", dir, err)
		}
		shards = append(shards, sh)
	}

	n := rs.Spec.Units()
	all := folder{units: make([]*stored, n)}
	var damaged []damage
	rs.folders = map[string]*folder{}
	for _, dir := range dirs {
		f, err := readFolder(&rs.Spec, dir)
		if err != nil {
			return nil, err
		}
		rs.folders[filepath.Clean(dir)] = f
		damaged = append(damaged, f.damaged...)
		for _, s := range f.units {
			if s == nil {
				continue
			}
			if err := all.add(s); err != nil {
				return nil, err
			}
		}
	}
	rs.units = all.units
	var missing []int
	for k, s := range rs.units {
		if s == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		err := missingError(&rs.Spec, missing, shards)
		if len(damaged) > 0 {
			// A damaged record counts as missing: the shard's sweep
			// command runs it again.
			names := make([]string, 0, 3)
			for _, d := range damaged[:min(3, len(damaged))] {
				names = append(names, d.Error())
			}
			more := ""
			if len(damaged) > 3 {
				more = fmt.Sprintf(" and %d more", len(damaged)-3)
			}
			err = fmt.Errorf("%w; some are in damaged records, run again by the same sweep command: %s%s", err, strings.Join(names, ", "), more)
		}
		return nil, err
	}
	return rs, nil
}

// missingError says which runs are missing and, when the folders are
// shards of one split, which shards should have made them.
func missingError(spec *Spec, missing []int, have []Shard) error {
	p, s, r := spec.unit(missing[0])
	msg := fmt.Sprintf("%d of the sweep's %d runs are missing (the first: point %d, %s, run %d)", len(missing), spec.Units(), p, spec.Strategies[s], r)
	n := have[0].N
	if slices.ContainsFunc(have, func(sh Shard) bool { return sh.N != n }) {
		return errors.New(msg)
	}
	var lack []string
	unfinished := false
	for _, k := range missing {
		sh := Shard{k%n + 1, n}
		unfinished = unfinished || slices.Contains(have, sh)
		if s := sh.String(); !slices.Contains(lack, s) {
			lack = append(lack, s)
		}
	}
	if unfinished {
		return fmt.Errorf("%s: shard(s) %s not given or not finished (run them again to finish)", msg, strings.Join(lack, ", "))
	}
	return fmt.Errorf("%s: shard(s) %s not given", msg, strings.Join(lack, ", "))
}

// Build computes a sweep's figures from its records: at every point, each
// strategy's means and confidence half-widths over its runs (as
// summary.json has them), and its latency over the runs' merged
// histograms. It reads the records a point at a time.
func Build(rs *Records, metric string) (*results.Sweep, error) {
	spec := &rs.Spec
	s := &results.Sweep{
		Scenario:        spec.Scenario,
		Seed:            spec.Seed,
		Runs:            spec.Runs,
		Metric:          metric,
		Axes:            spec.Axes,
		Strategies:      spec.Strategies,
		StrategyIndexes: spec.Indexes,
	}
	per := spec.Runs
	// sweep.csv is written in the same pass when the records come from
	// folders: reading them is most of the gathering's time.
	var buf *bytes.Buffer
	var c *results.SweepCSV
	rs.csv = nil
	if rs.List == nil {
		buf = new(bytes.Buffer)
		c = results.NewSweepCSV(buf, s)
	}
	err := rs.eachPoint(func(p int, recs []results.RunRecord) error {
		pt := results.SweepPoint{Index: p, Values: pointValues(spec.Axes, p)}
		for si, name := range spec.Strategies {
			runs := make([]*results.RunRecord, per)
			figs := make([]results.Figures, per)
			var events int64
			for r := range per {
				runs[r] = &recs[si*per+r]
				figs[r] = runs[r].Figures
				events += runs[r].Events
			}
			sum := sim.SummarizeFigures(name, figs)
			pooled, err := results.PooledLatency(runs)
			if err != nil {
				return err
			}
			pt.Strategies = append(pt.Strategies, results.PointSummary{
				Name:            name,
				Figures:         sum.Figures,
				RecoveredRuns:   sum.RecoveredRuns,
				NothingLeftRuns: sum.NothingLeftRuns,
				Recovery:        sum.Recovery,
				CI95:            sum.CI95,
				LatencyPooledS:  pooled,
				Events:          events,
			})
		}
		s.Points = append(s.Points, pt)
		if c != nil {
			if err := c.Write(recs); err != nil {
				return err
			}
			if c.Flush(); buf.Len() > csvBudget {
				buf, c = nil, nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c != nil {
		if err := c.Flush(); err != nil {
			return nil, err
		}
		rs.csv = &builtCSV{sweep: s, data: buf.Bytes()}
	}
	return s, nil
}

// eachPoint calls f with each point and its records, strategy by
// strategy, then run by run: from List, or read from the folders, one
// point's at a time (the slice is reused for the next point).
func (rs *Records) eachPoint(f func(p int, recs []results.RunRecord) error) error {
	spec := &rs.Spec
	n := len(spec.Strategies) * spec.Runs // units per point
	if rs.List != nil {
		if len(rs.List) != spec.Units() {
			return fmt.Errorf("sweep: %d records for the %d runs of the sweep", len(rs.List), spec.Units())
		}
		for p := range spec.Points {
			if err := f(p, rs.List[p*n:(p+1)*n]); err != nil {
				return err
			}
		}
		return nil
	}
	// A point's records are decoded in parallel, each worker with a
	// reader of its own: decoding is most of the gathering's time.
	workers := min(runtime.GOMAXPROCS(0), n)
	readers := make([]*reader, workers)
	for w := range readers {
		readers[w] = newReader()
		defer readers[w].close()
	}
	recs := make([]results.RunRecord, n)
	errs := make([]error, workers)
	for p := range spec.Points {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < n; i += workers {
					s := rs.units[p*n+i]
					if s == nil {
						errs[w] = fmt.Errorf("sweep: point %d lacks run %d of its %d", p, i, n)
						return
					}
					rec, err := readers[w].read(s)
					if err != nil {
						errs[w] = err
						return
					}
					recs[i] = *rec
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := f(p, recs); err != nil {
			return err
		}
	}
	return nil
}

// pointValues returns the value of each axis at point p: points go
// through the grid with the first axis changing slowest.
func pointValues(axes []results.Axis, p int) []string {
	vals := make([]string, len(axes))
	for i := len(axes) - 1; i >= 0; i-- {
		n := len(axes[i].Values)
		vals[i] = axes[i].Values[p%n]
		p /= n
	}
	return vals
}

// Charts draws a sweep's charts, as the images of its report (the CLI's
// are plots.SweepCharts'); the package draws none itself, so that a
// front end without charts (the browser's WebAssembly) builds without
// them.
type Charts func(s *results.Sweep) ([]results.Image, error)

// Write writes a sweep's outputs into dir: sweep.csv, sweep.json, the
// charts (none when charts is nil) and report.md, staged as a run's
// folder is (results.StageDir), so that a reader, or a process killed at
// any moment, finds all of the old outputs or all of the new, never a
// mix: the folder is built beside dir with the outputs, dir's
// manifest.json linked in, and swapped in whole; its records/ is carried
// over (put back by the next sweep or merge if a kill comes between).
func Write(dir string, s *results.Sweep, rs *Records, charts Charts) error {
	var images []results.Image
	if charts != nil {
		var err error
		if images, err = charts(s); err != nil {
			return err
		}
	}
	st, err := results.StageDir(dir)
	if err != nil {
		return err
	}
	defer st.Abort()
	files := []results.File{
		{Name: "sweep.csv", Write: func(w io.Writer) error { return writeCSV(w, s, rs) }},
		{Name: "sweep.json", Write: func(w io.Writer) error { return results.WriteSweepJSON(w, s) }},
	}
	files = append(files, results.ImageFiles(images)...)
	files = append(files, results.File{Name: "report.md", Write: func(w io.Writer) error { return results.WriteSweepReport(w, s, images) }})
	if err := st.WriteFiles(files); err != nil {
		return err
	}
	keep, err := kept(dir)
	if err != nil {
		return err
	}
	if err := st.Keep(keep...); err != nil {
		return err
	}
	return st.Commit()
}

// writeCSV writes sweep.csv, a point's rows at a time, or as Build
// wrote it for s.
func writeCSV(w io.Writer, s *results.Sweep, rs *Records) error {
	if rs.csv != nil && rs.csv.sweep == s {
		_, err := w.Write(rs.csv.data)
		return err
	}
	c := results.NewSweepCSV(w, s)
	if err := rs.eachPoint(func(_ int, recs []results.RunRecord) error { return c.Write(recs) }); err != nil {
		return err
	}
	return c.Flush()
}

// kept returns the files of the sweep folder dir that its new outputs
// keep: all but its outputs (sweep.csv, sweep.json, report.md, and the
// charts sweep.* and heatmap-*, which the new outputs replace or, for a
// chart no longer drawn, drop) and what a killed herdlab was writing;
// so its manifest.json, and any file of the user's, stay.
func kept(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		chart := (ext == ".png" || ext == ".svg") && (strings.TrimSuffix(name, ext) == "sweep" || strings.HasPrefix(name, "heatmap-"))
		switch {
		case !e.Type().IsRegular(), strings.HasPrefix(name, "."), chart,
			name == "sweep.csv", name == "sweep.json", name == "report.md":
			continue
		}
		names = append(names, name)
	}
	return names, nil
}

// Merge writes into out the sweep whose records Collect read from its
// shards' folders: the records (so that out is itself a complete sweep
// folder), its manifest, and the outputs of Write, which are those of one
// unsharded sweep. metric "" takes the shards' metric.
func Merge(out string, rs *Records, metric string, charts Charts) (*results.Sweep, error) {
	if metric == "" {
		metric = rs.Metric
	}
	s, err := Build(rs, metric)
	if err != nil {
		return nil, err
	}
	if rs.List != nil {
		// Records made in memory are merged only into the folder that
		// holds them: another would be left without them.
		if rs.in == "" || rs.in != filepath.Clean(out) {
			return nil, fmt.Errorf("sweep: the records in memory are not those of %s", out)
		}
		return s, Write(out, s, rs, charts) // its records and manifest are Run's
	}
	if err := results.Recover(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(out, "records"), 0o755); err != nil {
		return nil, err
	}
	m := manifest{Spec: rs.Spec, Shard: All.String(), Metric: metric}
	if have, err := readManifest(out); err == nil && sameSpec(&have.Spec, &rs.Spec) {
		m.Shard = have.Shard // one of the shards' own folders: it stays that shard's
	}
	if err := claim(out, m); err != nil {
		return nil, err
	}
	// out, when it is one of the folders collected (an unsharded sweep
	// ends so), is known already.
	have := rs.folders[filepath.Clean(out)]
	if have == nil {
		if have, err = readFolder(&rs.Spec, out); err != nil {
			return nil, err
		}
	}
	if err := have.repair(nil); err != nil {
		return nil, err
	}
	var add []*stored
	for k, s := range rs.units {
		if h := have.units[k]; h != nil {
			if err := s.same(h); err != nil {
				return nil, err
			}
			continue
		}
		add = append(add, s)
	}
	if len(add) > 0 {
		rd := newReader()
		err := writeSegment(filepath.Join(out, "records"), have.next, rd, add)
		rd.close()
		if err != nil {
			return nil, err
		}
	}
	return s, Write(out, s, rs, charts)
}
