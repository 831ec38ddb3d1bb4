package results

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorstOf(t *testing.T) {
	r := func(x float64) *float64 { return &x }
	sv := func(name string, ratio *float64, amp float64) ServiceFigures {
		return ServiceFigures{Name: name, PeakLoad: 100 * amp, PeakAtS: 60, PeakLoadRatio: ratio, Amplification: amp}
	}
	tests := []struct {
		name     string
		services []ServiceFigures
		want     string // "" for nil
	}{
		{"one server", nil, ""},
		{"a graph of one service", []ServiceFigures{sv("api", r(3), 2)}, ""},
		{"the highest peak over capacity", []ServiceFigures{sv("gateway", r(0.01), 1.43), sv("orders", r(0.06), 2.93), sv("db", r(1.06), 8.95)}, "db"},
		{"not the highest amplification", []ServiceFigures{sv("gateway", r(2.5), 1), sv("db", r(0.3), 9)}, "gateway"},
		{"an unlimited service ranks below", []ServiceFigures{sv("cdn", nil, 20), sv("origin", r(0.001), 1)}, "origin"},
		{"only unlimited ones: by amplification", []ServiceFigures{sv("a", nil, 1), sv("b", nil, 3), sv("c", nil, 2)}, "b"},
		{"a tie on load: the higher amplification", []ServiceFigures{sv("a", r(1), 1), sv("b", r(1), 1.5)}, "b"},
		{"a full tie: the first", []ServiceFigures{sv("a", r(1), 1), sv("b", r(1), 1)}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := WorstOf(tt.services)
			if tt.want == "" {
				assert.Nil(t, w)
				return
			}
			require.NotNil(t, w)
			assert.Equal(t, tt.want, w.Name)
			for _, s := range tt.services {
				if s.Name == tt.want {
					assert.Equal(t, s.Amplification, w.Amplification)
					assert.Equal(t, s.PeakLoad, w.PeakLoad)
					assert.Equal(t, s.PeakAtS, w.PeakAtS)
					assert.Equal(t, s.PeakLoadRatio, w.PeakLoadRatio)
				}
			}
		})
	}
}

// graphStrategy is a strategy of a chain gateway -> orders -> db with the
// front's figures and the services' peak ratios and amplifications.
func graphStrategy(name string, delivered float64, front, amps, ratios [3]float64) StrategySummary {
	zero := 0.0
	st := StrategySummary{Name: name, Recovery: Recovered, Figures: Figures{
		Requests: 60000, Delivered: delivered, DeliveredRatio: delivered / 60000, DeadLettered: 60000 - delivered,
		DeadLetteredBy: map[string]float64{"max_attempts": 60000 - delivered},
		Amplification:  front[0], PeakLoad: front[1], PeakLoadRatio: &front[2], PeakAtS: 60, RecoveryTimeS: &zero,
	}}
	prev := ""
	for i, svc := range []string{"gateway", "orders", "db"} {
		ratio := ratios[i]
		st.Services = append(st.Services, ServiceFigures{Name: svc, Amplification: amps[i], PeakLoadRatio: &ratio, PeakLoad: ratio * 5000, PeakAtS: 60})
		st.Edges = append(st.Edges, EdgeFigures{From: prev, To: svc, Amplification: amps[i]})
		prev = svc
	}
	st.Worst = WorstOf(st.Services)
	return st
}

// The takeaways' rules, as a table of summaries and the exact lines they
// give.
func TestTakeawaysOfAGraph(t *testing.T) {
	capacity := 80000.0
	graph := func(sts ...StrategySummary) *Summary {
		return &Summary{Scenario: "chain", Runs: 1, BucketS: 1, CapacityPerS: &capacity,
			Outages: []Window{{StartS: 30, EndS: 60, Mode: "error", Service: "db"}}, Strategies: sts}
	}
	tests := []struct {
		name string
		s    *Summary
		want []string
	}{
		{
			// layered-retries: every-layer is lighter than edge-only at the
			// front (1.43x against 1.74x) but sends 8.95x to the database:
			// it must not come out as the lesser work.
			name: "layered-retries",
			s: graph(
				graphStrategy("every-layer", 56004, [3]float64{1.43, 1091, 0.01}, [3]float64{1.43, 2.93, 8.95}, [3]float64{0.01, 0.06, 1.06}),
				graphStrategy("edge-only", 46782, [3]float64{1.74, 1600, 0.02}, [3]float64{1.74, 1.74, 1.74}, [3]float64{0.02, 0.02, 0.32}),
				graphStrategy("every-layer-budgets", 45011, [3]float64{1, 550, 0.01}, [3]float64{1, 1, 1}, [3]float64{0.01, 0.01, 0.11}),
			),
			want: []string{
				"The service each strategy hurts most (the highest peak load after the outage over capacity): every-layer, db (peak 1.06x its capacity, 8.95x attempts per fleet request); edge-only, db (peak 0.32x its capacity, 1.74x attempts per fleet request); every-layer-budgets, db (peak 0.11x its capacity, 1x attempts per fleet request).",
				"Fastest recovery of gateway (the front) after the outage: every-layer, 0s (93.34% delivered, 6.66% given up).",
				"every-layer delivered 93.34% of requests; 3,996 went to the dead-letter queue (max_attempts).",
				"edge-only delivered 77.97% of requests; 13,218 went to the dead-letter queue (max_attempts).",
				"every-layer-budgets delivered 75.02% of requests; 14,989 went to the dead-letter queue (max_attempts).",
				"Least work at the service each strategy hurts most: every-layer-budgets, 1x attempts per fleet request at db (75.02% delivered, 24.98% given up; most: every-layer, 8.95x at db).",
			},
		},
		{
			// A herd lands on the database, not on the front: the line says
			// where, and the calm strategies are told apart from it, the one
			// far below capacity not called near it.
			name: "a herd below the front",
			s: graph(
				graphStrategy("retry-all", 60000, [3]float64{1.2, 900, 0.01}, [3]float64{1.2, 3, 7}, [3]float64{0.01, 0.2, 3.5}),
				graphStrategy("jitter", 60000, [3]float64{1.1, 800, 0.01}, [3]float64{1.1, 1.2, 1.3}, [3]float64{0.01, 0.1, 0.9}),
				graphStrategy("budget", 60000, [3]float64{1, 700, 0.01}, [3]float64{1, 1, 1}, [3]float64{0.01, 0.01, 0.01}),
			),
			want: []string{
				"The service each strategy hurts most (the highest peak load after the outage over capacity): retry-all, db (peak 3.5x its capacity, 7x attempts per fleet request); jitter, db (peak 0.9x its capacity, 1.3x attempts per fleet request); budget, gateway (peak 0.01x its capacity, 1x attempts per fleet request).",
				"retry-all: 17,500 attempts within 1s at t = 60s on db, 3.5x its capacity.",
				"Peak load after the outage stays near capacity with jitter (0.9x at db; all delivered).",
				"Peak load after the outage stays well below capacity with budget (0.01x at gateway; all delivered).",
				"Fastest recovery of gateway (the front) after the outage: retry-all, 0s (all delivered).",
				"Least work at the service each strategy hurts most: budget, 1x attempts per fleet request at gateway (all delivered; most: retry-all, 7x at db).",
			},
		},
		{
			// Services of unlimited capacity: no load to compare, so the
			// amplification decides, and no line speaks of capacity.
			name: "unlimited services",
			s: func() *Summary {
				s := graph(
					graphStrategy("retry-all", 60000, [3]float64{1.2, 900, 0}, [3]float64{1.2, 3, 7}, [3]float64{}),
					graphStrategy("edge-only", 60000, [3]float64{1.1, 800, 0}, [3]float64{1.1, 1.1, 1.1}, [3]float64{}),
				)
				s.CapacityPerS = nil
				for i := range s.Strategies {
					st := &s.Strategies[i]
					st.PeakLoadRatio = nil
					for k := range st.Services {
						st.Services[k].PeakLoadRatio = nil
					}
					st.Worst = WorstOf(st.Services)
				}
				return s
			}(),
			want: []string{
				"The service each strategy hurts most (the highest peak load after the outage over capacity): retry-all, db (unlimited capacity, 7x attempts per fleet request); edge-only, gateway (unlimited capacity, 1.1x attempts per fleet request).",
				"Fastest recovery of gateway (the front) after the outage: retry-all, 0s (all delivered).",
				"Least work at the service each strategy hurts most: edge-only, 1.1x attempts per fleet request at gateway (all delivered; most: retry-all, 7x at db).",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Takeaways(tt.s))
		})
	}
}

// One server: far below capacity is not near it, and nothing names a
// service.
func TestTakeawaysOfOneServerFarBelowCapacity(t *testing.T) {
	capacity := 2000.0
	r25, low := 25.0, 0.01
	s := &Summary{Scenario: "herd", Runs: 1, BucketS: 1, CapacityPerS: &capacity,
		Strategies: []StrategySummary{
			{Name: "fixed", Recovery: NoOutage, Figures: Figures{Requests: 100, Delivered: 100, DeliveredRatio: 1, PeakLoad: 50000, PeakLoadRatio: &r25, Amplification: 2}},
			{Name: "light", Recovery: NoOutage, Figures: Figures{Requests: 100, Delivered: 100, DeliveredRatio: 1, PeakLoad: 20, PeakLoadRatio: &low, Amplification: 1}},
		}}
	assert.Equal(t, []string{
		"fixed: 50,000 attempts within 1s at t = 0s, 25x capacity.",
		"Peak load stays well below capacity with light (0.01x; all delivered).",
		"Least work: light, 1x attempts per request (all delivered; most: fixed, 2x).",
	}, Takeaways(s))
}

func TestTheTableOfAGraphNamesItsServices(t *testing.T) {
	capacity := 80000.0
	s := &Summary{Scenario: "chain", Runs: 1, BucketS: 1, CapacityPerS: &capacity, Outages: []Window{{StartS: 30, EndS: 60, Mode: "error"}},
		Strategies: []StrategySummary{
			graphStrategy("every-layer", 56004, [3]float64{1.43, 1091, 0.01}, [3]float64{1.43, 2.93, 8.95}, [3]float64{0.01, 0.06, 1.06}),
			graphStrategy("edge-only", 46782, [3]float64{1.74, 1600, 0.02}, [3]float64{1.74, 1.74, 1.74}, [3]float64{0.02, 0.02, 0.32}),
		}}
	rows := tableRows(s)
	assert.Equal(t, []string{"strategy", "attempts (gateway)", "amplif. (gateway)", "peak after outage (gateway)", "hurt most", "its peak after outage", "its amplif.",
		"recovery (gateway)", "drain", "completion", "delivered", "dead letters", "unfinished", "duplicates (gateway)", "p99 latency (delivered only)"}, rows[0])
	assert.Equal(t, []string{"every-layer", "0", "1.43x", "1,091 (0.01x) at 60s", "db", "5,300 (1.06x) at 60s", "8.95x"}, rows[1][:7])
	assert.Equal(t, []string{"edge-only", "0", "1.74x", "1,600 (0.02x) at 60s", "db", "1,600 (0.32x) at 60s", "1.74x"}, rows[2][:7])
	for _, row := range rows {
		assert.Len(t, row, len(rows[0]))
	}

	var md bytes.Buffer
	require.NoError(t, WriteReport(&md, s, nil))
	assert.Contains(t, md.String(), "| strategy | attempts (gateway) | amplif. (gateway) | peak after outage (gateway) | hurt most | its peak after outage | its amplif. |")
	var text bytes.Buffer
	require.NoError(t, WriteTable(&text, s))
	assert.Regexp(t, `every-layer +0 +1\.43x +1,091 \(0\.01x\) at 60s +db +5,300 \(1\.06x\) at 60s +8\.95x`, text.String())
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, s, nil, nil))
	assert.Contains(t, page.String(), "<th>hurt most</th>")

	// summary.json names the worst service of each strategy.
	var js bytes.Buffer
	require.NoError(t, WriteJSON(&js, s))
	var back struct {
		Strategies []struct {
			Worst map[string]any `json:"worst_service"`
		} `json:"strategies"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, map[string]any{"name": "db", "peak_load": 5300.0, "peak_load_ratio": 1.06, "peak_at_s": 60.0, "amplification": 8.95}, back.Strategies[0].Worst)

	// One server: no new column, no service named.
	one := summaryForTest()
	head := strings.Join(tableRows(one)[0], "|")
	assert.NotContains(t, head, "hurt most")
	assert.Equal(t, "attempts", tableRows(one)[0][1], "the front is not named")
	js.Reset()
	require.NoError(t, WriteJSON(&js, one))
	assert.NotContains(t, js.String(), "worst_service")
}
