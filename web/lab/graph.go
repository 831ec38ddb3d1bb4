package lab

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// Graph is the shape of a service graph, for the browser app's picture
// of it: the services in layers and, per strategy, each service's
// replicas and capacity and each call edge's policy. It is read from the
// parsed scenario alone, without a run; a run's figures for the same
// services and edges are in summary.json (strategies[].services, and
// strategies[].edges in the order of Edges here).
type Graph struct {
	// Target is the service the fleet calls.
	Target string `json:"target"`
	// Layers are the services by layer, left to right: a service's layer
	// is its longest path from the fleet in call edges, less one: the
	// service the fleet calls is in Layers[0] (first, unless a service
	// calls it too), with any service that nothing calls; the services
	// it calls in Layers[1], and so on. A callee is always in a later
	// layer than its callers. Within a layer, services are in
	// the mean order of their callers (fewer crossings), in file order
	// where that ties.
	Layers [][]string `json:"layers"`
	// Strategies are the graph as each strategy deploys it, in file
	// order.
	Strategies []GraphStrategy `json:"strategies"`
}

// GraphStrategy is the graph as one strategy deploys it (its services
// section may change replicas and capacity; its edges the policies).
type GraphStrategy struct {
	Name     string         `json:"name"`
	Services []GraphService `json:"services"` // in file order
	// Edges are the call edges: the fleet's first, then each service's
	// calls in file order, one edge per call (two calls from one service
	// to another are two edges): the order of summary.json's edges.
	Edges []GraphEdge `json:"edges"`
}

// GraphService is one service of a graph.
type GraphService struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// CapacityPerS is the service's capacity in requests per second, all
	// replicas together; nil when unlimited.
	CapacityPerS *float64 `json:"capacity_per_s"`
}

// GraphEdge is one call edge of a graph.
type GraphEdge struct {
	From string `json:"from"` // the caller; "" for the fleet
	To   string `json:"to"`
	// Policy is the edge's retry policy in short: "4 attempts, timeout
	// 2s, full-jitter 20ms–200ms", then any budget, breaker, throttle,
	// hedge, fan-out and probability (see PolicyText).
	Policy string `json:"policy"`
}

// GraphOf returns the graph of sc, or nil when sc simulates one server.
// sc must be valid.
func GraphOf(sc *scenarios.Scenario) *Graph {
	if !sc.Graph() {
		return nil
	}
	g := &Graph{Target: sc.Services[sc.TargetIndex()].Name, Layers: layers(sc)}
	for i := range sc.Strategies {
		st := &sc.Strategies[i]
		gs := GraphStrategy{Name: st.Name, Services: []GraphService{}}
		for _, svc := range sc.ServicesFor(st) {
			s := GraphService{Name: svc.Name, Replicas: svc.Replicas}
			if c := svc.Capacity(); !math.IsInf(c, 1) && c > 0 {
				s.CapacityPerS = &c
			}
			gs.Services = append(gs.Services, s)
		}
		gs.Edges = []GraphEdge{{To: g.Target, Policy: PolicyText(*st, nil)}}
		for k := range sc.Services {
			svc := &sc.Services[k]
			for c := range svc.Calls {
				call := &svc.Calls[c]
				gs.Edges = append(gs.Edges, GraphEdge{From: svc.Name, To: call.Service, Policy: PolicyText(scenarios.EdgeStrategy(st, svc.Name, call), call)})
			}
		}
		g.Strategies = append(g.Strategies, gs)
	}
	return g
}

// layers returns the services of sc's graph by layer (see Graph.Layers).
func layers(sc *scenarios.Scenario) [][]string {
	n := len(sc.Services)
	layer := make([]int, n) // from 0, the fleet's callee's
	target := sc.TargetIndex()
	// Longest paths from the fleet: relax every call until nothing
	// changes (a valid graph has no cycle; n rounds bound it anyway).
	for range n {
		changed := false
		for u := range sc.Services {
			for _, c := range sc.Services[u].Calls {
				v := sc.ServiceIndex(c.Service)
				if v >= 0 && layer[u]+1 > layer[v] && layer[u]+1 < n {
					layer[v] = layer[u] + 1
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	depth := slices.Max(layer)
	byLayer := make([][]int, depth+1)
	for i, l := range layer {
		byLayer[l] = append(byLayer[l], i)
	}
	// The target first in its layer; then, layer by layer, each service
	// at the mean place of its callers in the layers before (the
	// barycentre heuristic).
	slices.SortStableFunc(byLayer[0], func(a, b int) int { return cmp.Compare(boolInt(b == target), boolInt(a == target)) })
	place := make([]float64, n)
	out := make([][]string, len(byLayer))
	for l, nodes := range byLayer {
		if l > 0 {
			key := map[int]float64{}
			for _, v := range nodes {
				sum, count := 0.0, 0
				for u := range sc.Services {
					if layer[u] >= l {
						continue
					}
					for _, c := range sc.Services[u].Calls {
						if c.Service == sc.Services[v].Name {
							sum += place[u]
							count++
						}
					}
				}
				key[v] = 0.5
				if count > 0 {
					key[v] = sum / float64(count)
				}
			}
			slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		}
		for k, v := range nodes {
			place[v] = (float64(k) + 0.5) / float64(len(nodes))
			out[l] = append(out[l], sc.Services[v].Name)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PolicyText is a retry policy in short, as the graph picture labels an
// edge: the attempts ("1 attempt", "4 attempts", "unlimited attempts"),
// the per-attempt timeout, and, with more than one attempt, the backoff
// ("full-jitter 20ms–200ms", "fixed 10s", a preset's name); then what
// else the policy has: "budget tokens", "breaker", "throttle sre",
// "hedge after p95", "deadline propagation"; and, for the call c of a
// service (nil for the fleet's), its fan-out ("fan-out 3, quorum 2"),
// probability ("30% of requests") and "after local work".
func PolicyText(st scenarios.Strategy, c *scenarios.Call) string {
	var parts []string
	switch st.MaxAttempts {
	case 0:
		parts = append(parts, "unlimited attempts")
	case 1:
		parts = append(parts, "1 attempt")
	default:
		parts = append(parts, strconv.Itoa(st.MaxAttempts)+" attempts")
	}
	parts = append(parts, "timeout "+shortDuration(st.Timeout))
	if st.MaxAttempts != 1 {
		if b := backoffText(st.Backoff); b != "" {
			parts = append(parts, b)
		}
		if st.MaxElapsed > 0 {
			parts = append(parts, "within "+shortDuration(st.MaxElapsed))
		}
	}
	if st.Budget != nil {
		parts = append(parts, "budget "+st.Budget.Kind)
	}
	if st.Breaker != nil {
		parts = append(parts, "breaker")
	}
	if st.Throttle != nil {
		parts = append(parts, "throttle "+st.Throttle.Kind)
	}
	if st.Hedge != nil {
		parts = append(parts, "hedge after "+hedgeDelay(st.Hedge.Delay))
	}
	if st.DeadlinePropagation {
		parts = append(parts, "deadline propagation")
	}
	if c != nil {
		if c.Fanout > 1 {
			f := "fan-out " + strconv.Itoa(c.Fanout)
			if c.Quorum > 0 && c.Quorum < c.Fanout {
				f += ", quorum " + strconv.Itoa(c.Quorum)
			}
			parts = append(parts, f)
		}
		if c.Probability < 1 {
			parts = append(parts, strconv.FormatFloat(c.Probability*100, 'f', -1, 64)+"% of requests")
		}
		if c.When == scenarios.After {
			parts = append(parts, "after local work")
		}
	}
	return strings.Join(parts, ", ")
}

// backoffText is a backoff in short: its preset's name, or its kind and
// parameters; "" for none.
func backoffText(b scenarios.Backoff) string {
	switch {
	case b.Preset != "":
		return b.Preset
	case b.Kind == "" || b.Kind == scenarios.BackoffNone:
		return ""
	case b.Kind == scenarios.BackoffFixed:
		return "fixed " + shortDuration(b.Delay)
	}
	return fmt.Sprintf("%s %s–%s", b.Kind, shortDuration(b.Base), shortDuration(b.Cap))
}

func hedgeDelay(d scenarios.HedgeDelay) string {
	if d.Percentile > 0 {
		return d.String()
	}
	return shortDuration(d.Duration)
}

// shortDuration is d as time.Duration writes it, without its zero
// minutes and seconds: 1m, 1h30m, 2s, 500ms.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
