package sim

import (
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// edge is a caller's way to a service, with the policy its calls retry
// by: the fleet's toward the target, or one call of a service's.
type edge struct {
	policy *strategies.Policy
	caller int // the calling service, -1 for the fleet
	callee int
	cfg    *scenarios.Call // nil for the fleet's
	// senders hold each caller's breaker, budget and throttle: per
	// replica of the calling service (per sender of the fleet); nil
	// without any. groups hands out the budgets they share.
	senders []strategies.Sender
	groups  *strategies.Groups
	// ahead: the fleet's edge, whose requests' next attempt is made as
	// soon as its backoff is decided (see graph.tryAhead)
	ahead bool
}

func newEdge(p *strategies.Policy, caller, callee int, cfg *scenarios.Call, replicas int) edge {
	e := edge{policy: p, caller: caller, callee: callee, cfg: cfg, groups: strategies.NewGroups(p)}
	if caller >= 0 && p.PerSender() {
		e.senders = make([]strategies.Sender, replicas)
		for i := range e.senders {
			e.groups.Join(&e.senders[i], i)
		}
	}
	return e
}

func (e *edge) sender(i int32) *strategies.Sender {
	if e.senders == nil {
		return nil
	}
	return &e.senders[i]
}

// call is one caller's request to a service, retried by its edge's
// policy: a request of the fleet (flagFleet), or one copy of a
// downstream call made by a job. It is 32 bytes, two to a cache line:
// a run of a million requests holds a million calls and touches them in
// no particular order. What an attempt's events do not read (when it was created),
// and what only some graphs need, lives in slices beside the calls
// (see sides), allocated only then.
type call struct {
	sentAt   time.Duration // when the attempt in flight was sent
	attempts int32         // its strategies.Request's Attempts
	backoffK int32         // and Backoff.K (see graph.retryState)
	tag      int32         // the attempt in flight; never reset, so events of an earlier call in this place are stale
	sender   int32         // its caller's index among the edge's senders
	arrived  int32         // the bucket in which the attempt in flight reached its service, -1 if it has not
	state    uint8
	reason   strategies.Reason
	flags    uint8 // flagFleet, flagCached; flagStarted, flagProcessed: at the service called
}

// The flags of a call beyond a request's.
const (
	// flagFleet marks a call that is a request of the fleet.
	flagFleet = flagWorker << 1
	// flagCached marks an attempt in flight that the cache answers.
	flagCached = flagWorker << 2
)

// sides are the parts of the calls that an attempt's events do not read
// (when each was made) or that only some graphs need (nil where the
// graph does not), a slice each, indexed as the calls are.
type sides struct {
	created []time.Duration     // when each call was made
	copies  []callCopies        // when an edge hedges
	memory  []retryMemory       // when a policy reads more than its attempts and backoff step
	permits []strategies.Permit // with a breaker
	links   []callLink          // when a service calls others
	keys    []int32             // with a cache: the key each call reads
	// with a service of model occ: when each call's attempt in flight
	// reads the row
	reads []time.Duration
	// with the fleet's dispatchers: the request queued after each for
	// a worker of its sender's, -1 for none (see Pool)
	next []int32
	// where a service has several replicas: the replica of each call's
	// attempt in flight (0 without)
	replicas []int16
	// with a rate limit or a failure pushback: the last 429's
	// Retry-After header (see retryAfterHeader) plus 1 (0: none), or
	// failureHint
	hints []uint32
}

// sideNeeds says which of the sides a graph's calls need: from its
// services as deployed, the policies of its edges (the fleet's first),
// and whether the fleet has dispatchers. The run allocates them
// (newSides) and the memory estimate counts them (bytes) by it.
type sideNeeds struct {
	copies, memory, permits, links, keys, reads, next, replicas, hints bool
}

func needsOf(deployed []scenarios.Service, policies []*strategies.Policy, dispatchers bool) sideNeeds {
	n := sideNeeds{next: dispatchers}
	for _, p := range policies {
		n.copies = n.copies || p.Hedge != nil
		n.memory = n.memory || p.Reads() != 0
		n.permits = n.permits || p.Breaker != nil
	}
	for i := range deployed {
		svc := &deployed[i]
		n.links = n.links || len(svc.Calls) > 0
		n.keys = n.keys || svc.Cache != nil
		n.reads = n.reads || svc.Model == scenarios.ModelOCC
		n.replicas = n.replicas || svc.Replicas > 1
		n.hints = n.hints || svc.RateLimit != nil || svc.FailurePushback != nil
	}
	return n
}

// newSides returns the sides n needs, each with room for capacity calls
// (0: they grow as calls are made).
func (n sideNeeds) newSides(capacity int) sides {
	return sides{
		created:  hugeSlice[time.Duration](capacity),
		copies:   sideOf[callCopies](n.copies, capacity),
		memory:   sideOf[retryMemory](n.memory, capacity),
		permits:  sideOf[strategies.Permit](n.permits, capacity),
		links:    sideOf[callLink](n.links, capacity),
		keys:     sideOf[int32](n.keys, capacity),
		reads:    sideOf[time.Duration](n.reads, capacity),
		next:     sideOf[int32](n.next, capacity),
		replicas: sideOf[int16](n.replicas, capacity),
		hints:    sideOf[uint32](n.hints, capacity),
	}
}

// sideOf returns a side with room for capacity calls, nil when it is not
// needed.
func sideOf[T any](needed bool, capacity int) []T {
	if !needed {
		return nil
	}
	return hugeSlice[T](capacity)
}

// bytes returns what the sides n needs take for one call.
func (n sideNeeds) bytes() int64 {
	b := int64(unsafe.Sizeof(time.Duration(0))) // created
	for _, side := range []struct {
		needed bool
		bytes  uintptr
	}{
		{n.copies, unsafe.Sizeof(callCopies{})},
		{n.memory, unsafe.Sizeof(retryMemory{})},
		{n.permits, unsafe.Sizeof(strategies.Permit{})},
		{n.links, unsafe.Sizeof(callLink{})},
		{n.keys, 4},
		{n.reads, 8},
		{n.next, 4},
		{n.replicas, 2},
		{n.hints, 4},
	} {
		if side.needed {
			b += int64(side.bytes)
		}
	}
	return b
}

// callLink is what a downstream call knows of the job that made it.
type callLink struct {
	deadline time.Duration // the propagated bound on every attempt; noDeadline without
	outer    time.Duration // the deadline of the fleet's attempt above it
	id       uint32        // one more for every call made: tells a call from a later one in its place
	job      int32         // the job waiting for it
	sibling  int32         // the next call of the same job, -1 for none
	slot     int16         // its call's tally in the job's step
	edge     int16         // the graph's edge it is made on (0, the fleet's, for a request of the fleet)
}

// edgeOf returns the graph's edge call c is made on.
func (g *graph) edgeOf(c int32) int32 {
	if g.links == nil {
		return 0
	}
	return int32(g.links[c].edge)
}

// replicaOf returns the replica of call c's attempt in flight.
func (g *graph) replicaOf(c int32) int32 {
	if g.replicas == nil {
		return 0
	}
	return int32(g.replicas[c])
}

// sentTo notes that call c's (cl's) attempt in flight went to replica r
// of its service (not to the cache).
func (g *graph) sentTo(c int32, cl *call, r int32) {
	if g.replicas != nil {
		g.replicas[c] = int16(r)
	}
	cl.flags &^= flagCached
}

// fleetCall reports whether call cl is a request of the fleet.
func (cl *call) fleetCall() bool { return cl.flags&flagFleet != 0 }

// addCall appends a call, and its sides, and returns its index. It may
// move the calls: a *call handed from function to function along an
// attempt's path (try, sendCopy, arriveAtOnce, outcomeAt, decide) is
// taken anew after anything that can make a call (a job's step, whose
// calls newCall makes).
func (g *graph) addCall() int32 {
	c := int32(len(g.calls))
	push(&g.calls, call{})
	push(&g.created, g.now)
	if g.copies != nil {
		push(&g.copies, callCopies{})
	}
	if g.memory != nil {
		push(&g.memory, retryMemory{})
	}
	if g.permits != nil {
		push(&g.permits, strategies.Permit{})
	}
	if g.links != nil {
		push(&g.links, callLink{deadline: noDeadline, outer: noDeadline, job: -1, sibling: -1})
	}
	if g.keys != nil {
		push(&g.keys, -1)
	}
	if g.reads != nil {
		push(&g.reads, 0)
	}
	if g.next != nil {
		push(&g.next, -1)
	}
	if g.replicas != nil {
		push(&g.replicas, 0)
	}
	if g.hints != nil {
		push(&g.hints, 0)
	}
	return c
}

// retryState puts call c's (cl's) strategies.Request together, from the
// parts the graph keeps, in g.retry, and returns it for a call to its
// policy; setRetryState keeps what the call changed. (A Request on the
// stack would escape to the heap through the policy's interfaces: an
// allocation per call.)
func (g *graph) retryState(c int32, cl *call) *strategies.Request {
	q := &g.retry
	*q = strategies.Request{Attempts: cl.attempts, Backoff: strategies.BackoffState{K: cl.backoffK}}
	if g.memory != nil {
		m := &g.memory[c]
		q.First, q.Backoff.Prev, q.Cost = m.first, m.prev, m.cost
	}
	return q
}

// setRetryState keeps g.retry as call c's (cl's) strategies.Request.
func (g *graph) setRetryState(c int32, cl *call) {
	q := &g.retry
	cl.attempts, cl.backoffK = q.Attempts, q.Backoff.K
	if g.memory != nil {
		g.memory[c] = retryMemory{first: q.First, prev: q.Backoff.Prev, cost: q.Cost}
	}
}

// deadline returns the propagated bound on every attempt of call c;
// noDeadline for a request of the fleet.
func (g *graph) deadline(c int32) time.Duration {
	if g.links == nil || g.calls[c].fleetCall() {
		return noDeadline
	}
	return g.links[c].deadline
}

// until returns when the caller of call c's attempt in flight gives it
// up: its timeout, or its propagated deadline if that comes first;
// noDeadline for the cache's answer.
func (g *graph) until(cl *call, c int32) time.Duration {
	return g.untilSent(cl, c, cl.sentAt)
}

// untilSent is until for call c's attempt sent at sentAt.
func (g *graph) untilSent(cl *call, c int32, sentAt time.Duration) time.Duration {
	if cl.flags&flagCached != 0 {
		return noDeadline
	}
	until := noDeadline
	if t := g.edges[g.edgeOf(c)].policy.Timeout; t > 0 {
		until = sentAt + t
	}
	if g.propagate {
		until = min(until, g.deadline(c))
	}
	return until
}

// The states of a call beyond a request's.
const (
	stFree      = stDead + 1 // its job has ended: its place is reused
	stCancelled = stDead + 2 // final: its call had its quorum without it
)

// newCall makes a call on edge e for job j's tally slot, at now.
func (g *graph) newCall(e int32, j int32, slot int) int32 {
	var c int32
	if n := len(g.freeCalls); n > 0 {
		c = g.freeCalls[n-1]
		g.freeCalls = g.freeCalls[:n-1]
		if g.memory != nil {
			g.memory[c] = retryMemory{}
		}
	} else {
		c = g.addCall()
	}
	jb := &g.jobs[j]
	cl := &g.calls[c]
	*cl = call{tag: cl.tag, sender: jb.replica, arrived: -1, state: stWaiting}
	g.created[c] = g.now
	g.links[c] = callLink{id: g.nextID(), job: j, edge: int16(e), slot: int16(slot), deadline: g.jobDeadline(j), outer: jb.outer, sibling: jb.calls}
	if g.keys != nil {
		g.keys[c] = g.key(g.edges[e].callee)
	}
	jb.calls = c
	return c
}

// nextID numbers the calls.
func (g *graph) nextID() uint32 {
	g.ids++
	return g.ids
}

// try makes call c's (cl's) next attempt at now, through its edge's
// breaker, to the replica the callee's balancer picks.
func (g *graph) try(c int32, cl *call) {
	ei := g.edgeOf(c)
	e := &g.edges[ei]
	if g.fleet.workers > 0 && cl.fleetCall() && cl.flags&flagWorker == 0 {
		if !g.fleet.pools[cl.sender].Acquire(c, g.fleet.workers, g.next) {
			cl.state = stQueued
			return
		}
		cl.flags |= flagWorker
	}
	if g.propagate && g.now >= g.deadline(c) {
		g.decide(c, cl, strategies.Decision{Action: strategies.DeadLetter, Reason: strategies.MaxElapsed})
		return
	}
	s := &g.services[e.callee]
	if s.cache != nil && g.lookup(s, c) {
		return
	}
	permit, d, ok := e.policy.Begin(e.sender(cl.sender), g.retryState(c, cl), g.now, g.rRetry)
	g.setRetryState(c, cl)
	if !ok {
		if cl.fleetCall() {
			switch d.Local {
			case strategies.ShortCircuit:
				g.run.ShortCircuited++
				g.run.Series[g.current()].ShortCircuited++
			case strategies.Rejected:
				g.run.ClientRejected++
			case strategies.RateWait:
				g.run.RateLimited++
			}
		}
		g.fleet.free(g, c, d)
		g.decide(c, cl, d)
		return
	}
	if g.permits != nil {
		g.permits[c] = permit
	}
	if g.hints != nil {
		g.hints[c] = 0 // an earlier attempt's hint is none for this one
	}
	cl.state = stInFlight
	cl.arrived = -1
	if g.copies != nil {
		// The first hedge is scheduled before the first copy is sent,
		// which may be answered at once.
		g.copies[c] = callCopies{base: cl.tag + 1}
		g.scheduleHedge(c)
	}
	g.sendCopy(c, cl, ei, s)
}

// tryAhead makes fleet request c's next attempt, due at t when its
// backoff ends, now, as it would be made at t. That is where nothing
// between now and t can change what the attempt does: no one cancels a
// request of the fleet, its policy keeps no state of its senders' (a
// breaker, budget or throttle), it waits for no dispatcher's worker, and
// it calls a service of model occ, whose attempts change nothing until
// their write (see occ.go). Then the backoff's end is no event. The
// requests waiting for their backoff are counted as though it were.
func (g *graph) tryAhead(c int32, t time.Duration) {
	g.countAt(t, -1, 0)
	now := g.now
	g.now = t
	g.try(c, &g.calls[c])
	g.now = now
}

// sampleOf returns the bucket whose sample is the first to see what
// happens at t (t not before the event being handled, whose time is the
// clock's but while something is done ahead: see tryAhead).
func (g *graph) sampleOf(t time.Duration) int {
	k := g.sampled
	if t >= g.nextSample {
		k += 1 + int((t-g.nextSample)/g.bucket)
	}
	return k
}

// countAt changes the fleet's requests in backoff by delayed and its
// dead letters by dead at t: at once where no sample falls between the
// event being handled and t, else for the samples from t on.
func (g *graph) countAt(t time.Duration, delayed, dead int) {
	if t < g.nextSample {
		g.fleet.delayed += delayed
		g.fleet.dead += dead
		return
	}
	g.countLater(t, delayed, dead)
}

// countLater is countAt for any t; countAt calls it where a sample falls
// between the event being handled and t (a call, kept out of countAt so
// that countAt is inlined).
func (g *graph) countLater(t time.Duration, delayed, dead int) {
	k := g.sampleOf(t)
	switch {
	case k == g.sampled:
		g.fleet.delayed += delayed
		g.fleet.dead += dead
	case k < len(g.run.Series):
		if g.later == nil {
			g.later = make([]sampleChange, len(g.run.Series))
		}
		g.later[k].delayed += int32(delayed)
		g.later[k].dead += int32(dead)
	}
}

// sendCopy sends a copy of call c's (cl's) attempt in flight now (its
// first, or a hedge) on its edge ei to the replica the callee, s, picks.
func (g *graph) sendCopy(c int32, cl *call, ei int32, s *service) {
	g.run.Edges[ei].Attempts++
	cl.tag++
	cl.sentAt = g.now
	if s.occ {
		g.occSend(c)
		return
	}
	r := s.pick(g)
	g.sentTo(c, cl, r)
	s.replicas[r].outstanding++
	if g.latency.zero() && g.copies == nil {
		g.arriveAtOnce(c, cl, &g.edges[ei], s, r)
		return
	}
	j := g.newJob(c, cl.tag, s.index, r, g.now)
	if g.copies != nil {
		cp := &g.copies[c]
		k := cp.sent
		cp.sentAt[k], cp.until[k], cp.replica[k], cp.job[k], cp.jobGen[k], cp.arrived[k] = g.now, g.until(cl, c), r, j, g.jobs[j].gen, -1
		cp.sent++
	}
	// The caller's timeout is set when the attempt reaches its replica
	// and its answer may come too late (see expire); now if it arrives
	// after that time.
	if g.latency.zero() {
		g.atService(j)
		return
	}
	at := g.now + g.latency.sample(g.rNet)
	if at > g.untilOf(cl, c, cl.tag) {
		g.timeJob(j)
	}
	g.q.push(at, gAtService, j, g.jobs[j].gen)
}

// expire makes the caller of attempt tag of call c give it up when its
// time is up, unless an answer comes first. It is called once for an
// attempt, when it reaches its replica and its answer may come after
// that time: not for an answer that comes in time at once, so that an
// attempt served without delay costs no event for its timeout.
func (g *graph) expire(c, tag int32) {
	cl := &g.calls[c]
	if !g.live(cl, c, tag) {
		return
	}
	if until := g.untilOf(cl, c, tag); until < g.horizon {
		g.q.push(max(until, g.now), gTimeout, c, tag)
	}
}

// key draws the key of a call to service svc: -1 when no cache fronts
// it.
func (g *graph) key(svc int) int32 {
	c := g.services[svc].cache
	if c == nil {
		return -1
	}
	return int32(g.rCache.IntN(c.cfg.Keys))
}

// lookup looks call c's key up in the cache in front of service s, and
// on a hit answers the call from it, after a round trip: true then.
func (g *graph) lookup(s *service, c int32) bool {
	cl := &g.calls[c]
	k := g.current()
	s.stats.CacheLookups++
	s.stats.Cache[k].Lookups++
	if !s.cache.Lookup(g.now, g.keys[c]) {
		return false
	}
	s.stats.CacheHits++
	s.stats.Cache[k].Hits++
	cl.state = stInFlight
	cl.tag++
	cl.sentAt = g.now
	cl.arrived = -1
	cl.flags |= flagCached
	g.q.push(g.now+g.latency.sample(g.rNet)+g.latency.sample(g.rNet), gCacheHit, c, cl.tag)
	return true
}

// reply sends the answer o to attempt tag of call c: it reaches the
// caller after the network's return hop, at once without one. timed
// says whether the caller's timeout is set already (see expire): if not,
// and the answer would come too late, it is set now.
func (g *graph) reply(c, tag int32, o strategies.Outcome, timed bool) {
	if g.latency.zero() {
		g.response(c, tag, o)
		return
	}
	g.replyAt(c, tag, o, timed, g.now+g.latency.sample(g.rNet))
}

// replyAt is reply with the answer's arrival, at, drawn already.
func (g *graph) replyAt(c, tag int32, o strategies.Outcome, timed bool, at time.Duration) {
	if g.latency.zero() {
		g.response(c, tag, o)
		return
	}
	if !timed && at > g.untilOf(&g.calls[c], c, tag) {
		g.expire(c, tag)
	}
	g.q.push(at, gResponse+uint8(o), c, tag)
}

// response is the answer o to attempt tag of call c reaching its caller
// now; an answer after the caller gave up is dropped.
func (g *graph) response(c, tag int32, o strategies.Outcome) {
	cl := &g.calls[c]
	if !g.live(cl, c, tag) || g.now > g.untilOf(cl, c, tag) {
		return
	}
	if g.copies != nil && cl.flags&flagCached == 0 {
		g.copyAnswered(c, tag, o)
		return
	}
	g.outcome(c, o)
}

// outcome is the caller of call c learning that its attempt in flight
// came to o.
func (g *graph) outcome(c int32, o strategies.Outcome) {
	e := &g.edges[g.edgeOf(c)]
	g.outcomeAt(c, e, &g.services[e.callee], o)
}

// outcomeAt is outcome for a call on edge e, to service s.
func (g *graph) outcomeAt(c int32, e *edge, s *service, o strategies.Outcome) {
	cl := &g.calls[c]
	g.copyCounted(c, cl, s, o)
	res := strategies.Result{Outcome: o}
	var hint uint32
	if g.hints != nil {
		hint, g.hints[c] = g.hints[c], 0
	}
	switch {
	case o == strategies.TooManyRequests && hint > 0:
		res.RetryAfter = retryAfterWait(int64(hint-1), s.format, g.now)
		res.HasRetryAfter = true
		if h := s.cfg.RateLimit.Pushback; h != nil {
			res.Pushback, res.HasPushback = *h, true
		}
	case o == strategies.ServerError && hint == failureHint:
		res.Pushback, res.HasPushback = *s.cfg.FailurePushback, true
	}
	if cl.fleetCall() && o != strategies.Success {
		g.run.Series[g.current()].Failed++
	}
	var d strategies.Decision
	var permit strategies.Permit
	if g.permits != nil {
		permit = g.permits[c]
	}
	if sd := e.sender(cl.sender); cl.fleetCall() && g.fleet.rates.throttle != nil {
		r0, on0 := g.fleet.rates.rate(sd)
		d = e.policy.Done(sd, g.retryState(c, cl), permit, g.now, &res, g.rRetry)
		g.fleet.rates.changed(sd, r0, on0)
	} else {
		d = e.policy.Done(sd, g.retryState(c, cl), permit, g.now, &res, g.rRetry)
	}
	g.setRetryState(c, cl)
	if d.Reason == strategies.BudgetDenied && cl.fleetCall() && e.policy.Budget.HeldByGroup() {
		g.run.SharedBudgetDenied++
	}
	cl.state = stWaiting
	g.fleet.free(g, c, d)
	g.decide(c, cl, d)
}

// copyCounted counts the answer o to call c's (cl's) copy in flight (its
// replica cl.replica, its arrival cl.arrived) at service s: no longer
// outstanding there, seen by outlier detection, classified in its
// bucket, and a success fills the cache.
func (g *graph) copyCounted(c int32, cl *call, s *service, o strategies.Outcome) {
	r := g.replicaOf(c)
	s.replicas[r].outstanding--
	s.observe(g.now, r, o)
	if cl.arrived >= 0 {
		k := min(int(cl.arrived), len(g.run.Series)-1)
		s.bucket(r, k, func(b *results.Bucket) { classify(b, o) })
		if cl.fleetCall() {
			classify(&g.run.Series[k], o)
		}
		if o == strategies.Success {
			s.count(r, func(r *results.ServiceRun) { r.OK++ })
		}
	}
	if o == strategies.Success && s.cache != nil && g.keys[c] >= 0 {
		s.cache.Fill(g.now, g.keys[c], g.rCache)
	}
}

// classify counts the result o of an attempt in the bucket it arrived
// in.
func classify(b *results.Bucket, o strategies.Outcome) {
	switch o {
	case strategies.Success:
		b.OK++
	case strategies.Timeout:
		b.NotOK++
		b.NotOKTimeout++
	default:
		b.NotOK++
	}
}

// decide carries out the decision d about call c (cl).
func (g *graph) decide(c int32, cl *call, d strategies.Decision) {
	switch d.Action {
	case strategies.Deliver:
		cl.state = stDelivered
		if cl.fleetCall() {
			g.fleet.delivered(g, c)
		} else {
			g.callDone(c, true)
		}
	case strategies.Retry:
		if g.propagate && g.now+d.Wait >= g.deadline(c) {
			// The retry would start after the deadline: no one would
			// wait for its answer.
			g.decide(c, cl, strategies.Decision{Action: strategies.DeadLetter, Reason: strategies.MaxElapsed})
			return
		}
		cl.state = stWaiting
		if cl.fleetCall() {
			g.countAt(g.now, 1, 0)
			// Only the fleet's edge, 0, may try ahead.
			if t := g.now + d.Wait; g.edges[0].ahead && t < g.horizon {
				g.tryAhead(c, t)
				return
			}
		}
		g.q.push(g.now+d.Wait, gTry, c, cl.tag)
	case strategies.DeadLetter:
		cl.state, cl.reason = stDead, d.Reason
		if cl.fleetCall() {
			g.fleet.deadLetter(g, c)
		} else {
			g.callDone(c, false)
		}
	}
}

// startStep starts the calls of step st of job j, each with the share of
// requests that make it, and reports whether any was made (the job then
// waits for them).
func (g *graph) startStep(j int32, st *step) bool {
	jb := &g.jobs[j]
	s := &g.services[jb.svc]
	var buf [8]int32
	made, calls := 0, buf[:0]
	for slot, k := range st.calls {
		c := &s.cfg.Calls[k]
		if c.Probability < 1 && g.rFault.Float64() >= c.Probability {
			continue
		}
		g.tallies[int(j)*g.maxGroup+slot] = tally{need: int32(c.Need()), fanout: int32(c.Fanout)}
		made++
		for range c.Fanout {
			calls = append(calls, g.newCall(s.edges[k], j, slot))
		}
	}
	if made == 0 {
		return false
	}
	jb = &g.jobs[j]
	jb.pending = int32(made)
	gen, step := jb.gen, jb.step
	for _, c := range calls {
		// A call refused at once (an open breaker) may end the step,
		// or the job: the rest are then not made.
		if jb := &g.jobs[j]; jb.gen != gen || jb.step != step {
			break
		}
		if g.calls[c].state != stWaiting {
			continue // cancelled: its call had its quorum
		}
		g.try(c, &g.calls[c])
	}
	return true
}

// callDone is call c of a job succeeding (ok) or failing for good: its
// tally decides when the step is over.
func (g *graph) callDone(c int32, ok bool) {
	ln := &g.links[c]
	j := ln.job
	t := &g.tallies[int(j)*g.maxGroup+int(ln.slot)]
	if t.done {
		return
	}
	if ok {
		t.ok++
	} else {
		t.failed++
	}
	switch {
	case t.ok >= t.need:
		t.done = true
		g.cancelRest(j, ln.slot)
		jb := &g.jobs[j]
		jb.pending--
		if jb.pending == 0 {
			jb.step++
			g.proceed(j)
		}
	case t.failed > t.fanout-t.need:
		t.done = true
		g.endJob(j, strategies.ServerError)
	}
}

// cancelRest cancels the copies of job j's call in tally slot slot that
// are still going, now that the call has its quorum: as cancelCalls
// does, but they keep their places until the job ends. It is called
// before the job moves on, so that every call of the slot is of the
// step that has just had its quorum.
func (g *graph) cancelRest(j int32, slot int16) {
	for c := g.jobs[j].calls; c >= 0; {
		cl := &g.calls[c]
		if g.links[c].slot == slot && (cl.state == stInFlight || cl.state == stWaiting) {
			g.cancel(c)
			cl.state = stCancelled
		}
		c = g.links[c].sibling
	}
}

// cancelCalls ends every downstream call of job j: attempts in flight
// are abandoned (their work goes on, for no one), backoffs are not
// waited out, and the calls' places are freed.
func (g *graph) cancelCalls(j int32) {
	if g.jobs[j].calls >= 0 {
		g.cancelEach(j)
	}
}

// cancelEach is cancelCalls for a job with calls.
func (g *graph) cancelEach(j int32) {
	jb := &g.jobs[j]
	for c := jb.calls; c >= 0; {
		cl := &g.calls[c]
		g.cancel(c)
		cl.state = stFree
		g.freeCalls = append(g.freeCalls, c)
		c = g.links[c].sibling
	}
	jb.calls = -1
}

// cancel abandons call c: its attempt in flight is no longer
// outstanding (its work goes on, for no one; a copy of an attempt hedged
// with cancel that still waits in its replica's queue is hung up on and
// taken out, as when another copy wins, and as herdlab's test server
// does over real HTTP), its policy stops counting it, and every event of
// it is now stale. The caller sets its state.
func (g *graph) cancel(c int32) {
	cl := &g.calls[c]
	if cl.state == stInFlight && cl.flags&flagCached == 0 {
		if g.copies != nil {
			h := g.edges[g.edgeOf(c)].policy.Hedge
			g.dropCopies(c, h != nil && h.Cancel)
		} else {
			g.services[g.edges[g.edgeOf(c)].callee].replicas[g.replicaOf(c)].outstanding--
		}
	}
	if e := &g.edges[g.edgeOf(c)]; e.senders != nil && (cl.state == stInFlight || cl.state == stWaiting) {
		e.policy.Cancel(e.sender(cl.sender), g.retryState(c, cl), cl.state == stInFlight && cl.flags&flagCached == 0)
		g.setRetryState(c, cl)
	}
	cl.tag++
}
