package sim

import (
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// ClientStart draws when a closed-loop client sends its first request:
// its think time x U(0,1). The real-HTTP driver shares it.
func ClientStart(c *scenarios.Clients, r *rand.Rand) time.Duration {
	if c.ThinkTime == 0 {
		return 0
	}
	return time.Duration(r.Float64() * float64(c.ThinkTime))
}

// UniformAt returns when a uniform arrival of n requests creates request
// k: the requests are spread evenly, From + k * (Until-From) / n. The
// real-HTTP driver shares it, so both make the same workload.
func UniformAt(a scenarios.Arrival, n, k int) time.Duration {
	return a.From + time.Duration(float64(a.Until-a.From)*float64(k)/float64(n))
}

// rateAt returns the poisson rate of a in force at t, before end, and
// when it next changes.
func rateAt(a scenarios.Arrival, end, t time.Duration) (rate float64, until time.Duration) {
	if t < a.From || t >= end {
		return 0, end
	}
	rate, until = a.Rate, end
	for _, s := range a.Schedule {
		switch {
		case t >= s.From && t < s.Until:
			return s.Rate, min(s.Until, end)
		case s.From > t:
			until = min(until, s.From)
		}
	}
	return rate, until
}

// NextPoisson returns the first arrival after t of a Poisson arrival a
// with its piecewise-constant rate (ending at Until, or at horizon when
// Until is 0): it draws an Exp(1) amount of "work" from r and spends it
// across the rate's pieces. The real-HTTP driver shares it, so both make
// the same workload from the same draws.
func NextPoisson(a scenarios.Arrival, horizon, t time.Duration, r *rand.Rand) (time.Duration, bool) {
	end := a.Until
	if end == 0 {
		end = horizon
	}
	t = max(t, a.From)
	need := r.ExpFloat64()
	for t < end {
		rate, until := rateAt(a, end, t)
		span := (until - t).Seconds()
		if rate > 0 && need <= rate*span {
			return t + time.Duration(need/rate*float64(time.Second)), true
		}
		need -= rate * span
		t = until
	}
	return 0, false
}
