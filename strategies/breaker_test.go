package strategies_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

const (
	stClosed   = strategies.BreakerClosed
	stOpen     = strategies.BreakerOpen
	stHalfOpen = strategies.BreakerHalfOpen
)

type breakerEventKind uint8

const (
	evKindAllow  breakerEventKind = iota // Allow at the step's time
	evKindRecord                         // Record an outcome with a permit
	evKindStatus                         // only check Status
)

// breakerEvent is what one step of a breaker step table does.
type breakerEvent struct {
	kind    breakerEventKind
	outcome strategies.Outcome
	// permit selects the permit a record uses: 0 is what the last Allow
	// returned (the zero Permit if it refused), n > 0 the n-th permit
	// granted, n < 0 the -n-th most recent permit granted.
	permit int
}

var (
	evAllow  = breakerEvent{kind: evKindAllow}
	evStatus = breakerEvent{kind: evKindStatus}
)

// evRecord records o with the permit of the last Allow.
func evRecord(o strategies.Outcome) breakerEvent {
	return breakerEvent{kind: evKindRecord, outcome: o}
}

// evRecordPermit records o with permit n (see breakerEvent.permit).
func evRecordPermit(n int, o strategies.Outcome) breakerEvent {
	return breakerEvent{kind: evKindRecord, outcome: o, permit: n}
}

func (e breakerEvent) String() string {
	switch e.kind {
	case evKindAllow:
		return "allow"
	case evKindRecord:
		return fmt.Sprintf("record(%v, permit %d)", e.outcome, e.permit)
	}
	return "status"
}

// breakerStep is one row of a breaker step table, in the style of
// golang.org/x/time/rate's tests.
type breakerStep struct {
	at time.Duration
	ev breakerEvent
	// ok and canary are what Allow must return (allow steps only).
	ok, canary bool
	// want is what Status must return at `at`, after the event.
	want strategies.BreakerStatus
}

// breakerRun returns the steps of n attempts, each an allow then a record,
// the i-th at start+i*every with outcome os[i%len(os)]. Every step wants
// the breaker closed except the last record, which wants last.
func breakerRun(n int, start, every time.Duration, last strategies.BreakerStatus, os ...strategies.Outcome) []breakerStep {
	var steps []breakerStep
	for i := range n {
		at := start + time.Duration(i)*every
		want := stClosed
		if i == n-1 {
			want = last
		}
		steps = append(steps,
			breakerStep{at: at, ev: evAllow, ok: true, want: stClosed},
			breakerStep{at: at, ev: evRecord(os[i%len(os)]), want: want},
		)
	}
	return steps
}

// runBreakerSteps plays steps on a zero BreakerState and stops at the
// first step that goes wrong.
func runBreakerSteps(t *testing.T, b *strategies.Breaker, steps []breakerStep) {
	t.Helper()
	var (
		s       strategies.BreakerState
		r       = rand.New(rand.NewPCG(1, 2))
		last    strategies.Permit
		granted []strategies.Permit
	)
	for i, st := range steps {
		switch st.ev.kind {
		case evKindAllow:
			p, ok := b.Allow(&s, st.at)
			if !assert.Equalf(t, st.ok, ok, "step %d at %v: allow", i, st.at) {
				return
			}
			if !assert.Equalf(t, st.canary, p.Canary(), "step %d at %v: canary", i, st.at) {
				return
			}
			last = p
			if ok {
				granted = append(granted, p)
			}
		case evKindRecord:
			p := last
			switch n := st.ev.permit; {
			case n > 0:
				require.LessOrEqualf(t, n, len(granted), "step %d: permit %d not granted", i, n)
				p = granted[n-1]
			case n < 0:
				require.LessOrEqualf(t, -n, len(granted), "step %d: permit %d not granted", i, n)
				p = granted[len(granted)+n]
			}
			b.Record(&s, st.at, p, st.ev.outcome, r)
		}
		if !assert.Equalf(t, st.want, b.Status(&s, st.at), "step %d at %v: status after %v", i, st.at, st.ev) {
			return
		}
	}
}

type breakerTest struct {
	name  string
	b     *strategies.Breaker
	steps []breakerStep
}

func runBreakerTests(t *testing.T, tests []breakerTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runBreakerSteps(t, tt.b, tt.steps)
		})
	}
}

// articleBreaker is the breaker of the seed article, section 8: 50
// consecutive timeouts within 60 seconds trip it for 15 minutes.
func articleBreaker() *strategies.Breaker {
	return &strategies.Breaker{Consecutive: 50, Window: time.Minute, OpenFor: 15 * time.Minute}
}

func TestBreakerConsecutive(t *testing.T) {
	const (
		timeout = strategies.Timeout
		success = strategies.Success
	)
	sec := time.Second
	article := articleBreaker()
	runBreakerTests(t, []breakerTest{
		{"50 timeouts within 60s trip", article, slices.Concat(
			breakerRun(50, 0, sec, stOpen, timeout),
			[]breakerStep{{at: 49 * sec, ev: evAllow, ok: false, want: stOpen}},
		)},
		{"49 timeouts do not trip", article, slices.Concat(
			breakerRun(49, 0, sec, stClosed, timeout),
			[]breakerStep{{at: 60 * sec, ev: evAllow, ok: true, want: stClosed}},
		)},
		{"50 timeouts over more than 60s do not trip", article, slices.Concat(
			// The 50th, at 61.25s, starts a new run of 1.
			breakerRun(50, 0, 1250*time.Millisecond, stClosed, timeout),
			// The new run's 50th failure, 49.25s after its first, trips.
			breakerRun(48, 62500*time.Millisecond, sec, stClosed, timeout),
			breakerRun(1, 110500*time.Millisecond, 0, stOpen, timeout),
		)},
		{"a run lasting exactly Window trips", article, slices.Concat(
			breakerRun(49, 0, 0, stClosed, timeout),
			breakerRun(1, time.Minute, 0, stOpen, timeout),
		)},
		{"a run lasting 1ns more than Window starts over", article, slices.Concat(
			breakerRun(49, 0, 0, stClosed, timeout),
			breakerRun(1, time.Minute+1, 0, stClosed, timeout),
			breakerRun(48, time.Minute+2, 0, stClosed, timeout),
			breakerRun(1, 2*time.Minute+1, 0, stOpen, timeout),
		)},
		{"a success resets the run", article, slices.Concat(
			breakerRun(49, 0, sec, stClosed, timeout),
			breakerRun(1, 49*sec, 0, stClosed, success),
			breakerRun(49, 50*sec, 100*time.Millisecond, stClosed, timeout),
			breakerRun(1, 55*sec, 0, stOpen, timeout),
		)},
		{"every default failure counts", article,
			breakerRun(50, 0, sec, stOpen, strategies.Refused, strategies.Reset, strategies.ServerError, timeout),
		},
		{"a 429 counts as a success by default", article, slices.Concat(
			breakerRun(49, 0, 100*time.Millisecond, stClosed, timeout),
			breakerRun(1, 5*sec, 0, stClosed, strategies.TooManyRequests),
			breakerRun(49, 6*sec, 100*time.Millisecond, stClosed, timeout),
		)},
		{"a 4xx counts as a success by default", article, slices.Concat(
			breakerRun(49, 0, 100*time.Millisecond, stClosed, timeout),
			breakerRun(100, 5*sec, 100*time.Millisecond, stClosed, strategies.ClientError),
			breakerRun(49, 16*sec, 100*time.Millisecond, stClosed, timeout),
		)},
		{"Window 0 puts no time limit on the run",
			&strategies.Breaker{Consecutive: 50, OpenFor: 15 * time.Minute},
			breakerRun(50, 0, time.Hour, stOpen, timeout),
		},
		{"a custom Failures set trips on its outcomes",
			&strategies.Breaker{Consecutive: 50, Window: time.Minute, OpenFor: time.Minute, Failures: strategies.Outcomes(strategies.TooManyRequests)},
			breakerRun(50, 0, sec, stOpen, strategies.TooManyRequests),
		},
		{"a custom Failures set counts other outcomes as successes",
			&strategies.Breaker{Consecutive: 50, Window: time.Minute, OpenFor: time.Minute, Failures: strategies.Outcomes(strategies.TooManyRequests)},
			slices.Concat(
				breakerRun(49, 0, 100*time.Millisecond, stClosed, strategies.TooManyRequests),
				breakerRun(1, 5*sec, 0, stClosed, timeout),
				breakerRun(49, 6*sec, 100*time.Millisecond, stClosed, strategies.TooManyRequests),
			),
		},
		{"the zero Breaker never trips", &strategies.Breaker{},
			breakerRun(1000, 0, time.Millisecond, stClosed, timeout),
		},
	})
}

func TestBreakerRatio(t *testing.T) {
	const (
		timeout = strategies.Timeout
		success = strategies.Success
	)
	sec, ms := time.Second, time.Millisecond
	half := &strategies.Breaker{FailureRatio: 0.5, Window: 10 * sec, MinCalls: 10, OpenFor: time.Minute}
	sixty := &strategies.Breaker{FailureRatio: 0.6, Window: 10 * sec, MinCalls: 10, OpenFor: time.Minute}
	runBreakerTests(t, []breakerTest{
		{"below MinCalls never trips", half, slices.Concat(
			breakerRun(9, 0, 100*ms, stClosed, timeout),
			[]breakerStep{{at: 5 * sec, ev: evStatus, want: stClosed}},
		)},
		{"trips at MinCalls", half, breakerRun(10, 0, 100*ms, stOpen, timeout)},
		{"trips when failures/calls reaches FailureRatio", half, slices.Concat(
			breakerRun(6, 0, 100*ms, stClosed, success),
			breakerRun(4, sec, 100*ms, stClosed, timeout), // 4/10
			breakerRun(1, 2*sec, 0, stClosed, timeout),    // 5/11
			breakerRun(1, 2100*ms, 0, stOpen, timeout),    // 6/12
		)},
		{"a success can complete the ratio", half,
			breakerRun(10, 0, 100*ms, stOpen, timeout, success), // 5/10 at the 10th call, a success
		},
		{"calls count until the window slides past them", sixty, slices.Concat(
			breakerRun(10, 0, 0, stClosed, success),
			breakerRun(9, 5*sec, 0, stClosed, timeout),
			breakerRun(1, 10*sec-1, 0, stClosed, timeout), // 10/20
		)},
		{"old successes slide out of the window", sixty, slices.Concat(
			breakerRun(10, 0, 0, stClosed, success),
			breakerRun(9, 5*sec, 0, stClosed, timeout),
			breakerRun(1, 10*sec, 0, stOpen, timeout), // 10/10
		)},
		{"old failures slide out of the window", half, slices.Concat(
			breakerRun(9, 0, 0, stClosed, timeout),
			breakerRun(9, 10*sec, 0, stClosed, timeout), // 9 calls, not 18
			breakerRun(1, 10*sec, 0, stOpen, timeout),
		)},
		{"the window has a resolution of Window/10", half, slices.Concat(
			// Calls at 0.9s fall in the first bucket, [0s, 1s), and
			// leave the window at 10s, 9.1s later.
			breakerRun(9, 900*ms, 0, stClosed, timeout),
			breakerRun(9, 10*sec, 0, stClosed, timeout),
			breakerRun(1, 10*sec, 0, stOpen, timeout),
		)},
		{"the ratio rule is off when Window is 0",
			&strategies.Breaker{FailureRatio: 0.5, MinCalls: 1, OpenFor: time.Minute},
			breakerRun(100, 0, 100*ms, stClosed, timeout),
		},
		{"MinCalls 0 means 1",
			&strategies.Breaker{FailureRatio: 1, Window: 10 * sec, OpenFor: time.Minute},
			slices.Concat(
				breakerRun(5, 0, 0, stClosed, success),
				breakerRun(1, 10*sec, 0, stOpen, timeout),
			),
		},
		{"the counts restart after the breaker closes",
			&strategies.Breaker{FailureRatio: 0.5, Window: 10 * sec, MinCalls: 10, OpenFor: sec},
			slices.Concat(
				breakerRun(10, 0, 0, stOpen, timeout),
				[]breakerStep{
					{at: sec, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
					{at: sec, ev: evRecord(success), want: stClosed},
				},
				// Within Window of the 10 failures before the trip, which
				// no longer count.
				breakerRun(9, 2*sec, 0, stClosed, timeout),
				breakerRun(1, 2*sec, 0, stOpen, timeout),
			),
		},
	})
}

func TestBreakerOpenHalfOpen(t *testing.T) {
	const (
		timeout = strategies.Timeout
		success = strategies.Success
	)
	article := articleBreaker()
	trip := breakerRun(50, 0, time.Second, stOpen, timeout) // trips at 49s
	t0 := 49 * time.Second
	end := t0 + 15*time.Minute
	halfOpen := slices.Concat(trip, []breakerStep{
		{at: t0, ev: evAllow, ok: false, want: stOpen},
		{at: end - 1, ev: evAllow, ok: false, want: stOpen},
		{at: end - 1, ev: evStatus, want: stOpen},
		{at: end, ev: evStatus, want: stHalfOpen},
		{at: end, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
		{at: end, ev: evAllow, ok: false, want: stHalfOpen},
		{at: end + 10*time.Second, ev: evAllow, ok: false, want: stHalfOpen},
	})
	reopened := end + 11*time.Second
	runBreakerTests(t, []breakerTest{
		{"open refuses until OpenFor, then one canary goes", article, halfOpen},
		{"a canary success closes", article, slices.Concat(halfOpen, []breakerStep{
			{at: end + 11*time.Second, ev: evRecordPermit(-1, success), want: stClosed},
			{at: end + 11*time.Second, ev: evAllow, ok: true, want: stClosed},
		})},
		{"a canary 429 closes", article, slices.Concat(halfOpen, []breakerStep{
			{at: end + 11*time.Second, ev: evRecordPermit(-1, strategies.TooManyRequests), want: stClosed},
		})},
		{"a closed breaker starts counting afresh", article, slices.Concat(halfOpen,
			[]breakerStep{{at: end + 11*time.Second, ev: evRecordPermit(-1, success), want: stClosed}},
			breakerRun(49, end+12*time.Second, 0, stClosed, timeout),
			breakerRun(1, end+13*time.Second, 0, stOpen, timeout),
		)},
		{"a canary failure reopens for a fresh OpenFor", article, slices.Concat(halfOpen, []breakerStep{
			{at: reopened, ev: evRecordPermit(-1, timeout), want: stOpen},
			{at: reopened + 15*time.Minute - 1, ev: evAllow, ok: false, want: stOpen},
			{at: reopened + 15*time.Minute, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			{at: reopened + 15*time.Minute, ev: evAllow, ok: false, want: stHalfOpen},
		})},
		{"the zero permit of a refused attempt is ignored", article, slices.Concat(halfOpen, []breakerStep{
			{at: end + 11*time.Second, ev: evRecord(timeout), want: stHalfOpen},
			{at: end + 11*time.Second, ev: evRecord(success), want: stHalfOpen},
			{at: end + 12*time.Second, ev: evRecordPermit(-1, success), want: stClosed},
		})},
		{"the zero Permit is ignored by a fresh breaker",
			&strategies.Breaker{Consecutive: 1, OpenFor: time.Minute},
			[]breakerStep{{at: 0, ev: evRecord(timeout), want: stClosed}},
		},
		{"OpenFor 0 turns half-open at once",
			&strategies.Breaker{Consecutive: 1},
			[]breakerStep{
				{at: 0, ev: evAllow, ok: true, want: stClosed},
				{at: time.Second, ev: evRecord(timeout), want: stHalfOpen},
				{at: time.Second, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			},
		},
	})
}

func TestBreakerCanaries(t *testing.T) {
	const (
		timeout = strategies.Timeout
		success = strategies.Success
	)
	b := &strategies.Breaker{Consecutive: 1, OpenFor: time.Minute, Canaries: 3}
	trip := breakerRun(1, 0, 0, stOpen, timeout)
	probe := func(at time.Duration) []breakerStep {
		return []breakerStep{
			{at: at, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			{at: at, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			{at: at, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			{at: at, ev: evAllow, ok: false, want: stHalfOpen},
		}
	}
	runBreakerTests(t, []breakerTest{
		{"half-open lets exactly Canaries through", b, slices.Concat(trip, probe(time.Minute))},
		{"the first canary failure reopens; later canaries are ignored", b, slices.Concat(trip, probe(time.Minute), []breakerStep{
			{at: time.Minute + 1, ev: evRecordPermit(-2, timeout), want: stOpen},
			{at: time.Minute + 2, ev: evRecordPermit(-3, success), want: stOpen},
			{at: time.Minute + 3, ev: evRecordPermit(-1, success), want: stOpen},
			{at: 2*time.Minute + 1, ev: evStatus, want: stHalfOpen},
		}, probe(2*time.Minute+1))},
		{"the first canary success closes; later canaries are ignored", b, slices.Concat(trip, probe(time.Minute), []breakerStep{
			{at: time.Minute + 1, ev: evRecordPermit(-1, success), want: stClosed},
			// Consecutive is 1: a counted failure would trip.
			{at: time.Minute + 2, ev: evRecordPermit(-2, timeout), want: stClosed},
			{at: time.Minute + 3, ev: evRecordPermit(-3, timeout), want: stClosed},
		})},
	})
}

func TestBreakerStalePermit(t *testing.T) {
	const (
		timeout = strategies.Timeout
		success = strategies.Success
	)
	b := &strategies.Breaker{Consecutive: 3, OpenFor: time.Minute}
	runBreakerSteps(t, b, slices.Concat(
		// Permit 1 is an attempt sent while closed, answered much later.
		[]breakerStep{{at: 0, ev: evAllow, ok: true, want: stClosed}},
		breakerRun(3, time.Second, time.Second, stOpen, timeout), // trips at 3s
		[]breakerStep{
			{at: 4 * time.Second, ev: evRecordPermit(1, success), want: stOpen},
			{at: time.Minute + 3*time.Second, ev: evAllow, ok: true, canary: true, want: stHalfOpen},
			{at: time.Minute + 4*time.Second, ev: evRecordPermit(1, timeout), want: stHalfOpen},
			{at: time.Minute + 4*time.Second, ev: evRecordPermit(1, success), want: stHalfOpen},
			{at: time.Minute + 5*time.Second, ev: evRecordPermit(-1, success), want: stClosed},
		},
		// Two failures, then the stale one: still a run of two.
		breakerRun(2, time.Minute+6*time.Second, 0, stClosed, timeout),
		[]breakerStep{{at: time.Minute + 7*time.Second, ev: evRecordPermit(1, timeout), want: stClosed}},
		breakerRun(1, time.Minute+8*time.Second, 0, stOpen, timeout),
	))
}

// halfOpenAt returns the first time at or after from, and before
// from+within, at which the breaker reports half-open, found by bisection
// over Status; ok is false when there is none.
func halfOpenAt(b *strategies.Breaker, s *strategies.BreakerState, from, within time.Duration) (time.Duration, bool) {
	d := sort.Search(int(within), func(d int) bool {
		return b.Status(s, from+time.Duration(d)) == stHalfOpen
	})
	return from + time.Duration(d), d < int(within)
}

// tripAll trips n zero breakers at t0 with one timeout each, drawing the
// jitter from r.
func tripAll(t *testing.T, b *strategies.Breaker, n int, t0 time.Duration, r *rand.Rand) []strategies.BreakerState {
	t.Helper()
	states := make([]strategies.BreakerState, n)
	for i := range states {
		p, ok := b.Allow(&states[i], t0)
		require.True(t, ok)
		b.Record(&states[i], t0, p, strategies.Timeout, r)
		require.Equal(t, stOpen, b.Status(&states[i], t0))
	}
	return states
}

func TestBreakerJitter(t *testing.T) {
	const (
		n       = 10000
		openFor = 15 * time.Minute
		t0      = time.Hour
	)
	t.Run("OpenJitter 0.2 spreads half-open times over [0.8,1.2]*OpenFor", func(t *testing.T) {
		b := &strategies.Breaker{Consecutive: 1, OpenFor: openFor, OpenJitter: 0.2}
		states := tripAll(t, b, n, t0, rand.New(rand.NewPCG(1, 2)))
		x := make([]float64, n) // half-open delay, in units of OpenFor
		for i := range states {
			at, ok := halfOpenAt(b, &states[i], t0, 2*openFor)
			require.True(t, ok)
			x[i] = float64(at-t0) / float64(openFor)
		}
		slices.Sort(x)
		assert.GreaterOrEqual(t, x[0], 0.8)
		assert.Less(t, x[0], 0.801, "min")
		assert.Less(t, x[n-1], 1.2)
		assert.Greater(t, x[n-1], 1.199, "max")
		var sum float64
		for _, v := range x {
			sum += v
		}
		assert.InDelta(t, 1, sum/n, 0.01, "mean")
		// Kolmogorov-Smirnov against U(0.8, 1.2): the critical value at
		// the 1% level is 1.63/sqrt(n).
		var ks float64
		for i, v := range x {
			f := (v - 0.8) / 0.4
			ks = max(ks, float64(i+1)/n-f, f-float64(i)/n)
		}
		t.Logf("half-open delay / OpenFor: min %.5f, max %.5f, mean %.5f, KS %.4f", x[0], x[n-1], sum/n, ks)
		assert.Less(t, ks, 0.0163, "Kolmogorov-Smirnov statistic")
		// Distinct breakers draw distinct delays.
		assert.Greater(t, len(slices.Compact(x)), n*99/100)
	})
	t.Run("OpenJitter 0 opens every breaker for exactly OpenFor", func(t *testing.T) {
		b := &strategies.Breaker{Consecutive: 1, OpenFor: openFor}
		// r is not used without jitter, so nil must do.
		states := tripAll(t, b, n, t0, nil)
		for i := range states {
			require.Equal(t, stOpen, b.Status(&states[i], t0+openFor-1))
			require.Equal(t, stHalfOpen, b.Status(&states[i], t0+openFor))
		}
	})
}

func TestBreakerWindowAllocation(t *testing.T) {
	record := func(b *strategies.Breaker) func() {
		return func() {
			var s strategies.BreakerState
			for i := range 100 {
				now := time.Duration(i) * time.Second
				p, _ := b.Allow(&s, now)
				b.Record(&s, now, p, strategies.Success, nil)
			}
		}
	}
	assert.Zero(t, testing.AllocsPerRun(10, record(&strategies.Breaker{Consecutive: 5, Window: time.Minute})),
		"no window without FailureRatio")
	assert.Equal(t, 1.0, testing.AllocsPerRun(10, record(&strategies.Breaker{FailureRatio: 0.5, Window: time.Minute})),
		"one window, allocated once")
}

func TestBreakerStateSize(t *testing.T) {
	state, permit := unsafe.Sizeof(strategies.BreakerState{}), unsafe.Sizeof(strategies.Permit{})
	t.Logf("BreakerState: %d bytes, Permit: %d bytes", state, permit)
	assert.LessOrEqual(t, state, uintptr(48))
	assert.LessOrEqual(t, permit, uintptr(8))
}

func TestBreakerStatusString(t *testing.T) {
	assert.Equal(t, "closed", stClosed.String())
	assert.Equal(t, "open", stOpen.String())
	assert.Equal(t, "half-open", stHalfOpen.String())
	assert.Equal(t, "BreakerStatus(9)", strategies.BreakerStatus(9).String())
}

func TestBreakerErrOpen(t *testing.T) {
	err := fmt.Errorf("deliver to example.com: %w", strategies.ErrBreakerOpen)
	assert.ErrorIs(t, err, strategies.ErrBreakerOpen)
	assert.Equal(t, "strategies: circuit open", strategies.ErrBreakerOpen.Error())
	assert.False(t, errors.Is(strategies.ErrBudgetExhausted, strategies.ErrBreakerOpen))
}

func ExampleBreaker() {
	// The breaker of the article: 50 consecutive timeouts within 60 s
	// trip it for 15 minutes, then a single canary probes the destination.
	b := &strategies.Breaker{Consecutive: 50, Window: time.Minute, OpenFor: 15 * time.Minute}
	var s strategies.BreakerState // the zero value is a closed breaker
	r := rand.New(rand.NewPCG(1, 2))

	var now time.Duration
	for i := range 50 {
		now = time.Duration(i) * time.Second
		p, _ := b.Allow(&s, now)
		b.Record(&s, now, p, strategies.Timeout, r)
	}
	fmt.Println(now, b.Status(&s, now))

	_, ok := b.Allow(&s, now+10*time.Minute)
	fmt.Println(now+10*time.Minute, "allowed:", ok)

	now += 15 * time.Minute
	p, ok := b.Allow(&s, now)
	fmt.Println(now, b.Status(&s, now), "allowed:", ok, "canary:", p.Canary())
	_, ok = b.Allow(&s, now)
	fmt.Println(now, "another attempt allowed:", ok)

	now += 2 * time.Second
	b.Record(&s, now, p, strategies.Success, r)
	fmt.Println(now, b.Status(&s, now))
	// Output:
	// 49s open
	// 10m49s allowed: false
	// 15m49s half-open allowed: true canary: true
	// 15m49s another attempt allowed: false
	// 15m51s closed
}
