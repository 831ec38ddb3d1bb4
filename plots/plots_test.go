package plots

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/cmpimg"

	"github.com/zeontools/herdlab/results"
)

var update = flag.Bool("update", false, "rewrite the golden images in testdata")

// chartNames are the charts Render returns, in order.
var chartNames = []string{"load", "recovery", "latency", "queue", "amplification"}

func TestRenderPNG(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	s, runs := fixture(3)
	for _, size := range [][2]int{{0, 0}, {500, 200}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			o := Options{Width: size[0], Height: size[1]}
			charts, err := Render(s, runs, o)
			require.NoError(t, err)
			require.Len(t, charts, len(chartNames))
			w, h := o.size()
			for i, c := range charts {
				assert.Equal(t, chartNames[i], c.Name)
				assert.Contains(t, c.Title, "fixture: ", "the title names the scenario")
				assert.Equal(t, chartNames[i]+".png", c.File(o))
				img, err := png.Decode(bytes.NewReader(c.Data))
				require.NoError(t, err, c.Name)
				assert.Equal(t, w, img.Bounds().Dx(), c.Name)
				assert.Equal(t, h, img.Bounds().Dy(), c.Name)
			}
		})
	}
}

func TestRenderSVG(t *testing.T) {
	t.Parallel()
	s, runs := fixture(1)
	o := Options{Format: "svg", Overlay: true}
	charts, err := Render(s, runs, o)
	require.NoError(t, err)
	require.Len(t, charts, len(chartNames))
	for i, c := range charts {
		assert.Equal(t, chartNames[i], c.Name)
		assert.Equal(t, chartNames[i]+".svg", c.File(o))
		head := string(c.Data[:min(len(c.Data), 100)])
		assert.True(t, bytes.HasPrefix(c.Data, []byte("<?xml")) || bytes.HasPrefix(c.Data, []byte("<svg")), "%s starts %q", c.Name, head)
		assert.Contains(t, string(c.Data), `width="900pt" height="600pt"`, "1200 x 800 CSS pixels")
	}
}

func TestDeterministic(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	s, runs := fixture(3)
	for _, o := range []Options{{Width: 600, Height: 400}, {Format: "svg"}, {Overlay: true, Width: 400, Height: 300}} {
		a, err := Render(s, runs, o)
		require.NoError(t, err)
		b, err := Render(s, runs, o)
		require.NoError(t, err)
		for i := range a {
			assert.True(t, bytes.Equal(a[i].Data, b[i].Data), "%s %s: same inputs, same bytes", o.format(), a[i].Name)
		}
	}
}

func TestOptions(t *testing.T) {
	c := Chart{Name: "load"}
	assert.Equal(t, "load.png", c.File(Options{}))
	assert.Equal(t, "load.svg", c.File(Options{Format: "SVG"}))
	w, h := Options{}.size()
	assert.Equal(t, [2]int{1200, 800}, [2]int{w, h})
	w, h = Options{Width: 600}.size()
	assert.Equal(t, [2]int{600, 800}, [2]int{w, h})

	s, runs := fixture(1)
	for _, o := range []Options{{Format: "pdf"}, {Width: -1}, {Width: 50, Height: 50}, {Height: 100000}} {
		_, err := Render(s, runs, o)
		assert.ErrorIs(t, err, ErrOptions, "%+v", o)
	}
}

func TestBadSummary(t *testing.T) {
	_, err := Render(nil, nil, Options{})
	assert.ErrorIs(t, err, ErrSummary)
	_, err = Render(&results.Summary{Scenario: "x"}, nil, Options{})
	assert.ErrorIs(t, err, ErrSummary, "no bucket width")
	assert.False(t, errors.Is(err, ErrOptions))
}

// TestEdgeCases renders what little there may be: no strategies, no
// runs, nothing delivered, no outage, unlimited capacity, every strategy
// never recovered, many strategies.
func TestEdgeCases(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	many, manyRuns := bigFixture(11, 120)
	for i := range many.Strategies {
		many.Strategies[i].Name = fmt.Sprintf("a-long-strategy-name-%d", i)
	}
	for i, r := range manyRuns {
		r.Strategy = many.Strategies[i].Name
	}
	tests := []struct {
		name string
		s    func() (*results.Summary, []*results.Run)
	}{
		{"no strategies", func() (*results.Summary, []*results.Run) {
			return &results.Summary{Scenario: "empty", BucketS: 1, HorizonS: 10}, nil
		}},
		{"no runs", func() (*results.Summary, []*results.Run) {
			s, _ := fixture(1)
			return s, nil
		}},
		{"no outage, unlimited, nothing delivered, never recovered", func() (*results.Summary, []*results.Run) {
			s, runs := fixture(1)
			s.Outages, s.CapacityPerS = nil, nil
			for i := range s.Strategies {
				s.Strategies[i].RecoveryTimeS = nil
				s.Strategies[i].DeliveredRatio = 0
			}
			for _, r := range runs {
				r.Latency = results.NewLatencies()
			}
			return s, runs
		}},
		{"many strategies", func() (*results.Summary, []*results.Run) { return many, manyRuns }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, runs := tt.s()
			for _, o := range []Options{{Width: 600, Height: 400}, {Overlay: true, Format: "svg"}} {
				charts, err := Render(s, runs, o)
				require.NoError(t, err)
				require.Len(t, charts, len(chartNames))
				for _, c := range charts {
					assert.NotEmpty(t, c.Data, c.Name)
				}
			}
		})
	}
}

// goldenDelta is how far a pixel may differ from the golden image
// (cmpimg's normalised YIQ distance): room for rasteriser differences
// between platforms, not for a moved line or label.
const goldenDelta = 0.1

// TestGolden compares the charts of the fixture at 600x400 with the
// images in testdata; go test ./plots -run Golden -update rewrites them.
func TestGolden(t *testing.T) {
	t.Parallel()
	s, runs := fixture(3)
	o := Options{Width: 600, Height: 400}
	charts, err := Render(s, runs, o)
	require.NoError(t, err)
	overlay, err := LoadChart(s, runs, Options{Width: 600, Height: 400, Overlay: true})
	require.NoError(t, err)
	overlay.Name = "load-overlay"
	single, _ := fixture(1)
	recovery1, err := RecoveryChart(single, o)
	require.NoError(t, err)
	recovery1.Name = "recovery-1run"
	checkGolden(t, append(charts, overlay, recovery1), "Golden")
}

// checkGolden compares PNG charts with the images of the same names in
// testdata; go test ./plots -run TEST -update rewrites them.
func checkGolden(t *testing.T, charts []Chart, test string) {
	t.Helper()
	for _, c := range charts {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join("testdata", c.Name+".png")
			if *update {
				require.NoError(t, os.WriteFile(path, c.Data, 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./plots -run %s -update", test)
			ok, err := cmpimg.EqualApprox("png", c.Data, want, goldenDelta)
			require.NoError(t, err)
			if !ok {
				// Kept after the test, to look at.
				got := filepath.Join(os.TempDir(), "plots-golden-"+c.Name+".png")
				_ = os.WriteFile(got, c.Data, 0o644)
				t.Errorf("%s differs from %s (got in %s; -update rewrites it)", c.Name, path, got)
			}
		})
	}
}

// BenchmarkRender draws every chart of a 15-minute scenario: 5
// strategies of 900 one-second buckets.
func BenchmarkRender(b *testing.B) {
	s, runs := bigFixture(5, 900)
	for _, o := range []Options{{}, {Format: "svg"}, {Overlay: true}} {
		name := "strategies=5/buckets=900/" + o.format()
		if o.Overlay {
			name += "/overlay"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(s, runs, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestComparisonChart(t *testing.T) {
	s, runs := fixture(1)
	c, err := ComparisonChart(s, runs, runs, Options{Width: 600, Height: 400})
	require.NoError(t, err)
	assert.Equal(t, "comparison", c.Name)
	assert.Contains(t, c.Title, "real and simulated load")
	img, err := png.Decode(bytes.NewReader(c.Data))
	require.NoError(t, err)
	assert.Equal(t, 600, img.Bounds().Dx())
}

// hexColor is how an SVG names a colour: #RRGGBB.
func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// TestColourFollowsTheFile: a strategy's colour is its place in the
// scenario file, whichever others ran. With the first of three left out
// (run --strategy), the other two keep their colours in every chart, and
// the colour of the one that did not run is in none.
func TestColourFollowsTheFile(t *testing.T) {
	t.Parallel()
	s, runs := fixture(1)
	s.Strategies, runs = s.Strategies[1:], runs[1:]
	for i := range s.Strategies {
		s.Strategies[i].Index = i + 1
	}
	o := Options{Format: "svg"}
	charts, err := Render(s, runs, o)
	require.NoError(t, err)
	overlay, err := LoadChart(s, runs, Options{Format: "svg", Overlay: true})
	require.NoError(t, err)
	overlay.Name = "load-overlay"
	comparison, err := ComparisonChart(s, runs, runs, o)
	require.NoError(t, err)
	for _, c := range append(charts, overlay, comparison) {
		svg := string(c.Data)
		assert.True(t, strings.Contains(svg, hexColor(strategyPalette[1])), "%s: full-jitter, second in the file", c.Name)
		if c.Name != "recovery" { // where no-backoff, never recovered, is hatched red
			assert.True(t, strings.Contains(svg, hexColor(strategyPalette[2])), "%s: no-backoff, third in the file", c.Name)
		}
		assert.False(t, strings.Contains(svg, hexColor(strategyPalette[0])), "%s: the colour of fixed-10s, which did not run", c.Name)
	}
}

func TestColorIndexes(t *testing.T) {
	summary := func(idx ...int) *results.Summary {
		s := &results.Summary{}
		for _, i := range idx {
			s.Strategies = append(s.Strategies, results.StrategySummary{Index: i})
		}
		return s
	}
	assert.Equal(t, []int{2, 4}, colorIndexes(summary(2, 4)), "places in the file")
	assert.Equal(t, []int{4, 2}, colorIndexes(summary(4, 2)))
	assert.Equal(t, []int{0, 1, 2}, colorIndexes(summary(0, 0, 0)), "a summary without indexes: by position")
	assert.Equal(t, []int{0, 1}, colorIndexes(summary(-1, 3)), "a strategy not in the file: by position")
	assert.Empty(t, colorIndexes(summary()))
}

// TestQueueChartDrawsTheMostAndTheMean: the queue chart draws each
// bucket's longest and mean queue, not the queue at the bucket's end, so
// that a queue that fills and empties within a bucket shows.
func TestQueueChartDrawsTheMostAndTheMean(t *testing.T) {
	t.Parallel()
	chart := func(set func(b *results.Bucket)) []byte {
		t.Helper()
		s, runs := fixture(1)
		for _, r := range runs {
			for i := range r.Series {
				set(&r.Series[i])
			}
		}
		c, err := QueueChart(s, runs, Options{Width: 300, Height: 200})
		require.NoError(t, err)
		return c.Data
	}
	empty := chart(func(b *results.Bucket) { *b = results.Bucket{} })
	fillsAndEmpties := chart(func(b *results.Bucket) { *b = results.Bucket{QueueMax: 500, QueueMean: 100} })
	assert.NotEqual(t, empty, fillsAndEmpties, "a queue full within each bucket, empty at its end, is not an empty queue")

	base := chart(func(*results.Bucket) {})
	assert.Equal(t, base, chart(func(b *results.Bucket) { b.Queue = 0 }), "the queue at the bucket's end is not what is drawn")
	assert.NotEqual(t, base, chart(func(b *results.Bucket) { b.QueueMax /= 2 }), "the longest queue is drawn")
	assert.NotEqual(t, base, chart(func(b *results.Bucket) { b.QueueMean /= 2 }), "the mean queue is drawn")
}

// TestQueueChartWithoutQueueData: runs that did not measure the queue
// (real HTTP) draw no line and say so, rather than an empty queue.
func TestQueueChartWithoutQueueData(t *testing.T) {
	t.Parallel()
	s, runs := fixture(1)
	for _, r := range runs {
		r.QueueTracked = false
	}
	c, err := QueueChart(s, runs, Options{Format: "svg"})
	require.NoError(t, err)
	svg := string(c.Data)
	assert.Contains(t, svg, "fixed-10s (queue not measured)")
	assert.Contains(t, svg, "was not measured in these runs")
	assert.NotContains(t, svg, "most in each bucket")
	assert.Contains(t, svg, "queue limit (500; past it, 503)")
	assert.Equal(t, 1, strings.Count(svg, "stroke:"+hexColor(strategyPalette[0])), "fixed-10s: its legend's thumbnail, no line")

	runs[1].QueueTracked = true // full-jitter measured it
	c, err = QueueChart(s, runs, Options{Format: "svg"})
	require.NoError(t, err)
	svg = string(c.Data)
	assert.Contains(t, svg, "fixed-10s (queue not measured)")
	assert.NotContains(t, svg, "full-jitter (queue not measured)")
	assert.Contains(t, svg, "most in each bucket")
	assert.Greater(t, strings.Count(svg, "stroke:"+hexColor(strategyPalette[1])), 1, "full-jitter: its lines")
}

func TestRenderInParallelGivesTheSameBytes(t *testing.T) {
	// The charts are drawn at once, one per CPU: the bytes are those of
	// drawing them one at a time, in the same order.
	s, runs := fixture(3)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, err := Render(s, runs, Options{Width: 600, Height: 400})
	require.NoError(t, err)
	runtime.GOMAXPROCS(4)
	many, err := Render(s, runs, Options{Width: 600, Height: 400})
	require.NoError(t, err)
	require.Len(t, many, len(one))
	for i := range one {
		assert.Equal(t, one[i].Name, many[i].Name)
		assert.True(t, bytes.Equal(one[i].Data, many[i].Data), one[i].Name)
	}
}
