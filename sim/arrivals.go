package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/results"
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

// scheduleWorkload schedules the workload's first arrival.
func (w *world) scheduleWorkload() {
	if c := w.clients; c != nil {
		for s := range c.Count {
			w.q.push(ClientStart(c, w.rArrive), evArrival, int32(s), 0)
		}
		return
	}
	a := w.sc.Workload.Arrival
	switch a.Kind {
	case scenarios.Burst:
		w.q.push(a.At, evArrival, 0, 0)
	case scenarios.Uniform:
		w.q.push(w.uniformAt(0), evArrival, 0, 0)
	case scenarios.Poisson:
		if a.PerSender {
			n := w.sc.Workload.Senders
			w.stream = a.SenderStream(n)
			for s := range n {
				if t, ok := NextPoisson(w.stream, w.horizon, a.From, w.rArrive); ok {
					w.q.push(t, evArrival, int32(s), 0)
				}
			}
			return
		}
		if t, ok := w.nextPoisson(a.From); ok {
			w.q.push(t, evArrival, 0, 0)
		}
	}
}

// arrive creates the workload's request(s) due now and schedules the next
// arrival: a burst creates all its requests at once, in order. With a
// stream per sender, s is the sender whose stream it is.
func (w *world) arrive(s int32) {
	if w.clients != nil {
		if w.arrived >= scenarios.MaxCount {
			w.failed = fmt.Errorf("sim: strategy %s: the clients made %s requests by t=%s, the most herdlab counts: set workload.requests to cap them",
				w.run.Strategy, results.Count(float64(w.arrived)), w.now)
			return
		}
		if w.limit < 0 || w.arrived < w.limit {
			w.newRequestFrom(s)
		}
		return
	}
	a := w.sc.Workload.Arrival
	switch a.Kind {
	case scenarios.Burst:
		for w.arrived < w.limit {
			w.newRequest()
			// A burst of millions is one event: it too must stop soon
			// after its run is cancelled.
			if w.arrived%checkEvery == 0 && w.ctx.Err() != nil {
				w.failed = w.ctx.Err()
				return
			}
		}
	case scenarios.Uniform:
		w.newRequest()
		if w.arrived < w.limit {
			w.q.push(w.uniformAt(w.arrived), evArrival, 0, 0)
		}
	case scenarios.Poisson:
		if w.arrived >= scenarios.MaxCount {
			w.failed = fmt.Errorf("sim: strategy %s: the poisson arrivals made %s requests by t=%s, the most herdlab counts: set workload.requests to cap them",
				w.run.Strategy, results.Count(float64(w.arrived)), w.now)
			return
		}
		if w.limit >= 0 && w.arrived >= w.limit {
			return // another sender's stream made the last request
		}
		if a.PerSender {
			w.newRequestFrom(s)
			if t, ok := NextPoisson(w.stream, w.horizon, w.now, w.rArrive); ok && (w.limit < 0 || w.arrived < w.limit) {
				w.q.push(t, evArrival, s, 0)
			}
			return
		}
		w.newRequest()
		if w.limit >= 0 && w.arrived >= w.limit {
			return
		}
		if t, ok := w.nextPoisson(w.now); ok {
			w.q.push(t, evArrival, 0, 0)
		}
	}
}

// uniformAt returns when the uniform workload creates request k.
func (w *world) uniformAt(k int) time.Duration {
	return UniformAt(w.sc.Workload.Arrival, w.limit, k)
}

// nextPoisson returns the workload's first Poisson arrival after t.
func (w *world) nextPoisson(t time.Duration) (time.Duration, bool) {
	return NextPoisson(w.sc.Workload.Arrival, w.horizon, t, w.rArrive)
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
