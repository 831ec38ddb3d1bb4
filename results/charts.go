package results

import (
	"encoding/json"
	"io"
)

// ChartsVersion is the version of the chart data's format (Charts).
const ChartsVersion = 1

// Charts is the data behind the interactive charts, beyond summary.json
// (which holds the outages, the capacity, the queue limit, recovery and
// amplification): what the browser app and report.html draw. Its JSON is
// described in web/README.md. Per-bucket figures are means over the
// runs, as the static charts draw them.
type Charts struct {
	Version int     `json:"version"`
	BucketS float64 `json:"bucket_s"`
	// T is each bucket's start, in seconds.
	T          []float64        `json:"t"`
	Strategies []StrategyCharts `json:"strategies"`
	// Services are a service graph's services, in file order; none for
	// a scenario of one server.
	Services []ServiceCharts `json:"services,omitempty"`
}

// StrategyCharts is one strategy's series.
type StrategyCharts struct {
	Name  string `json:"name"`
	Index int    `json:"index"` // its place in the scenario file: its colour
	// Attempts are the attempts that reached the server in each bucket;
	// Outcomes splits them by what their senders saw (Bucket.Breakdown).
	Attempts []float64 `json:"attempts"`
	Outcomes Outcomes  `json:"outcomes"`
	// Queue is the longest the server's queue was in each bucket; nil
	// where the queue was not measured (real HTTP).
	Queue   []float64 `json:"queue"`
	Latency CDF       `json:"latency"`
}

// Outcomes are attempts per bucket by outcome class.
type Outcomes struct {
	Succeeded  []float64 `json:"succeeded"`
	Failed     []float64 `json:"failed"`
	Rejected   []float64 `json:"rejected"`
	Throttled  []float64 `json:"throttled"`
	TimedOut   []float64 `json:"timed_out"`
	Unresolved []float64 `json:"unresolved"`
}

// CDF is a cumulative distribution of delivery latency: the fraction P[i]
// of the Count delivered requests delivered within S[i] seconds.
type CDF struct {
	S     []float64 `json:"s"`
	P     []float64 `json:"p"`
	Count int64     `json:"count"`
}

// ServiceCharts is one service of a graph: the attempts that reached it
// in each bucket, from every caller, per strategy name.
type ServiceCharts struct {
	Name     string               `json:"name"`
	Attempts map[string][]float64 `json:"attempts"`
}

// ChartData returns the chart data of a summary and its runs (in any
// order, as plots.Render takes them). The latency distribution is thinned
// as the static chart's is (ThinCDF at 1.005).
func ChartData(s *Summary, runs []*Run) (*Charts, error) {
	n := BucketCount(s, runs)
	c := &Charts{Version: ChartsVersion, BucketS: s.BucketS, T: make([]float64, n)}
	for i := range c.T {
		c.T[i] = float64(i) * s.BucketS
	}
	for i, g := range RunsByStrategy(s, runs) {
		st := s.Strategies[i]
		l := MeanOutcomes(g, n)
		sc := StrategyCharts{
			Name:     st.Name,
			Index:    st.Index,
			Attempts: MeanBuckets(g, n, func(b Bucket) int64 { return b.Attempts }),
			Outcomes: Outcomes{Succeeded: l[0], Failed: l[1], Rejected: l[2], Throttled: l[3], TimedOut: l[4], Unresolved: l[5]},
			Queue:    QueueStats(g, n).Most,
		}
		pts, total, err := LatencyCDF(g)
		if err != nil {
			return nil, err
		}
		sc.Latency = CDF{S: []float64{}, P: []float64{}, Count: total}
		for _, p := range ThinCDF(pts, 1.005) {
			sc.Latency.S = append(sc.Latency.S, p.X)
			sc.Latency.P = append(sc.Latency.P, p.Y)
		}
		c.Strategies = append(c.Strategies, sc)
	}
	c.Services = serviceCharts(s, runs, n)
	return c, nil
}

// serviceCharts returns the attempts per bucket of each service of a
// graph, per strategy: means over the runs; nil without services.
func serviceCharts(s *Summary, runs []*Run, n int) []ServiceCharts {
	var out []ServiceCharts
	index := map[string]int{}
	counts := map[string]int{} // runs per strategy
	for _, r := range runs {
		if r == nil || len(r.Services) == 0 {
			continue
		}
		counts[r.Strategy]++
		for _, sv := range r.Services {
			i, ok := index[sv.Name]
			if !ok {
				i = len(out)
				index[sv.Name] = i
				out = append(out, ServiceCharts{Name: sv.Name, Attempts: map[string][]float64{}})
			}
			ys := out[i].Attempts[r.Strategy]
			if ys == nil {
				ys = make([]float64, n)
				out[i].Attempts[r.Strategy] = ys
			}
			for j, b := range sv.Series[:min(n, len(sv.Series))] {
				ys[j] += float64(b.Attempts)
			}
		}
	}
	for _, sv := range out {
		for name, ys := range sv.Attempts {
			if k := float64(counts[name]); k > 1 {
				for j := range ys {
					ys[j] /= k
				}
			}
		}
	}
	return out
}

// WriteCharts writes the chart data as compact JSON (it is inlined in
// pages): struct fields in their order, maps sorted by key.
func WriteCharts(w io.Writer, c *Charts) error { return json.NewEncoder(w).Encode(c) }
