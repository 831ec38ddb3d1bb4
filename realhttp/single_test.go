package realhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/strategies"
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
// URL and the test server that serves it (a Graph's replica).
var singleTestServers = []struct {
	name  string
	start func(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) (string, *Server)
}{
	{"server", func(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) (string, *Server) {
		s := serverTestStart(t, sc, opts)
		return s.URL(), s
	}},
	{"graph", func(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) (string, *Server) {
		g := singleTestGraph(t, sc, opts)
		return g.URL(), g.services[0].replicas[0].srv
	}},
}

// singleTestGraph starts a Graph of sc's first strategy on loopback,
// shut down at the end of the test.
func singleTestGraph(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) *Graph {
	t.Helper()
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{Server: opts})
	require.NoError(t, err)
	require.NoError(t, g.Start(""))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, g.Shutdown(ctx))
	})
	return g
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
			url, _ := ts.start(t, sc, ServerOptions{Store: store, StoreTimeout: time.Minute})
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

// singleTestDeadlines is a server whose work (1 s) outlasts the fleet's
// attempts (300 ms: time for an attempt to reach the server on a loaded
// machine), with deadline propagation.
const singleTestDeadlines = `name: deadlines
duration: 20s
server: {service_time: {dist: constant, mean: 1s}}
workload: {requests: 5, arrival: {kind: uniform, from: 0s, until: 50ms}}
strategies:
  - {name: propagate, backoff: {kind: none}, max_attempts: 1, timeout: 300ms, deadline_propagation: true}
`

// singleTestDeadlineScenario is singleTestDeadlines, with deadline
// propagation or without.
func singleTestDeadlineScenario(t *testing.T, propagate bool) *scenarios.Scenario {
	t.Helper()
	src := singleTestDeadlines
	if !propagate {
		src = strings.Replace(src, "deadline_propagation: true", "deadline_propagation: false", 1)
	}
	sc, err := scenarios.Parse("deadlines.yaml", []byte(src))
	require.NoError(t, err)
	return sc
}

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
	// A single server's state, from a Server or from a Graph's admin
	// listener: the same keys and figures (a Graph's adds the strategy
	// and its counts since the last reset), its fingerprint the
	// server's.
	sc := serverTestScenario(t, "  service_time: 1ms\n  outages: [{start: 0s, duration: 1h, mode: error}]\n")
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) (work, admin string)
		extra []string
	}{
		{"server", func(t *testing.T) (string, string) {
			// A bare Server has no admin listener: its state as the
			// control endpoint would answer it.
			s := serverTestStart(t, sc, ServerOptions{})
			mux := http.NewServeMux()
			mux.HandleFunc("GET "+ControlStatePath, controlState(func(ctx context.Context) error { return s.waitEmpty(ctx, func() {}) }, s.State))
			admin := httptest.NewServer(mux)
			t.Cleanup(admin.Close)
			return s.URL(), admin.URL + "/"
		}, nil},
		{"graph", func(t *testing.T) (string, string) {
			g := singleTestGraph(t, sc, ServerOptions{})
			require.NoError(t, g.StartAdmin(""))
			return g.URL(), g.AdminURL()
		}, []string{"graph", "strategy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			serverTestLeaks(t)
			work, admin := tt.start(t)
			resp, err := serverTestPost(context.Background(), serverTestClient(t), work)
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

			state, stats := singleTestState(t, admin)
			assert.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(singleTestStateKeys), tt.extra...))), keysOf(state))
			assert.ElementsMatch(t, singleTestStatsKeys, keysOf(stats))
			assert.JSONEq(t, `"`+serverFingerprint(sc)+`"`, string(state["fingerprint"]))
			assert.JSONEq(t, `"t"`, string(state["scenario"]))
			assert.JSONEq(t, `{"mode": "error", "start": 0, "end": 3600}`, string(state["outage"]))
			assert.JSONEq(t, `1`, string(stats["attempts"]))
			assert.JSONEq(t, `{"5xx": 1}`, string(stats["by_outcome"]))
			assert.JSONEq(t, `{"outage": 1}`, string(stats["by_reason"]))
		})
	}
}

func TestFingerprint(t *testing.T) {
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	assert.Equal(t, serverFingerprint(sc), Fingerprint(sc))
	graph, err := scenarios.Parse("graph.yaml", []byte(`name: g
services:
  - {name: front, calls: [{service: back}]}
  - {name: back}
workload: {target: front, requests: 1}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`))
	require.NoError(t, err)
	assert.Equal(t, graphFingerprint(graph), Fingerprint(graph))
	assert.NotEqual(t, Fingerprint(sc), Fingerprint(sc.OneService()), "a server is not the graph of one service it is served as")
}

func TestGraphAdminServesTheTargetsMetrics(t *testing.T) {
	// A graph's admin listener serves its target's metrics when the
	// target has one replica; with several, each replica's are on its
	// own port only.
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprint("replicas=", replicas), func(t *testing.T) {
			serverTestLeaks(t)
			sc, err := scenarios.Parse("graph.yaml", fmt.Appendf(nil, `name: g
services:
  - {name: front, replicas: %d, service_time: 1ms, calls: [{service: back}]}
  - {name: back, service_time: 1ms}
workload: {target: front, requests: 1}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`, replicas))
			require.NoError(t, err)
			g := singleTestGraph(t, sc, ServerOptions{})
			require.NoError(t, g.StartAdmin(""))
			c := serverTestClient(t)
			resp, err := serverTestPost(context.Background(), c, g.URL())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, err = c.Get(g.AdminURL() + "metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if replicas > 1 {
				assert.Equal(t, http.StatusNotFound, resp.StatusCode)
				return
			}
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, string(body), `herdlab_server_attempts_total{outcome="success",reason="processed"} 1`, "the target's")
		})
	}
}

func TestOneServiceGraphDropsWorkPastTheFleetsDeadline(t *testing.T) {
	// Served as a graph of one service, the server knows the fleet's
	// timeout, as the simulator's engine does: with deadline
	// propagation each job is cut short when its attempt gives up
	// (nothing processed); without, each is done late, for no one.
	for _, propagate := range []bool{true, false} {
		t.Run(fmt.Sprintf("propagate=%v", propagate), func(t *testing.T) {
			serverTestLeaks(t)
			sc := singleTestDeadlineScenario(t, propagate)
			g := singleTestGraph(t, sc, ServerOptions{})
			run, _ := driverReplay(t, sc, &sc.Strategies[0], DriverOptions{Target: g.URL()})
			require.NoError(t, g.Idle(context.Background()))
			g.Finish(run)
			st := g.services[0].replicas[0].srv.Stats()
			simulated, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			want := simulated.Runs[0]
			assert.Zero(t, run.Delivered)
			assert.Equal(t, want.Processed, run.Processed, "as simulated")
			if propagate {
				assert.Zero(t, st.Processed)
				assert.Equal(t, int64(5), st.Expired)
				assert.Zero(t, st.LateWork)
			} else {
				assert.Equal(t, int64(5), st.Processed)
				assert.Equal(t, int64(5), st.LateWork)
				assert.Zero(t, st.Expired)
			}
			assert.Nil(t, run.Services, "a single server's run has no services, as the simulator's")
			assert.Nil(t, run.Edges)
		})
	}
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

// singleTestSeen is what a client and the server saw of a script of
// requests, less what time changes: the answers (status, reason and
// hints, or no answer), the log lines (without their times), the
// events, the metrics (but the connections open) and the counts (but
// the connections and the time in the queue).
type singleTestSeen struct {
	Answers []string
	Log     []ServerLogLine
	Events  []string
	Metrics []string
	Stats   ServerStats
}

// singleTestAnswer sends an attempt, with headers, and says what came
// back.
func singleTestAnswer(ctx context.Context, c *http.Client, url string, headers ...string) string {
	resp, err := serverTestPost(ctx, c, url, headers...)
	if err != nil {
		return "no answer"
	}
	return fmt.Sprintf("%d %s retry-after=%q pushback=%q", resp.StatusCode, resp.Header.Get(ServerReasonHeader),
		resp.Header.Get("Retry-After"), resp.Header.Get(PushbackHeader))
}

// singleTestMetrics returns srv's metrics, one sample a line, without
// the connections open.
func singleTestMetrics(t *testing.T, srv *Server) []string {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var out []string
	for line := range strings.Lines(rec.Body.String()) {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "herdlab_server_connections ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestOneServiceGraphServesAsTheServer(t *testing.T) {
	// The same script of requests, to a Server and to a Graph of the
	// same single-server scenario (with the same seed), sees the same
	// answers, log, events, metrics and counts.
	tests := []struct {
		name   string
		server string
		script func(t *testing.T, c *http.Client, url string, srv *Server) []string
	}{
		{"a refuse outage at 0", "  service_time: 1ms\n  outages: [{start: 0s, duration: 1h, mode: refuse}]\n",
			func(t *testing.T, c *http.Client, url string, _ *Server) []string {
				return []string{singleTestAnswer(context.Background(), c, url)}
			}},
		{"an error outage", "  service_time: 1ms\n  outages: [{start: 0s, duration: 1h, mode: error}]\n",
			func(t *testing.T, c *http.Client, url string, _ *Server) []string {
				return []string{singleTestAnswer(context.Background(), c, url), singleTestAnswer(context.Background(), c, url)}
			}},
		{"a rate limit with pushback", "  service_time: 1ms\n  rate_limit: {rate: 1, burst: 1, pushback: 2s}\n",
			func(t *testing.T, c *http.Client, url string, _ *Server) []string {
				return []string{singleTestAnswer(context.Background(), c, url), singleTestAnswer(context.Background(), c, url)}
			}},
		{"idempotency with lost answers and failures", "  service_time: {dist: exponential, mean: 2ms}\n  idempotency: true\n  response_loss: 0.5\n  failure_probability: 0.2\n  failure_pushback: 50ms\n",
			func(t *testing.T, c *http.Client, url string, _ *Server) []string {
				// Sequential: the draws of loss, failure and service
				// time come in the same order, from the run's seed.
				var out []string
				for k := range 8 {
					for range 2 {
						out = append(out, singleTestAnswer(context.Background(), c, url, "Idempotency-Key", fmt.Sprint("k", k), serverAttemptHeader, "1"))
					}
				}
				return out
			}},
		{"a full queue", "  concurrency: 1\n  queue: 1\n  service_time: 200ms\n",
			func(t *testing.T, c *http.Client, url string, srv *Server) []string {
				answers := make([]chan string, 2)
				for i, wait := range []func() bool{
					func() bool { return srv.Stats().InFlight == 1 },
					func() bool { return srv.Stats().Queued == 1 },
				} {
					answers[i] = make(chan string, 1)
					go func() {
						answers[i] <- singleTestAnswer(context.Background(), c, url, serverRequestHeader, fmt.Sprint(i))
					}()
					serverTestWait(t, "the attempt in place", wait)
				}
				full := singleTestAnswer(context.Background(), c, url, serverRequestHeader, "2")
				return []string{<-answers[0], <-answers[1], full}
			}},
		{"a hold", "  service_time: 1ms\n  outages: [{start: 0s, duration: 1h, mode: timeout}]\n",
			func(t *testing.T, c *http.Client, url string, _ *Server) []string {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				return []string{singleTestAnswer(ctx, c, url)}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverTestLeaks(t)
			sc := serverTestScenario(t, tt.server)
			var seen []singleTestSeen
			for _, ts := range singleTestServers {
				log, events := &serverTestLog{}, &serverTestEvents{}
				url, srv := ts.start(t, sc, ServerOptions{Seed: 7, Log: log, Events: events.add})
				c := serverTestClient(t)
				got := singleTestSeen{Answers: tt.script(t, c, url, srv)}
				serverTestIdle(t, srv)
				for _, line := range log.lines(t) {
					line.T, line.AtNS = 0, 0
					got.Log = append(got.Log, line)
				}
				events.mu.Lock()
				for _, ev := range events.events {
					got.Events = append(got.Events, ev.String())
				}
				events.mu.Unlock()
				got.Metrics = singleTestMetrics(t, srv)
				got.Stats = srv.Stats()
				got.Stats.Conns, got.Stats.QueueWait = 0, 0
				seen = append(seen, got)
			}
			require.NotEmpty(t, seen[0].Answers)
			for i := 1; i < len(seen); i++ {
				assert.Equal(t, seen[0], seen[i], "%s as %s", singleTestServers[i].name, singleTestServers[0].name)
			}
		})
	}
}

func TestHedgePercentileObservesEveryCopysSuccess(t *testing.T) {
	// Plan row 22, one rule for the fleet's driver and a call edge, the
	// simulator's (sim/job.go): a percentile hedge delay is estimated
	// from every copy's success, whether or not it won its attempt.
	// Each owner takes the same attempts of two copies, the hedge
	// answered a millisecond after they were sent, the first copy two:
	// twenty whose copies both failed give its sender nothing; twenty
	// whose hedge alone succeeded give it twenty latencies (the
	// hedges'); ten whose copies both succeeded, the first copy after
	// the hedge had won, twenty too, the losers' with the winners'.
	type owner struct {
		attempt func(first, hedge strategies.Outcome)
		hedges  func() (time.Duration, bool) // the sender's hedge delay
		driver  *driver                      // the driver's, nil for an edge
	}
	owners := map[string]func() owner{
		"driver": func() owner {
			pol := &strategies.Policy{Hedge: &strategies.Hedge{Percentile: 50, Max: 1}}
			d := &driver{policy: pol, reqs: make([]driverRequest, 1), copies: make([]hedgeCopies, 1), senders: make([]driverSender, 1), run: &results.Run{}}
			answer := func(k int32, o strategies.Outcome, sent time.Duration) {
				d.now += time.Millisecond
				if d.copyAnswered(driverDone{i: 0, tag: k, driverAnswer: driverAnswer{res: strategies.Result{Outcome: o}}, actual: sent}) {
					d.reqs[0].state = drvWaiting
				}
			}
			return owner{
				attempt: func(first, hedge strategies.Outcome) {
					d.reqs[0].state = drvInFlight
					d.inFlight = 2
					d.copies[0].start(0)
					d.copies[0].add(0)
					d.copies[0].add(0)
					sent := d.now
					answer(1, hedge, sent)
					answer(0, first, sent)
				},
				hedges: func() (time.Duration, bool) { return pol.HedgeDelay(&d.senders[0].retry) },
				driver: d,
			}
		},
		"edge": func() owner {
			sd := &graphSender{mu: new(sync.Mutex), stated: true}
			e := &graphEdge{policy: &strategies.Policy{Hedge: &strategies.Hedge{Percentile: 50, Max: 1}}}
			g := &Graph{scale: 1, start: time.Now()}
			return owner{
				attempt: func(first, hedge strategies.Outcome) {
					cp := new(hedgeCopies)
					cp.add(0)
					cp.add(0)
					sent := g.now()
					for k, o := range []strategies.Outcome{hedge, first} {
						g.copyAnswered(e, sd, cp, graphCopy{k: 1 - int32(k), ans: driverAnswer{res: strategies.Result{Outcome: o}}, live: true, sent: sent})
					}
				},
				hedges: func() (time.Duration, bool) { return e.policy.HedgeDelay(sd.sender()) },
			}
		},
	}
	for name, newOwner := range owners {
		t.Run(name, func(t *testing.T) {
			o := newOwner()
			for range strategies.MinObserved {
				o.attempt(strategies.ServerError, strategies.ServerError)
			}
			_, ok := o.hedges()
			assert.False(t, ok, "no success, nothing observed")
			for range strategies.MinObserved {
				o.attempt(strategies.ServerError, strategies.Success)
			}
			delay, ok := o.hedges()
			assert.True(t, ok, "the hedges' successes, though no first copy succeeded")
			if d := o.driver; d != nil {
				assert.Equal(t, time.Millisecond, delay, "the hedges' latency: one answer after it was sent")
				assert.EqualValues(t, strategies.MinObserved, d.run.HedgeWins)
				assert.Equal(t, 1, d.inFlight, "the loser's answer taken off, the winner's left to complete")
			}
			o = newOwner()
			for range strategies.MinObserved / 2 {
				o.attempt(strategies.Success, strategies.Success)
			}
			_, ok = o.hedges()
			assert.True(t, ok, "the losers' latencies with the winners'")
		})
	}
}

func TestReplayGraphOfASingleServer(t *testing.T) {
	// ReplayGraph replays a server: scenario against its graph of one
	// service: with deadline propagation the work is dropped there, as
	// the simulator drops it, without it done for no one; the run has
	// the server's counts and no services nor edges.
	for _, propagate := range []bool{true, false} {
		t.Run(fmt.Sprintf("propagate=%v", propagate), func(t *testing.T) {
			serverTestLeaks(t)
			sc := singleTestDeadlineScenario(t, propagate)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			run, _, err := ReplayGraph(ctx, sc, &sc.Strategies[0], 0, DriverOptions{})
			require.NoError(t, err)
			simulated, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			want := int64(5)
			if propagate {
				want = 0
			}
			assert.Equal(t, want, run.Processed)
			assert.Equal(t, simulated.Runs[0].Processed, run.Processed, "as simulated")
			assert.Equal(t, run.Processed, run.Wasted, "what was done was for no one")
			assert.Nil(t, run.Services, "a single server's run has no services, as the simulator's")
			assert.Nil(t, run.Edges)
		})
	}
}

// singleTestTwoServices is the smallest graph: front calls back, one
// request.
func singleTestTwoServices(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("graph.yaml", []byte(`name: g
services:
  - {name: front, service_time: 1ms, calls: [{service: back}]}
  - {name: back, service_time: 1ms}
workload: {target: front, requests: 1}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`))
	require.NoError(t, err)
	return sc
}

func TestReplayGraphCapsASingleServersConnections(t *testing.T) {
	// In process, a single server holds the other end of each of the
	// fleet's connections: ReplayGraph caps them at the fleet's pool and
	// 64 more, as herdlab replay's open-file check counts them. A
	// graph's replicas keep the default cap, and both get the run's seed.
	single := serverTestScenario(t, "  service_time: 1ms\n")
	graph := singleTestTwoServices(t)
	tests := []struct {
		name  string
		sc    *scenarios.Scenario
		conns int
		want  int
	}{
		{"single", single, 1000, 1064},
		{"single, the driver's default pool", single, 0, DriverDefaultMaxConns + 64},
		{"graph", graph, 1000, 0},
	}
	for _, tt := range tests {
		o := replayGraphOptions(tt.sc, 2, DriverOptions{MaxConns: tt.conns, TimeScale: 0.5})
		assert.Equal(t, tt.want, o.Server.MaxConns, tt.name)
		assert.Equal(t, sim.RunSeed(tt.sc.Seed, 2), o.Server.Seed, tt.name)
		assert.InDelta(t, 0.5, o.Server.TimeScale, 0, tt.name)
	}
	g, err := NewGraph(single, &single.Strategies[0], replayGraphOptions(single, 0, DriverOptions{MaxConns: 1000}))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Shutdown(context.Background())) })
	assert.Equal(t, 1064, g.services[0].replicas[0].srv.maxConns, "the replica takes the cap")
}

func TestGraphCountsOverTheWireAddNoServicesForASingleServer(t *testing.T) {
	// Against a herdlab serve, a replay adds the counts it reads from
	// the control endpoint: a single server's add its processed work
	// and no services nor edges, as in process; a graph's add both.
	one := serverTestScenario(t, "  service_time: 1ms\n")
	two := singleTestTwoServices(t)
	for _, sc := range []*scenarios.Scenario{one, two} {
		t.Run(fmt.Sprint("graph=", sc.Graph()), func(t *testing.T) {
			serverTestLeaks(t)
			g := singleTestGraph(t, sc, ServerOptions{})
			require.NoError(t, g.StartAdmin(""))
			c := serverTestClient(t)
			resp, err := serverTestPost(context.Background(), c, g.URL())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)

			st, err := Control{URL: g.AdminURL(), Client: c}.Idle(context.Background())
			require.NoError(t, err)
			counts := st.Counts()
			require.NotNil(t, counts)
			assert.Equal(t, !sc.Graph(), counts.Single)
			run := &results.Run{Attempts: 1, Series: make([]results.Bucket, 1)}
			counts.AddTo(run)
			assert.Equal(t, int64(1), run.Processed, "the target's work")
			if sc.Graph() {
				assert.Len(t, run.Services, 2)
				assert.Equal(t, map[string]int64{"->front": 1, "front->back": 1}, graphEdges(run))
				return
			}
			assert.Nil(t, run.Services, "a single server's run has no services, as the simulator's")
			assert.Nil(t, run.Edges)
		})
	}
}
