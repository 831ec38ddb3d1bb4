package sweep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// smallPlan plans the sweep of testdata/small.yaml: 3 x 3 points, 2
// strategies, 2 runs: 36 units.
func smallPlan(t *testing.T) *Plan {
	t.Helper()
	sc, err := scenarios.Load("testdata/small.yaml")
	require.NoError(t, err)
	plan, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, sc.Sweep.Metric, nil)
	require.NoError(t, err)
	require.Equal(t, 36, plan.Spec.Units())
	return plan
}

// sweepOutputs are the files whose bytes must not depend on how a sweep
// was run.
var sweepOutputs = []string{"sweep.csv", "sweep.json", "report.md"}

// runAll runs plan in dir, unsharded, and writes its outputs.
func runAll(t *testing.T, plan *Plan, dir string, parallel int) {
	t.Helper()
	_, err := plan.Run(context.Background(), dir, Options{Parallel: parallel})
	require.NoError(t, err)
	rs, err := Collect(dir)
	require.NoError(t, err)
	_, err = Merge(dir, rs, plan.Metric, nil)
	require.NoError(t, err)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestShardsMergeToTheUnshardedSweep(t *testing.T) {
	plan := smallPlan(t)
	whole := t.TempDir()
	runAll(t, plan, whole, 2)

	var dirs []string
	ran := 0
	for i := 1; i <= 4; i++ {
		dir := t.TempDir()
		st, err := plan.Run(context.Background(), dir, Options{Shard: Shard{i, 4}, Parallel: 1})
		require.NoError(t, err)
		ran += st.Ran
		dirs = append(dirs, dir)
	}
	assert.Equal(t, plan.Spec.Units(), ran, "the shards split the units between them")

	rs, err := Collect(dirs...)
	require.NoError(t, err)
	merged := t.TempDir()
	_, err = Merge(merged, rs, plan.Metric, nil)
	require.NoError(t, err)
	for _, f := range sweepOutputs {
		assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(merged, f)), f)
	}
	// The merged folder is a complete sweep folder in its own right.
	again, err := Collect(merged)
	require.NoError(t, err)
	assert.Equal(t, readAll(t, rs), readAll(t, again))
}

func TestParallelismDoesNotChangeTheOutputs(t *testing.T) {
	plan := smallPlan(t)
	one, two := t.TempDir(), t.TempDir()
	runAll(t, plan, one, 1)
	runAll(t, plan, two, 2)
	for _, f := range sweepOutputs {
		assert.Equal(t, readFile(t, filepath.Join(one, f)), readFile(t, filepath.Join(two, f)), f)
	}
}

func TestAnInterruptedSweepResumes(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := plan.Run(ctx, dir, Options{Parallel: 1, Progress: func(p Progress) {
		if p.UnitsDone == 10 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	assert.GreaterOrEqual(t, st.Ran, 10)
	assert.Less(t, st.Ran, plan.Spec.Units())
	_, err = Collect(dir)
	require.Error(t, err, "an interrupted sweep is incomplete")
	assert.Contains(t, err.Error(), "runs are missing")

	var seen []Progress
	st2, err := plan.Run(context.Background(), dir, Options{Parallel: 2, Progress: func(p Progress) { seen = append(seen, p) }})
	require.NoError(t, err)
	assert.Equal(t, st.Ran, st2.Skipped, "the runs done before are skipped")
	assert.Equal(t, plan.Spec.Units(), st2.Skipped+st2.Ran)
	require.NotEmpty(t, seen)
	assert.Equal(t, Progress{Units: 36, UnitsDone: st.Ran, Points: 9, PointsDone: seen[0].PointsDone}, seen[0], "progress starts from what was done")
	assert.Equal(t, Progress{Units: 36, UnitsDone: 36, Points: 9, PointsDone: 9}, seen[len(seen)-1])

	rs, err := Collect(dir)
	require.NoError(t, err)
	_, err = Merge(dir, rs, plan.Metric, nil)
	require.NoError(t, err)
	fresh := t.TempDir()
	runAll(t, plan, fresh, 2)
	for _, f := range sweepOutputs {
		assert.Equal(t, readFile(t, filepath.Join(fresh, f)), readFile(t, filepath.Join(dir, f)), f)
	}
}

func TestAPointIsTheScenarioWithItsValues(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	runAll(t, plan, dir, 2)
	f, err := os.Open(filepath.Join(dir, "sweep.json"))
	require.NoError(t, err)
	defer f.Close()
	s, err := results.ReadSweepJSON(f)
	require.NoError(t, err)
	require.Len(t, s.Points, 9)

	// Point 5 is requests=1000 (the second value of the first axis) and
	// the third outage duration, 25s.
	p := s.Points[5]
	assert.Equal(t, []string{"1000", "25s"}, p.Values)
	sc, err := scenarios.Load("testdata/small.yaml")
	require.NoError(t, err)
	sc.Workload.Requests = 1000
	sc.Server.Outages[0].Duration = 25e9
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	for i, st := range res.Summary.Strategies {
		assert.Equal(t, st.Figures, p.Strategies[i].Figures, st.Name)
		assert.Equal(t, st.CI95, p.Strategies[i].CI95, st.Name)
		assert.Equal(t, st.RecoveredRuns, p.Strategies[i].RecoveredRuns, st.Name)
		assert.Equal(t, st.Engine.Events, p.Strategies[i].Events, st.Name)
		assert.EqualValues(t, 1000, st.Requests, st.Name)
	}
}

func TestMergeNamesTheMissingShards(t *testing.T) {
	plan := smallPlan(t)
	var dirs []string
	for i := 1; i <= 3; i++ {
		dir := t.TempDir()
		_, err := plan.Run(context.Background(), dir, Options{Shard: Shard{i, 4}})
		require.NoError(t, err)
		dirs = append(dirs, dir)
	}
	_, err := Collect(dirs...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "9 of the sweep's 36 runs are missing")
	assert.Contains(t, err.Error(), "shard(s) 4/4 not given")
}

func TestAFolderHoldsOneSweep(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	_, err := plan.Run(context.Background(), dir, Options{Shard: Shard{1, 4}})
	require.NoError(t, err)

	_, err = plan.Run(context.Background(), dir, Options{Shard: Shard{2, 4}})
	require.ErrorIs(t, err, ErrOtherSweep)
	assert.Contains(t, err.Error(), "it holds shard 1/4, not 2/4")

	sc, err := scenarios.Load("testdata/small.yaml")
	require.NoError(t, err)
	sc.Runs = 3
	other, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, "", nil)
	require.NoError(t, err)
	_, err = other.Run(context.Background(), dir, Options{Shard: Shard{1, 4}})
	require.ErrorIs(t, err, ErrOtherSweep)
	assert.Contains(t, err.Error(), "2 runs, not 3")

	otherDir := t.TempDir()
	_, err = other.Run(context.Background(), otherDir, Options{Shard: Shard{2, 4}})
	require.NoError(t, err)
	_, err = Collect(dir, otherDir)
	require.ErrorIs(t, err, ErrOtherSweep)
}

func TestPlanErrors(t *testing.T) {
	sc, err := scenarios.Load("testdata/small.yaml")
	require.NoError(t, err)
	_, err = NewPlan(context.Background(), sc, nil, "", nil)
	assert.ErrorContains(t, err, "nothing to vary")
	_, err = NewPlan(context.Background(), sc, sc.Sweep.Vary, "peak", nil)
	assert.ErrorContains(t, err, `--metric "peak": not a figure`)
	_, err = NewPlan(context.Background(), sc, sc.Sweep.Vary, "", []string{"nope"})
	assert.ErrorContains(t, err, `no strategy "nope"`)
	v, err := scenarios.ParseVary("server.outages[0].duration=10s,-5s")
	require.NoError(t, err)
	_, err = NewPlan(context.Background(), sc, []scenarios.Vary{v}, "", nil)
	assert.ErrorContains(t, err, "server.outages[0].duration=-5s")
	v, err = scenarios.ParseVary("strategies[0].name=a,b")
	require.NoError(t, err)
	_, err = NewPlan(context.Background(), sc, []scenarios.Vary{v}, "", nil)
	assert.ErrorContains(t, err, "strategies[0].name=a: renames strategy fixed-20s")
}

func TestOnlyTheNamedStrategies(t *testing.T) {
	sc, err := scenarios.Load("testdata/small.yaml")
	require.NoError(t, err)
	plan, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, "", []string{"full-jitter"})
	require.NoError(t, err)
	assert.Equal(t, []string{"full-jitter"}, plan.Spec.Strategies)
	assert.Equal(t, "recovery_time_s", plan.Metric)
	dir := t.TempDir()
	runAll(t, plan, dir, 2)
	csv := readFile(t, filepath.Join(dir, "sweep.csv"))
	assert.Contains(t, csv, ",full-jitter,")
	assert.NotContains(t, csv, "fixed-20s")
	sw, err := results.ReadSweepJSON(strings.NewReader(readFile(t, filepath.Join(dir, "sweep.json"))))
	require.NoError(t, err)
	assert.Equal(t, []int{1}, sw.StrategyIndexes, "full-jitter keeps its place in the file, and so its colour")
}

// TestTheFirstFailureStopsTheSweep: when units fail (a full disk fails
// every one alike; here each reaches its event budget), the sweep stops
// at the first error and reports it once, not once per unit.
func TestTheFirstFailureStopsTheSweep(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	_, err := plan.Run(context.Background(), dir, Options{Parallel: 1, MaxEvents: 1})
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "event budget"), "one error, not one per unit: %v", err)
	entries, err := os.ReadDir(filepath.Join(dir, "records"))
	require.NoError(t, err)
	assert.Empty(t, entries)

}

func TestShardsSplitEveryUnitOnce(t *testing.T) {
	spec := Spec{Points: 7, Strategies: []string{"a", "b", "c"}, Runs: 5}
	for _, n := range []int{1, 2, 3, 4, 16, 200} {
		owners := make([]int, spec.Units())
		for i := 1; i <= n; i++ {
			for k := range spec.Units() {
				if (Shard{i, n}).owns(k) {
					owners[k]++
				}
			}
		}
		assert.Equal(t, slices.Repeat([]int{1}, spec.Units()), owners, "n=%d", n)
		for i := 1; i <= n; i++ {
			owned := 0
			for k := range spec.Units() {
				if (Shard{i, n}).owns(k) {
					owned++
				}
			}
			assert.Equal(t, owned, Shard{i, n}.Of(spec.Units()), "shard %d/%d", i, n)
		}
	}
	seen := map[[3]int]bool{}
	for k := range spec.Units() {
		p, s, r := spec.unit(k)
		seen[[3]int{p, s, r}] = true
	}
	assert.Len(t, seen, spec.Units(), "units are distinct")
}

func TestParseShard(t *testing.T) {
	sh, err := ParseShard("3/8")
	require.NoError(t, err)
	assert.Equal(t, Shard{3, 8}, sh)
	assert.Equal(t, "3/8", sh.String())
	for _, bad := range []string{"", "3", "0/4", "5/4", "a/b", "1/0", "-1/2"} {
		_, err := ParseShard(bad)
		assert.Error(t, err, bad)
	}
}

func TestWriteWithCharts(t *testing.T) {
	plan := smallPlan(t)
	dir := t.TempDir()
	runAll(t, plan, dir, 2)
	rs, err := Collect(dir)
	require.NoError(t, err)
	svg := plots.Options{Format: "svg"}
	_, err = Merge(dir, rs, "", func(s *results.Sweep) ([]results.Image, error) {
		cs, err := plots.SweepCharts(s, svg)
		return plots.Images(cs, svg), err
	})
	require.NoError(t, err)
	for _, st := range plan.Spec.Strategies {
		assert.FileExists(t, filepath.Join(dir, "heatmap-"+st+".svg"))
	}
	assert.Contains(t, readFile(t, filepath.Join(dir, "report.md")), "![")
}

// readAll reads every record of rs, in unit order.
func readAll(t *testing.T, rs *Records) []results.RunRecord {
	t.Helper()
	var all []results.RunRecord
	require.NoError(t, rs.eachPoint(func(_ int, recs []results.RunRecord) error {
		all = append(all, recs...)
		return nil
	}))
	return all
}

func TestRunKeepsItsRecordsForMerge(t *testing.T) {
	plan := smallPlan(t)
	collected := t.TempDir()
	runAll(t, plan, collected, 2)

	// A sweep run whole keeps its records: Merge into its folder writes
	// the outputs Collect's records give, without reading them back
	// (here they are gone from the folder before it does).
	dir := t.TempDir()
	st, err := plan.Run(context.Background(), dir, Options{Parallel: 2})
	require.NoError(t, err)
	require.NotNil(t, st.Records)
	require.Len(t, st.Records.List, plan.Spec.Units())
	other := t.TempDir()
	require.NoError(t, os.CopyFS(other, os.DirFS(dir)))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "records")))
	_, err = Merge(dir, st.Records, plan.Metric, nil)
	require.NoError(t, err)
	for _, f := range sweepOutputs {
		assert.Equal(t, readFile(t, filepath.Join(collected, f)), readFile(t, filepath.Join(dir, f)), f)
	}
	_, err = Merge(other, st.Records, plan.Metric, nil)
	require.ErrorContains(t, err, "the records in memory are not those of "+other, "a folder without them would be left incomplete")

	// None are kept by a shard, a run that resumes, or past keepBudget.
	st, err = plan.Run(context.Background(), t.TempDir(), Options{Shard: Shard{1, 2}})
	require.NoError(t, err)
	assert.True(t, st.Records == nil, "a shard")
	ctx, cancel := context.WithCancel(context.Background())
	resumed := t.TempDir()
	_, err = plan.Run(ctx, resumed, Options{Parallel: 1, Progress: func(p Progress) {
		if p.UnitsDone == 10 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	st, err = plan.Run(context.Background(), resumed, Options{Parallel: 1})
	require.NoError(t, err)
	require.Positive(t, st.Skipped)
	assert.True(t, st.Records == nil, "a run that resumed")
	defer func(b int64) { keepBudget = b }(keepBudget)
	// 36 records take 14.7 KB in memory before they are made, and their
	// encodings 279 KB.
	for _, b := range []int64{4 << 10, 64 << 10} {
		keepBudget = b
		st, err = plan.Run(context.Background(), t.TempDir(), Options{Parallel: 2})
		require.NoError(t, err)
		assert.True(t, st.Records == nil, "past a keepBudget of %d bytes", b)
	}
	keepBudget = 64 << 20
	assert.Equal(t, int64(64<<20), keepBudgetOf(0), "no memory limit")
	assert.Equal(t, int64(32<<20), keepBudgetOf(384<<20), "a twelfth of the memory limit")
	assert.Equal(t, int64(64<<20), keepBudgetOf(16<<30))
}

// TestRunKeepsRecordsWithinTheMemoryLimit runs a sweep whose records
// (5,400 units, 6.3 MB written) fit keepBudget but not a twelfth of a
// memory limit of 60 MB: Run keeps them only without the limit.
func TestRunKeepsRecordsWithinTheMemoryLimit(t *testing.T) {
	skipUnderRace(t) // 8 s under it; TestRunKeepsItsRecordsForMerge runs the same code there
	src, err := os.ReadFile("testdata/small.yaml")
	require.NoError(t, err)
	many := strings.NewReplacer("runs: 2\n", "runs: 150\n", "values: [200, 1000, 5000]", "values: [20, 50, 100]", "5s..25s:3", "5s..25s:6").Replace(string(src))
	file := filepath.Join(t.TempDir(), "many.yaml")
	require.NoError(t, os.WriteFile(file, []byte(many), 0o644))
	sc, err := scenarios.Load(file)
	require.NoError(t, err)
	plan, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, sc.Sweep.Metric, nil)
	require.NoError(t, err)
	require.Equal(t, 5400, plan.Spec.Units())

	limited := t.TempDir()
	st, err := plan.Run(context.Background(), limited, Options{Parallel: 2, MaxMemory: 60 << 20})
	require.NoError(t, err)
	written := int64(0)
	require.NoError(t, filepath.WalkDir(filepath.Join(limited, "records"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			written += info.Size()
		}
		return err
	}))
	require.Greater(t, written, keepBudgetOf(60<<20), "the records must pass a twelfth of the limit")
	require.Less(t, written, keepBudget, "and fit the budget without a limit")
	assert.True(t, st.Records == nil, "%d bytes of records under --max-memory 60MB", written)

	st, err = plan.Run(context.Background(), t.TempDir(), Options{Parallel: 2})
	require.NoError(t, err)
	require.NotNil(t, st.Records, "without a limit")
	assert.Len(t, st.Records.List, plan.Spec.Units())
}
