package sweep

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/sim"
)

// Records are the records of a whole sweep, read from the folders of its
// shards.
type Records struct {
	Spec Spec
	// Metric is the metric of the first folder's manifest.
	Metric string
	// List holds one record per unit, in unit order.
	List []results.RunRecord
	// src and sum are the file each record was read from, and a hash of
	// its bytes: records are not kept twice in memory.
	src []string
	sum [][sha256.Size]byte
}

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
	rs.List = make([]results.RunRecord, n)
	rs.src = make([]string, n)
	rs.sum = make([][sha256.Size]byte, n)
	var missing []int
	var damaged []string
	for k := range n {
		for _, dir := range dirs {
			path := rs.Spec.recordFile(dir, k)
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if rs.src[k] != "" {
				if sha256.Sum256(data) != rs.sum[k] {
					return nil, fmt.Errorf("%s differs from the same run in another folder: were they run by different versions of herdlab?", path)
				}
				continue
			}
			rec, err := readRecord(&rs.Spec, data, k)
			if err != nil {
				// A damaged record counts as missing: the shard's sweep
				// command runs it again.
				damaged = append(damaged, fmt.Sprintf("%s (%v)", path, err))
				continue
			}
			rs.List[k], rs.src[k], rs.sum[k] = *rec, path, sha256.Sum256(data)
		}
		if rs.src[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		err := missingError(&rs.Spec, missing, shards)
		if len(damaged) > 0 {
			more := ""
			if len(damaged) > 3 {
				more = fmt.Sprintf(" and %d more", len(damaged)-3)
			}
			err = fmt.Errorf("%w; %d of them have damaged records, run again by the same sweep command: %s%s", err, len(damaged), strings.Join(damaged[:min(3, len(damaged))], ", "), more)
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
// histograms.
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
	for p := range spec.Points {
		pt := results.SweepPoint{Index: p, Values: pointValues(spec.Axes, p)}
		for si, name := range spec.Strategies {
			k := (p*len(spec.Strategies) + si) * per
			recs := make([]*results.RunRecord, per)
			figs := make([]results.Figures, per)
			var events int64
			for r := range per {
				recs[r] = &rs.List[k+r]
				figs[r] = recs[r].Figures
				events += recs[r].Events
			}
			sum := sim.SummarizeFigures(name, figs)
			pooled, err := results.PooledLatency(recs)
			if err != nil {
				return nil, err
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
	}
	return s, nil
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

// Write writes a sweep's outputs into dir, each file atomically:
// sweep.csv, sweep.json, the charts (none when charts is nil) and
// report.md.
func Write(dir string, s *results.Sweep, rs *Records, charts Charts) error {
	var images []results.Image
	if charts != nil {
		var err error
		if images, err = charts(s); err != nil {
			return err
		}
	}
	files := []results.File{
		{Name: "sweep.csv", Write: func(w io.Writer) error { return results.WriteSweepCSV(w, s, rs.List) }},
		{Name: "sweep.json", Write: func(w io.Writer) error { return results.WriteSweepJSON(w, s) }},
	}
	files = append(files, results.ImageFiles(images)...)
	files = append(files, results.File{Name: "report.md", Write: func(w io.Writer) error { return results.WriteSweepReport(w, s, images) }})
	return results.WriteFiles(dir, files)
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
	for k := range rs.Spec.Units() {
		path := rs.Spec.recordFile(out, k)
		if have, err := os.ReadFile(path); err == nil && sha256.Sum256(have) == rs.sum[k] {
			continue // there already, whole
		}
		data, err := os.ReadFile(rs.src[k])
		if err != nil {
			return nil, err
		}
		if err := results.WriteFile(path, results.Raw(data)); err != nil {
			return nil, err
		}
	}
	return s, Write(out, s, rs, charts)
}
