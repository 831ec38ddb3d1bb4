package realhttp

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// What a test server of a single server (a scenario's server: section)
// does that a graph's replicas did not, pinned before the two are
// served by one Graph (issue 35).

// singleTestStore is a memory store whose Done of one key waits until
// released: the key's attempt has done its work, and its handler waits
// on the store.
type singleTestStore struct {
	*MemoryStore
	key     string
	entered chan struct{} // closed when the key's Done begins
	release chan struct{} // closed to let it end
}

func (f *singleTestStore) Done(ctx context.Context, key string) error {
	if key == f.key {
		close(f.entered)
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.MemoryStore.Done(ctx, key)
}

// singleTestServers are the ways to serve a single server: each starts
// one for sc with opts on loopback until the test ends, and returns its
// URL.
var singleTestServers = []struct {
	name  string
	start func(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) string
}{
	{"server", func(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) string {
		return serverTestStart(t, sc, opts).URL()
	}},
}

func TestServerFreesItsSlotBeforeTheStoreRecordsTheKey(t *testing.T) {
	// One slot. Attempt a is processed, and its handler then waits on
	// the store (recording its key). The slot is free meanwhile:
	// attempt b, behind it, is served while a's Done still waits. A
	// server that held the slot through Done would leave b queued until
	// the store answers (with Redis, up to --store-timeout a request).
	for _, ts := range singleTestServers {
		t.Run(ts.name, func(t *testing.T) {
			serverTestLeaks(t)
			sc := serverTestScenario(t, "  concurrency: 1\n  queue: unlimited\n  service_time: 1ms\n  idempotency: true\n")
			store := &singleTestStore{MemoryStore: NewMemoryStore(MemoryLimits{}), key: "a", entered: make(chan struct{}), release: make(chan struct{})}
			url := ts.start(t, sc, ServerOptions{Store: store, StoreTimeout: time.Minute})
			released := false
			release := func() {
				if !released {
					close(store.release)
					released = true
				}
			}
			t.Cleanup(release) // before the server's shutdown
			c := serverTestClient(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			answered := make(chan *http.Response, 1)
			go func() {
				resp, err := serverTestPost(ctx, c, url, "Idempotency-Key", "a")
				if err != nil {
					resp = nil
				}
				answered <- resp
			}()
			select {
			case <-store.entered:
			case <-ctx.Done():
				t.Fatal("attempt a never reached the store's Done")
			}
			resp, err := serverTestPost(ctx, c, url, "Idempotency-Key", "b")
			require.NoError(t, err, "attempt b is served while a's key is being recorded")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "processed", resp.Header.Get(ServerReasonHeader))
			select {
			case <-answered:
				t.Fatal("attempt a was answered before its Done ended")
			default:
			}
			release()
			resp = <-answered
			require.NotNil(t, resp, "attempt a is answered once its Done ends")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

// singleTestDeadlines is a server whose work (100 ms) outlasts the
// fleet's attempts (30 ms), with deadline propagation.
const singleTestDeadlines = `name: deadlines
duration: 20s
server: {service_time: {dist: constant, mean: 100ms}}
workload: {requests: 5, arrival: {kind: uniform, from: 0s, until: 50ms}}
strategies:
  - {name: propagate, backoff: {kind: none}, max_attempts: 1, timeout: 30ms, deadline_propagation: true}
`

func TestServerDoesItsWorkPastTheFleetsDeadline(t *testing.T) {
	// A bare server knows nothing of the fleet's timeout: it does every
	// job, for no one (wasted), drops none and counts none late, even
	// with deadline propagation.
	serverTestLeaks(t)
	sc, err := scenarios.Parse("deadlines.yaml", []byte(singleTestDeadlines))
	require.NoError(t, err)
	s := serverTestStart(t, sc, ServerOptions{})
	run, _ := driverReplay(t, sc, &sc.Strategies[0], DriverOptions{Target: s.URL()})
	assert.Zero(t, run.Delivered)
	serverTestIdle(t, s)
	st := s.Stats()
	assert.Equal(t, int64(5), st.Processed)
	assert.Equal(t, int64(5), st.Wasted)
	assert.Zero(t, st.LateWork)
	assert.Zero(t, st.Expired)
}

// singleTestStateKeys are the keys of a single server's state (GET
// /control/state), and of its stats: what herdlab replay and users'
// scripts read.
var singleTestStateKeys = []string{"fingerprint", "outage", "resets", "scenario", "stats", "t", "time_scale"}

var singleTestStatsKeys = []string{
	"attempts", "bad_keys", "by_outcome", "by_reason", "conns", "deadline_dropped", "done_lost", "done_pending", "done_retried",
	"duplicates", "held", "in_flight", "keys_forgotten", "late_work", "lost", "processed", "queue_wait_ns", "queued", "shed",
	"started", "store_data_lost", "store_errors", "wasted", "dropped",
}

// singleTestState gets the state at the control endpoint at admin, as
// JSON objects: the state's, and its stats'.
func singleTestState(t *testing.T, admin string) (state, stats map[string]json.RawMessage) {
	t.Helper()
	resp, err := serverTestClient(t).Get(admin + strings.TrimPrefix(ControlStatePath, "/"))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &state), string(body))
	require.NoError(t, json.Unmarshal(state["stats"], &stats), string(body))
	return state, stats
}

// keysOf returns m's keys, sorted.
func keysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func TestServerStateOfASingleServer(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  outages: [{start: 0s, duration: 1h, mode: error}]\n")
	s, err := NewServer(sc, ServerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.StartAdmin(""))
	require.NoError(t, s.Start(""))
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(context.Background())) })
	resp, err := serverTestPost(context.Background(), serverTestClient(t), s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	state, stats := singleTestState(t, s.AdminURL())
	assert.Equal(t, singleTestStateKeys, keysOf(state))
	assert.ElementsMatch(t, singleTestStatsKeys, keysOf(stats))
	assert.JSONEq(t, `"`+ServerFingerprint(sc)+`"`, string(state["fingerprint"]))
	assert.JSONEq(t, `{"mode": "error", "start": 0, "end": 3600}`, string(state["outage"]))
	assert.JSONEq(t, `1`, string(stats["attempts"]))
	assert.JSONEq(t, `{"5xx": 1}`, string(stats["by_outcome"]))
	assert.JSONEq(t, `{"outage": 1}`, string(stats["by_reason"]))
}

func TestGraphLeavesFreeTheirSlotBeforeTheStore(t *testing.T) {
	// Only a service that makes calls holds its slot past its work (its
	// calls after it); a leaf frees it as a single server does
	// (TestServerFreesItsSlotBeforeTheStoreRecordsTheKey).
	sc, err := scenarios.Parse("chain.yaml", []byte(`name: chain
services:
  - {name: front, calls: [{service: back}]}
  - {name: back, idempotency: true}
workload: {target: front, requests: 1}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`))
	require.NoError(t, err)
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{})
	require.NoError(t, err)
	assert.NotNil(t, g.services[0].replicas[0].srv.calls, "front")
	assert.Nil(t, g.services[1].replicas[0].srv.calls, "back")
	require.NoError(t, g.Shutdown(context.Background()))
}
