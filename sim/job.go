package sim

import (
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// newJob makes the job of call c's attempt in flight, at replica r of
// service svc.
func (g *graph) newJob(c, svc, r int32) int32 {
	var j int32
	if n := len(g.freeJobs); n > 0 {
		j = g.freeJobs[n-1]
		g.freeJobs = g.freeJobs[:n-1]
	} else {
		j = int32(len(g.jobs))
		g.jobs = append(g.jobs, job{})
		g.tallies = append(g.tallies, make([]tally, g.maxGroup)...)
	}
	cl := &g.calls[c]
	jb := &g.jobs[j]
	// Field by field: every one is set (a job's gen is kept).
	jb.call, jb.tag, jb.id, jb.fleet = c, cl.tag, g.callID(c), cl.fleetCall()
	jb.svc, jb.replica, jb.step, jb.pending, jb.calls = svc, r, 0, 0, -1
	jb.deadline, jb.queuedAt, jb.sentAt, jb.doneAt = noDeadline, 0, g.now, 0
	jb.edge, jb.sender, jb.state, jb.timed = g.edgeOf(c), cl.sender, jobSent, false
	until := g.until(cl, c)
	if jb.fleet {
		jb.outer = until
	} else {
		jb.outer = g.links[c].outer
	}
	if g.propagate {
		jb.deadline = until
	}
	return j
}

// callID returns call c's id: what tells it from a later call in its
// place (0 where no call is made in the place of another: without
// downstream calls, each is a request of the fleet, kept to the end).
func (g *graph) callID(c int32) uint32 {
	if g.links == nil {
		return 0
	}
	return g.links[c].id
}

// freeJob ends job j: its events are stale from now on.
func (g *graph) freeJob(j int32) {
	jb := &g.jobs[j]
	g.services[jb.svc].ended++
	jb.gen++
	jb.state = jobFree
	g.freeJobs = append(g.freeJobs, j)
}

// waiting reports whether the caller of job j still waits for its
// answer; same whether the call is still the one that sent it.
func (g *graph) waiting(j int32) (waiting, same bool) {
	jb := &g.jobs[j]
	cl := &g.calls[jb.call]
	same = g.callID(jb.call) == jb.id && cl.state != stFree
	return same && g.live(cl, jb.call, jb.tag), same
}

// answer frees job j and sends its answer o to its caller.
func (g *graph) answer(j int32, o strategies.Outcome) {
	jb := &g.jobs[j]
	c, tag, timed := jb.call, jb.tag, jb.timed
	e := &g.edges[jb.edge]
	observe := g.copies != nil && o == strategies.Success && e.policy.Hedge != nil && e.policy.Hedge.Percentile > 0
	sender, sentAt := jb.sender, jb.sentAt
	g.freeJob(j)
	if !observe {
		g.reply(c, tag, o, timed)
		return
	}
	// Every copy's latency, whether or not its caller still waits (it
	// may have moved on: its call's place reused): the service's,
	// unbiased by which copy won.
	at := g.now + g.latency.sample(g.rNet)
	e.policy.Observe(e.sender(sender), at-sentAt)
	g.replyAt(c, tag, o, timed, at)
}

// timeJob sets the timeout of job j's caller (see expire): its answer
// may come too late.
func (g *graph) timeJob(j int32) {
	jb := &g.jobs[j]
	if jb.timed {
		return
	}
	jb.timed = true
	g.expire(jb.call, jb.tag)
}

// atService is job j's attempt reaching its replica now.
func (g *graph) atService(j int32) {
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	k := g.current()
	s.count(r, func(x *results.ServiceRun) { x.Attempts++ })
	s.bucket(r, k, func(b *results.Bucket) { b.Attempts++ })
	if jb.fleet {
		g.run.Attempts++
		g.run.Series[k].Attempts++
	}
	waiting, same := g.waiting(j)
	cl := &g.calls[jb.call]
	if waiting {
		g.arrivedAt(cl, jb.call, jb.tag, k)
	} else if e := &g.edges[g.edgeOf(jb.call)]; same && e.policy.Hedge != nil && e.policy.Hedge.Cancel {
		g.freeJob(j) // a hedged copy cancelled on its way: dropped as it arrives
		return
	}
	jb.queuedAt = g.now
	if o, down := s.outage(g.now, int(r)); down {
		switch o.mode {
		case downRefuse:
			g.answer(j, strategies.Refused)
		case downError:
			g.answer(j, strategies.ServerError)
		default: // timeout: no answer; the caller gives up
			g.timeJob(j)
			g.freeJob(j)
		}
		return
	}
	cfg := s.cfg
	if cfg.RateLimit != nil && !s.takeToken(g.now, int(r)) {
		s.count(r, func(x *results.ServiceRun) { x.Throttled++ })
		s.bucket(r, k, func(b *results.Bucket) { b.Throttled++ })
		if jb.fleet {
			g.run.Throttled++
			g.run.Series[k].Throttled++
		}
		if waiting {
			g.hints[jb.call] = s.hint(g.now, int(r))
		}
		g.answer(j, strategies.TooManyRequests)
		return
	}
	if cfg.Idempotency && same && cl.flags&flagStarted != 0 {
		g.answer(j, cachedOutcome(cl.flags))
		return
	}
	if p := cfg.FailureProbability; p > 0 && g.rFault.Float64() < p {
		if waiting && cfg.FailurePushback != nil {
			g.hints[jb.call] = failureHint
		}
		g.answer(j, strategies.ServerError)
		return
	}
	rep := &s.replicas[r]
	// A queued job goes first: an attempt made while a job's answer is
	// handled (its caller's next call, sent at once) may find a slot
	// free before the queue is served.
	if rep.busy < s.capacity(g.now, int(r)) && rep.queue.len() == 0 {
		gen := jb.gen
		if !g.start(j) {
			return
		}
		// The caller waits for the answer past its time unless the
		// job is the local work alone, done in time, answered at once.
		// (A job that ended at once, its calls refused, is answered.)
		if jb := &g.jobs[j]; jb.gen == gen && !(len(s.steps) == 1 && g.latency.zero() && jb.doneAt <= g.untilOf(&g.calls[jb.call], jb.call, jb.tag)) {
			g.timeJob(j)
		}
		return
	}
	if s.limit >= 0 && rep.queue.len() >= s.limit {
		s.count(r, func(x *results.ServiceRun) { x.Rejected++ })
		s.bucket(r, k, func(b *results.Bucket) { b.Rejected++ })
		if jb.fleet {
			g.run.Rejected++
			g.run.Series[k].Rejected++
		}
		g.answer(j, strategies.ServerError)
		return
	}
	s.queueChange(g.now, r, 1)
	rep.queue.push(j)
	jb.state = jobQueued
	g.timeJob(j)
}

// cachedOutcome is an idempotent service's answer to a repeat of a call
// whose key it has seen (see world.cached).
func cachedOutcome(flags uint8) strategies.Outcome {
	if flags&flagProcessed != 0 {
		return strategies.Success
	}
	return strategies.ServerError
}

// start gives job j a slot of its replica now and begins its first step;
// false when the job is dropped instead.
func (g *graph) start(j int32) bool {
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	if g.propagate && g.now >= jb.deadline {
		s.count(r, func(x *results.ServiceRun) { x.DeadlineDropped++ })
		g.timeJob(j) // its caller gives up now, if not already
		g.freeJob(j) // no answer
		return false
	}
	waiting, same := g.waiting(j)
	if s.cfg.DropExpired && !waiting {
		g.freeJob(j)
		return false
	}
	cl := &g.calls[jb.call]
	if s.cfg.Idempotency && same && cl.flags&flagStarted != 0 {
		g.answer(j, cachedOutcome(cl.flags))
		return false
	}
	if same {
		cl.flags |= flagStarted
	}
	wait := g.now - jb.queuedAt
	s.count(r, func(x *results.ServiceRun) {
		x.Started++
		x.QueueWait += wait
	})
	s.replicas[r].busy++
	s.busy++
	jb.state = jobRunning
	jb.step = 0
	if g.propagate && jb.deadline < g.horizon {
		g.q.push(jb.deadline, gJobExpired, j, jb.gen)
	}
	g.proceed(j)
	return true
}

// proceed runs job j's steps from its current one until one has to wait
// (for its calls or its local work), or the job is done.
func (g *graph) proceed(j int32) {
	for {
		jb := &g.jobs[j]
		s := &g.services[jb.svc]
		if int(jb.step) == len(s.steps) {
			g.endJob(j, strategies.Success)
			return
		}
		st := s.steps[jb.step]
		if st.work {
			d := s.service.sample(g.rServe) + s.slowdown(s.replicas[jb.replica].busy-1)
			if f := s.slow(g.now, int(jb.replica)); f != 1 {
				d = clampSample(float64(d) * f)
			}
			jb.doneAt = g.now + d
			g.q.push(jb.doneAt, gWorkDone, j, jb.gen)
			return
		}
		if g.startStep(j, st) {
			return
		}
		jb = &g.jobs[j]
		jb.step++
	}
}

// slowdown returns what busy requests in service add to a service time
// that starts now (see world.slowdown).
func (s *service) slowdown(busy int) time.Duration {
	sd := s.cfg.Slowdown
	if sd == 0 || busy <= 0 {
		return 0
	}
	if time.Duration(busy) > maxSample/sd {
		return maxSample
	}
	return sd * time.Duration(busy)
}

// workDone is job j's local work ending now.
func (g *graph) workDone(j int32) {
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	waiting, same := g.waiting(j)
	cl := &g.calls[jb.call]
	dup := same && cl.flags&flagProcessed != 0
	if same {
		cl.flags |= flagProcessed
	}
	late := g.now > jb.outer
	s.count(r, func(x *results.ServiceRun) {
		x.Processed++
		if dup {
			x.Duplicates++
		}
		if !waiting {
			x.Wasted++
		}
		if late {
			x.LateWork++
		}
	})
	if jb.fleet {
		g.run.Processed++
		if dup {
			g.run.Duplicates++
		}
		if !waiting {
			g.run.Wasted++
		}
	}
	jb.step++
	g.proceed(j)
}

// endJob ends job j with the answer o (a success, or a 503 when a
// downstream call failed): its calls are cancelled, its slot freed.
func (g *graph) endJob(j int32, o strategies.Outcome) {
	g.cancelCalls(j)
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	if p := s.cfg.ResponseLoss; o == strategies.Success && p > 0 && g.rFault.Float64() < p {
		s.count(r, func(x *results.ServiceRun) { x.Lost++ })
		if jb.fleet {
			g.run.Lost++
		}
		o = strategies.Reset
	}
	s.replicas[r].busy--
	s.busy--
	// The replica takes its next job as the slot frees, before the
	// answer reaches anyone or what its caller then does (cancel a copy
	// queued here) reaches the replica. With a network, the answer is on
	// its way (its delay drawn first, as it always was) when the next
	// job starts; without one, it arrives at once, so it is sent after.
	if !g.latency.zero() {
		g.answer(j, o)
		s.startQueued(g, r)
		return
	}
	s.startQueued(g, r)
	g.answer(j, o)
}

// expireJob drops job j, whose propagated deadline has passed while it
// was served: its caller has given up, so the rest of its work is not
// done.
func (g *graph) expireJob(j int32) {
	g.cancelCalls(j)
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	s.count(r, func(x *results.ServiceRun) { x.DeadlineDropped++ })
	s.replicas[r].busy--
	s.busy--
	g.freeJob(j)
	s.startQueued(g, r)
}

// startQueued starts queued jobs of replica r while it has free slots,
// in the service's queue discipline.
//
// A job started may end at once (its first call refused by an open
// breaker), and end calls startQueued again: that call returns, and this
// loop takes the next job, so that a long queue does not make as deep a
// recursion.
func (s *service) startQueued(g *graph, r int32) {
	rep := &s.replicas[r]
	if rep.starting {
		return
	}
	rep.starting = true
	for s.replicas[r].busy < s.capacity(g.now, int(r)) {
		j, ok := s.take(g, r)
		if !ok {
			break
		}
		if q := &s.replicas[r].queue; q.len() > 0 {
			// Waiting, its call has left the cache; it is likely next.
			next := q.front()
			if s.order == lifo {
				next = q.back()
			}
			prefetch(unsafe.Pointer(&g.calls[g.jobs[next].call]))
		}
		g.start(j)
	}
	s.replicas[r].starting = false
}
