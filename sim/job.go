package sim

import (
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// newJob makes the job of call c's attempt tag, sent at sentAt, at
// replica r of service svc.
func (g *graph) newJob(c, tag, svc, r int32, sentAt time.Duration) int32 {
	var j int32
	if n := len(g.freeJobs); n > 0 {
		j = g.freeJobs[n-1]
		g.freeJobs = g.freeJobs[:n-1]
	} else {
		j = int32(len(g.jobs))
		push(&g.jobs, job{})
		if g.propagate {
			push(&g.jobDeadlines, noDeadline)
		}
		if g.observes {
			push(&g.jobSends, jobSend{})
		}
		for range g.maxGroup {
			push(&g.tallies, tally{})
		}
	}
	cl := &g.calls[c]
	jb := &g.jobs[j]
	// Field by field: every one is set (a job's gen is kept).
	jb.call, jb.tag, jb.id, jb.fleet = c, tag, g.callID(c), cl.fleetCall()
	jb.svc, jb.replica, jb.step, jb.pending, jb.calls = svc, r, 0, 0, -1
	jb.queuedAt, jb.doneAt, jb.state, jb.timed = 0, 0, jobSent, false
	until := g.untilSent(cl, c, sentAt)
	if jb.fleet {
		jb.outer = until
	} else {
		jb.outer = g.links[c].outer
	}
	if g.propagate {
		g.jobDeadlines[j] = until
	}
	if g.observes {
		g.jobSends[j] = jobSend{edge: g.edgeOf(c), sender: cl.sender, sentAt: sentAt}
	}
	return j
}

// observesCopies reports whether a percentile hedge delay of one of
// policies observes the latency of every copy: whether jobs keep how
// they were sent (jobSend).
func observesCopies(policies []*strategies.Policy) bool {
	for _, p := range policies {
		if h := p.Hedge; h != nil && h.Percentile > 0 {
			return true
		}
	}
	return false
}

// jobSideBytes returns the bytes a job takes beside it (its deadline, how
// it was sent) in a run of a strategy with deadline propagation
// (propagate) and policies.
func jobSideBytes(propagate bool, policies []*strategies.Policy) int64 {
	var n int64
	if propagate {
		n += int64(unsafe.Sizeof(time.Duration(0)))
	}
	if observesCopies(policies) {
		n += int64(unsafe.Sizeof(jobSend{}))
	}
	return n
}

// jobDeadline returns job j's propagated deadline (noDeadline without
// deadline propagation).
func (g *graph) jobDeadline(j int32) time.Duration {
	if g.jobDeadlines == nil {
		return noDeadline
	}
	return g.jobDeadlines[j]
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
	same = g.sameCall(jb, cl)
	return same && g.live(cl, jb.call, jb.tag), same
}

// sameCall reports whether call cl, in job jb's call's place, is still
// the one that sent it.
func (g *graph) sameCall(jb *job, cl *call) bool {
	return g.callID(jb.call) == jb.id && cl.state != stFree
}

// answer frees job j and sends its answer o to its caller.
func (g *graph) answer(j int32, o strategies.Outcome) {
	jb := &g.jobs[j]
	c, tag, timed := jb.call, jb.tag, jb.timed
	var send jobSend
	observe := g.observes && o == strategies.Success
	if observe {
		send = g.jobSends[j]
		h := g.edges[send.edge].policy.Hedge
		observe = h != nil && h.Percentile > 0
	}
	g.freeJob(j)
	if !observe {
		g.reply(c, tag, o, timed)
		return
	}
	e, sender, sentAt := &g.edges[send.edge], send.sender, send.sentAt
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
	k := g.arrival(s, r, jb.fleet)
	waiting, same := g.waiting(j)
	cl := &g.calls[jb.call]
	if waiting {
		g.arrivedAt(cl, jb.call, jb.tag, k)
	} else if e := &g.edges[g.edgeOf(jb.call)]; same && e.policy.Hedge != nil && e.policy.Hedge.Cancel {
		g.freeJob(j) // a hedged copy cancelled on its way: dropped as it arrives
		return
	}
	jb.queuedAt = g.now
	if o, ok := g.turnAway(s, r, jb.call, k, jb.fleet, waiting, same); ok {
		if o == strategies.Timeout { // no answer: the caller gives up
			g.timeJob(j)
			g.freeJob(j)
			return
		}
		g.answer(j, o)
		return
	}
	g.admit(j)
}

// arriveAtOnce is call c's (cl's) attempt, just sent on edge e, reaching
// replica r of service s at once (no network delay, no hedged copies):
// what atService does, but an attempt turned away is answered without a
// job.
func (g *graph) arriveAtOnce(c int32, cl *call, e *edge, s *service, r int32) {
	fleet := cl.fleetCall()
	k := g.arrival(s, r, fleet)
	g.arrivedAt(cl, c, cl.tag, k)
	if o, ok := g.turnAway(s, r, c, k, fleet, true, true); ok {
		s.ended++
		if o == strategies.Timeout {
			g.expire(c, cl.tag)
			return
		}
		// Answered as it was sent, without a network delay: its
		// caller waits for it still (try makes no attempt past its
		// deadline, and a timeout ends after the attempt's start), so
		// the answer's response is its outcome.
		g.outcomeAt(c, e, s, o)
		return
	}
	if g.waiters && !s.room(g.now, r) {
		g.enqueue(s, r, waiter{ref: c, tag: cl.tag, queuedAt: g.now})
		g.expire(c, cl.tag)
		return
	}
	j := g.newJob(c, cl.tag, s.index, r, g.now)
	g.jobs[j].queuedAt = g.now
	g.admit(j)
}

// arrival counts an attempt reaching replica r of service s now, and
// returns the bucket it arrived in.
func (g *graph) arrival(s *service, r int32, fleet bool) int {
	k := g.current()
	s.count(r, func(x *results.ServiceRun) { x.Attempts++ })
	s.bucket(r, k, func(b *results.Bucket) { b.Attempts++ })
	if fleet {
		g.run.Attempts++
		g.run.Series[k].Attempts++
	}
	return k
}

// turnAway returns the answer of replica r of service s to call c's
// attempt arriving now (in bucket k) if it is not to be served: refused
// or failed by an outage (Timeout for one that does not answer),
// throttled, an idempotent repeat, a random failure, or a full queue.
// waiting says whether its caller still waits for it; same whether the
// call is still the one that sent it.
func (g *graph) turnAway(s *service, r, c int32, k int, fleet, waiting, same bool) (strategies.Outcome, bool) {
	if o, down := s.outage(g.now, int(r)); down {
		switch o.mode {
		case downRefuse:
			return strategies.Refused, true
		case downError:
			return strategies.ServerError, true
		default:
			return strategies.Timeout, true
		}
	}
	cfg := s.cfg
	if cfg.RateLimit != nil && !s.takeToken(g.now, int(r)) {
		s.count(r, func(x *results.ServiceRun) { x.Throttled++ })
		s.bucket(r, k, func(b *results.Bucket) { b.Throttled++ })
		if fleet {
			g.run.Throttled++
			g.run.Series[k].Throttled++
		}
		if waiting {
			g.hints[c] = s.hint(g.now, int(r))
		}
		return strategies.TooManyRequests, true
	}
	if cfg.Idempotency && same && g.calls[c].flags&flagStarted != 0 {
		return cachedOutcome(g.calls[c].flags), true
	}
	if p := cfg.FailureProbability; p > 0 && g.rFault.Float64() < p {
		if waiting && cfg.FailurePushback != nil {
			g.hints[c] = failureHint
		}
		return strategies.ServerError, true
	}
	if rep := &s.replicas[r]; !s.room(g.now, r) && s.limit >= 0 && rep.queue.len() >= s.limit {
		s.count(r, func(x *results.ServiceRun) { x.Rejected++ })
		s.bucket(r, k, func(b *results.Bucket) { b.Rejected++ })
		if fleet {
			g.run.Rejected++
			g.run.Series[k].Rejected++
		}
		return strategies.ServerError, true
	}
	return 0, false
}

// room reports whether replica r of s can start an attempt arriving now:
// a slot is free and no job waits before it. (A queued job goes first:
// an attempt made while a job's answer is handled, its caller's next
// call sent at once, may find a slot free before the queue is served.)
func (s *service) room(now time.Duration, r int32) bool {
	rep := &s.replicas[r]
	return rep.busy < s.capacity(now, int(r)) && rep.queue.len() == 0
}

// admit starts job j, arrived now and not turned away, or queues it.
func (g *graph) admit(j int32) {
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	r := jb.replica
	if s.room(g.now, r) {
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
	g.enqueue(s, r, waiter{ref: j, queuedAt: g.now})
	jb.state = jobQueued
	g.timeJob(j)
}

// waiter is an attempt in a replica's queue: its job (ref), or where
// the graph has waiters, its call (ref) and tag, its job made as it
// starts. A graph has waiters where its queued attempts can do without
// a job: every call is a request of the fleet (its place never reused),
// none hedged, none answered by a cache (whose hit marks the call), and
// with no network delay (an attempt's sending is its arrival, queuedAt,
// from which its job's deadline follows); then the queue holds 16 bytes
// an attempt, not a job's 64, which an unbounded queue of stale
// attempts makes count.
type waiter struct {
	ref, tag int32
	queuedAt time.Duration
}

// enqueue puts w at the back of replica r's queue.
func (g *graph) enqueue(s *service, r int32, w waiter) {
	s.queueChange(g.now, r, 1)
	s.replicas[r].queue.push(w)
}

// jobOf returns the job of waiter w, taken from replica r of service
// svc's queue to start: made now where the graph has waiters.
func (g *graph) jobOf(svc, r int32, w waiter) int32 {
	if !g.waiters {
		return w.ref
	}
	j := g.newJob(w.ref, w.tag, svc, r, w.queuedAt)
	jb := &g.jobs[j]
	jb.queuedAt, jb.state, jb.timed = w.queuedAt, jobQueued, true
	return j
}

// answerWaiter answers waiter w, taken from replica r's queue, with o
// (a 503 that sheds it), without serving it.
func (g *graph) answerWaiter(s *service, w waiter, o strategies.Outcome) {
	if !g.waiters {
		g.answer(w.ref, o)
		return
	}
	s.ended++
	g.reply(w.ref, w.tag, o, true)
}

// cachedOutcome is an idempotent service's answer to a repeat of a call
// whose key it has seen: the stored success once the first processing
// is done, and while it is still going on a 503 that asks the caller to
// come back (the call is not processed twice either way).
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
	if g.propagate && g.now >= g.jobDeadlines[j] {
		s.count(r, func(x *results.ServiceRun) { x.DeadlineDropped++ })
		g.timeJob(j) // its caller gives up now, if not already
		g.freeJob(j) // no answer
		return false
	}
	if s.cfg.DropExpired {
		if waiting, _ := g.waiting(j); !waiting {
			g.freeJob(j)
			return false
		}
	}
	cl := &g.calls[jb.call]
	same := g.sameCall(jb, cl)
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
	if g.propagate && g.jobDeadlines[j] < g.horizon {
		g.q.push(g.jobDeadlines[j], gJobExpired, j, jb.gen)
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
		st := &s.steps[jb.step]
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
// that starts now: Slowdown for each, at most maxSample in all.
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

// prefetchQueued starts loading what the attempts likely to start next
// at replica r read: waiting, they have left the cache. The call of the
// next (whose job, where it has one, was prefetched as the one before it
// started), and the job after it.
func (s *service) prefetchQueued(g *graph, r int32) {
	q := &s.replicas[r].queue
	n := q.len()
	if !canPrefetch || n == 0 {
		return
	}
	next, after := q.front(), 1
	if s.order == lifo {
		next, after = q.at(n-1), n-2
	}
	if g.waiters {
		prefetch(unsafe.Pointer(&g.calls[next.ref]))
		return
	}
	prefetch(unsafe.Pointer(&g.calls[g.jobs[next.ref].call]))
	if n > 1 {
		prefetch(unsafe.Pointer(&g.jobs[q.at(after).ref]))
	}
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
		w, ok := s.take(g, r)
		if !ok {
			break
		}
		s.prefetchQueued(g, r)
		g.start(g.jobOf(s.index, r, w))
	}
	s.replicas[r].starting = false
}
