package realhttp

import (
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// The workload's arrivals, as sim/arrivals.go makes them: the same
// times from the same draws of the arrival stream.

// scheduleWorkload schedules the workload's first arrival.
func (d *driver) scheduleWorkload() {
	a := d.sc.Workload.Arrival
	switch a.Kind {
	case scenarios.Burst:
		d.q.push(a.At, drvArrival, 0, 0)
	case scenarios.Uniform:
		d.q.push(d.uniformAt(0), drvArrival, 0, 0)
	case scenarios.Poisson:
		if t, ok := d.nextPoisson(a.From); ok {
			d.q.push(t, drvArrival, 0, 0)
		}
	}
}

// arrive creates the request(s) due at and schedules the next arrival:
// a burst creates all its requests at once, in order.
func (d *driver) arrive(at time.Duration) {
	a := d.sc.Workload.Arrival
	switch a.Kind {
	case scenarios.Burst:
		for d.arrived < d.limit {
			d.newRequest(at)
		}
	case scenarios.Uniform:
		d.newRequest(at)
		if d.arrived < d.limit {
			d.q.push(d.uniformAt(d.arrived), drvArrival, 0, 0)
		}
	case scenarios.Poisson:
		d.newRequest(at)
		if d.limit >= 0 && d.arrived >= d.limit {
			return
		}
		if t, ok := d.nextPoisson(at); ok {
			d.q.push(t, drvArrival, 0, 0)
		}
	}
}

// uniformAt returns when the uniform workload creates request k:
// From + k * (Until-From) / Requests.
func (d *driver) uniformAt(k int) time.Duration {
	a := d.sc.Workload.Arrival
	return a.From + time.Duration(float64(a.Until-a.From)*float64(k)/float64(d.limit))
}

// rateAt returns the poisson rate in force at t and when it next changes.
func (d *driver) rateAt(t time.Duration) (rate float64, until time.Duration) {
	a := d.sc.Workload.Arrival
	end := a.Until
	if end == 0 {
		end = d.horizon
	}
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

// nextPoisson returns the first arrival after t of the Poisson process
// with the workload's piecewise-constant rate: an Exp(1) amount of work
// spent across the rate's pieces.
func (d *driver) nextPoisson(t time.Duration) (time.Duration, bool) {
	a := d.sc.Workload.Arrival
	end := a.Until
	if end == 0 {
		end = d.horizon
	}
	t = max(t, a.From)
	need := d.rArrive.ExpFloat64()
	for t < end {
		rate, until := d.rateAt(t)
		span := (until - t).Seconds()
		if rate > 0 && need <= rate*span {
			return t + time.Duration(need/rate*float64(time.Second)), true
		}
		need -= rate * span
		t = until
	}
	return 0, false
}
