package realhttp

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

func TestGraphTurnRoundTrips(t *testing.T) {
	for _, turn := range []GraphTurn{{}, {Step: GraphAnswer, Service: 2, Replica: 1, ID: 1 << 40, Edge: 3, Copy: 4, Attempt: 5, Hedge: 6}} {
		got, ok := ParseGraphTurn(turn.String())
		require.True(t, ok, turn.String())
		assert.Equal(t, turn, got)
	}
	for _, bad := range []string{"", "1.2.3", "1.2.3.4.5.6.7.x", "1.2.3.4.5.6.7.-1", "1.2.3.4.5.6.7.8.9"} {
		_, ok := ParseGraphTurn(bad)
		assert.False(t, ok, bad)
	}
}

// TestGraphServeTakesTurns serves a graph on the caller's listeners
// with its client and a Turn hook: every step that draws from shared
// state calls the hook first, and each downstream attempt carries the
// key of its turn to the callee.
func TestGraphServeTakesTurns(t *testing.T) {
	serverTestLeaks(t)
	sc, err := scenarios.Parse("graph.yaml", []byte(`
name: turns
duration: 5s
services:
  - name: front
    service_time: {dist: constant, mean: 1ms}
    calls:
      - {service: store, probability: 0.5, retry: {max_attempts: 3, backoff: {kind: fixed, delay: 1ms}, timeout: 1s}}
  - {name: store, replicas: 2, failure_probability: 0.5}
workload: {target: front, requests: 40, arrival: {kind: uniform, from: 0s, until: 1s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s}
`))
	require.NoError(t, err)
	var mu sync.Mutex
	var turns []GraphTurn
	var carried []string // the keys that reached the store
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{
		Server: ServerOptions{Seed: 1},
		Client: &http.Client{Transport: &http.Transport{}},
		Turn: func(t GraphTurn) {
			mu.Lock()
			turns = append(turns, t)
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	var places []GraphAt
	err = g.Serve(func(at GraphAt, h http.Handler) (Listener, *http.Server, error) {
		places = append(places, at)
		ln, err := newServerListener("127.0.0.1:0", 64)
		if err != nil {
			return nil, nil, err
		}
		return ln, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if at.Service == "store" {
				mu.Lock()
				carried = append(carried, r.Header.Get(GraphTurnHeader))
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []GraphAt{{"front", 0, 0}, {"store", 1, 0}, {"store", 1, 1}}, places)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _, err := Replay(ctx, sc, &sc.Strategies[0], 0, DriverOptions{Target: g.URL()})
	require.NoError(t, err)
	require.NoError(t, g.Idle(ctx))
	g.Finish(run)
	require.NoError(t, g.Shutdown(ctx))

	count := func(step GraphStep) int {
		return len(slices.DeleteFunc(slices.Clone(turns), func(t GraphTurn) bool { return t.Step != step }))
	}
	store := run.Services[1]
	assert.Equal(t, 40, count(GraphDraw), "each front attempt draws whether it calls the store")
	assert.Equal(t, int(store.Attempts), count(GraphAttempt), "each attempt at the store begins at its turn")
	assert.Equal(t, int(store.Attempts), count(GraphAnswer), "and takes its answer at its turn")
	assert.Positive(t, count(GraphSample))
	require.Len(t, carried, int(store.Attempts))
	for _, c := range carried {
		k, ok := ParseGraphTurn(c)
		require.True(t, ok, c)
		assert.Contains(t, turns, k, "the key carried is the attempt's turn")
	}
	assert.Greater(t, store.Attempts, int64(20), "half the front's attempts call the store, some more than once")
}
