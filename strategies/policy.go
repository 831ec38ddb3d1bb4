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
	// Budget, when not nil, is the retry budget each sender keeps.
	Budget *Budget
	// ShortCircuitIsAttempt makes a request refused by an open breaker use
	// up one of its MaxAttempts. By default it does not.
	ShortCircuitIsAttempt bool
}

// Sender is the state one sender keeps across its requests: its breaker
// and its budget. The zero value is a closed breaker and a full budget. It
// is not safe for concurrent use.
type Sender struct {
	Breaker BreakerState
	Budget  BudgetState
}

// Request is one request's retry state. The zero value is a request that
// has made no attempt; replaying a dead letter starts from a zero Request.
// It is not safe for concurrent use.
type Request struct {
	// Attempts is the number of attempts made (breaker short-circuits
	// count only with ShortCircuitIsAttempt).
	Attempts int32
	cost     float32
	// First is the time of the first attempt.
	First   time.Duration
	Backoff BackoffState
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
	NoReason      Reason = iota // not dead-lettered
	NotRetryable                // the outcome is not in RetryOn (a 4xx, by default)
	MaxAttempts                 // MaxAttempts attempts were made
	MaxElapsed                  // the next retry would start after MaxElapsed
	BudgetDenied                // the retry budget denied the retry
	BreakerDenied               // a cumulative retry breaker denied the retry
	numReasons
)

var reasonNames = [numReasons]string{"", "not_retryable", "max_attempts", "max_elapsed", "budget", "breaker"}

// String returns the reason as written in output files: not_retryable,
// max_attempts, max_elapsed, budget or breaker.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Reasons lists every reason a request can be dead-lettered for, in a
// stable order for writers.
func Reasons() []Reason {
	return []Reason{NotRetryable, MaxAttempts, MaxElapsed, BudgetDenied, BreakerDenied}
}

// Decision is what a driver does next with a request.
type Decision struct {
	Action Action
	// Wait is how long to wait before the next try, for Retry.
	Wait time.Duration
	// Reason is why the request was given up, for DeadLetter.
	Reason Reason
}

// Begin asks whether request q of sender s may make an attempt at now.
//
// When ok is true the driver sends the attempt and later reports its
// result to Done with the returned Permit. When ok is false the sender's
// breaker is open (a RetriesOnly breaker never stops a first attempt): no attempt is made (it is a short-circuit), and the
// Decision says to wait for the next backoff delay, as if the attempt had
// failed at once, or to dead-letter the request.
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
			return permit, p.shortCircuit(s, q, now, r), false
		}
	}
	q.Attempts++
	return permit, Decision{}, true
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
// breaker and budget.
func (p *Policy) Done(s *Sender, q *Request, permit Permit, now time.Duration, res Result, r *rand.Rand) Decision {
	o := res.Outcome
	if p.Breaker != nil {
		if p.Breaker.Cumulative {
			p.Breaker.RecordCumulative(&s.Breaker, q.Attempts == 1, o)
		} else {
			p.Breaker.Record(&s.Breaker, now, permit, o, r)
		}
	}
	if p.Budget != nil {
		p.Budget.Record(&s.Budget, o, float64(q.cost))
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
	d := p.retryAfter(q, now, p.wait(q, res, r))
	if d.Action != Retry || p.Budget == nil {
		return d
	}
	cost, ok := p.Budget.Acquire(&s.Budget, o)
	if !ok {
		return Decision{Action: DeadLetter, Reason: BudgetDenied}
	}
	q.cost = float32(cost)
	return d
}

// wait returns the wait before the next retry after result res: the
// Retry-After hint or the backoff, as p.RetryAfter.Mode says. A hint that
// is honored does not advance the backoff sequence, so a later 5xx
// resumes the exponential sequence where it left off.
func (p *Policy) wait(q *Request, res Result, r *rand.Rand) time.Duration {
	if !res.HasRetryAfter || p.RetryAfter.Mode == RetryAfterIgnore {
		return p.backoff().Next(&q.Backoff, r)
	}
	hint := p.RetryAfter.Capped(res.RetryAfter)
	if p.RetryAfter.Mode == RetryAfterHonor {
		return hint
	}
	return max(hint, p.backoff().Next(&q.Backoff, r))
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
