package lab

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

func TestGraphOfLayeredRetries(t *testing.T) {
	v := Validate(read(t, "layered-retries.yaml"), "layered-retries.yaml")
	require.Empty(t, v.Error)
	require.NotNil(t, v.Graph, "a scenario with services: has a graph")
	g := v.Graph
	assert.Equal(t, "gateway", g.Target)
	assert.Equal(t, [][]string{{"gateway"}, {"orders"}, {"db"}}, g.Layers)
	require.Len(t, g.Strategies, 3)

	capacity := func(c float64) *float64 { return &c }
	for _, st := range g.Strategies {
		assert.Equal(t, []GraphService{
			{Name: "gateway", Replicas: 1, CapacityPerS: capacity(400 / 0.005)},
			{Name: "orders", Replicas: 1, CapacityPerS: capacity(400 / 0.005)},
			{Name: "db", Replicas: 1, CapacityPerS: capacity(50 / 0.010)},
		}, st.Services, st.Name)
	}
	edges := map[string][]GraphEdge{
		"every-layer": {
			{From: "", To: "gateway", Policy: "4 attempts, timeout 10s, full-jitter 1s–10s"},
			{From: "gateway", To: "orders", Policy: "4 attempts, timeout 2s, full-jitter 20ms–200ms"},
			{From: "orders", To: "db", Policy: "4 attempts, timeout 500ms, full-jitter 20ms–200ms"},
		},
		"edge-only": {
			{From: "", To: "gateway", Policy: "4 attempts, timeout 10s, full-jitter 1s–10s"},
			{From: "gateway", To: "orders", Policy: "1 attempt, timeout 2s"},
			{From: "orders", To: "db", Policy: "1 attempt, timeout 500ms"},
		},
		"every-layer-budgets": {
			{From: "", To: "gateway", Policy: "4 attempts, timeout 10s, full-jitter 1s–10s, budget tokens"},
			{From: "gateway", To: "orders", Policy: "4 attempts, timeout 2s, full-jitter 20ms–200ms, budget tokens"},
			{From: "orders", To: "db", Policy: "4 attempts, timeout 500ms, full-jitter 20ms–200ms, budget tokens"},
		},
	}
	for _, st := range g.Strategies {
		assert.Equal(t, edges[st.Name], st.Edges, st.Name)
	}
}

func TestASingleServerHasNoGraph(t *testing.T) {
	v := Validate(read(t, "thundering-herd.yaml"), "thundering-herd.yaml")
	require.Empty(t, v.Error)
	assert.Nil(t, v.Graph)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"graph"`, "no graph field at all")
}

func TestAnInvalidGraphHasNoGraph(t *testing.T) {
	src := "name: bad\nservices:\n  - {name: a, calls: [{service: nowhere}]}\nworkload: {requests: 10, target: a}\nstrategies: [{name: s, max_attempts: 1}]\n"
	v := Validate(src, "bad.yaml")
	require.NotEmpty(t, v.Problems)
	assert.Nil(t, v.Graph, "the page keeps the last valid one")
}

// diamond is a graph whose layers are not its file order: a calls b and
// d, b calls c, c calls d, so d is in the fourth layer (its longest
// path), beside no one; e, which nothing calls, is in the first; the
// second strategy deploys three replicas of c and changes the edge c->d.
const diamond = `name: diamond
seed: 1
duration: 5s
bucket: 1s
services:
  - name: d
    concurrency: 10
    service_time: {dist: constant, mean: 10ms}
  - name: a
    calls: [{service: b}, {service: d, fanout: 3, quorum: 2, parallel: true}]
  - name: c
    concurrency: 10
    service_time: {dist: constant, mean: 10ms}
    calls: [{service: d, probability: 0.5}]
  - name: b
    concurrency: 20
    service_time: {dist: constant, mean: 5ms}
    calls: [{service: c}, {service: c, when: after}]
  - name: e
workload:
  target: a
  requests: 100
  arrival: {kind: uniform, from: 0s, until: 2s}
strategies:
  - name: plain
    max_attempts: 2
    backoff: {kind: fixed, delay: 100ms}
    timeout: 1s
    edges:
      default: {timeout: 200ms}
  - name: more-c
    max_attempts: 1
    backoff: {kind: none}
    timeout: 1m30s
    hedge: {delay: p95}
    services:
      c: {replicas: 3}
    edges:
      default: {timeout: 200ms}
      c->d: {max_attempts: 3, backoff: {kind: exponential, base: 10ms, cap: 1s}, breaker: {consecutive: 5}}
`

func TestGraphLayersAndOverrides(t *testing.T) {
	v := Validate(diamond, "diamond.yaml")
	require.Empty(t, v.Error, "%v", v.Problems)
	g := v.Graph
	require.NotNil(t, g)
	assert.Equal(t, "a", g.Target)
	assert.Equal(t, [][]string{{"a", "e"}, {"b"}, {"c"}, {"d"}}, g.Layers, "by longest path from the fleet, the target first")

	require.Len(t, g.Strategies, 2)
	plain, more := g.Strategies[0], g.Strategies[1]
	names := func(ss []GraphService) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	assert.Equal(t, []string{"d", "a", "c", "b", "e"}, names(plain.Services), "file order")
	assert.Equal(t, 1, plain.Services[2].Replicas)
	assert.Equal(t, 3, more.Services[2].Replicas, "the strategy's services: section")
	require.NotNil(t, more.Services[2].CapacityPerS)
	assert.InDelta(t, 3*10/0.010, *more.Services[2].CapacityPerS, 1e-9, "capacity of every replica")
	assert.Nil(t, plain.Services[1].CapacityPerS, "a has no concurrency limit: unlimited")

	assert.Equal(t, []GraphEdge{
		{From: "", To: "a", Policy: "2 attempts, timeout 1s, fixed 100ms"},
		{From: "a", To: "b", Policy: "1 attempt, timeout 200ms"},
		{From: "a", To: "d", Policy: "1 attempt, timeout 200ms, fan-out 3, quorum 2"},
		{From: "c", To: "d", Policy: "1 attempt, timeout 200ms, 50% of requests"},
		{From: "b", To: "c", Policy: "1 attempt, timeout 200ms"},
		{From: "b", To: "c", Policy: "1 attempt, timeout 200ms, after local work"},
	}, plain.Edges)
	assert.Equal(t, "1 attempt, timeout 1m30s, hedge after p95", more.Edges[0].Policy)
	assert.Equal(t, "3 attempts, timeout 200ms, exponential 10ms–1s, breaker, 50% of requests", more.Edges[3].Policy)

	// The edges are summary.json's, in its order: the page puts a run's
	// amplification on them by their index.
	res := Run(context.Background(), diamond, "diamond.yaml", Options{Parallel: 1})
	require.Empty(t, res.Error)
	s, err := results.ReadJSON(strings.NewReader(res.Summary))
	require.NoError(t, err)
	for i, st := range s.Strategies {
		require.Len(t, st.Edges, len(g.Strategies[i].Edges), st.Name)
		for k, e := range st.Edges {
			assert.Equal(t, [2]string{e.From, e.To}, [2]string{g.Strategies[i].Edges[k].From, g.Strategies[i].Edges[k].To}, "%s: edge %d", st.Name, k)
		}
		require.Len(t, st.Services, len(g.Strategies[i].Services))
		for k, f := range st.Services {
			assert.Equal(t, g.Strategies[i].Services[k].Name, f.Name)
		}
	}
}

func TestPolicyText(t *testing.T) {
	base := func(f func(*scenarios.Strategy)) scenarios.Strategy {
		st := scenarios.NewStrategy("s")
		f(&st)
		return st
	}
	tests := []struct {
		name string
		st   scenarios.Strategy
		call *scenarios.Call
		want string
	}{
		{"unlimited", base(func(s *scenarios.Strategy) { s.Backoff.Kind = "full-jitter" }), nil, "unlimited attempts, timeout 30s, full-jitter 1s–1m"},
		{"one attempt has no backoff", base(func(s *scenarios.Strategy) { s.MaxAttempts = 1; s.Backoff.Kind = "fixed" }), nil, "1 attempt, timeout 30s"},
		{"preset", base(func(s *scenarios.Strategy) { s.MaxAttempts = 3; s.Backoff.Preset = "grpc" }), nil, "3 attempts, timeout 30s, grpc"},
		{"elapsed and throttle", base(func(s *scenarios.Strategy) {
			s.MaxAttempts = 5
			s.Backoff = scenarios.Backoff{Kind: "fixed", Delay: 2 * time.Hour}
			s.MaxElapsed = 90 * time.Minute
			s.Throttle = &scenarios.Throttle{Kind: "sre"}
			s.DeadlinePropagation = true
		}), nil, "5 attempts, timeout 30s, fixed 2h, within 1h30m, throttle sre, deadline propagation"},
		{"fixed hedge", base(func(s *scenarios.Strategy) {
			s.MaxAttempts = 1
			s.Hedge = &scenarios.Hedge{Delay: scenarios.HedgeDelay{Duration: 50 * time.Millisecond}}
		}), nil, "1 attempt, timeout 30s, hedge after 50ms"},
		{"a full fan-out", base(func(s *scenarios.Strategy) { s.MaxAttempts = 1 }), &scenarios.Call{Fanout: 4, Quorum: 4, Probability: 1}, "1 attempt, timeout 30s, fan-out 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, PolicyText(tt.st, tt.call))
		})
	}
}
