package plots

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	"github.com/zeontools/herdlab/results"
)

// figureAt is a strategy's metric at a point of a hand-made sweep: its
// value (nil: none) and the runs in which the server recovered.
type figureAt struct {
	v         *float64
	recovered int
}

// sweepFixture builds a sweep of metric over axes by hand, without the
// simulator: at calls at(point, strategy) for every strategy at every
// point, in grid order.
func sweepFixture(metric string, runs int, axes []results.Axis, strategies []string, at func(point, j int) figureAt) *results.Sweep {
	s := &results.Sweep{Scenario: "metastable", Seed: 1, Runs: runs, Metric: metric, Axes: axes, Strategies: strategies}
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
	}
	for i := range n {
		pt := results.SweepPoint{Index: i, Values: make([]string, len(axes))}
		rest := i
		for k := len(axes) - 1; k >= 0; k-- {
			pt.Values[k] = axes[k].Values[rest%len(axes[k].Values)]
			rest /= len(axes[k].Values)
		}
		for j, name := range strategies {
			f := at(i, j)
			ps := results.PointSummary{Name: name, RecoveredRuns: f.recovered}
			ps.PeakLoad = 100 + float64(10*i+j)
			switch metric {
			case "recovery_time_s":
				ps.RecoveryTimeS = f.v
			case "peak_load_ratio":
				ps.PeakLoadRatio = f.v
			}
			pt.Strategies = append(pt.Strategies, ps)
		}
		s.Points = append(s.Points, pt)
	}
	return s
}

// lineSweep is a one-axis sweep of the recovery time against the end of
// the trigger, 3 runs: no-jitter never recovers from 45 s on and
// recovers in 2 runs of 3 at 30 s; full-jitter always recovers.
func lineSweep() *results.Sweep {
	axes := []results.Axis{{Path: "scenario.trigger.end", Label: "trigger end", Values: []string{"10s", "20s", "30s", "45s", "1m"}}}
	full := []float64{8, 11, 15, 21, 30}
	none := []float64{14, 40, 95}
	return sweepFixture("recovery_time_s", 3, axes, []string{"full-jitter", "no-jitter"}, func(i, j int) figureAt {
		if j == 0 {
			return figureAt{v: ptr(full[i]), recovered: 3}
		}
		switch {
		case i < 2:
			return figureAt{v: ptr(none[i]), recovered: 3}
		case i == 2:
			return figureAt{v: ptr(none[i]), recovered: 2}
		}
		return figureAt{recovered: 0}
	})
}

// gridSweep is a two-axis sweep (3 x 4) of the recovery time against the
// server's capacity and the client timeout, 2 runs, 2 strategies:
// no-jitter never recovers at the lowest capacity with short timeouts,
// and recovers in one run of two next to those.
func gridSweep() *results.Sweep {
	axes := []results.Axis{
		{Path: "server.capacity", Label: "capacity (requests/s)", Values: []string{"50", "100", "200"}},
		{Path: "clients.timeout", Label: "timeout", Values: []string{"100ms", "500ms", "2s", "10s"}, Log: true},
	}
	return sweepFixture("recovery_time_s", 2, axes, []string{"full-jitter", "no-jitter"}, func(i, j int) figureAt {
		ix, iy := i/4, i%4
		v := 60/float64(ix+1) + 5*float64(iy)
		if j == 0 {
			if ix == 0 && iy == 0 {
				return figureAt{v: ptr(v * 1.5), recovered: 1}
			}
			return figureAt{v: ptr(v), recovered: 2}
		}
		switch {
		case ix == 0 && iy < 2, ix == 1 && iy == 0:
			return figureAt{recovered: 0}
		case ix == 0 && iy == 2, ix == 1 && iy == 1:
			return figureAt{v: ptr(3 * v), recovered: 1}
		}
		return figureAt{v: ptr(2 * v), recovered: 2}
	})
}

func TestAxisX(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []float64
		kind   axisKind
	}{
		{"durations", []string{"500ms", "2s", "1m30s"}, []float64{0.5, 2, 90}, axisSeconds},
		{"zero is a duration", []string{"0", "1h"}, []float64{0, 3600}, axisSeconds},
		{"numbers", []string{"1", "2.5", "1e3", "-4"}, []float64{1, 2.5, 1000, -4}, axisNumber},
		{"a number without a unit is not a duration", []string{"0", "10"}, []float64{0, 10}, axisNumber},
		{"mixed durations and numbers", []string{"1s", "2"}, []float64{0, 1}, axisIndex},
		{"labels", []string{"fifo", "lifo", "random"}, []float64{0, 1, 2}, axisIndex},
		{"not finite", []string{"1", "NaN"}, []float64{0, 1}, axisIndex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, kind := axisX(results.Axis{Path: "x", Values: tt.values})
			assert.Equal(t, tt.kind, kind)
			assert.InDeltaSlice(t, tt.want, xs, 1e-12)
		})
	}
}

func TestXTickLabels(t *testing.T) {
	a := results.Axis{Values: []string{"500ms", "1m"}}
	xs, kind := axisX(a)
	assert.Equal(t, []string{"0.5", "60"}, xTickLabels(a, xs, kind), "durations in seconds")
	a = results.Axis{Values: []string{"fifo", "lifo"}}
	xs, kind = axisX(a)
	assert.Equal(t, []string{"fifo", "lifo"}, xTickLabels(a, xs, kind), "labels as they are")
}

func TestSweepCells(t *testing.T) {
	s := lineSweep()
	cells := sweepCells(s, 1)
	require.Len(t, cells, 5)
	wantMarks := []cellMark{cellValue, cellValue, cellPartial, cellMissing, cellMissing}
	for i, c := range cells {
		assert.Equal(t, wantMarks[i], markOf(c), "point %d", i)
	}
	assert.InDelta(t, 95, cells[2].v, 1e-12)
	assert.Equal(t, 2, cells[2].recovered)

	// Another metric exists where the server never recovered: drawn as a
	// number, marked as not recovered in every run.
	s.Metric = "peak_load"
	cells = sweepCells(s, 1)
	for i, c := range cells {
		assert.True(t, c.has, "point %d", i)
	}
	assert.Equal(t, cellValue, markOf(cells[1]))
	assert.Equal(t, cellPartial, markOf(cells[3]), "peak load where the server never recovered")

	// Not finite: no value.
	s.Metric = "recovery_time_s"
	s.Points[0].Strategies[0].RecoveryTimeS = ptr(math.Inf(1))
	assert.Equal(t, cellMissing, markOf(sweepCells(s, 0)[0]))
}

func TestSegments(t *testing.T) {
	v := func(x float64) cell { return cell{v: x, has: true} }
	none := cell{}
	tests := []struct {
		name  string
		cells []cell
		order []int
		want  [][]int
	}{
		{"unbroken", []cell{v(1), v(2), v(3)}, []int{0, 1, 2}, [][]int{{0, 1, 2}}},
		{"broken in the middle", []cell{v(1), v(2), none, v(4), v(5)}, []int{0, 1, 2, 3, 4}, [][]int{{0, 1}, {3, 4}}},
		{"missing at the ends", []cell{none, v(2), v(3), none}, []int{0, 1, 2, 3}, [][]int{{1, 2}}},
		{"a lone point", []cell{v(1), none, v(3), none, v(5), v(6)}, []int{0, 1, 2, 3, 4, 5}, [][]int{{0}, {2}, {4, 5}}},
		{"all missing", []cell{none, none}, []int{0, 1}, nil},
		{"in x order, not point order", []cell{v(1), none, v(3)}, []int{2, 0, 1}, [][]int{{2, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, segments(tt.cells, tt.order))
		})
	}
	// The fixture's no-jitter line ends at 30 s, before its never
	// recovered points; full-jitter's is whole.
	s := lineSweep()
	xs, _ := axisX(s.Axes[0])
	assert.Equal(t, [][]int{{0, 1, 2}}, segments(sweepCells(s, 1), xOrder(xs)))
	assert.Equal(t, [][]int{{0, 1, 2, 3, 4}}, segments(sweepCells(s, 0), xOrder(xs)))
}

func TestXOrder(t *testing.T) {
	assert.Equal(t, []int{1, 2, 0, 3}, xOrder([]float64{5, 1, 2, 5}), "by x, ties in order")
}

func TestValueRange(t *testing.T) {
	v := func(x float64) cell { return cell{v: x, has: true} }
	// Missing cells carry values that must not count.
	lo, hi, ok := valueRange([]cell{v(5), {v: 1000}, v(2)}, []cell{{v: -7}, v(9)})
	require.True(t, ok)
	assert.InDelta(t, 2, lo, 1e-12)
	assert.InDelta(t, 9, hi, 1e-12)
	_, _, ok = valueRange([]cell{{v: 3}}, nil)
	assert.False(t, ok, "no value anywhere")

	// The heatmaps' shared range spans both strategies, ignoring cells
	// that never recovered.
	s := gridSweep()
	lo, hi, ok = valueRange(sweepCells(s, 0), sweepCells(s, 1))
	require.True(t, ok)
	assert.InDelta(t, 20, lo, 1e-12, "full-jitter, capacity 200, 100 ms")
	assert.InDelta(t, 3*(60+10), hi, 1e-12, "no-jitter, capacity 50, 2 s: its shorter timeouts never recovered")
}

func TestColorScale(t *testing.T) {
	sc, err := newColorScale(10, 50)
	require.NoError(t, err)
	lum := func(v float64) float64 {
		r, g, b, _ := sc.at(v).RGBA()
		return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xFFFF
	}
	prev := math.Inf(1)
	for v := 10.0; v <= 50; v += 5 {
		l := lum(v)
		assert.Less(t, l, prev, "darker as the value grows, at %v", v)
		prev = l
	}
	assert.Equal(t, sc.at(10), sc.at(-100), "clamped below")
	assert.Equal(t, sc.at(50), sc.at(1e9), "clamped above")
	assert.False(t, isDark(sc.at(10)))
	assert.True(t, isDark(sc.at(50)))

	sc, err = newColorScale(7, 7)
	require.NoError(t, err)
	assert.Less(t, sc.lo, 7.0, "a single value is widened around")
	assert.Greater(t, sc.hi, 7.0)
	sc, err = newColorScale(0, 0)
	require.NoError(t, err)
	assert.Equal(t, [2]float64{0, 0.5}, [2]float64{sc.lo, sc.hi}, "not below 0 for values that are not")
}

func TestColorBarTicks(t *testing.T) {
	ticks := colorBarTicks(colorScale{lo: 12.5, hi: 47})
	require.NotEmpty(t, ticks)
	for _, tk := range ticks {
		assert.NotEmpty(t, tk.Label)
		assert.True(t, tk.Value >= 12.5 && tk.Value <= 47, "%v within the scale", tk.Value)
	}
	ticks = colorBarTicks(colorScale{lo: 1000, hi: 1001})
	assert.GreaterOrEqual(t, len(ticks), 2)
}

func TestValueTicks(t *testing.T) {
	xs := []float64{3, 1, 1.1, 10}
	labels := []string{"3", "1", "1.1", "10"}
	// Every label kept without extents, in x order.
	ticks := valueTicks(xs, labels, nil)
	require.Len(t, ticks, 4)
	assert.Equal(t, []string{"1", "1.1", "3", "10"}, []string{ticks[0].Label, ticks[1].Label, ticks[2].Label, ticks[3].Label})
	// Labels 10 wide at 10 per unit: 1.1 would overlap 1.
	ticks = valueTicks(xs, labels, func(i int) (vg.Length, vg.Length) {
		x := vg.Length(xs[i] * 10)
		return x - 5, x + 5
	})
	require.Len(t, ticks, 4, "every value keeps its tick")
	assert.Equal(t, []string{"1", "", "3", "10"}, []string{ticks[0].Label, ticks[1].Label, ticks[2].Label, ticks[3].Label})
}

func TestValueLabel(t *testing.T) {
	assert.Equal(t, "12 s", valueLabel("recovery_time_s", 12))
	assert.Equal(t, "0.25 s", valueLabel("latency_s.p99", 0.25))
	assert.Equal(t, "3,100", valueLabel("peak_load", 3100))
	assert.Equal(t, "1.53", valueLabel("peak_load_ratio", 1.534))
	assert.Equal(t, "never", missingText("recovery_time_s"))
	assert.Equal(t, "no value", missingLabel("peak_load_ratio"))
}

func TestSweepCharts(t *testing.T) {
	t.Parallel()
	o := Options{Width: 600, Height: 400}
	charts, err := SweepCharts(lineSweep(), o)
	require.NoError(t, err)
	require.Len(t, charts, 1)
	assert.Equal(t, "sweep", charts[0].Name)
	assert.Equal(t, "metastable: recovery_time_s by trigger end (mean of 3 runs)", charts[0].Title)

	charts, err = SweepCharts(gridSweep(), o)
	require.NoError(t, err)
	require.Len(t, charts, 2)
	assert.Equal(t, "heatmap-full-jitter", charts[0].Name)
	assert.Equal(t, "heatmap-no-jitter", charts[1].Name)
	assert.Equal(t, "metastable, no-jitter: recovery_time_s (mean of 2 runs)", charts[1].Title)
	for _, c := range charts {
		img, err := png.Decode(bytes.NewReader(c.Data))
		require.NoError(t, err, c.Name)
		assert.Equal(t, 600, img.Bounds().Dx())
		assert.Equal(t, 400, img.Bounds().Dy())
	}

	one := lineSweep()
	one.Runs = 1
	charts, err = SweepCharts(one, o)
	require.NoError(t, err)
	assert.NotContains(t, charts[0].Title, "mean", "one run: no mean")

	three := gridSweep()
	three.Axes = append(three.Axes, results.Axis{Path: "seed", Values: []string{"1"}})
	for i := range three.Points {
		three.Points[i].Values = append(three.Points[i].Values, "1")
	}
	charts, err = SweepCharts(three, o)
	require.NoError(t, err)
	assert.Empty(t, charts, "three axes: no chart")
}

// TestSweepEdgeCases draws sweeps with little in them: every value
// missing, one value per axis, labels, a log axis, another metric, many
// strategies, SVG.
func TestSweepEdgeCases(t *testing.T) {
	t.Parallel()
	allMissing := func() *results.Sweep {
		s := gridSweep()
		for i := range s.Points {
			for j := range s.Points[i].Strategies {
				s.Points[i].Strategies[j].RecoveryTimeS = nil
				s.Points[i].Strategies[j].RecoveredRuns = 0
			}
		}
		return s
	}
	tests := []struct {
		name string
		s    func() *results.Sweep
		n    int
	}{
		{"every heatmap cell missing", allMissing, 2},
		{"every line point missing", func() *results.Sweep {
			s := lineSweep()
			for i := range s.Points {
				for j := range s.Points[i].Strategies {
					s.Points[i].Strategies[j].RecoveryTimeS = nil
				}
			}
			return s
		}, 1},
		{"one value", func() *results.Sweep {
			return sweepFixture("recovery_time_s", 1, []results.Axis{{Path: "x", Values: []string{"5"}}}, []string{"a"},
				func(int, int) figureAt { return figureAt{v: ptr(3), recovered: 1} })
		}, 1},
		{"one cell", func() *results.Sweep {
			return sweepFixture("recovery_time_s", 1, []results.Axis{{Path: "x", Values: []string{"5"}}, {Path: "y", Values: []string{"a"}}}, []string{"a"},
				func(int, int) figureAt { return figureAt{v: ptr(3), recovered: 1} })
		}, 1},
		{"labels", func() *results.Sweep {
			return sweepFixture("recovery_time_s", 1, []results.Axis{{Path: "queue", Values: []string{"fifo", "lifo", "random"}, Log: true}}, []string{"a"},
				func(i, _ int) figureAt { return figureAt{v: ptr(float64(i)), recovered: 1} })
		}, 1},
		{"log axis with 0", func() *results.Sweep {
			return sweepFixture("recovery_time_s", 1, []results.Axis{{Path: "x", Values: []string{"0", "1", "10", "100"}, Log: true}}, []string{"a"},
				func(i, _ int) figureAt { return figureAt{v: ptr(float64(i)), recovered: 1} })
		}, 1},
		{"peak load, unrecovered", func() *results.Sweep {
			s := lineSweep()
			s.Metric = "peak_load"
			return s
		}, 1},
		{"many strategies", func() *results.Sweep {
			names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
			return sweepFixture("recovery_time_s", 1, []results.Axis{{Path: "x", Values: []string{"1", "2", "4", "8", "16", "32"}, Log: true}}, names,
				func(i, j int) figureAt {
					if (i+j)%4 == 0 {
						return figureAt{}
					}
					return figureAt{v: ptr(float64(i * j)), recovered: 1}
				})
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, o := range []Options{{Width: 300, Height: 200}, {Format: "svg"}} {
				charts, err := SweepCharts(tt.s(), o)
				require.NoError(t, err)
				require.Len(t, charts, tt.n)
				for _, c := range charts {
					assert.NotEmpty(t, c.Data, c.Name)
				}
			}
		})
	}
}

func TestSweepDeterministic(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	for _, s := range []*results.Sweep{lineSweep(), gridSweep()} {
		for _, o := range []Options{{Width: 600, Height: 400}, {Format: "svg"}} {
			a, err := SweepCharts(s, o)
			require.NoError(t, err)
			b, err := SweepCharts(s, o)
			require.NoError(t, err)
			require.Len(t, b, len(a))
			for i := range a {
				assert.True(t, bytes.Equal(a[i].Data, b[i].Data), "%s %s: same inputs, same bytes", o.format(), a[i].Name)
			}
		}
	}
}

func TestSweepErrors(t *testing.T) {
	tests := []struct {
		name  string
		s     func() *results.Sweep
		o     Options
		wantE error
	}{
		{"bad format", lineSweep, Options{Format: "gif"}, ErrOptions},
		{"too small", lineSweep, Options{Width: 10}, ErrOptions},
		{"nil sweep", func() *results.Sweep { return nil }, Options{}, ErrSummary},
		{"no strategies", func() *results.Sweep {
			s := lineSweep()
			s.Strategies = nil
			return s
		}, Options{}, ErrSummary},
		{"no metric", func() *results.Sweep {
			s := lineSweep()
			s.Metric = ""
			return s
		}, Options{}, ErrSummary},
		{"axis without values", func() *results.Sweep {
			s := lineSweep()
			s.Axes[0].Values = nil
			return s
		}, Options{}, ErrSummary},
		{"a point too few", func() *results.Sweep {
			s := gridSweep()
			s.Points = s.Points[:11]
			return s
		}, Options{}, ErrSummary},
		{"a point too many", func() *results.Sweep {
			s := lineSweep()
			s.Points = append(s.Points, s.Points[0])
			return s
		}, Options{}, ErrSummary},
		{"a strategy missing at a point", func() *results.Sweep {
			s := gridSweep()
			s.Points[5].Strategies = s.Points[5].Strategies[:1]
			return s
		}, Options{}, ErrSummary},
		{"strategies out of order", func() *results.Sweep {
			s := gridSweep()
			st := s.Points[3].Strategies
			st[0], st[1] = st[1], st[0]
			return s
		}, Options{}, ErrSummary},
		{"a value per axis missing", func() *results.Sweep {
			s := gridSweep()
			s.Points[2].Values = s.Points[2].Values[:1]
			return s
		}, Options{}, ErrSummary},
		{"not in grid order", func() *results.Sweep {
			s := gridSweep()
			s.Points[1], s.Points[4] = s.Points[4], s.Points[1]
			return s
		}, Options{}, ErrSummary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			charts, err := SweepCharts(tt.s(), tt.o)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantE)
			other := ErrOptions
			if tt.wantE == ErrOptions {
				other = ErrSummary
			}
			assert.False(t, errors.Is(err, other), "%v", err)
			assert.Nil(t, charts)
		})
	}
}

// TestSweepGolden compares the charts of the hand-made sweeps at 600x400
// with the images in testdata; go test ./plots -run SweepGolden -update
// rewrites them.
func TestSweepGolden(t *testing.T) {
	t.Parallel()
	o := Options{Width: 600, Height: 400}
	line, err := SweepCharts(lineSweep(), o)
	require.NoError(t, err)
	grid, err := SweepCharts(gridSweep(), o)
	require.NoError(t, err)
	checkGolden(t, append(line, grid...), "SweepGolden")
}

func TestCappedTicks(t *testing.T) {
	capped := cappedTicks{ticker: countTicks{}, max: 50}.Ticks(0, 95)
	require.NotEmpty(t, capped)
	for _, tk := range capped {
		assert.LessOrEqual(t, tk.Value, 50.0, "no tick in the band above the data")
	}
}

func TestSweepColorsFollowTheFile(t *testing.T) {
	s := &results.Sweep{Strategies: []string{"b", "d"}}
	assert.Equal(t, []int{0, 1}, sweepColors(s), "without indexes: by position")
	s.StrategyIndexes = []int{1, 3}
	assert.Equal(t, []int{1, 3}, sweepColors(s), "by place in the file")
	s.StrategyIndexes = []int{1, 1}
	assert.Equal(t, []int{0, 1}, sweepColors(s), "not distinct: by position")
}
