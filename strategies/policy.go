package strategies

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy is a retry strategy: how long to wait between attempts, when to
// give up, what to retry, and the optional breaker and budget. A Policy is
// immutable once built and safe for concurrent use; it is shared by every
// sender of a strategy. The zero value retries every retryable failure at
// once, forever.
type Policy struct {
	// Backoff computes the wait before each retry; nil means None.
	Backoff Backoff
	// ThrottleBackoff, when not nil, computes the wait before a retry
	// after a 429 instead, on the same sequence (the AWS SDKs' newer
	// standard profile waits from a 1 s base after a throttle, 50 ms
	// otherwise: aws-sdk-go-v2 v1.48.0 aws/retry/jitter_backoff.go).
	ThrottleBackoff Backoff
	// MaxAttempts bounds the attempts of one request, counting the first;
	// 0 means unlimited.
	MaxAttempts int
	// MaxElapsed bounds the time from a request's first attempt to its
	// last: a retry that would start later is not made. 0 means unlimited.
	MaxElapsed time.Duration
	// Timeout is how long the sender waits for an answer to one attempt
	// before counting it a Timeout; 0 means it waits forever. Policy does
	// not enforce it: the driver does.
	Timeout time.Duration
	// RetryOn is the set of outcomes that are retried; 0 means
	// DefaultRetryOn.
	RetryOn OutcomeSet
	// RetryAfter says how Retry-After hints are used.
	RetryAfter RetryAfter
	// Breaker, when not nil, is the circuit breaker each sender keeps.
	Breaker *Breaker
	// Budget, when not nil, is the retry budget each sender keeps (or
	// its group, for a shared budget: see Groups).
	Budget *Budget
	// Throttle, when not nil, is the client-side throttle each sender
	// keeps in front of its attempts.
	Throttle *Throttle
	// Hedge, when not nil, sends hedged copies of an attempt that has no
	// answer yet (see Hedge). The driver sends them: the policy says when
	// (HedgeDelay) and whether the budget allows one (AllowHedge).
	Hedge *Hedge
	// IgnorePushback makes the policy ignore gRPC's pushback hint
	// (grpc-retry-pushback-ms). By default it is honored: a hint of 0 or
	// more is the wait before the next retry, and restarts the backoff
	// sequence; a negative hint means do not retry.
	IgnorePushback bool
	// ShortCircuitIsAttempt makes a request refused by an open breaker use
	// up one of its MaxAttempts. By default it does not.
	ShortCircuitIsAttempt bool
}

// Sender is the state one sender keeps across its requests: its breaker,
// its budget, its throttle. The zero value is a closed breaker, a full
// budget and a throttle that has seen nothing. It is not safe for
// concurrent use.
type Sender struct {
	Breaker BreakerState
	Budget  BudgetState
	// ext holds what only some policies need, made at first use, so that
	// a Sender stays 64 bytes.
	ext *senderExt
}

// senderExt is the part of a Sender that only some policies need: the
// budget it holds with its group (Groups.Join), or its own, and its
// throttle.
type senderExt struct {
	shared   *SharedBudget
	throttle ThrottleState
	latency  psquare // its successful attempts' latencies, for a percentile hedge delay
}

func (s *Sender) extended() *senderExt {
	if s.ext == nil {
		s.ext = new(senderExt)
	}
	return s.ext
}

// Shared returns the shared budget the sender holds (made if it has
// none).
func (s *Sender) Shared() *SharedBudget {
	x := s.extended()
	if x.shared == nil {
		x.shared = new(SharedBudget)
	}
	return x.shared
}

// Throttle returns the sender's throttle state (made if it has none).
func (s *Sender) Throttle() *ThrottleState {
	return &s.extended().throttle
}

// PerSender reports whether the policy keeps state per sender (a
// breaker, a budget, a throttle, or a percentile hedge delay's
// estimate): a driver may pass a nil Sender to Begin, Done and the hedge
// methods only when it does not.
func (p *Policy) PerSender() bool {
	return p.Breaker != nil || p.Budget != nil || p.Throttle != nil || (p.Hedge != nil && p.Hedge.Percentile > 0)
}

// Request is one request's retry state. The zero value is a request that
// has made no attempt; replaying a dead letter starts from a zero Request.
// It is not safe for concurrent use.
type Request struct {
	// Attempts is the number of attempts made (breaker short-circuits
	// count only with ShortCircuitIsAttempt).
	Attempts int32
	// Cost is what the retry budget charged for the attempt in flight,
	// refunded or recorded when it ends. The policy sets it; a driver
	// only keeps it.
	Cost float32
	// First is the time of the first attempt.
	First   time.Duration
	Backoff BackoffState
}

// Fields is a set of a Request's fields.
type Fields uint8

// The fields of a Request that only some policies read (see Reads).
const (
	FieldFirst Fields = 1 << iota // First, read with MaxElapsed
	FieldPrev                     // Backoff.Prev, read by the decorrelated backoffs
	FieldCost                     // Cost, read with a Budget
)

// Reads returns the fields of a Request, beyond Attempts and Backoff.K,
// that the policy reads back after setting them. A driver holding
// millions of requests may keep only these, passing the others as zero
// (and dropping what the policy writes to them): herdlab's simulator
// does.
func (p *Policy) Reads() Fields {
	var f Fields
	if p.MaxElapsed > 0 {
		f |= FieldFirst
	}
	if remembers(p.Backoff) || remembers(p.ThrottleBackoff) {
		f |= FieldPrev
	}
	if p.Budget != nil {
		f |= FieldCost
	}
	return f
}

// remembers reports whether backoff b reads BackoffState.Prev: any kind
// but those known not to.
func remembers(b Backoff) bool {
	switch b.(type) {
	case nil, None, Fixed, Exponential, FullJitter, EqualJitter, ProportionalJitter, EnvoyJitter:
		return false
	}
	return true
}

// Action is what a driver does with a request after a decision.
type Action uint8

// The actions of a Decision.
const (
	Deliver    Action = iota // the request succeeded
	Retry                    // wait Decision.Wait, then try again
	DeadLetter               // give up: send the request to the dead-letter queue
)

var actionNames = [...]string{"deliver", "retry", "dead-letter"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Reason says why a request was dead-lettered.
type Reason uint8

// The reasons for giving up on a request.
const (
	NoReason       Reason = iota // not dead-lettered
	NotRetryable                 // the outcome is not in RetryOn (a 4xx, by default)
	MaxAttempts                  // MaxAttempts attempts were made
	MaxElapsed                   // the next retry would start after MaxElapsed
	BudgetDenied                 // the retry budget denied the retry
	BreakerDenied                // a cumulative retry breaker denied the retry
	ClientRejected               // the throttle rejected the last attempt locally, and it was the last allowed
	PushbackDenied               // the server's pushback said not to retry
	numReasons
)

var reasonNames = [numReasons]string{"", "not_retryable", "max_attempts", "max_elapsed", "budget", "breaker", "client_rejected", "pushback"}

// String returns the reason as written in output files: not_retryable,
// max_attempts, max_elapsed, budget, breaker, client_rejected or
// pushback.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Reasons lists every reason a request can be dead-lettered for, in a
// stable order for writers.
func Reasons() []Reason {
	return []Reason{NotRetryable, MaxAttempts, MaxElapsed, BudgetDenied, BreakerDenied, ClientRejected, PushbackDenied}
}

// Local says why Begin made no attempt.
type Local uint8

// The reasons Begin makes no attempt.
const (
	NotLocal     Local = iota // an attempt was made
	ShortCircuit              // the breaker is open
	Rejected                  // the throttle rejected the attempt locally: it counts as one
	RateWait                  // the client's rate limiter has no token: ask again after Decision.Wait (no attempt is used)
)

// Decision is what a driver does next with a request.
type Decision struct {
	Action Action
	// Wait is how long to wait before the next try, for Retry.
	Wait time.Duration
	// Reason is why the request was given up, for DeadLetter.
	Reason Reason
	// Local says, when Begin made no attempt, why.
	Local Local
}

// Begin asks whether request q of sender s may make an attempt at now.
//
// When ok is true the driver sends the attempt and later reports its
// result to Done with the returned Permit. When ok is false no attempt
// goes, and Decision.Local says why: the sender's breaker is open
// (ShortCircuit; a RetriesOnly breaker never stops a first attempt), its
// throttle rejected the attempt (Rejected, which counts as an attempt),
// or its rate limiter has no token yet (RateWait: ask again after
// Decision.Wait; neither an attempt nor a backoff step is used). For the
// first two the Decision says to wait for the next backoff delay, as if
// the attempt had failed at once, or to dead-letter the request.
func (p *Policy) Begin(s *Sender, q *Request, now time.Duration, r *rand.Rand) (Permit, Decision, bool) {
	if q.Attempts == 0 && q.Backoff.K == 0 {
		q.First = now
	}
	var permit Permit
	switch {
	case p.Breaker == nil:
	case p.Breaker.RetriesOnly && q.Attempts == 0:
		permit = p.Breaker.Observe(&s.Breaker)
	default:
		var ok bool
		if permit, ok = p.Breaker.Allow(&s.Breaker, now); !ok {
			d := p.shortCircuit(s, q, now, r)
			d.Local = ShortCircuit
			return permit, d, false
		}
	}
	if t := p.Throttle; t != nil {
		wait, ok := t.Admit(s.Throttle(), now, r)
		switch {
		case ok:
		case wait > 0:
			p.Breaker.Forget(&s.Breaker, permit)
			return Permit{}, Decision{Action: Retry, Wait: wait, Local: RateWait}, false
		default:
			p.Breaker.Forget(&s.Breaker, permit)
			d := p.rejected(q, now, r)
			d.Local = Rejected
			return Permit{}, d, false
		}
	}
	if b := p.Budget; b.Shared() {
		b.Start(s.Shared(), now, q.Attempts == 0)
	}
	q.Attempts++
	return permit, Decision{}, true
}

// rejected decides about a request whose attempt the throttle rejected:
// the attempt counts, and the request waits its backoff delay, as after a
// failure (the budget is not asked: nothing reached the server).
func (p *Policy) rejected(q *Request, now time.Duration, r *rand.Rand) Decision {
	q.Attempts++
	if p.MaxAttempts > 0 && int(q.Attempts) >= p.MaxAttempts {
		return Decision{Action: DeadLetter, Reason: ClientRejected}
	}
	return p.retryAfter(q, now, p.backoff().Next(&q.Backoff, r))
}

// Cancel tells the policy that the driver abandoned request q: its
// attempt in flight, if inFlight, will not be reported to Done, and it
// will make no more. A shared budget stops counting it.
func (p *Policy) Cancel(s *Sender, q *Request, inFlight bool) {
	b := p.Budget
	if !b.Shared() {
		return
	}
	if inFlight {
		b.End(s.Shared(), float64(q.Cost))
	} else if q.Cost > 0 && b.Kind == BudgetEnvoy {
		s.Shared().retries = max(s.Shared().retries-1, 0)
	}
	q.Cost = 0
}

// shortCircuit decides about a request that the breaker refused: it
// waits its backoff delay. A request whose backoff says to retry at once
// (None) would spin against the breaker, so it waits instead until the
// breaker turns half-open, or, when the breaker is half-open with its
// canaries out, one attempt timeout (1s without one).
func (p *Policy) shortCircuit(s *Sender, q *Request, now time.Duration, r *rand.Rand) Decision {
	if p.ShortCircuitIsAttempt {
		q.Attempts++
		if p.MaxAttempts > 0 && int(q.Attempts) >= p.MaxAttempts {
			return Decision{Action: DeadLetter, Reason: MaxAttempts}
		}
	}
	wait := p.backoff().Next(&q.Backoff, r)
	if wait == 0 {
		if until, open := p.Breaker.OpenUntil(&s.Breaker, now); open {
			wait = until - now
		} else if wait = p.Timeout; wait == 0 {
			wait = time.Second
		}
	}
	return p.retryAfter(q, now, wait)
}

// Done reports the result of the attempt that Begin permitted, received at
// now, and decides what happens to the request. It updates the sender's
// breaker and budget. It reads res and keeps nothing of it. (res is a
// pointer: a Result by value, 40 bytes, went through the stack, and
// copying the one just built stalled on its stores, as the 16-byte loads
// of the copy could not take their bytes from them: 4% of the CPU of a
// simulation of thundering-herd.yaml.)
func (p *Policy) Done(s *Sender, q *Request, permit Permit, now time.Duration, res *Result, r *rand.Rand) Decision {
	o := res.Outcome
	if p.Breaker != nil {
		if p.Breaker.Cumulative {
			p.Breaker.RecordCumulative(&s.Breaker, q.Attempts == 1, o)
		} else {
			p.Breaker.Record(&s.Breaker, now, permit, o, r)
		}
	}
	if p.Throttle != nil {
		p.Throttle.Record(s.Throttle(), now, o)
	}
	if b := p.Budget; b.Shared() {
		b.End(s.Shared(), float64(q.Cost))
		q.Cost = 0
	} else if b != nil {
		b.Record(&s.Budget, o, float64(q.Cost))
	}
	if o == Success {
		return Decision{Action: Deliver}
	}
	if !p.retryOn().Has(o) {
		return Decision{Action: DeadLetter, Reason: NotRetryable}
	}
	if p.MaxAttempts > 0 && int(q.Attempts) >= p.MaxAttempts {
		return Decision{Action: DeadLetter, Reason: MaxAttempts}
	}
	if p.Breaker != nil && p.Breaker.Cumulative && !p.Breaker.RetryAllowed(&s.Breaker) {
		return Decision{Action: DeadLetter, Reason: BreakerDenied}
	}
	if res.HasPushback && !p.IgnorePushback && res.Pushback < 0 {
		return Decision{Action: DeadLetter, Reason: PushbackDenied}
	}
	d := p.retryAfter(q, now, p.wait(q, res, r))
	if d.Action != Retry || p.Budget == nil {
		return d
	}
	var cost float64
	var ok bool
	if p.Budget.Shared() {
		cost, ok = p.Budget.AcquireShared(s.Shared(), now)
	} else {
		cost, ok = p.Budget.Acquire(&s.Budget, o)
	}
	if !ok {
		return Decision{Action: DeadLetter, Reason: BudgetDenied}
	}
	q.Cost = float32(cost)
	return d
}

// wait returns the wait before the next retry after result res: the
// Retry-After hint or the backoff, as p.RetryAfter.Mode says. A hint that
// is honored does not advance the backoff sequence, so a later 5xx
// resumes the exponential sequence where it left off.
func (p *Policy) wait(q *Request, res *Result, r *rand.Rand) time.Duration {
	if res.HasPushback && !p.IgnorePushback {
		q.Backoff = BackoffState{}
		return res.Pushback
	}
	b := p.backoff()
	if res.Outcome == TooManyRequests && p.ThrottleBackoff != nil {
		b = p.ThrottleBackoff
	}
	if !res.HasRetryAfter || p.RetryAfter.Mode == RetryAfterIgnore {
		return b.Next(&q.Backoff, r)
	}
	hint := p.RetryAfter.Capped(res.RetryAfter)
	if p.RetryAfter.Mode == RetryAfterHonor {
		return hint
	}
	return max(hint, b.Next(&q.Backoff, r))
}

// retryAfter returns a decision to retry after wait, unless the retry
// would start after MaxElapsed.
func (p *Policy) retryAfter(q *Request, now, wait time.Duration) Decision {
	if p.MaxElapsed > 0 && now+wait-q.First > p.MaxElapsed {
		return Decision{Action: DeadLetter, Reason: MaxElapsed}
	}
	return Decision{Action: Retry, Wait: wait}
}

func (p *Policy) backoff() Backoff {
	if p.Backoff == nil {
		return None{}
	}
	return p.Backoff
}

func (p *Policy) retryOn() OutcomeSet {
	if p.RetryOn == 0 {
		return DefaultRetryOn
	}
	return p.RetryOn
}
