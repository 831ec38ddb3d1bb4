package strategies

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrBreakerOpen is the error a driver reports for an attempt that a
// circuit breaker refused (Allow returned false): the request was failed
// internally, without a network call. Check it with errors.Is.
var ErrBreakerOpen = errors.New("strategies: circuit open")

// Breaker is a circuit breaker policy: when to trip, how long to stay open
// and how to probe for recovery. Each sender keeps one BreakerState per
// destination; a million senders share one Breaker.
//
// A breaker is closed at first and lets every attempt through. It trips
// (turns open) when either rule fires:
//
//   - the consecutive rule: Consecutive failures in a row, the run lasting
//     no longer than Window;
//   - the ratio rule: failures/calls >= FailureRatio over the sliding
//     Window, once at least MinCalls calls fell in it.
//
// An open breaker refuses every attempt for OpenFor (jittered by
// OpenJitter), then turns half-open: it lets Canaries attempts through and
// refuses the rest. The first canary to answer decides: a success closes
// the breaker and resets all counts, a failure opens it again for a fresh
// jittered OpenFor.
//
// The zero Breaker never trips: both rules are off. A Breaker is not
// changed by its methods and is safe for concurrent use; a BreakerState is
// not.
type Breaker struct {
	// Consecutive trips the breaker after this many consecutive failures;
	// 0 turns the consecutive rule off.
	Consecutive int
	// FailureRatio trips the breaker when failures/calls over Window is
	// at least FailureRatio (in (0,1]), once at least MinCalls calls fell
	// in the window; 0 turns the ratio rule off.
	FailureRatio float64
	// Window is, for the ratio rule, the length of the sliding window
	// (the rule is off when Window is 0). It is kept in 10 buckets of
	// Window/10 each, like Hystrix's rolling window, so a call counts for
	// between 0.9*Window and Window after it is recorded: calls leave the
	// window a whole bucket at a time.
	//
	// For the consecutive rule, a run of consecutive failures counts only
	// while it lasts no longer than Window: a failure more than Window
	// after the run's first failure starts a new run of 1. 0 means no
	// limit for the consecutive rule.
	Window time.Duration
	// MinCalls is the number of calls the window must hold before the
	// ratio rule may fire; 0 means 1.
	MinCalls int
	// OpenFor is how long the breaker stays open before it turns
	// half-open (before jitter).
	OpenFor time.Duration
	// OpenJitter spreads the open duration so that a fleet's breakers,
	// tripped by the same outage, do not probe in lockstep: each open
	// period lasts OpenFor * (1 - OpenJitter + 2*OpenJitter*u) with u
	// uniform in [0,1), that is OpenFor * U(1-OpenJitter, 1+OpenJitter).
	// It is in [0,1); 0 means every open period lasts exactly OpenFor.
	OpenJitter float64
	// Canaries is how many attempts a half-open breaker lets through at
	// once; 0 means 1.
	Canaries int
	// Failures is the set of outcomes counted as failures; every other
	// outcome counts as a success. 0 means DefaultBreakerFailures, where
	// a 429 or another 4xx is a success: the server is alive.
	Failures OutcomeSet
	// RetriesOnly makes a retry circuit breaker: it stops retries only.
	// A request's first attempt always goes, and while the breaker is
	// closed its outcome is counted like any other (see Observe).
	RetriesOnly bool
	// Cumulative makes Marc Brooker's retry breaker ("Fixing retries with
	// token buckets and circuit breakers", 2022) instead: it counts, since
	// the start, the sender's failed attempts and its first tries, and
	// allows a retry only while failures/first tries is at most
	// FailureRatio. It has no open state and is never reset: Allow always
	// permits, and a retry it denies is not made (see RetryAllowed).
	// Consecutive, Window, MinCalls, OpenFor, OpenJitter, Canaries and
	// RetriesOnly do not apply.
	Cumulative bool
}

// BreakerStatus is the state a circuit breaker is in.
type BreakerStatus uint8

// The states of a circuit breaker.
const (
	BreakerClosed   BreakerStatus = iota // every attempt goes through; outcomes are counted
	BreakerOpen                          // every attempt is refused until the open period ends
	BreakerHalfOpen                      // a few canary attempts probe the destination
)

var breakerStatusNames = [...]string{"closed", "open", "half-open"}

// String returns closed, open or half-open.
func (s BreakerStatus) String() string {
	if int(s) < len(breakerStatusNames) {
		return breakerStatusNames[s]
	}
	return fmt.Sprintf("BreakerStatus(%d)", uint8(s))
}

// BreakerState is the state of one circuit breaker: one sender's view of
// one destination. The zero value is a closed breaker with no calls
// counted. It is 48 bytes on 64-bit platforms; the ratio rule's window
// (10 buckets, 160 bytes) is allocated on the first recorded outcome, and
// only when the policy's FailureRatio is set.
//
// A BreakerState is not safe for concurrent use. Use it with one Breaker
// policy only.
type BreakerState struct {
	// until is when an open breaker turns half-open.
	until time.Duration
	// runStart is the time of the first failure of the current run.
	runStart time.Duration
	// window counts calls and failures for the ratio rule; nil until
	// needed.
	window *breakerWindow
	// gen counts transitions; a Permit from an older generation is
	// ignored. It wraps after 2^32 transitions.
	gen uint32
	// run is the length of the current run of consecutive failures.
	run uint32
	// canaries is the number of canaries let through while half-open.
	canaries uint32
	status   BreakerStatus
	// firsts and fails are a cumulative breaker's counts: first tries
	// and failed attempts since the start.
	firsts, fails uint32
}

// Permit is what Allow grants an attempt: whether it is a canary of a
// half-open breaker, and the breaker generation it was issued in. Record
// ignores a Permit from an older generation, so the answer to an attempt
// sent before a transition (say, while closed, answered after the trip)
// neither closes nor reopens the breaker. The zero Permit is no permit:
// Record ignores it.
type Permit struct {
	gen    uint32
	canary bool
	valid  bool
}

// Canary reports whether the permitted attempt is a canary of a half-open
// breaker: its outcome closes or reopens the breaker.
func (p Permit) Canary() bool { return p.canary }

// breakerBuckets is the number of buckets of the ratio rule's sliding
// window.
const breakerBuckets = 10

// breakerBucket counts the calls recorded during one bucket-width
// interval of time.
type breakerBucket struct {
	epoch    int64 // the interval: now / bucket width
	calls    uint32
	failures uint32
}

type breakerWindow [breakerBuckets]breakerBucket

// Allow asks whether an attempt may be sent at now. When ok is true the
// driver sends the attempt and passes the Permit to Record with its
// outcome; every permit must be recorded, since an unrecorded canary
// keeps a half-open breaker waiting. When ok is false the breaker is open,
// or half-open with all its canaries in flight, and the attempt must not
// be sent (see ErrBreakerOpen).
//
// An open breaker whose open period has ended (now >= the end) turns
// half-open here.
func (b *Breaker) Allow(s *BreakerState, now time.Duration) (Permit, bool) {
	if b.Cumulative {
		return Permit{}, true
	}
	switch s.status {
	case BreakerClosed:
		return Permit{gen: s.gen, valid: true}, true
	case BreakerOpen:
		if now < s.until {
			return Permit{}, false
		}
		s.transition(BreakerHalfOpen)
	}
	if int64(s.canaries) >= int64(b.canaries()) {
		return Permit{}, false
	}
	s.canaries++
	return Permit{gen: s.gen, canary: true, valid: true}, true
}

// Record reports the outcome o, received at now, of the attempt that
// Allow permitted with p. A closed breaker counts it and may trip; the
// first canary to answer closes a half-open breaker (when o is not in
// Failures) or opens it again. A permit from before the breaker's last
// transition is ignored.
//
// r draws the jitter of the open period when the breaker trips; it is
// used only when OpenJitter > 0 and may be nil otherwise.
func (b *Breaker) Record(s *BreakerState, now time.Duration, p Permit, o Outcome, r *rand.Rand) {
	if b.Cumulative {
		return // see RecordCumulative
	}
	if !p.valid || p.gen != s.gen {
		return
	}
	failed := b.failures().Has(o)
	switch s.status {
	case BreakerClosed:
		if b.count(s, now, failed) {
			b.trip(s, now, r)
		}
	case BreakerHalfOpen:
		if failed {
			b.trip(s, now, r)
		} else {
			s.transition(BreakerClosed)
		}
	}
	// An open breaker issues no permits, so none of its generation can
	// arrive here.
}

// Status returns the state of the breaker at now: an open breaker whose
// open period has ended is reported half-open. Status does not change s.
func (b *Breaker) Status(s *BreakerState, now time.Duration) BreakerStatus {
	if s.status == BreakerOpen && now >= s.until {
		return BreakerHalfOpen
	}
	return s.status
}

// Forget gives back permit p of an attempt that was not sent after all
// (a throttle stopped it): a canary frees its place. b may be nil.
func (b *Breaker) Forget(s *BreakerState, p Permit) {
	if b == nil || !p.valid || !p.canary || p.gen != s.gen || s.canaries == 0 {
		return
	}
	s.canaries--
}

// Observe returns the permit of an attempt that the breaker does not
// gate (a first attempt through a RetriesOnly breaker): one whose outcome
// Record counts while the breaker is closed, and ignores otherwise.
// Observe never changes s.
func (b *Breaker) Observe(s *BreakerState) Permit {
	if s.status == BreakerClosed {
		return Permit{gen: s.gen, valid: true}
	}
	return Permit{}
}

// OpenUntil returns when an open breaker turns half-open, and false when
// the breaker is not open at now.
func (b *Breaker) OpenUntil(s *BreakerState, now time.Duration) (time.Duration, bool) {
	if s.status == BreakerOpen && now < s.until {
		return s.until, true
	}
	return 0, false
}

// count records one outcome of a closed breaker and reports whether a
// rule fires.
func (b *Breaker) count(s *BreakerState, now time.Duration, failed bool) bool {
	trip := false
	if b.Consecutive > 0 {
		switch {
		case !failed:
			s.run = 0
		case s.run == 0 || (b.Window > 0 && now-s.runStart > b.Window):
			s.run, s.runStart = 1, now
		default:
			s.run++
		}
		trip = int64(s.run) >= int64(b.Consecutive)
	}
	if b.FailureRatio > 0 && b.Window > 0 {
		if s.window == nil {
			s.window = new(breakerWindow)
		}
		calls, failures := s.window.add(now, max(b.Window/breakerBuckets, 1), failed)
		if calls >= max(b.MinCalls, 1) && float64(failures)/float64(calls) >= b.FailureRatio {
			trip = true
		}
	}
	return trip
}

// trip opens the breaker at now for a jittered OpenFor.
func (b *Breaker) trip(s *BreakerState, now time.Duration, r *rand.Rand) {
	s.transition(BreakerOpen)
	u := 0.5
	if b.OpenJitter > 0 {
		u = r.Float64()
	}
	s.until = now + b.openDuration(u)
}

// openDuration returns the length of an open period for the sample u in
// [0,1): OpenFor * (1 - OpenJitter + 2*OpenJitter*u).
func (b *Breaker) openDuration(u float64) time.Duration {
	if b.OpenJitter == 0 {
		return b.OpenFor
	}
	return time.Duration(float64(b.OpenFor) * (1 - b.OpenJitter + 2*b.OpenJitter*u))
}

func (b *Breaker) canaries() int {
	if b.Canaries <= 0 {
		return 1
	}
	return b.Canaries
}

func (b *Breaker) failures() OutcomeSet {
	if b.Failures == 0 {
		return DefaultBreakerFailures
	}
	return b.Failures
}

// transition moves the breaker to status to, starts a new generation and
// resets every count. The window's buckets are kept, cleared, for reuse.
func (s *BreakerState) transition(to BreakerStatus) {
	s.status = to
	s.gen++
	s.run, s.runStart, s.canaries, s.until = 0, 0, 0, 0
	if s.window != nil {
		*s.window = breakerWindow{}
	}
}

// add counts one call at now, a failure or not, and returns the calls and
// failures that fall in the window: the bucket of now and the 9 before it.
// now must not decrease between calls.
func (w *breakerWindow) add(now, width time.Duration, failed bool) (calls, failures int) {
	epoch := int64(now / width)
	i := epoch % breakerBuckets
	if i < 0 {
		i += breakerBuckets
	}
	b := &w[i]
	if b.epoch != epoch {
		*b = breakerBucket{epoch: epoch}
	}
	b.calls++
	if failed {
		b.failures++
	}
	for _, b := range w {
		if b.epoch > epoch-breakerBuckets && b.epoch <= epoch {
			calls += int(b.calls)
			failures += int(b.failures)
		}
	}
	return calls, failures
}

// RecordCumulative counts, for a Cumulative breaker, an attempt that
// ended with outcome o: a first try (first) and a failure.
func (b *Breaker) RecordCumulative(s *BreakerState, first bool, o Outcome) {
	if first && s.firsts < math.MaxUint32 {
		s.firsts++
	}
	if b.failures().Has(o) && s.fails < math.MaxUint32 {
		s.fails++
	}
}

// RetryAllowed reports whether a Cumulative breaker lets a retry go now:
// while failures/first tries since the start is at most FailureRatio
// (with no first try yet, it is not).
func (b *Breaker) RetryAllowed(s *BreakerState) bool {
	return s.firsts > 0 && float64(s.fails) <= b.FailureRatio*float64(s.firsts)
}
