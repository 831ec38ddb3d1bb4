package sim

import (
	"fmt"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// fleet is the workload of a graph: the senders calling the target
// service, each request a call on the graph's first edge.
type fleet struct {
	arrival    scenarios.Arrival
	limit      int // requests to create, -1: no limit
	arrived    int
	senders    int                // the workload's senders, 0: one per request
	perRequest bool               // the edge's senders grow with the requests
	stream     scenarios.Arrival  // with a poisson stream per sender: one sender's
	dead       int                // requests in the dead-letter queue now
	dlq        []int32            // the requests dead-lettered, in order (-1: replayed)
	replayed   int                // the dead letters the replay takes
	delayed    int                // requests waiting for their backoff now
	clients    *scenarios.Clients // a closed loop: each client's next request comes when its previous one ends
	workers    int32              // each sender's dispatcher's workers, 0 without dispatchers
	blocking   bool               // the dispatchers' workers sleep through backoffs
	pools      []Pool             // each sender's dispatcher
	rates      clientRates        // the fleet's adaptive rate limiters
}

func newFleet(sc *scenarios.Scenario, e *edge) fleet {
	f := fleet{arrival: sc.Workload.Arrival, limit: sc.Workload.Requests, senders: sc.Workload.Senders, clients: sc.Workload.Clients,
		rates: newClientRates(e.policy)}
	if sc.Workload.Uncapped() {
		f.limit = -1
	}
	f.workers = int32(sc.Workload.Workers)
	f.blocking = sc.Workload.Dispatch == scenarios.DispatchBlocking
	if f.workers > 0 && f.senders > 0 {
		f.pools = make([]Pool, f.senders)
		for i := range f.pools {
			f.pools[i] = NewPool()
		}
	}
	if e.policy.PerSender() || f.workers > 0 {
		if f.senders > 0 {
			e.senders = make([]strategies.Sender, f.senders)
			for i := range e.senders {
				e.groups.Join(&e.senders[i], i)
			}
		} else {
			f.perRequest = true
			e.senders = []strategies.Sender{}
		}
	}
	return f
}

// schedule schedules the fleet's first arrival.
func (f *fleet) schedule(g *graph) {
	if c := f.clients; c != nil {
		for s := range c.Count {
			g.q.push(ClientStart(c, g.rArrive), gArrival, int32(s), 0)
		}
		return
	}
	a := f.arrival
	switch a.Kind {
	case scenarios.Burst:
		g.q.push(a.At, gArrival, 0, 0)
	case scenarios.Uniform:
		g.q.push(UniformAt(a, f.limit, 0), gArrival, 0, 0)
	case scenarios.Poisson:
		if a.PerSender {
			f.stream = a.SenderStream(f.senders)
			for s := range f.senders {
				if t, ok := NextPoisson(f.stream, g.horizon, a.From, g.rArrive); ok {
					g.q.push(t, gArrival, int32(s), 0)
				}
			}
			return
		}
		if t, ok := NextPoisson(a, g.horizon, a.From, g.rArrive); ok {
			g.q.push(t, gArrival, 0, 0)
		}
	}
}

// arrive creates the request(s) due now and schedules the next arrival;
// with a stream per sender, s is the sender whose stream it is.
func (f *fleet) arrive(g *graph, s int32) {
	if f.clients != nil {
		if f.arrived >= scenarios.MaxCount {
			g.failed = fmt.Errorf("sim: strategy %s: the clients made %s requests by t=%s, the most herdlab counts: set workload.requests to cap them",
				g.name, results.Count(float64(f.arrived)), g.now)
			return
		}
		if f.limit < 0 || f.arrived < f.limit {
			f.newRequestFrom(g, s)
		}
		return
	}
	a := f.arrival
	switch a.Kind {
	case scenarios.Burst:
		for f.arrived < f.limit {
			f.newRequest(g)
			if f.arrived%checkEvery == 0 && g.ctx.Err() != nil {
				g.failed = g.ctx.Err()
				return
			}
		}
	case scenarios.Uniform:
		f.newRequest(g)
		if f.arrived < f.limit {
			g.q.push(UniformAt(a, f.limit, f.arrived), gArrival, 0, 0)
		}
	case scenarios.Poisson:
		if f.arrived >= scenarios.MaxCount {
			g.failed = fmt.Errorf("sim: strategy %s: the poisson arrivals made %s requests by t=%s, the most herdlab counts: set workload.requests to cap them",
				g.name, results.Count(float64(f.arrived)), g.now)
			return
		}
		if f.limit >= 0 && f.arrived >= f.limit {
			return // another sender's stream made the last request
		}
		if a.PerSender {
			f.newRequestFrom(g, s)
			if t, ok := NextPoisson(f.stream, g.horizon, g.now, g.rArrive); ok && (f.limit < 0 || f.arrived < f.limit) {
				g.q.push(t, gArrival, s, 0)
			}
			return
		}
		f.newRequest(g)
		if f.limit >= 0 && f.arrived >= f.limit {
			return
		}
		if t, ok := NextPoisson(a, g.horizon, g.now, g.rArrive); ok {
			g.q.push(t, gArrival, 0, 0)
		}
	}
}

// newRequest creates the fleet's next request at now and makes its first
// try.
func (f *fleet) newRequest(g *graph) {
	s := int32(f.arrived)
	if f.senders > 0 {
		s %= int32(f.senders)
	}
	f.newRequestFrom(g, s)
}

// newRequestFrom creates the fleet's next request at now, from sender s,
// and makes its first try.
func (f *fleet) newRequestFrom(g *graph, s int32) {
	e := &g.edges[0]
	if f.perRequest {
		e.senders = append(e.senders, strategies.Sender{})
		e.groups.Join(&e.senders[len(e.senders)-1], len(e.senders)-1)
		if f.workers > 0 {
			f.pools = append(f.pools, NewPool())
		}
	}
	c := g.addCall()
	g.calls[c] = call{sender: s, arrived: -1, state: stWaiting, flags: flagFleet}
	if g.links != nil {
		g.links[c].id = g.nextID()
	}
	if g.keys != nil {
		g.keys[c] = g.key(g.target)
	}
	f.arrived++
	g.try(c, &g.calls[c])
}

// delivered counts fleet request c delivered now.
func (f *fleet) delivered(g *graph, c int32) {
	g.run.Delivered++
	g.run.Series[g.current()].Delivered++
	g.run.RecordLatency(g.now - g.created[c])
	f.final(g, c)
}

// deadLetter counts fleet request c given up now.
func (f *fleet) deadLetter(g *graph, c int32) {
	g.countAt(g.now, 0, 1)
	f.dlq = append(f.dlq, c)
	f.final(g, c)
}

func (f *fleet) final(g *graph, c int32) {
	cl := &g.calls[c]
	g.finished++
	// (Not in the order of time where an answer is taken ahead: see
	// occWrite.)
	g.completion = max(g.completion, g.now)
	if g.created[c] <= g.lastOutageEnd {
		g.drain = max(g.drain, g.now)
	}
	if k := f.clients; k != nil && g.now+k.ThinkTime < g.horizon {
		g.q.push(g.now+k.ThinkTime, gArrival, cl.sender, 0)
	}
}

// finish counts the final state of every request of the fleet.
func (f *fleet) finish(g *graph) {
	fin := finals{run: g.run, lastOutageEnd: g.lastOutageEnd, drained: true}
	for i := range g.calls {
		if cl := &g.calls[i]; cl.fleetCall() {
			fin.add(cl.state, cl.reason, g.created[i])
		}
	}
	fin.close(g.completion, g.drain)
	if g.run.Requests != int64(f.arrived) {
		conservation("%d fleet requests arrived, %d counted at the end", f.arrived, g.run.Requests)
	}
}

// replay sends dead letter number k back (k = -1 starts the replay): the
// replay takes the dead letters in the queue when it starts, at the
// scenario's rate, with fresh attempt counts.
func (f *fleet) replay(g *graph, k int32) {
	if k < 0 {
		f.replayed = len(f.dlq)
		k = 0
	}
	if int(k) >= f.replayed {
		return
	}
	c := f.dlq[k]
	f.dlq[k] = -1 // no longer in the queue
	f.dead--
	g.retry = strategies.Request{}
	g.setRetryState(c, &g.calls[c])
	g.calls[c].state = stWaiting
	g.run.Replayed++
	g.try(c, &g.calls[c])
	gap := time.Duration(float64(time.Second) / g.sc.DLQ.Replay.Rate)
	g.q.push(g.now+gap, gReplay, k+1, 0)
}

// free ends fleet request c's hold on its sender's worker after decision
// d: but in a blocking dispatcher, whose worker sleeps
// through the request's backoff, and is freed only when the request is
// delivered or given up. The worker goes to the request that has waited
// longest for one, which is tried now.
func (f *fleet) free(g *graph, c int32, d strategies.Decision) {
	if f.workers > 0 && g.calls[c].flags&flagWorker != 0 {
		f.release(g, c, d) // a call, not inlined: most requests hold no worker
	}
}

// release is free for fleet request c, which holds a worker.
func (f *fleet) release(g *graph, c int32, d strategies.Decision) {
	cl := &g.calls[c]
	if f.blocking && d.Action == strategies.Retry {
		return
	}
	cl.flags &^= flagWorker
	if next, ok := f.pools[cl.sender].Release(g.next); ok {
		g.calls[next].state = stWaiting
		g.q.push(g.now, gWorker, next, 0)
	}
}
