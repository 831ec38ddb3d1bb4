package realhttp

import (
	"time"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// The workload's arrivals, as sim/arrivals.go makes them: the same
// times from the same draws of the arrival stream.

// scheduleWorkload schedules the workload's first arrival.
func (d *driver) scheduleWorkload() {
	if c := d.sc.Workload.Clients; c != nil {
		for s := range c.Count {
			d.q.push(sim.ClientStart(c, d.rArrive), drvArrival, int32(s), 0)
		}
		return
	}
	a := d.sc.Workload.Arrival
	switch a.Kind {
	case scenarios.Burst:
		d.q.push(a.At, drvArrival, 0, 0)
	case scenarios.Uniform:
		d.q.push(d.uniformAt(0), drvArrival, 0, 0)
	case scenarios.Poisson:
		if a.PerSender {
			n := d.sc.Workload.Senders
			d.stream = a.SenderStream(n)
			for s := range n {
				if t, ok := sim.NextPoisson(d.stream, d.horizon, a.From, d.rArrive); ok {
					d.q.push(t, drvArrival, int32(s), 0)
				}
			}
			return
		}
		if t, ok := d.nextPoisson(a.From); ok {
			d.q.push(t, drvArrival, 0, 0)
		}
	}
}

// arrive creates the request(s) due at and schedules the next arrival:
// a burst creates all its requests at once, in order. With a stream per
// sender, s is the sender whose stream it is.
func (d *driver) arrive(at time.Duration, s int32) {
	if d.sc.Workload.Clients != nil {
		if d.limit < 0 || d.arrived < d.limit {
			d.newRequestFrom(at, s)
		}
		return
	}
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
		if d.limit >= 0 && d.arrived >= d.limit {
			return // another sender's stream made the last request
		}
		if a.PerSender {
			d.newRequestFrom(at, s)
			if t, ok := sim.NextPoisson(d.stream, d.horizon, at, d.rArrive); ok && (d.limit < 0 || d.arrived < d.limit) {
				d.q.push(t, drvArrival, s, 0)
			}
			return
		}
		d.newRequest(at)
		if d.limit >= 0 && d.arrived >= d.limit {
			return
		}
		if t, ok := d.nextPoisson(at); ok {
			d.q.push(t, drvArrival, 0, 0)
		}
	}
}

// uniformAt returns when the uniform workload creates request k.
func (d *driver) uniformAt(k int) time.Duration {
	return sim.UniformAt(d.sc.Workload.Arrival, d.limit, k)
}

// nextPoisson returns the workload's first Poisson arrival after t.
func (d *driver) nextPoisson(t time.Duration) (time.Duration, bool) {
	return sim.NextPoisson(d.sc.Workload.Arrival, d.horizon, t, d.rArrive)
}
