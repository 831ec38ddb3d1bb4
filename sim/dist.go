package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// sampler draws durations from a scenario distribution. The zero sampler
// always returns 0: no latency.
type sampler struct {
	kind     uint8
	a, b     float64 // parameters in nanoseconds (lognormal: mu, sigma of the log)
	constant time.Duration
}

const (
	sampleZero uint8 = iota
	sampleConstant
	sampleExponential
	sampleUniform
	sampleLognormal
	sampleNormal
)

// newSampler returns a sampler for d; nil means no delay.
func newSampler(d *scenarios.Dist) sampler {
	if d == nil {
		return sampler{}
	}
	switch d.Kind {
	case scenarios.Constant:
		return sampler{kind: sampleConstant, constant: d.Mean}
	case scenarios.Exponential:
		return sampler{kind: sampleExponential, a: float64(d.Mean)}
	case scenarios.UniformDist:
		return sampler{kind: sampleUniform, a: float64(d.Min), b: float64(d.Max - d.Min)}
	case scenarios.Lognormal:
		// A lognormal with mean m and standard deviation s has
		// sigma^2 = ln(1 + s^2/m^2) and mu = ln m - sigma^2/2.
		m, s := float64(d.Mean), float64(d.StdDev)
		sigma2 := math.Log1p(s * s / (m * m))
		return sampler{kind: sampleLognormal, a: math.Log(m) - sigma2/2, b: math.Sqrt(sigma2)}
	case scenarios.Normal:
		return sampler{kind: sampleNormal, a: float64(d.Mean), b: float64(d.StdDev)}
	}
	return sampler{}
}

// sample draws one duration; it does not draw from r for the zero and
// constant samplers. A draw is at most maxSample: the tail of an
// exponential or a lognormal reaches past what a Duration holds, and a
// time so far beyond any horizon means "never" all the same.
func (s sampler) sample(r *rand.Rand) time.Duration {
	switch s.kind {
	case sampleConstant:
		return s.constant
	case sampleExponential:
		return clampSample(r.ExpFloat64() * s.a)
	case sampleUniform:
		return time.Duration(s.a + r.Float64()*s.b)
	case sampleLognormal:
		return clampSample(math.Exp(s.a + s.b*r.NormFloat64()))
	case sampleNormal:
		return clampSample(math.Abs(s.a + s.b*r.NormFloat64()))
	}
	return 0
}

// maxSample is the longest duration a sampler draws: ten times the
// longest a scenario field may be, so that now + a draw cannot overflow.
const maxSample = 10 * scenarios.MaxDuration

// clampSample converts ns nanoseconds to a Duration of at most maxSample.
func clampSample(ns float64) time.Duration {
	if ns >= float64(maxSample) {
		return maxSample
	}
	return time.Duration(ns)
}

// zero reports whether the sampler always returns 0.
func (s sampler) zero() bool {
	return s.kind == sampleZero || (s.kind == sampleConstant && s.constant == 0)
}
