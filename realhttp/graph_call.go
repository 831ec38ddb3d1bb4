package realhttp

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// run makes the calls of replica c.replica's steps before or after its
// work (when) for attempt a, one step after another: false as soon as
// one fails. The calls outlive a caller that gives up (the job goes on,
// as the simulator's does), not ctx (the job's propagated deadline) nor
// Shutdown.
func (c *graphCalls) run(ctx context.Context, a *serverAttempt, when string) bool {
	groups := c.svc.steps[when]
	if len(groups) == 0 {
		return true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.g.quit, cancel)
	defer stop()
	for _, group := range groups {
		if !c.step(ctx, group, a) {
			return false
		}
	}
	return true
}

// graphTally counts the copies of one call of a step.
type graphTally struct {
	ok, failed, need, fanout int
	done                     bool
}

// step makes the calls of one group at once, each with its probability
// and as many copies as its fan-out, and waits until each has its
// quorum (true), or one cannot have it (false: the others are
// cancelled). A call's copies still going when it has its quorum are
// cancelled at once, as the simulator's are, not when the step ends.
func (c *graphCalls) step(ctx context.Context, group []int, a *serverAttempt) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancels := make([]context.CancelFunc, len(group)) // each call's copies'
	defer func() {
		for _, cancel := range cancels {
			if cancel != nil {
				cancel()
			}
		}
	}()
	type result struct {
		slot int
		ok   bool
	}
	tallies := make([]graphTally, len(group))
	copies := 0
	made := 0
	var todo []int // the slots of the calls made
	if slices.ContainsFunc(group, func(k int) bool { return c.svc.cfg.Calls[k].Probability < 1 }) {
		c.g.turn(GraphTurn{Step: GraphDraw, Service: c.svc.index, Replica: c.replica, ID: a.id, Edge: c.svc.edges[group[0]].index})
	}
	for slot, k := range group {
		cfg := &c.svc.cfg.Calls[k]
		if cfg.Probability < 1 {
			c.g.mu.Lock()
			skip := c.g.rDraw.Float64() >= cfg.Probability
			c.g.mu.Unlock()
			if skip {
				continue
			}
		}
		tallies[slot] = graphTally{need: cfg.Need(), fanout: cfg.Fanout}
		copies += cfg.Fanout
		made++
		todo = append(todo, slot)
	}
	if made == 0 {
		return true
	}
	done := make(chan result, copies)
	for _, slot := range todo {
		e := c.svc.edges[group[slot]]
		var callCtx context.Context
		callCtx, cancels[slot] = context.WithCancel(ctx)
		for n := range e.cfg.Fanout {
			go func() { done <- result{slot, c.g.call(callCtx, e, c.replica, n, a)} }()
		}
	}
	for pending := made; pending > 0; {
		res := <-done
		t := &tallies[res.slot]
		if t.done {
			continue
		}
		if res.ok {
			t.ok++
		} else {
			t.failed++
		}
		switch {
		case t.ok >= t.need:
			t.done = true
			cancels[res.slot]()
			pending--
		case t.failed > t.fanout-t.need:
			return false
		}
	}
	return true
}

// call is copy n of a downstream call on edge e from replica from of
// its caller, for attempt a: tried and retried by the edge's policy,
// each attempt to the replica the callee's balancer picks. It reports
// whether the call was delivered; false too when ctx ended first.
func (g *Graph) call(ctx context.Context, e *graphEdge, from, n int, a *serverAttempt) bool {
	var req strategies.Request
	sd := &e.senders[from]
	turn := GraphTurn{Step: GraphAttempt, Service: e.caller.index, Replica: from, ID: a.id, Edge: e.index, Copy: n, Attempt: 1}
	key := g.callKey(turn)
	propagate := g.propagate.Load() && a.hasDeadline
	g.turn(turn)
	entry := e.callee.key()
	for ; ; turn.Attempt++ {
		if turn.Attempt > 1 {
			turn.Step = GraphAttempt
			g.turn(turn)
		}
		now := g.now()
		if propagate && now >= a.deadline {
			return false // no one waits for its answer
		}
		if entry >= 0 && e.callee.lookup(now, entry) {
			return true
		}
		// The attempt's deadline: the edge's timeout, bounded by the
		// propagated one.
		until, bounded := now+e.policy.Timeout, e.policy.Timeout > 0
		if propagate && (!bounded || a.deadline < until) {
			until, bounded = a.deadline, true
		}
		var timeout time.Duration
		if bounded {
			timeout = max(g.wall(until-now), 1)
		}
		sd.mu.Lock()
		permit, d, ok := callBegin(e.policy, sd.sender(), &req, now, sd.r, nil, nil)
		sd.mu.Unlock()
		if ok {
			call := driverCall{request: int(a.request), key: key, attempt: int(req.Attempts), planned: now, timeout: timeout,
				outer: a.outer, hasOuter: a.hasOuter, deadline: until, hasDeadline: propagate}
			if g.onTurn != nil {
				call.turn = turn.String()
			}
			var ans driverAnswer
			var live bool
			if e.policy.Hedge != nil {
				ans, live = g.hedged(ctx, e, sd, &req, call, turn)
			} else {
				rep, k := g.route(e, now)
				ans, live = g.exchange(ctx, e, rep, k, call, turn)
			}
			if !live {
				sd.cancel(e.policy, &req, true)
				return false
			}
			now = g.now()
			if entry >= 0 && ans.res.Outcome == strategies.Success {
				e.callee.fill(now, entry)
			}
			sd.mu.Lock()
			d = callDone(e.policy, sd.sender(), &req, permit, now, ans.res, sd.r, nil)
			sd.mu.Unlock()
		}
		switch d.Action {
		case strategies.Deliver:
			return true
		case strategies.DeadLetter:
			return false
		}
		if propagate && g.now()+d.Wait >= a.deadline {
			return false // the retry would start after the deadline
		}
		if !g.sleep(ctx, d.Wait) || ctx.Err() != nil {
			sd.cancel(e.policy, &req, false)
			return false
		}
	}
}

// route picks the replica of e's callee that an attempt sent at now
// goes to (see pick), and counts it sent there, in the bucket of now,
// which it returns.
func (g *Graph) route(e *graphEdge, now time.Duration) (*graphReplica, int) {
	rep := e.callee.pick(now)
	k := g.bucketAt(now)
	e.callee.sent(rep, k)
	e.attempts.Add(1)
	return rep, k
}

// exchange sends attempt call, routed to rep in bucket k, and counts its
// answer there, or that it was abandoned (false: ctx ended first).
func (g *Graph) exchange(ctx context.Context, e *graphEdge, rep *graphReplica, k int, call driverCall, turn GraphTurn) (driverAnswer, bool) {
	ans, _, live := driverSend(ctx, g.client, rep.url, call)
	if !live {
		e.callee.abandoned(rep)
		return ans, false
	}
	turn.Step = GraphAnswer
	g.turn(turn)
	e.callee.answered(rep, k, ans, g.now())
	return ans, true
}

// sleep waits d of scenario time, and reports false when ctx ended
// first.
func (g *Graph) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(g.wall(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// key draws the key a call to s reads: -1 without a cache in front of
// it.
func (s *graphService) key() int32 {
	if s.cache == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return int32(s.rCache.IntN(s.cfg.Cache.Keys))
}

// lookup looks key k up in the cache in front of s at now, counting the
// lookup and a hit.
func (s *graphService) lookup(now time.Duration, k int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushDue(now)
	b := &s.stats.Cache[min(int(now/s.bucketLen), len(s.stats.Cache)-1)]
	s.stats.CacheLookups++
	b.Lookups++
	if !s.cache.Lookup(now, k) {
		return false
	}
	s.stats.CacheHits++
	b.Hits++
	return true
}

// fill caches key k at now, after a success.
func (s *graphService) fill(now time.Duration, k int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushDue(now)
	s.cache.Fill(now, k, s.rCache)
}

// flushDue empties the cache for each flush outage begun by now, once.
// The caller holds s.mu.
func (s *graphService) flushDue(now time.Duration) {
	for len(s.flushes) > 0 && s.flushes[0].Start <= now {
		s.cache.Flush()
		s.flushes = s.flushes[1:]
	}
}

// cancel is callCancel for the calling replica's sender.
func (sd *graphSender) cancel(p *strategies.Policy, req *strategies.Request, inFlight bool) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	callCancel(p, sd.sender(), req, inFlight)
}

// sender returns the calling replica's breaker, budget and throttle, nil
// when the policy keeps none. The caller holds sd.mu.
func (sd *graphSender) sender() *strategies.Sender {
	if !sd.stated {
		return nil
	}
	return &sd.state
}

// pick returns the replica the balancer picks for an attempt sent now,
// counting the attempt outstanding there, as the simulator's balancer
// does: round-robin, random, least-outstanding or power of two choices,
// over the replicas that outlier detection has not ejected (all of them
// when it has ejected every one).
func (s *graphService) pick(now time.Duration) *graphReplica {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.choose(now)
	r.outstanding++
	return r
}

func (s *graphService) choose(now time.Duration) *graphReplica {
	reps := s.replicas
	n := len(reps)
	if n == 1 {
		return reps[0]
	}
	ok := func(r *graphReplica) bool { return s.cfg.Health == nil || r.ejected <= now }
	var healthy []*graphReplica
	for _, r := range reps {
		if ok(r) {
			healthy = append(healthy, r)
		}
	}
	if len(healthy) == 0 { // every replica ejected: all of them again
		healthy = reps
		ok = func(*graphReplica) bool { return true }
	}
	switch s.cfg.Balancer {
	case scenarios.RandomBalancer:
		return healthy[s.rBalance.IntN(len(healthy))]
	case scenarios.LeastOutstanding:
		best := healthy[0]
		for _, r := range healthy[1:] {
			if r.outstanding < best.outstanding {
				best = r
			}
		}
		return best
	case scenarios.PowerOfTwoChoices:
		if len(healthy) == 1 {
			return healthy[0]
		}
		i := s.rBalance.IntN(len(healthy))
		j := s.rBalance.IntN(len(healthy) - 1)
		if j >= i {
			j++
		}
		if healthy[j].outstanding < healthy[i].outstanding {
			return healthy[j]
		}
		return healthy[i]
	}
	for {
		r := reps[s.next]
		s.next = (s.next + 1) % n
		if ok(r) {
			return r
		}
	}
}

// sent counts an attempt sent to replica r in bucket k.
func (s *graphService) sent(r *graphReplica, k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range []*results.ServiceRun{s.stats, r.stats} {
		if x != nil {
			x.Attempts++
			x.Series[k].Attempts++
		}
	}
}

// abandoned is an attempt to replica r whose caller was cancelled
// before its answer came.
func (s *graphService) abandoned(r *graphReplica) {
	s.mu.Lock()
	r.outstanding--
	s.mu.Unlock()
}

// answered counts the answer to an attempt sent to replica r in bucket
// k, and tells outlier detection.
func (s *graphService) answered(r *graphReplica, k int, a driverAnswer, now time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.outstanding--
	o := a.res.Outcome
	for _, x := range []*results.ServiceRun{s.stats, r.stats} {
		if x != nil {
			graphCount(x, k, a)
		}
	}
	if h := s.cfg.Health; h != nil {
		switch o {
		case strategies.Success, strategies.TooManyRequests, strategies.ClientError:
			r.fails = 0
		default:
			r.fails++
			if r.fails >= h.Consecutive {
				r.ejected = now + h.EjectFor
				r.fails = 0
			}
		}
	}
}

// graphCount counts answer a to an attempt sent in bucket k in x (see
// classify).
func graphCount(x *results.ServiceRun, k int, a driverAnswer) {
	switch classify(&x.Series[k], a) {
	case answerOK:
		x.OK++
	case answerThrottled:
		x.Throttled++
	case answerRejected:
		x.Rejected++
	}
}

// serveFront is the target's balancer, with replicas: it hands each of
// the fleet's requests to the replica it picks, in the process, and
// counts it there.
func (g *Graph) serveFront(w http.ResponseWriter, r *http.Request) {
	s := g.services[g.target]
	now := g.now()
	rep := s.pick(now)
	k := g.bucketAt(now)
	s.mu.Lock()
	rep.stats.Attempts++
	rep.stats.Series[k].Attempts++
	s.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	rep.srv.Handler().ServeHTTP(sw, r)
	a := driverAnswer{res: strategies.Result{Outcome: strategies.Reset}}
	if sw.status != 0 {
		a = answerOf(sw.status, sw.Header())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rep.outstanding--
	graphCount(rep.stats, k, a)
}

// statusWriter records the status a handler wrote; it passes Hijack and
// deadlines through (see http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
