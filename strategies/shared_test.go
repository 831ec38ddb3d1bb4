package strategies_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// sharedStep is one row of a shared budget's step table: at a time, an
// attempt starts (a first try or a retry's), ends (with the cost it was
// granted), or a retry is asked for; then the retries the budget would
// still allow.
type sharedStep struct {
	at      time.Duration
	event   string // "first", "start", "end", "end-retry", "acquire"
	ok      bool   // for acquire
	allowed int64
}

func runSharedSteps(t *testing.T, b *strategies.Budget, steps []sharedStep) {
	t.Helper()
	var sh strategies.SharedBudget
	for i, s := range steps {
		switch s.event {
		case "first", "start":
			b.Start(&sh, s.at, s.event == "first")
		case "end":
			b.End(&sh, 0)
		case "end-retry":
			b.End(&sh, 1)
		case "acquire":
			_, ok := b.AcquireShared(&sh, s.at)
			assert.Equal(t, s.ok, ok, "row %d (acquire at %v)", i, s.at)
		default:
			t.Fatalf("row %d: unknown event %q", i, s.event)
		}
		assert.Equal(t, s.allowed, b.RetriesAllowed(&sh, s.at), "row %d (%s at %v): retries allowed", i, s.event, s.at)
	}
}

func repeatShared(n int, s sharedStep, step int64) []sharedStep {
	rows := make([]sharedStep, n)
	for i := range rows {
		rows[i] = s
		rows[i].allowed = s.allowed + int64(i)*step
	}
	return rows
}

func TestBudgetEnvoy(t *testing.T) {
	// 20% with a minimum of 3: 25 attempts in flight allow 5 retries in
	// flight, 2 allow 3.
	b := &strategies.Budget{Kind: strategies.BudgetEnvoy, Percent: 20, MinConcurrency: 3}
	var rows []sharedStep
	rows = append(rows, repeatShared(2, sharedStep{event: "first", allowed: 3}, 0)...)
	rows = append(rows, repeatShared(3, sharedStep{event: "acquire", ok: true, allowed: 2}, -1)...)
	rows = append(rows, sharedStep{event: "acquire", ok: false, allowed: 0}) // 2 active: 3, all taken
	rows = append(rows, repeatShared(3, sharedStep{event: "end-retry", allowed: 1}, 1)...)
	// 3 retries ended, and 2 of the first tries, and then 25 first tries are
	// in flight: 25 x 20% = 5.
	rows = append(rows, sharedStep{event: "end", allowed: 3}, sharedStep{event: "end", allowed: 3})
	rows = append(rows, repeatShared(14, sharedStep{event: "first", allowed: 3}, 0)...) // 14 x 0.2 < 3
	rows = append(rows, repeatShared(5, sharedStep{event: "first", allowed: 3}, 0)...)  // 19 x 0.2 = 3.8: 3
	rows = append(rows, repeatShared(5, sharedStep{event: "first", allowed: 4}, 0)...)  // 20..24: 4
	rows = append(rows, sharedStep{event: "first", allowed: 5})                         // 25: 5
	rows = append(rows, repeatShared(5, sharedStep{event: "acquire", ok: true, allowed: 4}, -1)...)
	rows = append(rows, sharedStep{event: "acquire", ok: false, allowed: 0}) // the sixth is denied
	// A retry's attempt goes out: 26 in flight still allow 5.
	rows = append(rows, sharedStep{event: "start", allowed: 0})
	rows = append(rows, sharedStep{event: "end-retry", allowed: 1}) // it ends: 25 in flight, 4 retries
	runSharedSteps(t, b, rows)

	// The defaults are Envoy's: 20%, a minimum of 3.
	runSharedSteps(t, &strategies.Budget{Kind: strategies.BudgetEnvoy}, []sharedStep{
		{event: "acquire", ok: true, allowed: 2},
		{event: "acquire", ok: true, allowed: 1},
		{event: "acquire", ok: true, allowed: 0},
		{event: "acquire", ok: false, allowed: 0},
	})

	// A negative percent is the floor alone (Envoy's circuit breaker
	// max_retries): 2 retries in flight, however many first tries are.
	floor := []sharedStep{}
	floor = append(floor, repeatShared(30, sharedStep{event: "first", allowed: 2}, 0)...)
	floor = append(floor, sharedStep{event: "acquire", ok: true, allowed: 1}, sharedStep{event: "acquire", ok: true, allowed: 0},
		sharedStep{event: "acquire", ok: false, allowed: 0})
	runSharedSteps(t, &strategies.Budget{Kind: strategies.BudgetEnvoy, Percent: -1, MinConcurrency: 2}, floor)
}

func TestBudgetFinagle(t *testing.T) {
	// 10% over a 10 s window (slices of 1 s), with 1 retry a second in
	// reserve: a retry withdraws 10 requests' deposits; the reserve holds
	// 10 retries.
	b := &strategies.Budget{Kind: strategies.BudgetFinagle, Percent: 10, TTL: 10 * time.Second, MinPerSecond: 1}
	s := time.Second
	var rows []sharedStep
	rows = append(rows, sharedStep{at: 0, event: "acquire", ok: true, allowed: 9})
	rows = append(rows, repeatShared(9, sharedStep{at: 0, event: "acquire", ok: true, allowed: 8}, -1)...)
	rows = append(rows, sharedStep{at: 0, event: "acquire", ok: false, allowed: 0}) // the reserve is spent
	// 10 first tries at 1 s earn one retry; retries' own attempts earn nothing.
	rows = append(rows, repeatShared(9, sharedStep{at: s, event: "first", allowed: 0}, 0)...)
	rows = append(rows, sharedStep{at: s, event: "start", allowed: 0})
	rows = append(rows, sharedStep{at: s, event: "first", allowed: 1})
	rows = append(rows, sharedStep{at: s, event: "acquire", ok: true, allowed: 0})
	rows = append(rows, sharedStep{at: s, event: "acquire", ok: false, allowed: 0})
	// At 10 s the withdrawals at 0 leave the window: the reserve is back,
	// less the retry of 1 s, whose deposits are still in.
	rows = append(rows, sharedStep{at: 10 * s, event: "end", allowed: 10})
	// At 11 s the deposits and the withdrawal of 1 s leave too.
	rows = append(rows, sharedStep{at: 11 * s, event: "end", allowed: 10})
	runSharedSteps(t, b, rows)

	// Finagle's defaults: 20%, 10 s, 10 a second: 100 retries in reserve.
	def := &strategies.Budget{Kind: strategies.BudgetFinagle}
	var sh strategies.SharedBudget
	assert.Equal(t, int64(100), def.RetriesAllowed(&sh, 0))
	for range 5 {
		def.Start(&sh, 0, true)
	}
	assert.Equal(t, int64(101), def.RetriesAllowed(&sh, 0), "5 requests at 20% earn a retry")
}

func TestScope(t *testing.T) {
	for _, sc := range []strategies.Scope{strategies.ScopeSender, strategies.ScopeFleet, strategies.ScopeGroup} {
		got, err := strategies.ParseScope(sc.String())
		require.NoError(t, err)
		assert.Equal(t, sc, got)
	}
	_, err := strategies.ParseScope("proxy")
	assert.EqualError(t, err, `strategies: unknown budget scope "proxy" (want one of sender, fleet, group)`)
}

func TestGroupsShareABudget(t *testing.T) {
	senders := func(b *strategies.Budget) []strategies.Sender {
		p := &strategies.Policy{Budget: b}
		g := strategies.NewGroups(p)
		s := make([]strategies.Sender, 7)
		for i := range s {
			g.Join(&s[i], i)
		}
		return s
	}
	envoy := strategies.Budget{Kind: strategies.BudgetEnvoy}
	fleet, group, own := envoy, envoy, envoy
	fleet.Scope = strategies.ScopeFleet
	group.Scope, group.GroupSize = strategies.ScopeGroup, 3

	s := senders(&fleet)
	for i := range s {
		assert.Same(t, s[0].Shared(), s[i].Shared(), "fleet: sender %d", i)
	}
	s = senders(&group)
	for i := range s {
		assert.Same(t, s[i/3*3].Shared(), s[i].Shared(), "group: sender %d", i)
	}
	assert.NotSame(t, s[0].Shared(), s[3].Shared())
	assert.NotSame(t, s[3].Shared(), s[6].Shared())
	s = senders(&own)
	assert.NotSame(t, s[0].Shared(), s[1].Shared(), "per sender: each its own")
}

func TestPolicyEnvoyFleetBudget(t *testing.T) {
	// Two senders share an Envoy budget with a floor of 1 and 0%: one
	// retry in flight for the pair. The second sender's retry is denied
	// while the first's is out, and allowed once it ended.
	b := &strategies.Budget{Kind: strategies.BudgetEnvoy, Percent: 0.001, MinConcurrency: 1, Scope: strategies.ScopeFleet}
	p := &strategies.Policy{Backoff: strategies.Fixed{Delay: time.Second}, MaxAttempts: 5, Budget: b}
	g := strategies.NewGroups(p)
	var a, c strategies.Sender
	g.Join(&a, 0)
	g.Join(&c, 1)
	r := rand.New(rand.NewPCG(1, 1))
	var qa, qc strategies.Request
	pa, _, ok := p.Begin(&a, &qa, 0, r)
	require.True(t, ok)
	pc, _, ok := p.Begin(&c, &qc, 0, r)
	require.True(t, ok)
	assert.Equal(t, strategies.Retry, p.Done(&a, &qa, pa, 0, &strategies.Result{Outcome: strategies.ServerError}, r).Action)
	assert.Equal(t, strategies.Decision{Action: strategies.DeadLetter, Reason: strategies.BudgetDenied},
		p.Done(&c, &qc, pc, 0, &strategies.Result{Outcome: strategies.ServerError}, r), "the pair's one retry is out")
	pa, _, ok = p.Begin(&a, &qa, time.Second, r)
	require.True(t, ok)
	assert.Equal(t, strategies.Deliver, p.Done(&a, &qa, pa, time.Second, &strategies.Result{}, r).Action)
	assert.Equal(t, int64(1), b.RetriesAllowed(a.Shared(), time.Second), "the retry ended: its place is free")

	// A request abandoned in its backoff gives its place back.
	var qd strategies.Request
	pd, _, ok := p.Begin(&c, &qd, 2*time.Second, r)
	require.True(t, ok)
	require.Equal(t, strategies.Retry, p.Done(&c, &qd, pd, 2*time.Second, &strategies.Result{Outcome: strategies.Timeout}, r).Action)
	assert.Zero(t, b.RetriesAllowed(a.Shared(), 2*time.Second))
	p.Cancel(&c, &qd, false)
	assert.Equal(t, int64(1), b.RetriesAllowed(a.Shared(), 2*time.Second))
	// And one abandoned in flight its attempt too: with 100%, the
	// retries allowed are the attempts in flight.
	all := &strategies.Budget{Kind: strategies.BudgetEnvoy, Percent: 100, MinConcurrency: 1}
	p = &strategies.Policy{Budget: all}
	var x strategies.Sender
	var q1, q2 strategies.Request
	for _, q := range []*strategies.Request{&q1, &q2} {
		_, _, ok = p.Begin(&x, q, 0, r)
		require.True(t, ok)
	}
	assert.Equal(t, int64(2), all.RetriesAllowed(x.Shared(), 0))
	p.Cancel(&x, &q1, true)
	assert.Equal(t, int64(1), all.RetriesAllowed(x.Shared(), 0), "the abandoned attempt stops counting")
}
