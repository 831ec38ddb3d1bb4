package strategies

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

func TestExponentialAt(t *testing.T) {
	e := Exponential{Base: s, Cap: 60 * s}
	tests := []struct {
		k    int
		want time.Duration
	}{
		{0, 1 * s}, {1, 2 * s}, {2, 4 * s}, {3, 8 * s}, {4, 16 * s}, {5, 32 * s},
		{6, 60 * s}, {7, 60 * s}, {100, 60 * s}, {5000, 60 * s},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, e.At(tt.k), "k=%d", tt.k)
	}
	assert.Equal(t, 9*s, Exponential{Base: s, Cap: time.Hour, Multiplier: 3}.At(2), "multiplier 3")
	assert.Equal(t, time.Duration(math.MaxInt64), Exponential{Base: s}.At(200), "no cap saturates, never overflows")
}

// TestExpoDoublesExactlyAsLdexp checks the doubling's fast path against
// math.Ldexp, which it stands in for where k < 64: the same bits for
// every base, cap and k, so that no run's backoffs move.
func TestExpoDoublesExactlyAsLdexp(t *testing.T) {
	bases := []time.Duration{1, 3, 7 * ms, 100 * ms, s, 1234567891, time.Hour, math.MaxInt64 / 3, math.MaxInt64}
	for _, b := range bases {
		for _, c := range []time.Duration{0, 60 * s, math.MaxInt64} {
			for k := range 140 {
				for _, m := range []float64{0, 2} {
					want := capped(math.Ldexp(float64(b), k), c)
					require.Equal(t, want, expo(b, c, m, k), "b=%d c=%d k=%d m=%v", b, c, k, m)
				}
			}
		}
	}
}

func TestJitterFormulasAtPinnedSamples(t *testing.T) {
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"full k=0 u=0", FullJitter{Base: s, Cap: 60 * s}.At(0, 0), 0},
		{"full k=0 u=.5", FullJitter{Base: s, Cap: 60 * s}.At(0, 0.5), 500 * ms},
		{"full k=3 u=.25", FullJitter{Base: s, Cap: 60 * s}.At(3, 0.25), 2 * s},
		{"full capped", FullJitter{Base: s, Cap: 60 * s}.At(10, 0.5), 30 * s},
		// Envoy's ranges are (2^(k+1)-1) base intervals: 25, 75, 175 ms
		// with its default base of 25 ms, capped at 10x (250 ms).
		{"envoy k=0 u=.5", EnvoyJitter{Base: 25 * ms, Cap: 250 * ms}.At(0, 0.5), 12500 * time.Microsecond},
		{"envoy k=1 u=.5", EnvoyJitter{Base: 25 * ms, Cap: 250 * ms}.At(1, 0.5), 37500 * time.Microsecond},
		{"envoy k=2 u=1", EnvoyJitter{Base: 25 * ms, Cap: 250 * ms}.At(2, 1), 175 * ms},
		{"envoy capped", EnvoyJitter{Base: 25 * ms, Cap: 250 * ms}.At(3, 0.5), 125 * ms},
		{"equal k=0 u=0", EqualJitter{Base: s, Cap: 60 * s}.At(0, 0), 500 * ms},
		{"equal k=2 u=.5", EqualJitter{Base: s, Cap: 60 * s}.At(2, 0.5), 3 * s},
		{"equal capped u=.5", EqualJitter{Base: s, Cap: 60 * s}.At(9, 0.5), 45 * s},
		{"decorrelated u=0", DecorrelatedJitter{Base: s, Cap: 60 * s}.Step(s, 0), s},
		{"decorrelated u=.5", DecorrelatedJitter{Base: s, Cap: 60 * s}.Step(s, 0.5), 2 * s},
		{"decorrelated prev 10s u=.5", DecorrelatedJitter{Base: s, Cap: 60 * s}.Step(10*s, 0.5), 15500 * ms},
		{"decorrelated capped", DecorrelatedJitter{Base: s, Cap: 60 * s}.Step(50*s, 0.9), 60 * s},
		{"proportional u=0", ProportionalJitter{Base: s, Cap: 60 * s, Factor: 0.2}.At(1, 0), 1600 * ms},
		{"proportional u=.5", ProportionalJitter{Base: s, Cap: 60 * s, Factor: 0.2}.At(1, 0.5), 2 * s},
		{"proportional u=.75", ProportionalJitter{Base: s, Cap: 60 * s, Factor: 0.5}.At(2, 0.75), 5 * s},
		{"proportional capped after jitter", ProportionalJitter{Base: s, Cap: 60 * s, Factor: 0.2}.At(9, 0.99), 60 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
}

func TestDecorrelatedJitterV2MatchesPolly(t *testing.T) {
	// Polly's formula by hand: f(t) = 2^t * tanh(sqrt(4t)); wait =
	// (f(k+u) - f(prev t)) / 1.4 * base.
	f := func(t float64) float64 { return math.Pow(2, t) * math.Tanh(math.Sqrt(4*t)) }
	j := DecorrelatedJitterV2{Base: s, Cap: time.Hour}
	d0, p0 := j.Step(0, 0, 0.5)
	assert.InDelta(t, f(0.5)/1.4, d0.Seconds(), 1e-9)
	d1, p1 := j.Step(1, p0, 0.25)
	assert.InDelta(t, (f(1.25)-f(0.5))/1.4, d1.Seconds(), 1e-9)
	assert.Equal(t, f(1.25), p1)

	// Polly calls Base the median first delay; by the formula the median
	// is f(0.5)/1.4 = 0.897 Base.
	r := rand.New(rand.NewPCG(1, 2))
	first := make([]float64, 20001)
	for i := range first {
		var st BackoffState
		first[i] = j.Next(&st, r).Seconds()
	}
	sort.Float64s(first)
	assert.InDelta(t, f(0.5)/1.4, first[len(first)/2], 0.01, "median first wait")

	// Huge k saturates at the cap instead of overflowing.
	d, _ := j.Step(5000, 0, 0.5)
	assert.Equal(t, time.Hour, d)
}

func TestNextAdvancesState(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var st BackoffState
	e := Exponential{Base: s, Cap: 60 * s}
	var got []time.Duration
	for range 8 {
		got = append(got, e.Next(&st, r))
	}
	assert.Equal(t, []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}, got)
	assert.Equal(t, int32(8), st.K)

	// Decorrelated jitter feeds each wait into the next draw.
	var dst BackoffState
	dj := DecorrelatedJitter{Base: 100 * ms, Cap: 10 * s}
	prev := dj.Base
	r1, r2 := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for range 50 {
		d := dj.Next(&dst, r1)
		assert.Equal(t, dj.Step(prev, r2.Float64()), d)
		prev = d
	}
}

// ksUniform returns the Kolmogorov-Smirnov statistic of the sample against
// the uniform distribution on [lo, hi).
func ksUniform(sample []float64, lo, hi float64) float64 {
	sort.Float64s(sample)
	u := distuv.Uniform{Min: lo, Max: hi}
	n := float64(len(sample))
	var d float64
	for i, x := range sample {
		c := u.CDF(x)
		d = max(d, math.Abs(c-float64(i)/n), math.Abs(float64(i+1)/n-c))
	}
	return d
}

// ksCritical is the Kolmogorov-Smirnov critical value at alpha = 0.001.
func ksCritical(n int) float64 { return 1.95 / math.Sqrt(float64(n)) }

func TestJitterDistributions(t *testing.T) {
	const n = 20000
	r := rand.New(rand.NewPCG(42, 1))
	for _, k := range []int{0, 3, 8} {
		full := FullJitter{Base: s, Cap: 60 * s}
		equal := EqualJitter{Base: s, Cap: 60 * s}
		tcap := Exponential{Base: s, Cap: 60 * s}.At(k).Seconds()
		fs, es := make([]float64, n), make([]float64, n)
		for i := range n {
			st := BackoffState{K: int32(k)}
			fs[i] = full.Next(&st, r).Seconds()
			st = BackoffState{K: int32(k)}
			es[i] = equal.Next(&st, r).Seconds()
		}
		assert.Less(t, ksUniform(fs, 0, tcap), ksCritical(n), "full jitter k=%d is U(0, %gs)", k, tcap)
		assert.Less(t, ksUniform(es, tcap/2, tcap), ksCritical(n), "equal jitter k=%d is U(%gs, %gs)", k, tcap/2, tcap)
		// The test has power: the full-jitter sample is not U(t/2, t).
		assert.Greater(t, ksUniform(fs, tcap/2, tcap), ksCritical(n), "KS rejects the wrong interval")
	}
}

func TestDecorrelatedJitterStaysInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	j := DecorrelatedJitter{Base: 100 * ms, Cap: 20 * s}
	var lo, hi time.Duration = math.MaxInt64, 0
	for range 2000 {
		var st BackoffState
		for range 30 {
			d := j.Next(&st, r)
			require.GreaterOrEqual(t, d, j.Base)
			require.LessOrEqual(t, d, j.Cap)
			lo, hi = min(lo, d), max(hi, d)
		}
	}
	// The bounds are reached, not merely respected.
	assert.Less(t, lo, 110*ms)
	assert.Equal(t, j.Cap, hi)
}

func TestFixedAndNone(t *testing.T) {
	var st BackoffState
	assert.Equal(t, 5*s, Fixed{Delay: 5 * s}.Next(&st, nil))
	assert.Equal(t, 5*s, Fixed{Delay: 5 * s}.Next(&st, nil))
	assert.Equal(t, time.Duration(0), None{}.Next(&st, nil))
	assert.Equal(t, int32(3), st.K)
}
