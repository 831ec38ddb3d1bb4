package strategies

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attempt runs one Begin/Done round for a request whose attempt gets res.
func attempt(p *Policy, sd *Sender, q *Request, now time.Duration, res Result, r *rand.Rand) Decision {
	permit, d, ok := p.Begin(sd, q, now, r)
	if !ok {
		return d
	}
	return p.Done(sd, q, permit, now, &res, r)
}

func fail(o Outcome) Result { return Result{Outcome: o} }

func TestPolicyMaxAttempts(t *testing.T) {
	p := &Policy{Backoff: Exponential{Base: s, Cap: 60 * s}, MaxAttempts: 3}
	var sd Sender
	var q Request
	r := rand.New(rand.NewPCG(1, 1))
	assert.Equal(t, Decision{Action: Retry, Wait: 1 * s}, attempt(p, &sd, &q, 0, fail(Refused), r))
	assert.Equal(t, Decision{Action: Retry, Wait: 2 * s}, attempt(p, &sd, &q, 1*s, fail(Refused), r))
	assert.Equal(t, Decision{Action: DeadLetter, Reason: MaxAttempts}, attempt(p, &sd, &q, 3*s, fail(Refused), r))
	assert.Equal(t, int32(3), q.Attempts)
}

func TestPolicyDeliverAndNotRetryable(t *testing.T) {
	p := &Policy{Backoff: Fixed{Delay: s}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))

	var q Request
	assert.Equal(t, Deliver, attempt(p, &sd, &q, 0, Result{Outcome: Success}, r).Action)

	tests := []struct {
		o    Outcome
		want Action
	}{
		{Refused, Retry}, {Timeout, Retry}, {Reset, Retry}, {ServerError, Retry},
		{TooManyRequests, Retry}, {ClientError, DeadLetter},
	}
	for _, tt := range tests {
		t.Run(tt.o.String(), func(t *testing.T) {
			var q Request
			d := attempt(p, &sd, &q, 0, fail(tt.o), r)
			assert.Equal(t, tt.want, d.Action)
			if tt.want == DeadLetter {
				assert.Equal(t, NotRetryable, d.Reason)
			}
		})
	}

	// A configured set replaces the default.
	only := &Policy{RetryOn: Outcomes(Timeout)}
	var q2 Request
	assert.Equal(t, Decision{Action: DeadLetter, Reason: NotRetryable}, attempt(only, &sd, &q2, 0, fail(Refused), r))
	assert.Equal(t, Retry, attempt(only, &sd, &q2, 0, fail(Timeout), r).Action)
}

func TestPolicyMaxElapsed(t *testing.T) {
	p := &Policy{Backoff: Fixed{Delay: 10 * s}, MaxElapsed: 25 * s}
	var sd Sender
	var q Request
	r := rand.New(rand.NewPCG(1, 1))
	// First attempt at 5s; elapsed is measured from there.
	assert.Equal(t, Retry, attempt(p, &sd, &q, 5*s, fail(Refused), r).Action)  // next at 15s
	assert.Equal(t, Retry, attempt(p, &sd, &q, 15*s, fail(Refused), r).Action) // next at 25s
	// A retry at 35s would be 30s after the first attempt: give up now.
	assert.Equal(t, Decision{Action: DeadLetter, Reason: MaxElapsed}, attempt(p, &sd, &q, 25*s, fail(Refused), r))
	assert.Equal(t, 5*s, q.First)

	// A retry landing exactly on the limit is still made.
	var q2 Request
	p.MaxElapsed = 20 * s
	assert.Equal(t, Retry, attempt(p, &sd, &q2, 0, fail(Refused), r).Action)
	assert.Equal(t, Retry, attempt(p, &sd, &q2, 10*s, fail(Refused), r).Action)
	assert.Equal(t, MaxElapsed, attempt(p, &sd, &q2, 20*s, fail(Refused), r).Reason)
}

func TestPolicyRetryAfter(t *testing.T) {
	backoff := Exponential{Base: s, Cap: 60 * s}
	hint := func(d time.Duration) Result {
		return Result{Outcome: TooManyRequests, RetryAfter: d, HasRetryAfter: true}
	}
	r := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name string
		mode RetryAfterMode
		cap  time.Duration
		res  []Result
		want []time.Duration
	}{
		{"honor waits exactly the hint", RetryAfterHonor, 0, []Result{hint(7 * s)}, []time.Duration{7 * s}},
		{"honor is capped", RetryAfterHonor, 30 * s, []Result{hint(72 * time.Hour)}, []time.Duration{30 * s}},
		{"zero cap means the default cap", RetryAfterHonor, 0, []Result{hint(72 * time.Hour)}, []time.Duration{DefaultRetryAfterCap}},
		{"ignore uses the backoff", RetryAfterIgnore, 0, []Result{hint(7 * s), hint(7 * s)}, []time.Duration{1 * s, 2 * s}},
		{"max takes the larger", RetryAfterMax, 0, []Result{hint(3 * s), hint(0), hint(0)}, []time.Duration{3 * s, 2 * s, 4 * s}},
		{"no hint uses the backoff", RetryAfterHonor, 0, []Result{fail(TooManyRequests), fail(TooManyRequests)}, []time.Duration{1 * s, 2 * s}},
		{
			// The article: after a 429 wait, later 5xx failures resume the
			// exponential sequence where it left off.
			"5xx after 429 resumes the sequence", RetryAfterHonor, 0,
			[]Result{fail(ServerError), fail(ServerError), hint(120 * s), fail(ServerError), fail(ServerError)},
			[]time.Duration{1 * s, 2 * s, 120 * s, 4 * s, 8 * s},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Policy{Backoff: backoff, RetryAfter: RetryAfter{Mode: tt.mode, Cap: tt.cap}}
			var sd Sender
			var q Request
			var got []time.Duration
			for _, res := range tt.res {
				d := attempt(p, &sd, &q, 0, res, r)
				require.Equal(t, Retry, d.Action)
				got = append(got, d.Wait)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPolicyBudgetDeniesRetry(t *testing.T) {
	// gRPC throttling, 10 tokens: retries stop once tokens <= 5, that is
	// after the fifth failure of the sender.
	p := &Policy{Backoff: Fixed{Delay: s}, Budget: &Budget{Kind: BudgetTokens, MaxTokens: 10, TokenRatio: 0.1}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	var actions []Decision
	for i := range 6 {
		var q Request
		actions = append(actions, attempt(p, &sd, &q, time.Duration(i)*s, fail(ServerError), r))
	}
	for i := range 4 {
		assert.Equal(t, Retry, actions[i].Action, "failure %d", i+1)
	}
	assert.Equal(t, Decision{Action: DeadLetter, Reason: BudgetDenied}, actions[4])
	assert.Equal(t, Decision{Action: DeadLetter, Reason: BudgetDenied}, actions[5])
}

func TestPolicyQuotaRefundsOnSuccess(t *testing.T) {
	p := &Policy{Backoff: Fixed{Delay: s}, Budget: &Budget{Kind: BudgetQuota, Capacity: 10, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	var q Request
	require.Equal(t, Retry, attempt(p, &sd, &q, 0, fail(ServerError), r).Action)
	assert.InDelta(t, 5, p.Budget.Available(&sd.Budget), 1e-9)
	require.Equal(t, Deliver, attempt(p, &sd, &q, s, Result{Outcome: Success}, r).Action)
	assert.InDelta(t, 10, p.Budget.Available(&sd.Budget), 1e-9, "the retry's cost is refunded")
}

func TestPolicyBreakerShortCircuits(t *testing.T) {
	br := &Breaker{Consecutive: 2, OpenFor: time.Minute}
	r := rand.New(rand.NewPCG(1, 1))
	for _, counts := range []bool{false, true} {
		p := &Policy{Backoff: Exponential{Base: s, Cap: 60 * s}, MaxAttempts: 4, Breaker: br, ShortCircuitIsAttempt: counts}
		var sd Sender
		var a, b Request
		require.Equal(t, Retry, attempt(p, &sd, &a, 0, fail(Refused), r).Action)
		require.Equal(t, Retry, attempt(p, &sd, &b, 0, fail(Refused), r).Action) // trips
		require.Equal(t, BreakerOpen, br.Status(&sd.Breaker, s))

		// While open, a try makes no attempt and waits its backoff delay.
		_, d, ok := p.Begin(&sd, &a, s, r)
		assert.False(t, ok)
		assert.Equal(t, Decision{Action: Retry, Wait: 2 * s, Local: ShortCircuit}, d, "the backoff sequence goes on")
		want := int32(1)
		if counts {
			want = 2
		}
		assert.Equal(t, want, a.Attempts, "short-circuit counts as an attempt: %v", counts)
	}
}

func TestStateIsSmall(t *testing.T) {
	// A million senders and requests must fit in memory: state is small.
	assert.LessOrEqual(t, unsafe.Sizeof(Request{}), uintptr(32), "Request")
	assert.LessOrEqual(t, unsafe.Sizeof(Sender{}), uintptr(64), "Sender")
	t.Logf("Request %d bytes, Sender %d bytes (BreakerState %d, BudgetState %d)",
		unsafe.Sizeof(Request{}), unsafe.Sizeof(Sender{}), unsafe.Sizeof(BreakerState{}), unsafe.Sizeof(BudgetState{}))
}

// BenchmarkPolicyDone drives one request through ten refused attempts
// with full jitter: ten Begin/Done rounds per op.
func BenchmarkPolicyDone(b *testing.B) {
	p := &Policy{Backoff: FullJitter{Base: s, Cap: 60 * s}, MaxAttempts: 10}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	q := new(Request) // in a driver, requests live in a slice
	b.ReportAllocs()
	for b.Loop() {
		*q = Request{}
		for range 10 {
			if attempt(p, &sd, q, 0, fail(Refused), r).Action != Retry {
				break
			}
		}
	}
}

func TestShortCircuitNeverSpins(t *testing.T) {
	// With no backoff, a request refused by an open breaker waits until
	// the breaker turns half-open, then, with the canary out, a timeout.
	br := &Breaker{Consecutive: 1, OpenFor: time.Minute}
	p := &Policy{Breaker: br, Timeout: 10 * s}
	r := rand.New(rand.NewPCG(1, 1))
	var sd Sender
	var a, b, c Request
	require.Equal(t, Decision{Action: Retry}, attempt(p, &sd, &a, 0, fail(Refused), r)) // trips
	assert.Equal(t, Decision{Action: Retry, Wait: 50 * s, Local: ShortCircuit}, attempt(p, &sd, &b, 10*s, fail(Refused), r))
	_, ok := br.Allow(&sd.Breaker, time.Minute) // the canary goes out
	require.True(t, ok)
	assert.Equal(t, Decision{Action: Retry, Wait: 10 * s, Local: ShortCircuit}, attempt(p, &sd, &c, time.Minute, fail(Refused), r))
}

func TestRetryBreakerStopsOnlyRetries(t *testing.T) {
	br := &Breaker{Consecutive: 2, OpenFor: time.Minute, RetriesOnly: true}
	p := &Policy{Backoff: Fixed{Delay: s}, MaxAttempts: 3, Breaker: br}
	r := rand.New(rand.NewPCG(1, 1))
	var sd Sender
	var a, b, c Request
	require.Equal(t, Retry, attempt(p, &sd, &a, 0, fail(ServerError), r).Action)
	require.Equal(t, Retry, attempt(p, &sd, &b, 0, fail(ServerError), r).Action) // first attempts count: it trips
	require.Equal(t, BreakerOpen, br.Status(&sd.Breaker, s))

	// A retry is short-circuited; a first attempt still goes out, and its
	// outcome, while the breaker is open, changes nothing.
	_, _, ok := p.Begin(&sd, &a, s, r)
	assert.False(t, ok, "a retry waits for the breaker")
	permit, _, ok := p.Begin(&sd, &c, s, r)
	require.True(t, ok, "a first attempt is never stopped")
	assert.Equal(t, Deliver, p.Done(&sd, &c, permit, s, &Result{Outcome: Success}, r).Action)
	assert.Equal(t, BreakerOpen, br.Status(&sd.Breaker, s), "an ungated success does not close the breaker")
}

func TestPolicyBrookerBucketHasNoPerRequestLimit(t *testing.T) {
	// Brooker's bucket and no max_attempts: one request against a dead
	// server retries while the full bucket holds more than 1 token (4
	// retries), then gives up. The next request's first try deposits
	// 0.1: 1.1 tokens, enough for one retry, and then none.
	p := &Policy{Backoff: Fixed{Delay: s}, Budget: &Budget{Kind: BudgetBucket}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	var q Request
	for i := range 4 {
		require.Equal(t, Decision{Action: Retry, Wait: s}, attempt(p, &sd, &q, time.Duration(i)*s, fail(ServerError), r), "retry %d", i+1)
	}
	assert.Equal(t, Decision{Action: DeadLetter, Reason: BudgetDenied}, attempt(p, &sd, &q, 4*s, fail(ServerError), r))
	assert.Equal(t, int32(5), q.Attempts)
	var next Request
	assert.Equal(t, Decision{Action: Retry, Wait: s}, attempt(p, &sd, &next, 5*s, fail(ServerError), r), "1.1 tokens")
	assert.Equal(t, Decision{Action: DeadLetter, Reason: BudgetDenied}, attempt(p, &sd, &next, 6*s, fail(ServerError), r), "0.1 token")
	assert.InDelta(t, 0.1, p.Budget.Available(&sd.Budget), 1e-9)
}

func TestPolicyCumulativeBreaker(t *testing.T) {
	// Brooker's retry breaker at 0.1: failed attempts over first tries
	// since the start. First tries always go; a retry only while the
	// ratio is at most 0.1; nothing ever resets it.
	p := &Policy{Backoff: Fixed{Delay: s}, Breaker: &Breaker{Cumulative: true, FailureRatio: 0.1}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	retry, denied := Decision{Action: Retry, Wait: s}, Decision{Action: DeadLetter, Reason: BreakerDenied}
	var q Request
	assert.Equal(t, denied, attempt(p, &sd, &q, 0, fail(ServerError), r), "1 failure over 1 first try")
	for i := range 19 {
		var q Request
		require.Equal(t, Deliver, attempt(p, &sd, &q, s, Result{Outcome: Success}, r).Action, "first try %d", i+2)
	}
	q = Request{}
	assert.Equal(t, retry, attempt(p, &sd, &q, 2*s, fail(Timeout), r), "2 failures over 21 first tries: 0.095")
	assert.Equal(t, denied, attempt(p, &sd, &q, 3*s, fail(Timeout), r), "the retry failed: 3 over 21")
	q = Request{}
	assert.Equal(t, denied, attempt(p, &sd, &q, 4*s, fail(ServerError), r), "4 over 22")
	q = Request{}
	assert.Equal(t, Deliver, attempt(p, &sd, &q, 5*s, Result{Outcome: Success}, r).Action, "a first try still goes")
	q = Request{}
	assert.Equal(t, Decision{Action: DeadLetter, Reason: NotRetryable}, attempt(p, &sd, &q, 6*s, fail(ClientError), r), "a 4xx is not retried, breaker or not")
}

func TestPolicyThrottleRejectsLocally(t *testing.T) {
	// An SRE throttle after 3 failures: p = 3/4; a low draw rejects. The
	// rejection counts as an attempt, waits its backoff, and is the
	// request's reason when it was its last.
	p := &Policy{Backoff: Fixed{Delay: s}, MaxAttempts: 2, Throttle: &Throttle{Kind: ThrottleSRE}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	for range 3 {
		var q Request
		permit, _, ok := p.Begin(&sd, &q, 0, rand.New(fixedSource(math.MaxUint64)))
		require.True(t, ok)
		p.Done(&sd, &q, permit, 0, &Result{Outcome: ServerError}, r)
	}
	low := rand.New(fixedSource(0))
	var q Request
	_, d, ok := p.Begin(&sd, &q, s, low)
	assert.False(t, ok)
	assert.Equal(t, Decision{Action: Retry, Wait: s, Local: Rejected}, d)
	assert.Equal(t, int32(1), q.Attempts, "a rejection counts as an attempt")
	_, d, ok = p.Begin(&sd, &q, 2*s, low)
	assert.False(t, ok)
	assert.Equal(t, Decision{Action: DeadLetter, Reason: ClientRejected, Local: Rejected}, d, "the last attempt allowed was rejected")
}

func TestPolicyRateLimiterWaits(t *testing.T) {
	// An AWS adaptive client after a throttle: an attempt without a
	// token waits for one and asks again; the wait uses no attempt and
	// no backoff step. A second waiter sleeps as long, as the SDKs'
	// waiters do: whoever asks first when the token is there takes it.
	p := &Policy{Backoff: Exponential{Base: s, Cap: 60 * s}, MaxAttempts: 3, Throttle: &Throttle{Kind: ThrottleAWSAdaptive}}
	var sd Sender
	r := rand.New(rand.NewPCG(1, 1))
	var q Request
	assert.Equal(t, Decision{Action: Retry, Wait: s}, attempt(p, &sd, &q, 0, fail(TooManyRequests), r))
	_, d, ok := p.Begin(&sd, &q, s, r)
	require.False(t, ok, "no token yet: the fill rate is 0.5/s")
	assert.Equal(t, RateWait, d.Local)
	assert.Equal(t, Retry, d.Action)
	assert.InDelta(t, 1, d.Wait.Seconds(), 0.01, "half a token came in the second since the throttle, at 0.5/s: half is missing")
	assert.Equal(t, int32(1), q.Attempts)
	assert.Equal(t, int32(1), q.Backoff.K, "the backoff did not move")
	var q2 Request
	_, d2, ok := p.Begin(&sd, &q2, s, r)
	require.False(t, ok)
	assert.Equal(t, d.Wait, d2.Wait, "a second waiter: the same half token missing, no line")
	_, _, ok = p.Begin(&sd, &q, s+d.Wait, r)
	assert.True(t, ok, "the first to ask again takes the token")
	_, d2, ok = p.Begin(&sd, &q2, s+d.Wait, r)
	require.False(t, ok, "the other finds it taken")
	assert.InDelta(t, 2, d2.Wait.Seconds(), 0.01, "and sleeps a whole token more at 0.5/s")
}

func TestPolicyPushback(t *testing.T) {
	p := &Policy{Backoff: Exponential{Base: s, Cap: 60 * s}, MaxAttempts: 6}
	r := rand.New(rand.NewPCG(1, 1))
	var sd Sender
	var q Request
	push := func(d time.Duration) Result {
		return Result{Outcome: ServerError, Pushback: d, HasPushback: true}
	}
	require.Equal(t, Decision{Action: Retry, Wait: s}, attempt(p, &sd, &q, 0, fail(ServerError), r))
	require.Equal(t, Decision{Action: Retry, Wait: 2 * s}, attempt(p, &sd, &q, s, fail(ServerError), r))
	assert.Equal(t, Decision{Action: Retry, Wait: 300 * time.Millisecond}, attempt(p, &sd, &q, 3*s, push(300*time.Millisecond), r),
		"a pushback is the wait")
	assert.Equal(t, Decision{Action: Retry, Wait: s}, attempt(p, &sd, &q, 4*s, fail(ServerError), r), "and restarts the backoff")
	assert.Equal(t, Decision{Action: DeadLetter, Reason: PushbackDenied}, attempt(p, &sd, &q, 5*s, push(-time.Millisecond), r),
		"a negative pushback: do not retry")

	ignore := *p
	ignore.IgnorePushback = true
	var q2 Request
	require.Equal(t, Decision{Action: Retry, Wait: s}, attempt(&ignore, &sd, &q2, 0, push(-1), r), "ignored")
	assert.Equal(t, Decision{Action: Retry, Wait: 2 * s}, attempt(&ignore, &sd, &q2, 0, push(10*s), r), "ignored")
}

// fixedSource is a rand source that always draws the same number (as in
// the external tests).
type fixedSource uint64

func (f fixedSource) Uint64() uint64 { return uint64(f) }

func TestPolicyThrottleBackoff(t *testing.T) {
	// The AWS SDKs' newer standard profile: 50 ms base, 1 s after a 429,
	// on one sequence (exponential here, to see the waits exactly).
	p := &Policy{Backoff: Exponential{Base: 50 * time.Millisecond, Cap: 20 * s}, ThrottleBackoff: Exponential{Base: s, Cap: 20 * s}, MaxAttempts: 5}
	var sd Sender
	var q Request
	r := rand.New(rand.NewPCG(1, 1))
	assert.Equal(t, 50*time.Millisecond, attempt(p, &sd, &q, 0, fail(ServerError), r).Wait)
	assert.Equal(t, 2*s, attempt(p, &sd, &q, 0, fail(TooManyRequests), r).Wait, "1 s x 2^1 after a throttle")
	assert.Equal(t, 200*time.Millisecond, attempt(p, &sd, &q, 0, fail(Timeout), r).Wait, "50 ms x 2^2 after a timeout")
}

func TestSenderExtFitsTheEstimate(t *testing.T) {
	// sim's estimate counts 640 bytes for what a sender keeps beside its
	// Sender (sim.senderExtBytes): its extension and a shared budget of
	// its own.
	assert.LessOrEqual(t, unsafe.Sizeof(senderExt{})+unsafe.Sizeof(SharedBudget{}), uintptr(640))
}

// TestPolicyReads checks Reads against the policies themselves: with the
// fields that Reads leaves out zeroed before every call, a request gets
// the same decisions, and its sender the same budget, as with every field
// kept; and dropping any field that Reads names changes them.
func TestPolicyReads(t *testing.T) {
	expo := Exponential{Base: s, Cap: 60 * s}
	tests := []struct {
		name string
		p    Policy
		want Fields
	}{
		{"full jitter", Policy{Backoff: FullJitter{Base: s, Cap: 60 * s}, MaxAttempts: 8}, 0},
		{"equal and proportional jitter", Policy{Backoff: EqualJitter{Base: s, Cap: 60 * s}, ThrottleBackoff: ProportionalJitter{Base: s, Cap: 60 * s, Factor: 0.5}}, 0},
		{"fixed, none", Policy{Backoff: Fixed{Delay: s}, ThrottleBackoff: None{}}, 0},
		{"max elapsed", Policy{Backoff: expo, MaxElapsed: 20 * s}, FieldFirst},
		{"decorrelated jitter", Policy{Backoff: DecorrelatedJitter{Base: s, Cap: 60 * s}}, FieldPrev},
		{"decorrelated jitter v2 after a 429", Policy{Backoff: expo, ThrottleBackoff: DecorrelatedJitterV2{Base: s, Cap: 60 * s}}, FieldPrev},
		{"quota", Policy{Backoff: expo, Budget: &Budget{Kind: BudgetQuota, Capacity: 50, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}}, FieldCost},
		{"everything", Policy{Backoff: DecorrelatedJitter{Base: s, Cap: 60 * s}, MaxElapsed: 30 * s,
			Budget: &Budget{Kind: BudgetQuota, Capacity: 50, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}}, FieldFirst | FieldPrev | FieldCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &tt.p
			require.Equal(t, tt.want, p.Reads())
			same := func(drop Fields) bool {
				run := func(drop Fields) []float64 {
					outcomes := rand.New(rand.NewPCG(7, 7))
					r := rand.New(rand.NewPCG(1, 1))
					var sd Sender
					var out []float64
					for req := range 20 {
						var q Request
						now := time.Duration(req+1) * 3 * s
						for range 10 {
							if drop&FieldFirst != 0 {
								q.First = 0
							}
							if drop&FieldPrev != 0 {
								q.Backoff.Prev = 0
							}
							if drop&FieldCost != 0 {
								q.Cost = 0
							}
							o := []Outcome{Success, Success, ServerError, Timeout, TooManyRequests}[outcomes.IntN(5)]
							d := attempt(p, &sd, &q, now, fail(o), r)
							out = append(out, float64(d.Action), float64(d.Reason), d.Wait.Seconds())
							if p.Budget != nil {
								out = append(out, p.Budget.Available(&sd.Budget))
							}
							if d.Action != Retry {
								break
							}
							now += d.Wait
						}
					}
					return out
				}
				return assert.ObjectsAreEqual(run(0), run(drop))
			}
			assert.True(t, same(^p.Reads()), "dropping the fields Reads leaves out changes the decisions")
			for _, f := range []Fields{FieldFirst, FieldPrev, FieldCost} {
				if p.Reads()&f != 0 {
					assert.False(t, same(f), "dropping field %d, which Reads names, changes nothing", f)
				}
			}
		})
	}
}
