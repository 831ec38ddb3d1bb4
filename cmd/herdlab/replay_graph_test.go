package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// graphSmall is a two-service graph whose database errors for 300 ms:
// the API retries its call twice, or not at all. Buckets of 1 s: an
// attempt is late after 250 ms, which the replay keeps to under the race
// detector beside the other packages' tests (with 100 ms buckets, 17 of
// 227 attempts went out more than 25 ms late there).
const graphSmall = `
name: small-graph
duration: 3s
bucket: 1s
services:
  - {name: api, concurrency: 50, service_time: {dist: constant, mean: 2ms}, calls: [{service: db}]}
  - name: db
    replicas: 2
    balancer: least-outstanding
    concurrency: 20
    service_time: {dist: constant, mean: 2ms}
    outages: [{start: 300ms, duration: 300ms, mode: error}]
workload: {target: api, requests: 200, arrival: {kind: uniform, from: 0s, until: 1s}}
strategies:
  - name: inner-retries
    backoff: {kind: fixed, delay: 200ms}
    max_attempts: 4
    timeout: 1s
    edges:
      default: {backoff: {kind: fixed, delay: 10ms}, max_attempts: 3, timeout: 500ms}
  - name: edge-only
    backoff: {kind: fixed, delay: 200ms}
    max_attempts: 4
    timeout: 1s
    edges:
      default: {max_attempts: 1, timeout: 500ms}
`

func TestReplayAGraphAgainstServe(t *testing.T) {
	// herdlab serve serves the whole graph; replay resets it for each run
	// of either strategy (their edge policies differ), and gets each
	// service's counts from its control endpoint: the database's attempts
	// are the edge's, the replicas' add up to the service's.
	dir := t.TempDir()
	file := writeScenario(t, dir, "graph.yaml", graphSmall)
	work, control, stdout := serveForTest(t, "--scenario", file)
	assert.Contains(t, stdout.String(), "serving small-graph (strategy inner-retries)")
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "--target", work, "--control", control, "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	real := readSummary(t, out)
	require.Len(t, real.Strategies, 2)
	for _, s := range real.Strategies {
		require.Len(t, s.Services, 2, s.Name)
		require.Len(t, s.Edges, 2, s.Name)
		api, db := s.Services[0], s.Services[1]
		assert.Equal(t, s.Attempts, api.Attempts, "%s: the api sees the fleet's attempts", s.Name)
		assert.Equal(t, s.Edges[1].Attempts, db.Attempts, "%s: the db sees the api's calls", s.Name)
		require.Len(t, db.Replicas, 2, s.Name)
		assert.Equal(t, db.Attempts, db.Replicas[0].Attempts+db.Replicas[1].Attempts, s.Name)
		assert.Positive(t, db.Processed, s.Name)
		assert.Equal(t, 200.0, s.Delivered, "%s: the fleet's retries outlast the outage", s.Name)
	}
	inner, edge := real.Strategies[0].Services[1], real.Strategies[1].Services[1]
	assert.Greater(t, inner.Amplification, edge.Amplification, "the inner retries add to the database's attempts")
	assert.Equal(t, real.Strategies[1].Attempts, edge.Attempts, "edge-only: one database attempt per fleet attempt")
}
