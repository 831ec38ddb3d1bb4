package strategies

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff computes the wait before each retry of a request.
//
// k counts retries and starts at 0 for the first retry. Every kind is
// capped, so no formula can park a request for days. Each kind also has a
// pure method over a uniform sample u in [0, 1), so tests can pin the
// formula without a generator.
type Backoff interface {
	// Next returns the wait before the next retry of the request whose
	// backoff memory is s, and advances s. It draws from r only when the
	// kind is random.
	Next(s *BackoffState, r *rand.Rand) time.Duration
}

// BackoffState is one request's memory of its backoff sequence. The zero
// value is the state before the first retry.
type BackoffState struct {
	// K is the number of waits computed so far: the k of the next retry.
	K int32
	// Prev is what the next step remembers: the previous wait in seconds
	// for DecorrelatedJitter, the previous formula value for
	// DecorrelatedJitterV2, unused otherwise.
	Prev float64
}

// Compile-time checks that every kind is a Backoff.
var (
	_ Backoff = None{}
	_ Backoff = Fixed{}
	_ Backoff = Exponential{}
	_ Backoff = FullJitter{}
	_ Backoff = EqualJitter{}
	_ Backoff = DecorrelatedJitter{}
	_ Backoff = ProportionalJitter{}
	_ Backoff = DecorrelatedJitterV2{}
	_ Backoff = EnvoyJitter{}
)

// DefaultMultiplier is the growth factor of the exponential kinds when
// their Multiplier is zero.
const DefaultMultiplier = 2.0

// None retries immediately: a wait of 0. It has no fields.
type None struct{}

// Next returns 0.
func (None) Next(s *BackoffState, _ *rand.Rand) time.Duration {
	s.K++
	return 0
}

// Fixed waits the same Delay before every retry: d. The zero value retries
// at once. This is the article's anti-pattern: it preserves a spike's
// shape and shifts it forward in time intact.
type Fixed struct {
	Delay time.Duration
}

// Next returns f.Delay.
func (f Fixed) Next(s *BackoffState, _ *rand.Rand) time.Duration {
	s.K++
	return f.Delay
}

// Exponential waits min(Cap, Base * Multiplier^k): with Base 1s, 1s, 2s,
// 4s, 8s, ... up to Cap. A zero Multiplier means DefaultMultiplier (2); a
// zero Cap means no cap other than the largest time.Duration, which
// scenario files never allow.
type Exponential struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// At returns min(Cap, Base * Multiplier^k) for retry k.
func (e Exponential) At(k int) time.Duration {
	return expo(e.Base, e.Cap, e.Multiplier, k)
}

// Next returns e.At(s.K).
func (e Exponential) Next(s *BackoffState, _ *rand.Rand) time.Duration {
	d := e.At(int(s.K))
	s.K++
	return d
}

// FullJitter waits U(0, min(Cap, Base * Multiplier^k)): the capped
// exponential delay t, then a uniform draw over the whole of [0, t). It
// spreads a synchronised fleet over the widest window, at the price of
// occasional very short waits. Zero Multiplier means 2; zero Cap, no cap.
type FullJitter struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// At returns u * min(Cap, Base * Multiplier^k) for a sample u in [0, 1).
func (j FullJitter) At(k int, u float64) time.Duration {
	return scale(expo(j.Base, j.Cap, j.Multiplier, k), u)
}

// Next draws u from r and returns j.At(s.K, u).
func (j FullJitter) Next(s *BackoffState, r *rand.Rand) time.Duration {
	d := j.At(int(s.K), r.Float64())
	s.K++
	return d
}

// EnvoyJitter waits U(0, min(Cap, Base * (2^(k+1) - 1))): Envoy's
// "fully jittered exponential back-off" of retries (route
// retry_back_off, source/common/common/backoff_strategy.cc,
// JitteredExponentialBackOffStrategy, Envoy v1.32): the draw ranges
// grow 1, 3, 7, 15 ... times the base interval, not 1, 2, 4, 8. Zero
// Cap means no cap.
type EnvoyJitter struct {
	Base time.Duration
	Cap  time.Duration
}

// At returns u * min(Cap, Base * (2^(k+1) - 1)) for a sample u in [0, 1).
func (j EnvoyJitter) At(k int, u float64) time.Duration {
	return scale(capped(float64(j.Base)*(math.Ldexp(1, k+1)-1), j.Cap), u)
}

// Next draws u from r and returns j.At(s.K, u).
func (j EnvoyJitter) Next(s *BackoffState, r *rand.Rand) time.Duration {
	d := j.At(int(s.K), r.Float64())
	s.K++
	return d
}

// EqualJitter waits t/2 + U(0, t/2) with t = min(Cap, Base * Multiplier^k):
// at least half the exponential delay, the other half random. Zero
// Multiplier means 2; zero Cap, no cap.
type EqualJitter struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// At returns t/2 + u*t/2 for a sample u in [0, 1).
func (j EqualJitter) At(k int, u float64) time.Duration {
	t := expo(j.Base, j.Cap, j.Multiplier, k)
	return t/2 + scale(t/2, u)
}

// Next draws u from r and returns j.At(s.K, u).
func (j EqualJitter) Next(s *BackoffState, r *rand.Rand) time.Duration {
	d := j.At(int(s.K), r.Float64())
	s.K++
	return d
}

// DecorrelatedJitter waits d = min(Cap, U(Base, 3 * prev)), with prev the
// previous wait and prev = Base before the first retry (the AWS
// Architecture Blog's "Decorrelated Jitter"). Every wait lies in
// [Base, Cap]. A zero Cap means no cap.
type DecorrelatedJitter struct {
	Base time.Duration
	Cap  time.Duration
}

// Step returns min(Cap, Base + u * (3*prev - Base)) for a sample u in
// [0, 1): the wait after a previous wait prev.
func (j DecorrelatedJitter) Step(prev time.Duration, u float64) time.Duration {
	hi := 3 * float64(prev)
	d := float64(j.Base) + u*(hi-float64(j.Base))
	return capped(d, j.Cap)
}

// Next draws u from r, returns j.Step(prev, u) and remembers the wait.
func (j DecorrelatedJitter) Next(s *BackoffState, r *rand.Rand) time.Duration {
	prev := j.Base
	if s.K > 0 {
		prev = time.Duration(s.Prev * float64(time.Second))
	}
	d := j.Step(prev, r.Float64())
	s.K++
	s.Prev = d.Seconds()
	return d
}

// ProportionalJitter waits min(Cap, t * U(1-Factor, 1+Factor)) with
// t = min(Cap, Base * Multiplier^k): the capped exponential delay, moved
// up or down by at most Factor of itself. gRPC's connection backoff uses
// Factor 0.2, cenkalti/backoff 0.5. Unlike gRPC, the jittered wait is capped
// again, so Cap is a hard bound. Zero Multiplier means 2; zero Cap, no cap;
// zero Factor, no jitter.
type ProportionalJitter struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
	Factor     float64
}

// At returns min(Cap, t * (1 - Factor + 2*Factor*u)) for a sample u in [0, 1).
func (j ProportionalJitter) At(k int, u float64) time.Duration {
	t := expo(j.Base, j.Cap, j.Multiplier, k)
	return capped(float64(t)*(1-j.Factor+2*j.Factor*u), j.Cap)
}

// Next draws u from r and returns j.At(s.K, u).
func (j ProportionalJitter) Next(s *BackoffState, r *rand.Rand) time.Duration {
	d := j.At(int(s.K), r.Float64())
	s.K++
	return d
}

// DecorrelatedJitterV2 is Polly's DecorrelatedJitterBackoffV2 (by George
// Polevoy): with t = k + u and f(t) = 2^t * tanh(sqrt(4t)), the wait is
// min(Cap, (f(t) - f(t_prev)) / 1.4 * Base), where t_prev is the previous
// retry's t (f = 0 before the first retry). Base is the median of the
// first wait (by the formula the median is 0.9 Base). The waits grow like 2^k but are smooth and decorrelated,
// without the clumping of DecorrelatedJitter. A zero Cap means no cap.
type DecorrelatedJitterV2 struct {
	Base time.Duration
	Cap  time.Duration
}

// Step returns the wait for retry k with sample u in [0, 1), given prev =
// f(t_prev), and the value f(t) that the next step needs.
func (j DecorrelatedJitterV2) Step(k int, prev, u float64) (time.Duration, float64) {
	const scaling = 1 / 1.4
	t := float64(k) + u
	next := math.Pow(2, t) * math.Tanh(math.Sqrt(4*t))
	if math.IsInf(next, 0) {
		return capped(math.Inf(1), j.Cap), next
	}
	return capped((next-prev)*scaling*float64(j.Base), j.Cap), next
}

// Next draws u from r, returns the wait of j.Step and remembers f(t).
func (j DecorrelatedJitterV2) Next(s *BackoffState, r *rand.Rand) time.Duration {
	d, next := j.Step(int(s.K), s.Prev, r.Float64())
	s.K++
	s.Prev = next
	return d
}

// expo returns min(c, b * m^k), computed in floating point so that large k
// saturate at the cap instead of overflowing.
func expo(b, c time.Duration, m float64, k int) time.Duration {
	if m == 0 || m == 2 {
		if uint(k) < 63 {
			// b * 2^k, exactly: what math.Ldexp returns, for a
			// quarter of the instructions.
			return capped(float64(b)*float64(int64(1)<<k), c)
		}
		return capped(math.Ldexp(float64(b), k), c)
	}
	return capped(float64(b)*math.Pow(m, float64(k)), c)
}

// capped converts d nanoseconds to a Duration no larger than c (or than
// the largest Duration when c is 0) and no smaller than 0.
func capped(d float64, c time.Duration) time.Duration {
	limit := float64(math.MaxInt64)
	if c > 0 {
		limit = float64(c)
	}
	switch {
	case math.IsNaN(d) || d <= 0:
		return 0
	case d >= limit:
		if c > 0 {
			return c
		}
		return math.MaxInt64
	}
	return time.Duration(d)
}

// scale returns t * u for u in [0, 1).
func scale(t time.Duration, u float64) time.Duration {
	return time.Duration(float64(t) * u)
}
