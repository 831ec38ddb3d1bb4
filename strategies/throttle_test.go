package strategies_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// fixedSource is a rand source that always draws the same number: 0
// makes Float64 return 0 (every p > 0 rejects), math.MaxUint64 just
// under 1 (only p = 1 rejects).
type fixedSource uint64

func (f fixedSource) Uint64() uint64 { return uint64(f) }

var (
	drawLow  = rand.New(fixedSource(0))
	drawHigh = rand.New(fixedSource(math.MaxUint64))
)

// throttleStep is one row of a throttle step table: at a time, an event
// (an attempt asking to go, drawn low or high, or the outcome of one
// that went), then what the window holds and the rejection probability.
type throttleStep struct {
	at    time.Duration
	event string // "admit-low", "admit-high", "accept", "fail"
	ok    bool   // for admits: whether the attempt may go
	req   int64
	acc   int64
	p     float64
}

func runThrottleSteps(t *testing.T, th *strategies.Throttle, steps []throttleStep) {
	t.Helper()
	var st strategies.ThrottleState
	for i, s := range steps {
		switch s.event {
		case "admit-low", "admit-high":
			r := drawLow
			if s.event == "admit-high" {
				r = drawHigh
			}
			wait, ok := th.Admit(&st, s.at, r)
			assert.Equal(t, s.ok, ok, "row %d: admitted", i)
			assert.Zero(t, wait, "row %d: a rejection does not wait", i)
		case "accept":
			th.Record(&st, s.at, strategies.Success)
		case "fail":
			th.Record(&st, s.at, strategies.ServerError)
		default:
			t.Fatalf("row %d: unknown event %q", i, s.event)
		}
		req, acc := th.Counts(&st, s.at)
		assert.Equal(t, s.req, req, "row %d (%s at %v): requests", i, s.event, s.at)
		assert.Equal(t, s.acc, acc, "row %d (%s at %v): accepts", i, s.event, s.at)
		assert.InDelta(t, s.p, th.RejectionProbability(&st, s.at), 1e-12, "row %d (%s at %v): rejection probability", i, s.event, s.at)
	}
}

func TestThrottleSRE(t *testing.T) {
	// K = 2 over a 20 s window (20 slices of 1 s).
	th := &strategies.Throttle{Kind: strategies.ThrottleSRE, K: 2, Window: 20 * time.Second}
	s := time.Second
	runThrottleSteps(t, th, []throttleStep{
		{at: 0, event: "admit-low", ok: true, req: 1, p: 1.0 / 2},                // nothing seen: p was 0, no draw rejects
		{at: 0, event: "accept", req: 1, acc: 1, p: 0},                           // 1 - 2 < 0
		{at: s, event: "admit-low", ok: true, req: 2, acc: 1, p: 0},              // 2 - 2 = 0
		{at: s, event: "fail", req: 2, acc: 1, p: 0},                             // a failure is no accept
		{at: 2 * s, event: "admit-low", ok: true, req: 3, acc: 1, p: 1.0 / 4},    // p was 0: it goes
		{at: 2 * s, event: "fail", req: 3, acc: 1, p: 1.0 / 4},                   // (3 - 2) / 4
		{at: 3 * s, event: "admit-low", ok: false, req: 4, acc: 1, p: 2.0 / 5},   // rejected locally: still a request
		{at: 3 * s, event: "admit-high", ok: true, req: 5, acc: 1, p: 3.0 / 6},   // a high draw goes
		{at: 4 * s, event: "accept", req: 5, acc: 2, p: 1.0 / 6},                 // (5 - 4) / 6
		{at: 20 * s, event: "admit-high", ok: true, req: 5, acc: 1, p: 3.0 / 6},  // t = 0 left the window
		{at: 21 * s, event: "admit-high", ok: true, req: 5, acc: 1, p: 3.0 / 6},  // t = 1 s left, a new one came
		{at: 41 * s, event: "admit-high", ok: true, req: 1, acc: 0, p: 1.0 / 2},  // everything left
		{at: 100 * s, event: "admit-low", ok: true, req: 1, acc: 0, p: 1.0 / 2},  // an empty window rejects nothing
		{at: 100 * s, event: "admit-low", ok: false, req: 2, acc: 0, p: 2.0 / 3}, // (1 - 0) / 2 > 0: a low draw rejects
		{at: 100 * s, event: "admit-high", ok: true, req: 3, acc: 0, p: 3.0 / 4}, // never certain: (n) / (n + 1)
		{at: 100 * s, event: "accept", req: 3, acc: 1, p: 1.0 / 4},               // (3 - 2) / 4
		{at: 100 * s, event: "accept", req: 3, acc: 2, p: 0},                     // K x accepts covers the requests
		{at: 100 * s, event: "admit-low", ok: true, req: 4, acc: 2, p: 0},        // 4 - 4 = 0
		{at: 100 * s, event: "admit-low", ok: true, req: 5, acc: 2, p: 1.0 / 6},  // p was (4 - 4) / 5 = 0: it goes
		{at: 100 * s, event: "admit-high", ok: true, req: 6, acc: 2, p: 2.0 / 7}, // the requests grow, the probability with them
		{at: 101 * s, event: "admit-high", ok: true, req: 7, acc: 2, p: 3.0 / 8},
		{at: 101 * s, event: "admit-high", ok: true, req: 8, acc: 2, p: 4.0 / 9},
		{at: 102 * s, event: "admit-high", ok: true, req: 9, acc: 2, p: 5.0 / 10}, //
	})
}

func TestThrottleFailsafe(t *testing.T) {
	// failsafe-go's defaults: success threshold 0.9 (K = 1/0.9), a 1 min
	// window, rejections capped at 0.9; a rejection is not counted.
	th := &strategies.Throttle{Kind: strategies.ThrottleFailsafe}
	k := 1 / 0.9
	s := time.Second
	runThrottleSteps(t, th, []throttleStep{
		{at: 0, event: "admit-low", ok: true, req: 1, p: 1.0 / 2},
		{at: 0, event: "fail", req: 1, p: 1.0 / 2},
		{at: s, event: "admit-low", ok: false, req: 1, p: 1.0 / 2}, // rejected, and not counted
		{at: s, event: "admit-high", ok: true, req: 2, p: 2.0 / 3},
		{at: s, event: "accept", req: 2, acc: 1, p: (2 - k) / 3},
		{at: 2 * s, event: "admit-high", ok: true, req: 3, acc: 1, p: (3 - k) / 4},
		{at: 2 * s, event: "accept", req: 3, acc: 2, p: (3 - 2*k) / 4},
		{at: 2 * s, event: "accept", req: 3, acc: 3, p: 0}, // more accepts than attempts: no rejection
		{at: 61 * s, event: "admit-high", ok: true, req: 1, p: 1.0 / 2},
	})
	// The cap: 100 failures put (100 - 0) / 101 over 0.9.
	var st strategies.ThrottleState
	for range 100 {
		_, ok := th.Admit(&st, 0, drawHigh)
		require.True(t, ok)
		th.Record(&st, 0, strategies.Timeout)
	}
	assert.InDelta(t, 0.9, th.RejectionProbability(&st, 0), 1e-12, "capped at MaxRejection")
	_, ok := th.Admit(&st, 0, drawHigh)
	assert.True(t, ok, "a draw above the cap goes")
	_, ok = th.Admit(&st, 0, rand.New(fixedSource(math.MaxUint64/100*89)))
	assert.False(t, ok, "a draw of 0.89 is rejected")
}

func TestThrottleKind(t *testing.T) {
	for _, k := range []strategies.ThrottleKind{strategies.ThrottleSRE, strategies.ThrottleFailsafe, strategies.ThrottleAWSAdaptive} {
		got, err := strategies.ParseThrottleKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	_, err := strategies.ParseThrottleKind("cubic")
	assert.EqualError(t, err, `strategies: unknown throttle kind "cubic" (want one of sre, failsafe, aws-adaptive)`)
}

// TestCubicRegainsTheRateOnTheCurve drives one AWS adaptive client at 100
// attempts a second until a throttle, then as fast as its rate limiter
// lets it: the rate falls to 0.7 W_max, then climbs the cubic curve and is
// back at W_max after cbrt(W_max (1 - 0.7) / 0.4) s (4.22 s at 100/s),
// within one time step of the client.
func TestCubicRegainsTheRateOnTheCurve(t *testing.T) {
	th := &strategies.Throttle{Kind: strategies.ThrottleAWSAdaptive}
	var st strategies.ThrottleState
	step := 10 * time.Millisecond
	now := time.Duration(0)
	for ; now < 10*time.Second; now += step {
		_, ok := th.Admit(&st, now, nil)
		require.True(t, ok, "no limit before the first throttle")
		th.Record(&st, now, strategies.Success)
	}
	_, on := th.Rate(&st)
	require.False(t, on)

	_, ok := th.Admit(&st, now, nil)
	require.True(t, ok)
	th.Record(&st, now, strategies.TooManyRequests)
	throttled := now
	rate, on := th.Rate(&st)
	require.True(t, on, "a throttle turns the limiter on")
	wmax := rate / strategies.CubicBeta
	assert.InDelta(t, 100, wmax, 0.01, "W_max is the measured rate, 100/s")

	want := time.Duration(math.Cbrt(wmax*(1-strategies.CubicBeta)/strategies.CubicScale) * float64(time.Second))
	assert.InDelta(t, 4.217, want.Seconds(), 0.001)
	var regained time.Duration
	var gap time.Duration // the longest wait between two attempts near the crossing
	last := now
	for now < throttled+10*time.Second && regained == 0 {
		wait, ok := th.Admit(&st, now, nil)
		if !ok {
			require.Positive(t, wait)
			now += wait
			continue
		}
		if now-throttled > want-time.Second {
			gap = max(gap, now-last)
		}
		last = now
		th.Record(&st, now, strategies.Success)
		if r, _ := th.Rate(&st); r >= wmax {
			regained = now - throttled
		}
	}
	require.NotZero(t, regained, "the rate never came back")
	assert.InDelta(t, want.Seconds(), regained.Seconds(), gap.Seconds(), "back at W_max after %v, want %v within one step (%v)", regained, want, gap)
	assert.Less(t, gap, 20*time.Millisecond, "a step is an attempt at 70/s or more")
}

func TestCubicBeta(t *testing.T) {
	// A beta of 0.5 halves the rate on a throttle, and regains W_max
	// after cbrt(W_max x 0.5 / 0.4) s.
	th := &strategies.Throttle{Kind: strategies.ThrottleAWSAdaptive, Beta: 0.5}
	var st strategies.ThrottleState
	for now := time.Duration(0); now < 10*time.Second; now += 10 * time.Millisecond {
		th.Record(&st, now, strategies.Success)
	}
	th.Record(&st, 10*time.Second, strategies.TooManyRequests)
	rate, _ := th.Rate(&st)
	assert.InDelta(t, 50, rate, 0.01, "half of 100/s")
	k := math.Cbrt(100 * 0.5 / strategies.CubicScale)
	end := 10*time.Second + time.Duration(k*float64(time.Second))
	for now := 10*time.Second + 10*time.Millisecond; now <= end; now += 10 * time.Millisecond {
		th.Record(&st, now, strategies.Success) // still 100 a second
	}
	rate, _ = th.Rate(&st)
	assert.InDelta(t, 100, rate, 0.5, "back at W_max after %.2f s", k)
}

func TestCubicStepTable(t *testing.T) {
	// Each row: an attempt's outcome at a time, then the fill rate and
	// whether the limiter is on. The measured rate is counted in half
	// seconds and smoothed by 0.8; the new rate is min(cubic, 2 x
	// measured), at least 0.5.
	th := &strategies.Throttle{Kind: strategies.ThrottleAWSAdaptive}
	var st strategies.ThrottleState
	ms := time.Millisecond
	w6 := cubicAt(4.8, 0.4) // the fill rate at 1 s, before the second throttle
	rows := []struct {
		at   time.Duration
		o    strategies.Outcome
		rate float64
		on   bool
	}{
		{0, strategies.Success, 0.5, false},        // nothing measured: the floor
		{250 * ms, strategies.Success, 0.5, false}, // still no bucket measured: 2 x 0
		// The half second turns: 3 attempts in it measure 6/s, x 0.8 =
		// 4.8; the curve from 0 (no throttle yet) is 0.4 x 0.5^3.
		{500 * ms, strategies.Success, 0.5, false},
		// A throttle: W_max is the measured rate (the limiter was off),
		// cut to 0.7 x 4.8.
		{600 * ms, strategies.TooManyRequests, 0.7 * 4.8, true},
		// A 5xx is no throttle: the curve climbs from 3.36.
		{700 * ms, strategies.ServerError, cubicAt(4.8, 0.1), true},
		// At 1 s the bucket turns: 3 attempts in it, 6/s, smoothed with
		// 4.8 to 5.76; the curve is below 2 x 5.76.
		{1000 * ms, strategies.Success, w6, true},
		// A throttle while the limiter is on: W_max is the smaller of
		// the measured 5.76 and the fill rate.
		{1100 * ms, strategies.TooManyRequests, 0.7 * w6, true},
		// After a silence the measured rate falls (2 attempts over 4 s,
		// 0.5/s, smoothed with 5.76: 1.552) and caps the curve at twice
		// it.
		{5000 * ms, strategies.Success, 2 * 1.552, true},
	}
	for i, r := range rows {
		th.Record(&st, r.at, r.o)
		rate, on := th.Rate(&st)
		assert.InDelta(t, r.rate, rate, 1e-9, "row %d at %v: rate", i, r.at)
		assert.Equal(t, r.on, on, "row %d: on", i)
	}

	// Tokens: off, the limiter lets everything through; on, an attempt
	// takes one token, or sleeps until one should be there, (1 -
	// tokens) / rate, and asks again, as the SDKs' loop does
	// (aws-sdk-go-v2 GetAttemptToken): two waiters that ask at once sleep
	// alike, the first to ask again takes the token, and the other sleeps
	// a token more.
	var tk strategies.ThrottleState
	for _, at := range []time.Duration{0, 250 * ms, 500 * ms} {
		_, ok := th.Admit(&tk, at, nil)
		require.True(t, ok, "off at %v", at)
		th.Record(&tk, at, strategies.Success)
	}
	th.Record(&tk, 600*ms, strategies.TooManyRequests) // on: 3.36/s, holding 0.3 (0.6 s at 0.5/s)
	wait, ok := th.Admit(&tk, 600*ms, nil)
	require.False(t, ok)
	assert.InDelta(t, (0.7 / 3.36), wait.Seconds(), 1e-9, "the missing 0.7 token at 3.36/s")
	wait2, ok := th.Admit(&tk, 600*ms, nil)
	require.False(t, ok)
	assert.Equal(t, wait, wait2, "a second waiter sleeps as long: the SDK keeps no line")
	_, ok = th.Admit(&tk, 600*ms+wait, nil)
	assert.True(t, ok, "the first to ask again takes the token")
	wait3, ok := th.Admit(&tk, 600*ms+wait, nil)
	assert.False(t, ok, "and it is spent")
	assert.InDelta(t, 1/3.36, wait3.Seconds(), 1e-8, "the other sleeps until the next, a whole token at 3.36/s")
	_, ok = th.Admit(&tk, 600*ms+wait+wait3, nil)
	assert.True(t, ok, "and takes it")
}

// cubicAt is the CUBIC curve dt seconds after a throttle at wmax.
func cubicAt(wmax, dt float64) float64 {
	k := math.Cbrt(wmax * (1 - strategies.CubicBeta) / strategies.CubicScale)
	return strategies.CubicScale*math.Pow(dt-k, 3) + wmax
}
