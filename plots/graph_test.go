package plots

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

// graphChartNames are the charts Render adds for a service graph, after
// chartNames.
var graphChartNames = []string{"services-load", "layers", "graph"}

// graphFixture returns the results of a small service graph built by
// hand, without the simulator: 1,000 requests over 40 one-second buckets
// to api (capacity 400/s, down from 5 to 10 s), which calls cache
// (unlimited) and orders (3 replicas, 300/s), which calls db (100/s);
// api also calls db itself, an edge that skips a layer. Two strategies,
// of indexes 0 and 2 in the file:
//
//   - every-layer: retries on every edge, so attempts multiply down the
//     graph: db sees 6 per fleet request, above its capacity after the
//     outage;
//   - edge-only: the fleet's retries only: every service sees what api
//     does.
//
// With runs > 1 each run differs a little.
func graphFixture(runs int) (*results.Summary, []*results.Run) {
	const (
		n        = 40
		requests = 1000
	)
	capacity := 400.0
	s := &results.Summary{
		Scenario:     "graph",
		Runs:         runs,
		BucketS:      1,
		HorizonS:     n,
		CapacityPerS: &capacity,
		Outages:      []results.Window{{StartS: 5, EndS: 10, Mode: "error"}},
	}
	type node struct {
		name     string
		capacity float64 // per second, +Inf unlimited
		replicas int
		amp      [2]float64 // attempts per fleet request, per strategy
	}
	nodes := []node{
		{"api", 400, 1, [2]float64{1.5, 2}},
		{"cache", math.Inf(1), 1, [2]float64{1.5, 2}},
		{"orders", 300, 3, [2]float64{3, 2}},
		{"db", 100, 1, [2]float64{6, 2}},
	}
	edges := [][2]string{{"", "api"}, {"api", "cache"}, {"api", "orders"}, {"api", "db"}, {"orders", "db"}}
	edgeAmp := [][2]float64{{1.5, 2}, {1.5, 2}, {3, 2}, {1, 1}, {5, 1}}
	setup := results.Setup{Bucket: time.Second, LastOutageEnd: 10 * time.Second}
	var all []*results.Run
	for k, name := range []string{"every-layer", "edge-only"} {
		var rs []*results.Run
		for r := range runs {
			run := results.NewRun(name, r, n)
			run.Requests = requests
			for _, nd := range nodes {
				sr := &results.ServiceRun{Name: nd.name, Replica: -1, Capacity: nd.capacity * float64(nd.replicas), Series: make([]results.Bucket, n)}
				total := nd.amp[k] * requests
				for i := range sr.Series {
					b := &sr.Series[i]
					// A steady trickle, a herd right after the outage.
					share := 0.02
					if i == 10 {
						share = 0.2
					}
					b.Attempts = int64(total*share) + int64(r)
					switch {
					case i >= 5 && i < 10:
						b.NotOK = b.Attempts
					case i == 10 && k == 0:
						b.OK = b.Attempts / 2
						b.Rejected = b.Attempts / 4
						b.NotOKTimeout = b.Attempts / 8
						b.NotOK = b.Attempts - b.OK
					default:
						b.OK = b.Attempts
					}
					sr.Attempts += b.Attempts
					sr.OK += b.OK
				}
				for rep := range nd.replicas {
					if nd.replicas > 1 {
						sr.Replicas = append(sr.Replicas, &results.ServiceRun{Name: nd.name, Replica: rep, Capacity: nd.capacity})
					}
				}
				run.Services = append(run.Services, sr)
			}
			for e, ed := range edges {
				run.Edges = append(run.Edges, results.EdgeRun{Caller: ed[0], Callee: ed[1], Attempts: int64(edgeAmp[e][k]*requests) + int64(r)})
			}
			api := run.Services[0]
			run.Series = api.Series
			run.Attempts = api.Attempts
			run.Delivered = api.OK / 2
			rs = append(rs, run)
		}
		st := results.StrategySummary{Name: name, Index: 2 * k, Figures: rs[0].Figures(results.Setup{
			Bucket: time.Second, Capacity: capacity, LastOutageEnd: 10 * time.Second,
		})}
		for j := range nodes {
			per := make([]results.ServiceFigures, len(rs))
			for i, run := range rs {
				per[i] = run.Services[j].Figures(setup.Bucket, setup.LastOutageEnd, run.Requests)
			}
			st.Services = append(st.Services, results.MeanServiceFigures(per))
		}
		st.Edges = results.MeanEdgeFigures(rs)
		st.Worst = results.WorstOf(st.Services)
		s.Strategies = append(s.Strategies, st)
		all = append(all, rs...)
	}
	return s, all
}

func TestRenderGraph(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	s, runs := graphFixture(2)
	tests := []struct {
		name string
		o    Options
		// The least and the most width and height of each graph chart.
		min, max [2]int
	}{
		{"default size", Options{}, [2]int{DefaultWidth, DefaultHeight}, [2]int{4000, 3000}},
		{"given size", Options{Width: 600, Height: 400}, [2]int{600, 400}, [2]int{600, 400}},
		{"given width", Options{Width: 900}, [2]int{900, DefaultHeight}, [2]int{900, 3000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			charts, err := Render(s, runs, tt.o)
			require.NoError(t, err)
			require.Len(t, charts, len(chartNames)+len(graphChartNames))
			for i, name := range append(append([]string{}, chartNames...), graphChartNames...) {
				assert.Equal(t, name, charts[i].Name)
			}
			for _, c := range charts[len(chartNames):] {
				assert.Contains(t, c.Title, "graph: ", "the caption names the scenario")
				img, err := png.Decode(bytes.NewReader(c.Data))
				require.NoError(t, err, c.Name)
				w, h := img.Bounds().Dx(), img.Bounds().Dy()
				assert.True(t, w >= tt.min[0] && w <= tt.max[0], "%s: width %d", c.Name, w)
				assert.True(t, h >= tt.min[1] && h <= tt.max[1], "%s: height %d", c.Name, h)
			}
		})
	}
}

func TestGraphSVG(t *testing.T) {
	t.Parallel()
	s, runs := graphFixture(1)
	o := Options{Format: "svg"}
	charts, err := Render(s, runs, o)
	require.NoError(t, err)
	require.Len(t, charts, len(chartNames)+len(graphChartNames))
	for _, c := range charts[len(chartNames):] {
		assert.Equal(t, c.Name+".svg", c.File(o))
		assert.True(t, bytes.HasPrefix(c.Data, []byte("<?xml")) || bytes.HasPrefix(c.Data, []byte("<svg")), c.Name)
	}
}

func TestGraphDeterministic(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	s, runs := graphFixture(2)
	for _, o := range []Options{{}, {Width: 500, Height: 300}, {Format: "svg"}} {
		a, err := Render(s, runs, o)
		require.NoError(t, err)
		b, err := Render(s, runs, o)
		require.NoError(t, err)
		for i := range a {
			assert.True(t, bytes.Equal(a[i].Data, b[i].Data), "%s %s: same inputs, same bytes", o.format(), a[i].Name)
		}
	}
}

func TestSingleServerHasNoGraphCharts(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	s, runs := fixture(1)
	charts, err := Render(s, runs, Options{})
	require.NoError(t, err)
	names := make([]string, len(charts))
	for i, c := range charts {
		names[i] = c.Name
	}
	assert.Equal(t, chartNames, names)

	for name, draw := range map[string]func() (Chart, error){
		"services-load": func() (Chart, error) { return ServicesLoadChart(s, runs, Options{}) },
		"layers":        func() (Chart, error) { return LayersChart(s, Options{}) },
		"graph":         func() (Chart, error) { return GraphChart(s, Options{}) },
	} {
		_, err := draw()
		assert.ErrorIs(t, err, ErrSummary, "%s of a single server", name)
	}
}

// TestGraphEdgeCases draws what little a graph's results may hold.
func TestGraphEdgeCases(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	tests := []struct {
		name string
		s    func() (*results.Summary, []*results.Run)
	}{
		{"no runs", func() (*results.Summary, []*results.Run) {
			s, _ := graphFixture(1)
			return s, nil
		}},
		{"no edges", func() (*results.Summary, []*results.Run) {
			s, runs := graphFixture(1)
			for i := range s.Strategies {
				s.Strategies[i].Edges = nil
			}
			return s, runs
		}},
		{"a strategy without a service", func() (*results.Summary, []*results.Run) {
			s, runs := graphFixture(1)
			s.Strategies[1].Services = s.Strategies[1].Services[:2]
			return s, runs
		}},
		{"a cycle", func() (*results.Summary, []*results.Run) {
			s, runs := graphFixture(1)
			for i := range s.Strategies {
				s.Strategies[i].Edges = append(s.Strategies[i].Edges, results.EdgeFigures{From: "db", To: "api", Amplification: 0.5})
			}
			return s, runs
		}},
		{"many services and strategies", func() (*results.Summary, []*results.Run) {
			s := &results.Summary{Scenario: "many", Runs: 1, BucketS: 1, HorizonS: 10}
			for k := range 5 {
				st := results.StrategySummary{Name: fmt.Sprintf("a-long-strategy-name-%d", k), Index: k}
				prev := ""
				for j := range 6 {
					name := fmt.Sprintf("service-with-a-long-name-%d", j)
					ratio := 0.3 * float64(j)
					st.Services = append(st.Services, results.ServiceFigures{Name: name, Amplification: float64(j + k), PeakLoadRatio: &ratio})
					st.Edges = append(st.Edges, results.EdgeFigures{From: prev, To: name, Amplification: float64(j + k)})
					if j > 1 {
						st.Edges = append(st.Edges, results.EdgeFigures{From: "service-with-a-long-name-0", To: name, Amplification: 1})
					}
					prev = name
				}
				s.Strategies = append(s.Strategies, st)
			}
			return s, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, runs := tt.s()
			for _, o := range []Options{{}, {Width: 400, Height: 300}} {
				// The graph's charts only: the others have edge cases of
				// their own (TestEdgeCases).
				for _, draw := range []func() (Chart, error){
					func() (Chart, error) { return ServicesLoadChart(s, runs, o) },
					func() (Chart, error) { return LayersChart(s, o) },
					func() (Chart, error) { return GraphChart(s, o) },
				} {
					c, err := draw()
					require.NoError(t, err)
					_, err = png.Decode(bytes.NewReader(c.Data))
					require.NoError(t, err, c.Name)
				}
			}
		})
	}
}

func TestGraphLayout(t *testing.T) {
	t.Parallel()
	summary := func(services []string, edges ...[2]string) *results.Summary {
		var st results.StrategySummary
		for _, name := range services {
			st.Services = append(st.Services, results.ServiceFigures{Name: name})
		}
		for _, e := range edges {
			st.Edges = append(st.Edges, results.EdgeFigures{From: e[0], To: e[1]})
		}
		return &results.Summary{Strategies: []results.StrategySummary{st}}
	}
	tests := []struct {
		name   string
		s      *results.Summary
		layers [][]string // "" is the fleet
		target string
	}{
		{
			"chain",
			summary([]string{"a", "b", "c"}, [2]string{"", "a"}, [2]string{"a", "b"}, [2]string{"b", "c"}),
			[][]string{{""}, {"a"}, {"b"}, {"c"}},
			"a",
		},
		{
			"a skip edge goes by the longest path",
			summary([]string{"api", "db", "orders"}, [2]string{"", "api"}, [2]string{"api", "db"}, [2]string{"api", "orders"}, [2]string{"orders", "db"}),
			[][]string{{""}, {"api"}, {"orders"}, {"db"}},
			"api",
		},
		{
			"fan-out in file order, children under their parents",
			summary([]string{"gw", "x", "y", "x1", "y1", "x2"},
				[2]string{"", "gw"}, [2]string{"gw", "x"}, [2]string{"gw", "y"},
				[2]string{"y", "y1"}, [2]string{"x", "x1"}, [2]string{"x", "x2"}),
			[][]string{{""}, {"gw"}, {"x", "y"}, {"x1", "x2", "y1"}},
			"gw",
		},
		{
			"a service no path reaches goes in layer 1",
			summary([]string{"a", "lonely"}, [2]string{"", "a"}),
			[][]string{{""}, {"a", "lonely"}},
			"a",
		},
		{
			"a cycle stops",
			summary([]string{"a", "b"}, [2]string{"", "a"}, [2]string{"a", "b"}, [2]string{"b", "a"}),
			[][]string{{""}, {"a"}, {"b"}},
			"a",
		},
		{
			"no edges: the first service is the target",
			summary([]string{"a", "b"}),
			[][]string{{""}, {"a", "b"}},
			"a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraphLayout(tt.s)
			got := make([][]string, len(g.layers))
			for l, nodes := range g.layers {
				got[l] = []string{}
				for _, v := range nodes {
					got[l] = append(got[l], g.names[v])
				}
			}
			assert.Equal(t, tt.layers, got)
			assert.Equal(t, tt.target, g.target)
		})
	}
}

func TestGrowForGrid(t *testing.T) {
	th := newTheme(DefaultWidth, DefaultHeight)
	tests := []struct {
		name       string
		o          Options
		cols, rows int
		w, h       int
	}{
		{"small grid: the default size", Options{}, 3, 2, DefaultWidth, DefaultHeight},
		{"large grid grows", Options{}, 6, 5, serviceMarginW + 6*servicePanelW, serviceMarginH + 5*servicePanelH},
		{"a given size stays", Options{Width: 640, Height: 480}, 6, 5, 640, 480},
		{"a given width stays, the height grows", Options{Width: 640}, 6, 5, 640, serviceMarginH + 5*servicePanelH},
		{"no more than the largest size", Options{}, 100, 200, 20000, 20000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := growForGrid(tt.o, th, tt.cols, tt.rows)
			assert.Equal(t, tt.w, o.Width)
			assert.Equal(t, tt.h, o.Height)
			assert.NoError(t, o.check())
		})
	}
}

func TestServiceLoads(t *testing.T) {
	t.Parallel()
	s, runs := graphFixture(2)
	names := newGraphLayout(s).services()
	require.Equal(t, []string{"api", "cache", "orders", "db"}, names)
	d := newServiceLoads(s, runs, names)
	assert.Equal(t, 40, d.n)
	// Capacity per bucket: all replicas; unlimited is 0.
	assert.Equal(t, []float64{400, 0, 900, 100}, d.capacity)
	// every-layer's db in bucket 10: 20% of 6,000, + the run index: the
	// mean of 1,200 and 1,201.
	assert.InDelta(t, 1200.5, d.totals[0][3][10], 1e-9)
	// Stacked by outcome: the herd half succeeded, a quarter rejected.
	assert.InDelta(t, 600, d.loads[0][3][succeeded][10], 1e-9)
	assert.InDelta(t, 300, d.loads[0][3][rejected][10], 1e-9)
	// A column shares the tallest bucket of its strategies, and its
	// capacity when the load comes near it: api's 400 is within 3x of 400;
	// db's 100 is within 3x of its 1,200.5 (every-layer)... and so drawn.
	assert.InDelta(t, 400.5, d.top[0], 1e-9)
	assert.Equal(t, []bool{true, false, true, true}, d.showCap)
	assert.InDelta(t, 1200.5, d.top[3], 1e-9)
	// Every bucket has attempts: the whole time axis.
	assert.Equal(t, 40.0, d.xmax)
}

func TestTimeAxisEnd(t *testing.T) {
	s := &results.Summary{BucketS: 1, Outages: []results.Window{{StartS: 10, EndS: 40}}}
	tests := []struct {
		name    string
		n, last int
		want    float64
	}{
		{"no attempt: every bucket", 300, -1, 300},
		{"attempts to the end", 300, 299, 300},
		{"attempts to 90%", 300, 275, 300},
		{"cut after the last attempt, rounded", 300, 60, 70},
		{"not before the outage ends", 300, 5, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, timeAxisEnd(s, tt.n, tt.last))
		})
	}
}

func TestClassOf(t *testing.T) {
	tests := []struct {
		ratio *float64
		want  loadClass
	}{
		{nil, unlimitedLoad},
		{ptr(math.NaN()), unlimitedLoad},
		{ptr(0), lightLoad},
		{ptr(0.79), lightLoad},
		{ptr(0.8), nearLoad},
		{ptr(1), nearLoad},
		{ptr(1.0001), overLoad},
		{ptr(12), overLoad},
	}
	for _, tt := range tests {
		name := "nil"
		if tt.ratio != nil {
			name = fmt.Sprint(*tt.ratio)
		}
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, classOf(tt.ratio))
		})
	}
}

func TestRatioText(t *testing.T) {
	tests := []struct {
		r    float64
		want string
	}{
		{0.0269, "0.0269"},
		{4.6657, "4.67"},
		{1, "1"},
		{1.000125, "1.0001"},
		{0.99999, "0.99999"},
		{1.0000001, "1"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ratioText(tt.r), "%v", tt.r)
	}
}

// In a graph, the amplification chart has the front's bar and, beside
// it, the bar of the service each strategy hurts most, each named.
func TestAmplificationBarsOfAGraph(t *testing.T) {
	s, _ := graphFixture(2)
	s.Strategies[0].CI95 = &results.Figures{Amplification: 0.1}
	bars := amplificationBars(s)
	var names []string
	for _, b := range bars {
		names = append(names, b.Name)
	}
	assert.Equal(t, []string{"every-layer\napi (front)", "every-layer\ndb (hurt most)", "edge-only\napi (front)", "edge-only\ndb (hurt most)"}, names)
	assert.Equal(t, s.Strategies[0].Amplification, bars[0].Value, "the front's bar is the strategy's figure")
	require.Equal(t, "db", s.Strategies[0].Services[3].Name)
	assert.Equal(t, s.Strategies[0].Services[3].Amplification, bars[1].Value, "db's amplification")
	assert.InDelta(t, 6, bars[1].Value, 0.2, "every-layer sends db about 6 attempts per fleet request")
	assert.Equal(t, 0.1, bars[0].CI, "the front's bar has the strategy's interval")
	assert.Zero(t, bars[1].CI, "a service has no interval")
	assert.Equal(t, bars[0].Index, bars[1].Index, "in the strategy's colour")
	assert.Equal(t, "5.9×", bars[1].Label)

	// The front hurt most: one bar, so named.
	for i := range s.Strategies {
		s.Strategies[i].Worst.Name = "api"
	}
	bars = amplificationBars(s)
	require.Len(t, bars, 2)
	assert.Equal(t, "every-layer\napi (front, hurt most)", bars[0].Name)

	c, err := AmplificationChart(s, Options{Width: 600, Height: 400})
	require.NoError(t, err)
	assert.NotEmpty(t, c.Data)
}

// A graph's charts of the front's figures name it.
func TestAGraphsFrontChartsNameIt(t *testing.T) {
	s, runs := graphFixture(1)
	o := Options{Width: 600, Height: 400}
	for _, draw := range []func() (Chart, error){
		func() (Chart, error) { return LoadChart(s, runs, o) },
		func() (Chart, error) { return QueueChart(s, runs, o) },
		func() (Chart, error) { return RecoveryChart(s, o) },
	} {
		c, err := draw()
		require.NoError(t, err)
		assert.Contains(t, c.Title, " api, the service the fleet calls", c.Name)
	}
	one, oneRuns := fixture(1)
	c, err := QueueChart(one, oneRuns, o)
	require.NoError(t, err)
	assert.NotContains(t, c.Title, "fleet calls", "one server: as before")
}

// TestGraphGolden compares the graph charts of the fixture at 600x400
// with the images in testdata; go test ./plots -run GraphGolden -update
// rewrites them.
func TestGraphGolden(t *testing.T) {
	t.Parallel()
	s, runs := graphFixture(2)
	o := Options{Width: 600, Height: 400}
	var charts []Chart
	for _, draw := range []func() (Chart, error){
		func() (Chart, error) { return ServicesLoadChart(s, runs, o) },
		func() (Chart, error) { return LayersChart(s, o) },
		func() (Chart, error) { return GraphChart(s, o) },
	} {
		c, err := draw()
		require.NoError(t, err)
		charts = append(charts, c)
	}
	checkGolden(t, charts, "GraphGolden")
}

func TestEllipsis(t *testing.T) {
	th := newTheme(DefaultWidth, DefaultHeight)
	sty := th.annotation
	long := "service-with-a-long-name"
	assert.Equal(t, long, ellipsis(sty, long, sty.Width(long)))
	cut := ellipsis(sty, long, sty.Width(long)/2)
	assert.True(t, len(cut) > 0 && len(cut) < len(long), cut)
	assert.Contains(t, cut, "…")
	assert.LessOrEqual(t, float64(sty.Width(cut)), float64(sty.Width(long)/2))
	assert.Equal(t, "", ellipsis(sty, long, 1))
}

func TestServiceOutages(t *testing.T) {
	skipUnderRace(t)
	s, _ := graphFixture(1)
	g := newGraphLayout(s)
	// The fixture's outage names no service: the target's.
	assert.Equal(t, s.Outages, serviceOutages(s, g, "api"))
	assert.Empty(t, serviceOutages(s, g, "db"))

	s.Outages = []results.Window{
		{StartS: 5, EndS: 10, Mode: "error", Service: "db"},
		{StartS: 20, EndS: 30, Mode: "slow", Service: "orders", Replicas: []int{1}},
		{StartS: 40, EndS: 50, Mode: "refuse", Service: "db"},
	}
	assert.Empty(t, serviceOutages(s, g, "api"))
	assert.Len(t, serviceOutages(s, g, "db"), 2)
	assert.Equal(t, "outage: slow 20–30 s, 1 replica", outagesText(serviceOutages(s, g, "orders")))
	assert.Equal(t, "2 outages, 5–50 s", outagesText(serviceOutages(s, g, "db")))
	assert.Equal(t, "", outagesText(nil))

	charts, err := Render(s, nil, Options{})
	require.NoError(t, err)
	for _, c := range charts {
		_, err := png.Decode(bytes.NewReader(c.Data))
		require.NoError(t, err, c.Name)
	}
}
