package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// occScenario is n clients writing one row once each, with hops of a
// constant 10 ms.
func occScenario(t *testing.T, n int) *scenarios.Scenario {
	t.Helper()
	sc := scenario(t, 1, time.Millisecond)
	sc.Server = scenarios.Server{Model: scenarios.ModelOCC}
	sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Constant, Mean: 10 * time.Millisecond}
	sc.Duration = time.Minute
	sc.Workload = scenarios.Workload{Requests: n, Arrival: scenarios.Arrival{Kind: scenarios.Burst}}
	sc.Strategies[0].MaxAttempts = 0
	return sc
}

func TestOCCOneWinnerPerRound(t *testing.T) {
	// Without backoff every client reads and writes in lockstep: each
	// round one write commits and the rest conflict, so n clients make
	// n + (n-1) + ... + 1 write calls and finish after n rounds of four
	// hops (read, answer, write, answer).
	const n = 10
	res := simulate(t, occScenario(t, n))
	s := res.Summary.Strategies[0]
	assert.Equal(t, float64(n*(n+1)/2), s.Attempts, "write calls")
	assert.Equal(t, float64(n), s.Delivered)
	require.NotNil(t, s.CompletionTimeS)
	assert.InDelta(t, n*0.040, *s.CompletionTimeS, 1e-9)
}

func TestOCCReproducesTheAWSStudy(t *testing.T) {
	// The AWS Architecture Blog's findings at 50 clients: jitter cuts the
	// work of plain exponential backoff by about half; full jitter does
	// the least work; equal jitter takes longer than full jitter; plain
	// exponential backoff is by far the slowest.
	sc, err := scenarios.Load("../scenarios/aws-occ-50.yaml")
	require.NoError(t, err)
	sc.Runs = 30
	res := simulate(t, sc)
	fig := map[string][2]float64{}
	for _, s := range res.Summary.Strategies {
		require.NotNil(t, s.CompletionTimeS, s.Name)
		fig[s.Name] = [2]float64{s.Attempts, *s.CompletionTimeS}
		t.Logf("%-20s %7.1f calls %6.2fs", s.Name, s.Attempts, *s.CompletionTimeS)
	}
	calls := func(name string) float64 { return fig[name][0] }
	took := func(name string) float64 { return fig[name][1] }
	assert.Less(t, calls("full-jitter"), 0.6*calls("exponential"))
	assert.Less(t, calls("full-jitter"), 0.6*calls("none"))
	assert.Less(t, calls("full-jitter"), calls("equal-jitter"))
	assert.Less(t, calls("full-jitter"), calls("decorrelated-jitter"))
	assert.Greater(t, took("equal-jitter"), took("full-jitter"))
	for _, name := range []string{"none", "equal-jitter", "full-jitter", "decorrelated-jitter"} {
		assert.Greater(t, took("exponential"), 3*took(name), name)
	}
}

func TestNormalLatencyIsFolded(t *testing.T) {
	// |Normal(10ms, 2ms)| has the mean of the normal when it is far from 0.
	sc := occScenario(t, 1)
	sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Normal, Mean: 10 * time.Millisecond, StdDev: 2 * time.Millisecond}
	sc.Runs = 2000
	res := simulate(t, sc)
	assert.InDelta(t, 0.040, res.Summary.Strategies[0].LatencyS.Mean, 0.0005, "four hops of 10 ms")
}

// TestOCCAgreesWithAVersionedRow holds the engine's occ model, whose read
// is no event (see occ.go), to an independent model of the study's own
// kind (occReference): every hop an event, and the row a version number
// read at the read and compared at the write. Over many runs at fixed
// seeds the mean write calls and completion time of each must agree
// within four standard errors; with a timeout shorter than most round
// trips, the writes of attempts given up still reach the row and may
// commit.
func TestOCCAgreesWithAVersionedRow(t *testing.T) {
	const n, runs = 20, 2000
	for _, c := range []struct {
		name    string
		backoff string
		timeout time.Duration
	}{
		{"full-jitter", scenarios.BackoffFullJitter, time.Hour},
		{"none", scenarios.BackoffNone, time.Hour},
		{"none-timeout-35ms", scenarios.BackoffNone, 35 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := occScenario(t, n)
			sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Normal, Mean: 10 * time.Millisecond, StdDev: 2 * time.Millisecond}
			sc.Runs = runs
			st := &sc.Strategies[0]
			st.Name = c.name
			st.Backoff = scenarios.Backoff{Kind: c.backoff, Base: 10 * time.Millisecond, Cap: 2 * time.Second, Multiplier: 2}
			st.Timeout = c.timeout
			res := simulate(t, sc)
			var engine, ref [2][]float64
			for _, r := range res.Runs {
				require.NotNil(t, r.Completion, "every write commits in time")
				engine[0] = append(engine[0], float64(r.Attempts))
				engine[1] = append(engine[1], r.Completion.Seconds())
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			for range runs {
				writes, took := occReference(n, st.Policy(), c.timeout, sc.Network.Latency, rnd)
				ref[0] = append(ref[0], float64(writes))
				ref[1] = append(ref[1], took.Seconds())
			}
			for i, what := range []string{"write calls", "completion time"} {
				m1, v1 := stat.MeanVariance(engine[i], nil)
				m2, v2 := stat.MeanVariance(ref[i], nil)
				se := math.Sqrt(v1/runs + v2/runs)
				t.Logf("%s: engine %.4g, reference %.4g (%.1f standard errors)", what, m1, m2, math.Abs(m1-m2)/se)
				assert.Less(t, math.Abs(m1-m2), 4*se, what)
			}
		})
	}
}

// occReference runs n clients writing one row once each, as the AWS
// study's simulator does: a read, its answer, the write and its answer
// each an event after a hop of |latency|, the write committing when the
// row's version is still the one read. A client whose timeout comes
// before its answer gives up on the attempt (its write goes on) and
// retries by pol. It returns the write calls and when the last client
// finished.
func occReference(n int, pol *strategies.Policy, timeout time.Duration, latency *scenarios.Dist, rnd *rand.Rand) (writes int, last time.Duration) {
	const (
		try = iota
		read
		write
		answer
		giveUp // after every other event at its time
	)
	type event struct {
		at                    time.Duration
		kind, client, attempt int
		version               int // read, for a write; success (1) for an answer
		seq                   int
	}
	hop := func() time.Duration {
		return time.Duration(math.Abs(rnd.NormFloat64()*float64(latency.StdDev) + float64(latency.Mean)))
	}
	type client struct {
		req      strategies.Request
		attempt  int
		inFlight bool
	}
	clients := make([]client, n)
	var q []event
	seq := 0
	push := func(e event) {
		e.seq = seq
		seq++
		q = append(q, e)
	}
	before := func(a, b event) bool {
		if a.at != b.at {
			return a.at < b.at
		}
		if (a.kind == giveUp) != (b.kind == giveUp) {
			return b.kind == giveUp
		}
		return a.seq < b.seq
	}
	for i := range clients {
		push(event{kind: try, client: i})
	}
	version, done := 0, 0
	for done < n {
		k := 0
		for i := range q {
			if before(q[i], q[k]) {
				k = i
			}
		}
		e := q[k]
		q = append(q[:k], q[k+1:]...)
		now := e.at
		cl := &clients[e.client]
		decide := func(o strategies.Outcome) {
			cl.inFlight = false
			d := pol.Done(nil, &cl.req, strategies.Permit{}, now, &strategies.Result{Outcome: o}, rnd)
			switch d.Action {
			case strategies.Retry:
				push(event{at: now + d.Wait, kind: try, client: e.client})
			default:
				done++
				last = now
			}
		}
		switch e.kind {
		case try:
			if _, _, ok := pol.Begin(nil, &cl.req, now, rnd); !ok {
				panic("a policy without state refused an attempt")
			}
			cl.attempt++
			cl.inFlight = true
			push(event{at: now + hop(), kind: read, client: e.client, attempt: cl.attempt})
			push(event{at: now + timeout, kind: giveUp, client: e.client, attempt: cl.attempt})
		case read:
			push(event{at: now + hop() + hop(), kind: write, client: e.client, attempt: e.attempt, version: version})
		case write:
			writes++
			ok := 0
			if e.version == version {
				version++
				ok = 1
			}
			push(event{at: now + hop(), kind: answer, client: e.client, attempt: e.attempt, version: ok})
		case answer, giveUp:
			if !cl.inFlight || cl.attempt != e.attempt {
				break
			}
			switch {
			case e.kind == giveUp:
				decide(strategies.Timeout)
			case e.version == 1:
				decide(strategies.Success)
			default:
				decide(strategies.ServerError)
			}
		}
	}
	return writes, last
}

func TestOCCCountsTheRequestsInBackoff(t *testing.T) {
	// Two clients in lockstep (hops of a constant 10 ms): one write
	// commits at 30 ms; the other's conflict is back at 40 ms, and it
	// waits 250 ms before it tries again, at 290 ms. Its attempt is made
	// when its backoff is decided (tryAhead), yet the samples at 100 and
	// 200 ms count it waiting, and the one at 300 ms does not.
	sc := occScenario(t, 2)
	sc.Bucket = 100 * time.Millisecond
	sc.Strategies[0].Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: 250 * time.Millisecond}
	res := simulate(t, sc)
	r := res.Runs[0]
	var delayed []int64
	for _, b := range r.Series[:4] {
		delayed = append(delayed, b.Delayed)
	}
	assert.Equal(t, []int64{1, 1, 0, 0}, delayed)
	require.NotNil(t, r.Completion)
	assert.Equal(t, 330*time.Millisecond, *r.Completion, "its second attempt, from 290 ms, commits")
}

func TestOCCCallerGivesUpAtItsTimeout(t *testing.T) {
	// One client, hops of a constant 10 ms: a write reaches the row 30
	// ms after its attempt is sent, its answer is back at 40 ms. With a
	// timeout of 25 ms the client gives up on every attempt (and retries
	// at once, three in all), though every write commits.
	sc := occScenario(t, 1)
	st := &sc.Strategies[0]
	st.Timeout = 25 * time.Millisecond
	st.MaxAttempts = 3
	res := simulate(t, sc)
	r := res.Runs[0]
	assert.Equal(t, int64(3), r.TimedOut)
	assert.Equal(t, int64(3), r.Processed, "the writes of attempts given up still reach the row")
	assert.Equal(t, int64(1), r.DeadLettered)
	require.NotNil(t, r.Completion)
	assert.Equal(t, 75*time.Millisecond, *r.Completion)
}

func TestOCCAnAnswerTakenAheadIsCountedAtItsTime(t *testing.T) {
	// Two clients in lockstep, hops of a constant 40 ms, buckets of 50
	// ms: both writes reach the row at 120 ms, where the first commits
	// and the second conflicts; their answers are back at 160 ms, in the
	// next bucket. The answers are taken as the writes are (occWrite), yet
	// each figure falls in the bucket of 160 ms, and the sample at 150 ms
	// sees neither the retry's backoff nor the dead letter.
	for _, c := range []struct {
		name             string
		attempts         int
		delayed, dlq     []int64
		delivered, faild []int64
	}{
		// The loser waits 250 ms, from 160 ms to 410 ms, and commits
		// at 530 ms, answered at 570 ms.
		{"retry", 0, []int64{0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0}, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[]int64{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, []int64{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		// The loser is given up at 160 ms.
		{"dead-letter", 1, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []int64{0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
			[]int64{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, []int64{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := occScenario(t, 2)
			sc.Network.Latency = &scenarios.Dist{Kind: scenarios.Constant, Mean: 40 * time.Millisecond}
			sc.Bucket = 50 * time.Millisecond
			st := &sc.Strategies[0]
			st.Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: 250 * time.Millisecond}
			st.MaxAttempts = c.attempts
			r := simulate(t, sc).Runs[0]
			var delayed, dlq, delivered, failed []int64
			for _, b := range r.Series[:12] {
				delayed, dlq = append(delayed, b.Delayed), append(dlq, b.DLQ)
				delivered, failed = append(delivered, b.Delivered), append(failed, b.Failed)
			}
			assert.Equal(t, c.delayed, delayed, "requests in backoff")
			assert.Equal(t, c.dlq, dlq, "dead letters")
			assert.Equal(t, c.delivered, delivered, "delivered")
			assert.Equal(t, c.faild, failed, "failed")
		})
	}
}

func TestTheLatestFinalStateIsTheCompletion(t *testing.T) {
	// An answer taken ahead of the clock (see occWrite) finishes its
	// request at a later time than an event handled after it may: the
	// completion is the latest of them, not the last one counted.
	sc := occScenario(t, 2)
	require.NoError(t, sc.Validate())
	g := newRun(sc, 0, 0, 1)
	g.calls = append(g.calls, call{flags: flagFleet}, call{flags: flagFleet})
	g.created = append(g.created, 0, 0)
	g.lastOutageEnd = time.Second
	g.now = 5 * time.Second
	g.fleet.final(g, 0)
	g.now = 3 * time.Second
	g.fleet.final(g, 1)
	assert.Equal(t, 5*time.Second, g.completion)
}
