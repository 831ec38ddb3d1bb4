package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// ThrottleKind says which client-side throttle a Throttle runs.
type ThrottleKind uint8

// The client-side throttles.
const (
	// ThrottleSRE is the client-side adaptive throttling of Google's SRE
	// book ("Handling Overload"): each client rejects an attempt locally
	// with probability max(0, (requests - K x accepts) / (requests + 1))
	// over a sliding window, where requests counts every attempt the
	// client meant to send, its local rejections included.
	ThrottleSRE ThrottleKind = iota
	// ThrottleFailsafe is failsafe-go's adaptive throttler (package
	// adaptivethrottler): the same rule with K = 1/SuccessThreshold,
	// requests counting only the attempts that were sent, and the
	// probability capped at MaxRejection.
	ThrottleFailsafe
	// ThrottleAWSAdaptive is the AWS SDKs' adaptive retry mode: a client
	// rate limiter (a token bucket refilled at a rate that CUBIC sets:
	// cut by Beta on a throttle, grown back along a cubic curve) in front
	// of every attempt. An attempt without a token waits for one.
	ThrottleAWSAdaptive
	numThrottleKinds
)

var throttleKindNames = [numThrottleKinds]string{"sre", "failsafe", "aws-adaptive"}

// String returns the kind's name as written in scenario files: sre,
// failsafe or aws-adaptive.
func (k ThrottleKind) String() string {
	if k < numThrottleKinds {
		return throttleKindNames[k]
	}
	return fmt.Sprintf("ThrottleKind(%d)", uint8(k))
}

// ParseThrottleKind returns the kind named s (see ThrottleKind.String).
func ParseThrottleKind(s string) (ThrottleKind, error) {
	for i, name := range throttleKindNames {
		if name == s {
			return ThrottleKind(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown throttle kind %q (want one of %s)", s, strings.Join(throttleKindNames[:], ", "))
}

// The AWS SDKs' adaptive rate limiter constants, as in aws-sdk-go-v2
// v1.48.0, aws/retry/adaptive_ratelimit.go (newAdaptiveRateLimit) and
// aws/retry/adaptive.go (DefaultRequestCost).
const (
	CubicBeta        = 0.7 // the rate is cut to Beta x the measured rate on a throttle
	CubicScale       = 0.4 // C of the cubic curve
	cubicSmooth      = 0.8 // the measured send rate's smoothing
	cubicMinFillRate = 0.5 // tokens a second, at least
	cubicRequestCost = 1   // tokens an attempt takes
)

// throttleSlices is the number of slices a throttle's sliding window is
// kept in: a count leaves the window a slice (Window/20) at a time, as in
// failsafe-go's timed stats.
const throttleSlices = 20

// Throttle is a client-side throttle: it stands before every attempt of a
// sender (first tries and retries alike) and may reject it locally
// (ThrottleSRE, ThrottleFailsafe) or make it wait (ThrottleAWSAdaptive).
// Each sender keeps one ThrottleState. A Throttle is not changed by its
// methods and is safe for concurrent use; a ThrottleState is not.
//
// Zero fields mean the defaults given below.
type Throttle struct {
	Kind ThrottleKind
	// K is ThrottleSRE's multiplier of accepts; 0 means 2. At least 1.
	K float64
	// SuccessThreshold is ThrottleFailsafe's success rate below which it
	// rejects; 0 means 0.9 (failsafe-go's default, a failure rate
	// threshold of 0.1). K is its inverse.
	SuccessThreshold float64
	// Window is the sliding window of the counts; 0 means 2 minutes for
	// ThrottleSRE (the SRE book's) and 1 minute for ThrottleFailsafe.
	Window time.Duration
	// MaxRejection caps the rejection probability; 0 means 1 for
	// ThrottleSRE and 0.9 for ThrottleFailsafe.
	MaxRejection float64
	// On is, for ThrottleAWSAdaptive, the outcomes that count as
	// throttles; 0 means a 429 alone (the SDKs' throttle error codes and
	// an unmodeled 429).
	On OutcomeSet
	// Beta is ThrottleAWSAdaptive's cut on a throttle, in (0, 1); 0
	// means the SDKs' CubicBeta.
	Beta float64
}

// ThrottleState is one sender's throttle: the sliding window's counts, or
// the CUBIC rate limiter. The zero value is a throttle that has seen
// nothing. It is not safe for concurrent use.
type ThrottleState struct {
	at     int64 // the index of the window's newest slice (time / slice width)
	counts [throttleSlices][2]int32
	cubic  cubicState
}

// cubicState is the AWS SDKs' adaptiveRateLimit, on the driver's clock.
type cubicState struct {
	started        bool
	enabled        bool // the token bucket limits attempts (after the first throttle)
	refilled       bool
	fillRate       float64 // tokens a second
	calculatedRate float64
	measuredRate   float64 // the smoothed send rate
	lastMaxRate    float64
	timeWindow     float64 // seconds from a throttle until the rate is lastMaxRate again
	tokens         float64
	capacity       float64
	requests       int64   // attempts in the measuring bucket so far
	lastBucket     float64 // the measuring bucket (half seconds), in seconds
	lastRefilled   time.Duration
	lastThrottle   time.Duration
}

// The counts of the sliding window.
const (
	countRequests = iota
	countAccepts
)

// Admit asks whether a sender may send an attempt at now. ok is true when
// it may. Otherwise a positive wait says how long to wait before asking
// again (ThrottleAWSAdaptive: no token yet), and a zero wait that the
// attempt is rejected locally (ThrottleSRE, ThrottleFailsafe).
//
// ThrottleAWSAdaptive follows the SDK's loop to the letter
// (aws-sdk-go-v2 v1.48.0 aws/retry/adaptive.go GetAttemptToken and
// adaptive_ratelimit.go AcquireToken; botocore's retries/bucket.py
// TokenBucket._acquire computes the same sleep): refill the bucket, take
// a token if one is there, else sleep (cost - tokens) / rate and ask
// again. Every waiter sleeps on its own, so several may wake for one
// token: the first to ask takes it, the others sleep again. The Go SDK's
// sleep is truncated to the nanosecond and its clock has moved on when
// it asks again; here the wait is rounded up, so that a waiter asks at
// the first nanosecond its token is there and never spins at one
// instant. (botocore also wakes one waiter early whenever the rate
// changes; the Go SDK does not, nor does herdlab.)
func (t *Throttle) Admit(s *ThrottleState, now time.Duration, r *rand.Rand) (wait time.Duration, ok bool) {
	switch t.Kind {
	case ThrottleSRE, ThrottleFailsafe:
		p := t.RejectionProbability(s, now)
		rejected := p > 0 && r.Float64() < p
		if t.Kind == ThrottleSRE || !rejected {
			s.add(countRequests)
		}
		return 0, !rejected
	case ThrottleAWSAdaptive:
		c := &s.cubic
		c.start(now)
		if !c.enabled {
			return 0, true
		}
		c.refill(now)
		if c.tokens >= cubicRequestCost {
			c.tokens -= cubicRequestCost
			return 0, true
		}
		secs := (cubicRequestCost - c.tokens) / c.fillRate
		return max(time.Duration(math.Ceil(secs*float64(time.Second))), 1), false
	}
	return 0, true
}

// Record updates the throttle after an attempt that Admit let through
// ended at now with outcome o. An accept is a success or a 4xx other
// than 429: an answer from a backend that was not overloaded.
func (t *Throttle) Record(s *ThrottleState, now time.Duration, o Outcome) {
	switch t.Kind {
	case ThrottleSRE, ThrottleFailsafe:
		s.advance(now, t.window())
		if o == Success || o == ClientError {
			s.add(countAccepts)
		}
	case ThrottleAWSAdaptive:
		on := t.On
		if on == 0 {
			on = Outcomes(TooManyRequests)
		}
		s.cubic.update(now, on.Has(o), def(t.Beta, CubicBeta))
	}
}

// RejectionProbability returns the probability that ThrottleSRE or
// ThrottleFailsafe rejects an attempt at now, from the window's counts.
func (t *Throttle) RejectionProbability(s *ThrottleState, now time.Duration) float64 {
	s.advance(now, t.window())
	requests, accepts := float64(s.sum(countRequests)), float64(s.sum(countAccepts))
	k, maxRejection := t.K, t.MaxRejection
	if t.Kind == ThrottleFailsafe {
		k = 1 / def(t.SuccessThreshold, 0.9)
		maxRejection = def(maxRejection, 0.9)
	}
	p := max(0, requests-def(k, 2)*accepts) / (requests + 1)
	return min(p, def(maxRejection, 1))
}

// Counts returns the requests and accepts in ThrottleSRE's or
// ThrottleFailsafe's window at now. It is meant for tests and metrics.
func (t *Throttle) Counts(s *ThrottleState, now time.Duration) (requests, accepts int64) {
	s.advance(now, t.window())
	return s.sum(countRequests), s.sum(countAccepts)
}

// Rate returns ThrottleAWSAdaptive's fill rate in attempts a second, and
// whether the rate limiter is on (after the first throttle). It is meant
// for tests and metrics.
func (t *Throttle) Rate(s *ThrottleState) (perSecond float64, on bool) {
	return s.cubic.fillRate, s.cubic.enabled
}

func (t *Throttle) window() time.Duration {
	switch {
	case t.Window > 0:
		return t.Window
	case t.Kind == ThrottleFailsafe:
		return time.Minute
	}
	return 2 * time.Minute
}

// def returns x, or d when x is 0.
func def(x, d float64) float64 {
	if x == 0 {
		return d
	}
	return x
}

// advance moves the window to now, emptying the slices that have left it.
func (s *ThrottleState) advance(now, window time.Duration) {
	width := max(window/throttleSlices, 1)
	at := int64(now / width)
	if at <= s.at {
		return
	}
	if at-s.at >= throttleSlices {
		s.counts = [throttleSlices][2]int32{}
	} else {
		for i := s.at + 1; i <= at; i++ {
			s.counts[i%throttleSlices] = [2]int32{}
		}
	}
	s.at = at
}

func (s *ThrottleState) add(count int) {
	c := &s.counts[s.at%throttleSlices][count]
	if *c < math.MaxInt32 {
		*c++
	}
}

func (s *ThrottleState) sum(count int) int64 {
	var n int64
	for i := range s.counts {
		n += int64(s.counts[i][count])
	}
	return n
}

// start sets the clock of a limiter that has seen nothing: the SDK's
// limiter starts measuring when its client is made.
func (c *cubicState) start(now time.Duration) {
	if c.started {
		return
	}
	c.started = true
	c.lastBucket = math.Floor(now.Seconds())
	c.lastThrottle = now
}

func (c *cubicState) refill(now time.Duration) {
	if !c.refilled {
		c.refilled = true
		c.lastRefilled = now
		return
	}
	c.tokens = min(c.tokens+(now-c.lastRefilled).Seconds()*c.fillRate, c.capacity)
	c.lastRefilled = now
}

// update is adaptiveRateLimit.Update: measure the send rate, then cut
// the rate on a throttle or grow it along the cubic curve.
func (c *cubicState) update(now time.Duration, throttled bool, beta float64) {
	c.start(now)
	bucket := math.Floor(now.Seconds()*2) / 2
	c.requests++
	if bucket > c.lastBucket {
		current := float64(c.requests) / (bucket - c.lastBucket)
		c.measuredRate = current*cubicSmooth + c.measuredRate*(1-cubicSmooth)
		c.requests = 0
		c.lastBucket = bucket
	}
	if throttled {
		rate := c.measuredRate
		if c.enabled {
			rate = min(rate, c.fillRate)
		}
		c.lastMaxRate = rate
		c.timeWindow = math.Cbrt(c.lastMaxRate * (1 - beta) / CubicScale)
		c.lastThrottle = now
		c.calculatedRate = rate * beta
		c.enabled = true
	} else {
		c.timeWindow = math.Cbrt(c.lastMaxRate * (1 - beta) / CubicScale)
		dt := (now - c.lastThrottle).Seconds()
		c.calculatedRate = CubicScale*math.Pow(dt-c.timeWindow, 3) + c.lastMaxRate
	}
	rate := min(c.calculatedRate, 2*c.measuredRate)
	c.refill(now)
	c.fillRate = max(rate, cubicMinFillRate)
	c.capacity = max(rate, 1)
	c.tokens = min(c.tokens, c.capacity)
}
