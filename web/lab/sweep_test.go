package lab

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sweep"
)

func TestSweep(t *testing.T) {
	// herdlab ui's sweep, the static site's (units in parts, summarised)
	// and herdlab sweep's give the same sweep.json.
	b, err := os.ReadFile("testdata/small-sweep.yaml")
	require.NoError(t, err)
	smallSweep := string(b)
	v := Validate(smallSweep, "small.yaml")
	require.Empty(t, v.Problems)
	assert.Equal(t, 24, v.SweepUnits)
	assert.Equal(t, 6, v.SweepPoints)

	var seen []float64
	whole := Sweep(context.Background(), smallSweep, "small.yaml", Options{Progress: func(f float64) { seen = append(seen, f) }})
	require.Empty(t, whole.Error)
	require.NotEmpty(t, seen)
	assert.Equal(t, 1.0, seen[len(seen)-1])

	var odd, even []int
	for k := v.SweepUnits - 1; k >= 0; k-- {
		if k%2 == 1 {
			odd = append(odd, k)
		} else {
			even = append(even, k)
		}
	}
	a := SweepUnits(context.Background(), smallSweep, "small.yaml", odd, Options{})
	e := SweepUnits(context.Background(), smallSweep, "small.yaml", even, Options{})
	require.Empty(t, a.Error)
	require.Empty(t, e.Error)
	parts := SweepSummarize(smallSweep, "small.yaml", [][]byte{a.Records, e.Records})
	require.Empty(t, parts.Error)
	assert.Equal(t, whole, parts)

	sc, err := scenarios.Parse("small.yaml", []byte(smallSweep))
	require.NoError(t, err)
	plan, err := sweep.NewPlan(context.Background(), sc, sc.Sweep.Vary, sc.Sweep.Metric, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = plan.Run(context.Background(), dir, sweep.Options{})
	require.NoError(t, err)
	rs, err := sweep.Collect(dir)
	require.NoError(t, err)
	cli, err := sweep.Build(rs, plan.Metric)
	require.NoError(t, err)
	var want, got bytes.Buffer
	require.NoError(t, results.WriteSweepJSON(&want, cli))
	require.NoError(t, results.WriteSweepJSON(&got, whole.Sweep))
	assert.Equal(t, want.String(), got.String(), "herdlab sweep's sweep.json")

	h := whole.Heatmap
	require.Len(t, h.Strategies, 2)
	assert.Equal(t, "recovery_time_s", h.Metric)
	assert.Equal(t, " (mean of 2 runs)", h.Note)
	for j, st := range h.Strategies {
		require.Len(t, st.Cells, 6)
		for i, c := range st.Cells {
			ps := whole.Sweep.Points[i].Strategies[j]
			switch c.Mark {
			case "value", "partial":
				require.NotNil(t, c.V)
				assert.Equal(t, *ps.RecoveryTimeS, *c.V)
				assert.Contains(t, c.Text, " s")
			case "missing":
				assert.Nil(t, c.V)
				assert.Equal(t, "never", c.Text)
			case "vacant":
				assert.Equal(t, "gave up", c.Text)
			default:
				t.Errorf("mark %q", c.Mark)
			}
		}
	}

	missing := SweepSummarize(smallSweep, "small.yaml", [][]byte{a.Records})
	assert.Contains(t, missing.Error, "the parts hold 12 runs, the sweep makes 24")
	twice := SweepSummarize(smallSweep, "small.yaml", [][]byte{a.Records, a.Records})
	assert.Contains(t, twice.Error, "missing or twice")
	assert.Contains(t, SweepUnits(context.Background(), smallSweep, "small.yaml", []int{24}, Options{}).Error, "no unit 24")
	assert.Contains(t, Sweep(context.Background(), read(t, "thundering-herd.yaml"), "th.yaml", Options{}).Error, "no sweep: section")
	assert.Zero(t, Validate(read(t, "thundering-herd.yaml"), "th.yaml").SweepUnits)
	over := SweepUnits(context.Background(), smallSweep, "small.yaml", []int{0}, Options{MaxMemory: 1 << 10, MaxMemoryName: "the test's"})
	assert.Contains(t, over.Error, "(the test's)")
}
