package realhttp

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// graphTestReplay parses the graph scenario src and replays its first
// strategy over real HTTP (run 0), checking that the run kept time.
func graphTestReplay(t *testing.T, src string) (*scenarios.Scenario, *results.Run) {
	t.Helper()
	serverTestLeaks(t)
	sc, err := scenarios.Parse("graph.yaml", []byte(src))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _, err := ReplayGraph(ctx, sc, &sc.Strategies[0], 0, DriverOptions{})
	require.NoError(t, err)
	require.Len(t, run.Services, len(sc.Services))
	return sc, run
}

// graphEdges returns the attempts sent along each edge of run, by
// "CALLER->CALLEE" ("->TARGET" for the fleet's).
func graphEdges(run *results.Run) map[string]int64 {
	out := map[string]int64{}
	for _, e := range run.Edges {
		out[e.Caller+"->"+e.Callee] = e.Attempts
	}
	return out
}

// graphSeriesAttempts sums a service's attempts over its buckets.
func graphSeriesAttempts(s *results.ServiceRun) int64 {
	var n int64
	for _, b := range s.Series {
		n += b.Attempts
	}
	return n
}

func TestGraphChainMultipliesAttemptsAtEveryLayer(t *testing.T) {
	// A chain of 3 layers whose bottom fails every attempt, each call
	// (the fleet's too) made up to 4 times: over real HTTP, exactly
	// 4, 16 and 64 attempts per fleet request at the top, middle and
	// bottom, as in the simulator.
	const requests = 4
	_, run := graphTestReplay(t, `
name: chain
duration: 20s
services:
  - {name: top, service_time: {dist: constant, mean: 1ms}, calls: [{service: mid}]}
  - {name: mid, service_time: {dist: constant, mean: 1ms}, calls: [{service: bottom}]}
  - {name: bottom, failure_probability: 1}
workload: {target: top, requests: 4, arrival: {kind: uniform, from: 0s, until: 100ms}}
strategies:
  - name: retry
    backoff: {kind: fixed, delay: 2ms}
    max_attempts: 4
    timeout: 10s
    edges:
      default: {backoff: {kind: fixed, delay: 1ms}, max_attempts: 4, timeout: 5s}
`)
	assert.Equal(t, map[string]int64{"->top": 4 * requests, "top->mid": 16 * requests, "mid->bottom": 64 * requests}, graphEdges(run))
	for i, want := range []int64{4, 16, 64} {
		s := run.Services[i]
		assert.Equal(t, want*requests, s.Attempts, s.Name)
		assert.Equal(t, want*requests, graphSeriesAttempts(s), "%s: every attempt in a bucket", s.Name)
		assert.Zero(t, s.OK, s.Name)
	}
	assert.Equal(t, int64(requests), run.Requests)
	assert.Zero(t, run.Delivered)
	assert.Zero(t, run.Services[1].Processed, "mid calls before its work: a failed call leaves it undone")
}

func TestGraphFanOutQuorumAndAnOutageOnOneReplica(t *testing.T) {
	// The front calls 3 copies of store in parallel, round-robin over its
	// 3 replicas, one of which answers 503 for the whole run: a quorum
	// of 2 delivers every request, all 3 needed delivers none. The
	// requests come 100 ms apart, so that each one's copies take three
	// turns of round-robin in a row (interleaved with another request's,
	// two copies could land on the same replica).
	for _, tc := range []struct {
		quorum    int
		delivered bool
	}{{2, true}, {3, false}} {
		src := strings.ReplaceAll(`
name: quorum
duration: 20s
services:
  - {name: front, calls: [{service: store, fanout: 3, quorum: QUORUM}]}
  - name: store
    replicas: 3
    service_time: {dist: constant, mean: 2ms}
    outages: [{start: 0s, duration: 1h, mode: error, replicas: [1]}]
workload: {target: front, requests: 30, arrival: {kind: uniform, from: 0s, until: 3s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 2s}}}
`, "QUORUM", string(rune('0'+tc.quorum)))
		_, run := graphTestReplay(t, src)
		store := run.Services[1]
		require.Len(t, store.Replicas, 3)
		if tc.delivered {
			assert.Equal(t, int64(90), store.Attempts, "quorum %d: 3 copies a request", tc.quorum)
			for r, rep := range store.Replicas {
				assert.Equal(t, int64(30), rep.Attempts, "quorum %d: round-robin sends replica %d a copy of each", tc.quorum, r)
			}
		} else {
			// Replica 1's 503 loses the quorum, and the front cancels the
			// request's other copies: one whose goroutine had not sent it
			// yet (under load, or the race detector) never reaches the
			// store, as the simulator's copies, sent at one instant, all
			// do. The 503's copy always went out.
			assert.Equal(t, int64(30), store.Replicas[1].Attempts, "quorum %d: replica 1 gets a copy of each", tc.quorum)
			var sum int64
			for r, rep := range store.Replicas {
				sum += rep.Attempts
				assert.LessOrEqual(t, rep.Attempts, int64(30), "quorum %d: replica %d", tc.quorum, r)
				assert.Greater(t, rep.Attempts, int64(20), "quorum %d: replica %d gets most copies, sent before the 503 comes back", tc.quorum, r)
			}
			assert.Equal(t, sum, store.Attempts)
		}
		assert.Zero(t, store.Replicas[1].OK, "replica 1 is down")
		if tc.delivered {
			assert.Equal(t, int64(30), run.Delivered, "2 of 3 suffice")
			assert.Equal(t, int64(60), store.Replicas[0].OK+store.Replicas[2].OK, "the two copies that make each quorum")
		} else {
			assert.Zero(t, run.Delivered, "all 3 needed")
			assert.Zero(t, run.Services[0].Processed, "front calls before its work: a failed call leaves it undone")
		}
	}
}

func TestGraphRefusedReplicaAndCallsAfterTheWork(t *testing.T) {
	// A replica in a refuse outage refuses the connection: its callers
	// count the attempt and retry (3 attempts), and round-robin takes
	// most retries to the other replica. A call after the work with probability 1/2 is made
	// for about half the requests.
	_, run := graphTestReplay(t, `
name: refused
duration: 20s
services:
  - name: front
    service_time: {dist: constant, mean: 1ms}
    calls:
      - {service: store, retry: {max_attempts: 3, backoff: {kind: fixed, delay: 1ms}}}
      - {service: audit, when: after, probability: 0.5}
  - name: store
    replicas: 2
    outages: [{start: 0s, duration: 1h, mode: refuse, replicas: [0]}]
  - {name: audit}
workload: {target: front, requests: 200, arrival: {kind: uniform, from: 0s, until: 1s}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 2s}}}
`)
	store := run.Services[1]
	r0, r1 := store.Replicas[0], store.Replicas[1]
	assert.InDelta(t, r0.Attempts, r1.Attempts, 1, "round-robin alternates over every caller's attempts")
	var refused int64
	for _, b := range r0.Series {
		refused += b.NotOK
	}
	assert.Equal(t, r0.Attempts, refused, "every attempt at replica 0 is refused, and counted")
	assert.Zero(t, r0.OK)
	assert.Zero(t, r0.Processed, "a refused connection does no work")
	assert.Equal(t, run.Delivered, r1.Attempts, "replica 1 answers each call it sees, and each call stops there")
	assert.Equal(t, run.Delivered, r1.OK)
	assert.GreaterOrEqual(t, r0.Attempts, 3*(200-run.Delivered), "a call fails only after 3 refusals")
	assert.GreaterOrEqual(t, run.Delivered, int64(150), "a refused attempt is retried, mostly at the other replica")
	assert.Equal(t, run.Delivered, run.Services[0].Processed, "the front works once its call before the work succeeded")
	audit := run.Services[2].Attempts
	assert.InDelta(t, float64(run.Delivered)/2, audit, 30, "binomial(delivered, 1/2): 4.2 standard deviations")
}

func TestGraphCountsWastedAndLateWork(t *testing.T) {
	// The front gives its call 20 ms, the fleet its attempt 30 ms; the
	// slow service takes 100 ms: each of its jobs is work for no one
	// (its caller gave up) and late (the fleet's attempt above gave up).
	_, run := graphTestReplay(t, `
name: late
duration: 20s
services:
  - {name: front, calls: [{service: slow, retry: {max_attempts: 1, timeout: 20ms}}]}
  - {name: slow, service_time: {dist: constant, mean: 100ms}}
workload: {target: front, requests: 5, arrival: {kind: uniform, from: 0s, until: 50ms}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 30ms}
`)
	slow := run.Services[1]
	assert.Equal(t, int64(5), slow.Processed)
	assert.Equal(t, int64(5), slow.Wasted)
	assert.Equal(t, int64(5), slow.LateWork)
	assert.Zero(t, run.Delivered)
	assert.Zero(t, slow.OK)
}

func TestGraphRefusesWhatItDoesNotServe(t *testing.T) {
	base := `
name: refused
services:
  - {name: front, calls: [{service: db}], cache: {hit_ratio: 0.9}}
  - {name: db SETTING}
workload: {target: front, requests: 1}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 1s}}}
`
	for _, tc := range []struct{ setting, path string }{
		{"", "services[0].cache"},
	} {
		src := strings.NewReplacer("SETTING", tc.setting).Replace(base)
		sc, err := scenarios.Parse("refused.yaml", []byte(src))
		require.NoError(t, err, src)
		path, err := GraphUnsupported(sc, &sc.Strategies[0])
		assert.Equal(t, tc.path, path)
		require.ErrorIs(t, err, ErrGraphUnsupported, tc.path)
		_, err = NewGraph(sc, &sc.Strategies[0], GraphOptions{})
		assert.ErrorContains(t, err, tc.path)
	}
}

func TestServerSlowOutageMultipliesServiceTimes(t *testing.T) {
	// A slow outage with factor 5 makes a 20 ms service time 100 ms; it
	// is not down, and after it the service time is 20 ms again.
	serverTestLeaks(t)
	sub := &scenarios.Scenario{Name: "slow", Duration: time.Minute, Bucket: time.Second}
	sub.Server = scenarios.Default().Server
	sub.Server.ServiceTime = scenarios.Dist{Kind: scenarios.Constant, Mean: 20 * time.Millisecond}
	sub.Server.Outages = []scenarios.Outage{{Start: 0, Duration: 400 * time.Millisecond, Mode: scenarios.SlowMode, Factor: 5}}
	s, err := newServer(sub, ServerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Start(""))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	took := func() time.Duration {
		from := time.Now()
		resp, err := http.Post(s.URL(), "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		return time.Since(from)
	}
	assert.GreaterOrEqual(t, took(), 100*time.Millisecond, "slowed 5x")
	s.mu.Lock()
	end := s.start.Add(450 * time.Millisecond)
	s.mu.Unlock()
	time.Sleep(time.Until(end))
	assert.Less(t, took(), 100*time.Millisecond, "the outage is over")
}

func TestGraphDeadlinePropagationDropsWorkForNoOne(t *testing.T) {
	// The fleet gives each attempt 30 ms; the slow service takes 100 ms.
	// With deadline propagation its work is dropped once the deadline
	// passes (counted), and none is done late; without it, every job is
	// done late (TestGraphCountsWastedAndLateWork).
	_, run := graphTestReplay(t, `
name: deadlines
duration: 20s
services:
  - {name: front, calls: [{service: slow, retry: {max_attempts: 2, timeout: 1s}}]}
  - {name: slow, service_time: {dist: constant, mean: 100ms}}
workload: {target: front, requests: 5, arrival: {kind: uniform, from: 0s, until: 50ms}}
strategies:
  - {name: propagate, backoff: {kind: none}, max_attempts: 1, timeout: 30ms, deadline_propagation: true}
`)
	slow := run.Services[1]
	assert.Equal(t, int64(5), slow.Attempts, "one attempt each: the retry would start after the deadline")
	assert.Equal(t, int64(5), slow.DeadlineDropped, "cut short when the deadline passed")
	assert.Zero(t, slow.Processed)
	assert.Zero(t, slow.LateWork)
	assert.Zero(t, run.Delivered)
}

func TestGraphCacheInFrontOfAService(t *testing.T) {
	// A warm cache holding half of 1,000 keys answers about half of the
	// front's calls; a miss goes to the database, once (one attempt an
	// edge). Flushed for the whole run, it answers none.
	for _, flush := range []bool{false, true} {
		outages := ""
		if flush {
			outages = "outages: [{start: 0s, duration: 1h, mode: flush}],"
		}
		_, run := graphTestReplay(t, `
name: cache
duration: 20s
services:
  - {name: front, calls: [{service: db}]}
  - {name: db, `+outages+` cache: {hit_ratio: 0.5, keys: 1000}}
workload: {target: front, requests: 200, arrival: {kind: uniform, from: 0s, until: 500ms}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 1s}}}
`)
		db := run.Services[1]
		assert.Equal(t, int64(200), db.CacheLookups, "flush %v", flush)
		assert.Equal(t, db.CacheLookups-db.CacheHits, db.Attempts, "flush %v: every miss, and only a miss, reaches the database", flush)
		var hits int64
		for _, b := range db.Cache {
			hits += b.Hits
		}
		assert.Equal(t, db.CacheHits, hits, "flush %v: the hits in their buckets", flush)
		if flush {
			assert.Zero(t, db.CacheHits, "a flushed cache misses")
		} else {
			assert.InDelta(t, 100, db.CacheHits, 30, "binomial(200, 1/2): 4.2 standard deviations")
		}
		assert.Equal(t, int64(200), run.Delivered, "flush %v", flush)
	}
}

// serverQueueTest starts a server of one slot, a constant service time
// and queue discipline q, fills its queue with n requests behind the
// one in service (in order, each queued before the next is sent), and
// returns the requests' indexes in the order they were answered, and
// their reasons.
func serverQueueTest(t *testing.T, q serverQueue, service time.Duration, n int) (order []int, reasons map[int]string) {
	t.Helper()
	serverTestLeaks(t)
	sub := &scenarios.Scenario{Name: "queue", Duration: time.Minute, Bucket: time.Second}
	sub.Server = scenarios.Default().Server
	sub.Server.Concurrency = 1
	sub.Server.ServiceTime = scenarios.Dist{Kind: scenarios.Constant, Mean: service}
	s, err := newServer(sub, ServerOptions{})
	require.NoError(t, err)
	s.queue = q
	require.NoError(t, s.Start(""))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	type answer struct {
		i      int
		reason string
	}
	done := make(chan answer, n+1)
	send := func(i int) {
		resp, err := http.Post(s.URL(), "application/json", nil)
		if err != nil {
			done <- answer{i, err.Error()}
			return
		}
		resp.Body.Close()
		done <- answer{i, resp.Header.Get(ServerReasonHeader)}
	}
	waitFor := func(busy, queued int) {
		require.Eventually(t, func() bool {
			st := s.Stats()
			return st.InFlight == busy && st.Queued == queued
		}, 5*time.Second, time.Millisecond)
	}
	go send(0)
	waitFor(1, 0)
	for i := 1; i <= n; i++ {
		go send(i)
		waitFor(1, i)
	}
	reasons = map[int]string{}
	for range n + 1 {
		a := <-done
		order = append(order, a.i)
		reasons[a.i] = a.reason
	}
	return order, reasons
}

func TestServerQueueDisciplines(t *testing.T) {
	// One slot busy for 100 ms and three requests queued behind it, in
	// order: FIFO serves them oldest first, LIFO newest first, and
	// adaptive LIFO newest first once the oldest has waited longer than
	// its bound (1 ms here: at once), oldest first below it (1 h).
	for _, tc := range []struct {
		q    serverQueue
		want []int
	}{
		{serverQueue{discipline: scenarios.DisciplineFIFO}, []int{0, 1, 2, 3}},
		{serverQueue{discipline: scenarios.DisciplineLIFO}, []int{0, 3, 2, 1}},
		{serverQueue{discipline: scenarios.DisciplineAdaptiveLIFO, congested: time.Millisecond}, []int{0, 3, 2, 1}},
		{serverQueue{discipline: scenarios.DisciplineAdaptiveLIFO, congested: time.Hour}, []int{0, 1, 2, 3}},
	} {
		order, reasons := serverQueueTest(t, tc.q, 100*time.Millisecond, 3)
		assert.Equal(t, tc.want, order, "%+v", tc.q)
		for i, r := range reasons {
			assert.Equal(t, "processed", r, "%+v: request %d", tc.q, i)
		}
	}
}

func TestServerShedsByQueueDelayAndCoDel(t *testing.T) {
	// Shed bound 150 ms, one slot of 100 ms, three queued: the first
	// waits 100 ms (served), the next two 200 ms and more (shed, 503).
	_, reasons := serverQueueTest(t, serverQueue{discipline: scenarios.DisciplineFIFO, shedAfter: 150 * time.Millisecond}, 100*time.Millisecond, 3)
	assert.Equal(t, map[int]string{0: "processed", 1: "processed", 2: "shed", 3: "shed"}, reasons)

	// CoDel, target 10 ms and interval 250 ms, one slot of 100 ms and
	// six queued: the first interval (from the first request taken, at
	// 100 ms) serves three, whose least wait (about 100 ms) is above the
	// target; the next interval starts overloaded: its first request is
	// served, every later one waited more than twice the target: shed.
	_, reasons = serverQueueTest(t, serverQueue{discipline: scenarios.DisciplineCoDel, codel: scenarios.CoDel{Target: 10 * time.Millisecond, Interval: 250 * time.Millisecond}}, 100*time.Millisecond, 6)
	assert.Equal(t, map[int]string{0: "processed", 1: "processed", 2: "processed", 3: "processed", 4: "processed", 5: "shed", 6: "shed"}, reasons)
}

func TestGraphReplicasShareTheIdempotencyStore(t *testing.T) {
	// Every answer of the database is lost after its work, and the
	// front's retry goes to the other replica (round-robin). With
	// idempotency the replicas share the store: the retry is answered
	// from it, and nothing is processed twice. Without, the second
	// replica processes it again: a duplicate, counted across replicas.
	for _, idem := range []bool{true, false} {
		setting := "false"
		if idem {
			setting = "true"
		}
		_, run := graphTestReplay(t, `
name: shared-store
duration: 20s
services:
  - {name: front, calls: [{service: db, retry: {max_attempts: 2, backoff: {kind: fixed, delay: 1ms}}}]}
  - {name: db, replicas: 2, response_loss: 1, idempotency: `+setting+`}
workload: {target: front, requests: 1, arrival: {kind: uniform, from: 0s, until: 1ms}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s, edges: {default: {timeout: 1s}}}
`)
		db := run.Services[1]
		assert.Equal(t, int64(2), db.Attempts, "idempotency %v", idem)
		assert.Equal(t, int64(1), db.Replicas[0].Attempts, "idempotency %v: round-robin", idem)
		if idem {
			assert.Equal(t, int64(1), db.Processed, "the retry is answered from the shared store")
			assert.Zero(t, db.Duplicates)
			assert.Equal(t, int64(1), run.Delivered, "its cached answer is not lost")
		} else {
			assert.Equal(t, int64(2), db.Processed)
			assert.Equal(t, int64(1), db.Duplicates, "processed again at the other replica, and counted")
			assert.Zero(t, run.Delivered, "both answers lost")
		}
	}
}

func TestGraphTargetWithReplicasAndItsControl(t *testing.T) {
	// The fleet's target has 3 replicas: a front port balances the
	// fleet's requests over them (round-robin: 10 each), and counts them
	// per replica. Its control endpoint resets the graph for a strategy
	// that deploys the services alike, and refuses one that does not.
	serverTestLeaks(t)
	sc, err := scenarios.Parse("front.yaml", []byte(`
name: front
duration: 20s
services:
  - {name: api, replicas: 3, service_time: {dist: constant, mean: 1ms}}
workload: {target: api, requests: 30, arrival: {kind: uniform, from: 0s, until: 300ms}}
strategies:
  - {name: once, backoff: {kind: none}, max_attempts: 1, timeout: 5s}
  - {name: twice, backoff: {kind: fixed, delay: 10ms}, max_attempts: 2, timeout: 5s}
  - {name: more, backoff: {kind: none}, max_attempts: 1, timeout: 5s, services: {api: {replicas: 4}}}
`))
	require.NoError(t, err)
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{})
	require.NoError(t, err)
	require.NoError(t, g.Start(""))
	require.NoError(t, g.StartAdmin(""))
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	ctl := Control{URL: g.AdminURL()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = ctl.ResetStrategy(ctx, 1, "twice")
	require.NoError(t, err, "the same deployment: its edge policies are served")
	run, _, err := Replay(ctx, sc, &sc.Strategies[1], 0, DriverOptions{Target: g.URL()})
	require.NoError(t, err)
	st, err := ctl.Idle(ctx)
	require.NoError(t, err)
	assert.Equal(t, "twice", st.Strategy)
	st.Counts().AddTo(run)
	api := run.Services[0]
	assert.Equal(t, int64(30), api.Attempts)
	require.Len(t, api.Replicas, 3)
	for r, rep := range api.Replicas {
		assert.Equal(t, int64(10), rep.Attempts, "replica %d", r)
		assert.Equal(t, int64(10), rep.OK, "replica %d", r)
		assert.Equal(t, int64(10), rep.Processed, "replica %d", r)
	}
	assert.Equal(t, int64(30), run.Delivered)
	_, err = ctl.ResetStrategy(ctx, 1, "more")
	assert.ErrorContains(t, err, "strategy more deploys the services otherwise than twice")
	_, err = ctl.ResetStrategy(ctx, 1, "nope")
	assert.ErrorContains(t, err, `no strategy "nope"`)
}

func TestGraphHedgesOnACallEdge(t *testing.T) {
	// front calls db, whose replica 0 is 50x slow (500 ms) all along;
	// round-robin sends each call's first copy there, and the hedge
	// after 20 ms to replica 1, which answers in 10 ms and wins. Over
	// real HTTP, every request is delivered fast, at two copies a call.
	for _, cancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancel), func(t *testing.T) {
			_, run := graphTestReplay(t, fmt.Sprintf(`
name: hedge
duration: 10s
services:
  - {name: front, service_time: 1ms, calls: [{service: db, retry: {timeout: 5s, hedge: {delay: 20ms, cancel: %v}}}]}
  - name: db
    replicas: 2
    balancer: round-robin
    service_time: 10ms
    outages: [{start: 0s, duration: 1m, mode: slow, factor: 50, replicas: [0]}]
workload: {target: front, requests: 10, arrival: {kind: uniform, from: 0s, until: 2s}}
strategies:
  - {name: s, backoff: {kind: none}, max_attempts: 1, timeout: 5s}
`, cancel))
			assert.EqualValues(t, 10, run.Delivered)
			assert.EqualValues(t, 20, graphEdges(run)["front->db"], "each call's first copy and its hedge")
			assert.Less(t, run.Latency.Percentiles(100)[0], int64(300*time.Millisecond/time.Microsecond), "won by the hedge, not the 500 ms copy")
		})
	}
}

func TestGraphQuorumCancelsTheCopiesBeyondIt(t *testing.T) {
	// The simulator's scenario (sim/testdata/quorum.yaml): api's step calls
	// store 3 times, needing 2, and slow once in parallel (1.5 s). store
	// serves 2 at a time for 500 ms with no waiting room, so the third
	// copy is refused at 0, 200 and 400 ms; the quorum comes at 500 ms,
	// and the third copy is cancelled then, not at 600 ms when store
	// would serve it while the step still waits for slow: exactly 2 + 3
	// attempts a request, as in the simulator (100 ms margins either
	// side of every turn).
	_, run := graphTestReplay(t, simTestdata(t, "quorum.yaml"))
	assert.Equal(t, int64(3), run.Delivered)
	assert.Equal(t, int64(3*(2+3)), graphEdges(run)["api->store"], "store's attempts")
}

func TestGraphHedgeCancelDropsCopiesOfCancelledCalls(t *testing.T) {
	// The simulator's scenario (sim/testdata/hedge-quorum.yaml): api calls
	// store twice, needing one, each copy hedged after 100 ms with
	// cancel; store serves one at a time for 500 ms. At 500 ms the first
	// call wins and store takes the second call's copy at once; the
	// winner's hedge and the second call (beyond the quorum), hung up
	// on, leave the queue unserved: store processes 2, as in the
	// simulator (its test server served all 4 before).
	_, run := graphTestReplay(t, simTestdata(t, "hedge-quorum.yaml"))
	assert.Equal(t, int64(1), run.Delivered)
	assert.Equal(t, int64(4), graphEdges(run)["api->store"], "2 copies and 2 hedges sent")
	assert.Equal(t, int64(2), run.Services[1].Processed, "store: the winner and the copy it took next")
}

// simTestdata returns a scenario of sim's testdata/, which the
// simulator's tests run and these replay over real HTTP.
func simTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "sim", "testdata", name))
	require.NoError(t, err)
	return string(b)
}
