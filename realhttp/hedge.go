package realhttp

import (
	"context"
	"math/bits"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// A hedged attempt's copies (see strategies.Hedge), as the simulator
// sends them (sim/call_hedge.go): while the attempt has no answer, a
// copy goes after each hedge delay if the budget allows; the first
// success decides it, or the failure of the last copy out. The copies
// still out are then hung up on with Hedge.Cancel, else left to run.
// hedgeCopies keeps the copies and these rules for both owners: the
// fleet's driver (a request's copies, in its loop) and a call edge (the
// copies of one call's attempt, in Graph.hedged's select). Each owner
// is one goroutine, so it needs no lock; the owner sends the copies,
// waits out the delays and asks the policy (under its sender's lock).

// hedgeCopies are the copies of one attempt: tags base to base+sent-1.
type hedgeCopies struct {
	bucket [strategies.MaxHedges + 1]int32              // the bucket each was sent in
	cancel [strategies.MaxHedges + 1]context.CancelFunc // each one's, with Hedge.Cancel (see context)
	base   int32
	sent   uint8
	done   uint8 // bit k: copy base+k has its answer, or was cancelled
	gen    uint8 // counts the attempts, for the driver's hedge events
	over   bool  // the attempt is decided, or given up
}

// start makes c the copies of a new attempt, none sent yet, the first
// to be tag base.
func (c *hedgeCopies) start(base int32) { *c = hedgeCopies{base: base, gen: c.gen + 1} }

// add counts a copy sent in bucket b, and returns its index.
func (c *hedgeCopies) add(b int32) int32 {
	k := int32(c.sent)
	c.bucket[k] = b
	c.sent++
	return k
}

// of returns the index of copy tag, false when tag is not one of c's.
func (c *hedgeCopies) of(tag int32) (int32, bool) {
	k := tag - c.base
	return k, k >= 0 && k < int32(c.sent)
}

// context returns the context copy k is sent under: with h.Cancel one
// that c hangs up on when the attempt ends, else parent.
func (c *hedgeCopies) context(h *strategies.Hedge, k int32, parent context.Context) context.Context {
	if !h.Cancel {
		return parent
	}
	ctx, cancel := context.WithCancel(parent)
	c.cancel[k] = cancel
	return ctx
}

// nextDelay returns how long after its latest copy the attempt's next
// hedge is due, and false for none: it has all its copies, or the
// sender does not hedge yet (strategies.Policy.HedgeDelay). The caller
// holds s's lock.
func (c *hedgeCopies) nextDelay(p *strategies.Policy, s *strategies.Sender) (time.Duration, bool) {
	if int(c.sent) >= p.Hedge.Copies() {
		return 0, false
	}
	return p.HedgeDelay(s)
}

// hedgeAnswer is what an answer to one copy means (see answered).
type hedgeAnswer struct {
	// counts is false for a copy answered or cancelled already: the
	// answer means nothing.
	counts bool
	// decides says it decides the attempt: a success, or the failure
	// of the last copy out. won says a hedge's success did.
	decides, won bool
	// observe says its latency goes to a percentile hedge delay (see
	// hedgeObserve): every copy's success, whether or not it won, as
	// the simulator's (sim/job.go), so that the sample is the service's.
	observe bool
	// cancelled is how many copies still out the decision hung up on
	// (with Hedge.Cancel): none of them will answer.
	cancelled int
}

// answered takes the answer o to copy k of an attempt under h. An
// answer that counts but decides nothing is a failure while another
// copy is out, or any answer after the decision (a loser's).
func (c *hedgeCopies) answered(h *strategies.Hedge, k int32, o strategies.Outcome) hedgeAnswer {
	if c.done&(1<<k) != 0 {
		return hedgeAnswer{}
	}
	c.done |= 1 << k
	if cancel := c.cancel[k]; cancel != nil {
		cancel()
	}
	a := hedgeAnswer{counts: true, observe: o == strategies.Success && h.Percentile > 0}
	if c.over || (o != strategies.Success && c.out() > 0) {
		return a
	}
	a.decides, a.won = true, o == strategies.Success && k > 0
	a.cancelled = c.end()
	return a
}

// end ends the attempt, decided or given up: the copies still out are
// hung up on with Hedge.Cancel (they are done: none will answer), else
// left to run. It returns how many it hung up on.
func (c *hedgeCopies) end() int {
	c.over = true
	n := 0
	for j := range c.sent {
		if c.done&(1<<j) == 0 && c.cancel[j] != nil {
			c.cancel[j]()
			c.done |= 1 << j
			n++
		}
	}
	return n
}

// out returns how many copies are neither answered nor cancelled.
func (c *hedgeCopies) out() int { return int(c.sent) - bits.OnesCount8(c.done) }

// hedgeObserve reports to p, for a percentile hedge delay, the latency
// of a copy sent at sent and answered at now (scenario time). The
// caller holds s's lock.
func hedgeObserve(p *strategies.Policy, s *strategies.Sender, sent, now time.Duration) {
	p.Observe(s, max(now-sent, time.Nanosecond))
}

// The fleet's copies: the driver's, one hedgeCopies a request.

// firstCopy starts the copies of request i's attempt just begun, and
// schedules its first hedge.
func (d *driver) firstCopy(i int32) {
	r := &d.reqs[i]
	c := &d.copies[i]
	c.start(r.tag)
	c.add(r.bucket)
	d.scheduleHedge(i)
}

func (d *driver) scheduleHedge(i int32) {
	c := &d.copies[i]
	if delay, ok := c.nextDelay(d.policy, d.senderOf(&d.reqs[i])); ok {
		d.q.push(d.now+delay, drvHedge, i, c.gen)
	}
}

// hedgeDue sends a hedge of request i's attempt gen, if it still has no
// answer and the budget allows one.
func (d *driver) hedgeDue(i int32, gen uint8) {
	r := &d.reqs[i]
	c := &d.copies[i]
	if r.state != drvInFlight || c.gen != gen || c.over {
		return
	}
	if !d.policy.AllowHedge(d.senderOf(r), &r.retry, d.now) {
		return
	}
	if d.missedBy > 0 {
		d.miss()
		return
	}
	d.run.Hedges++
	r.tag++
	r.bucket = int32(min(d.sampled, len(d.run.Series)-1))
	c.add(r.bucket)
	d.send(i)
	d.scheduleHedge(i)
}

// copyContext returns the context of copy tag of request i.
func (d *driver) copyContext(i, tag int32) context.Context {
	if d.copies == nil {
		return d.runCtx
	}
	c := &d.copies[i]
	k, _ := c.of(tag)
	return c.context(d.policy.Hedge, k, d.runCtx)
}

// copyAnswered takes the answer c to a copy of request i, and reports
// whether it decides the attempt; then the caller takes it off the
// attempts in flight. Each other answer that counts is off them here,
// once, and so is each copy the decision hung up on, whose goroutine
// reports nothing.
func (d *driver) copyAnswered(c driverDone) bool {
	r := &d.reqs[c.i]
	cp := &d.copies[c.i]
	k, ok := cp.of(c.tag)
	if !ok {
		return false
	}
	a := cp.answered(d.policy.Hedge, k, c.res.Outcome)
	if a.observe {
		hedgeObserve(d.policy, d.senderOf(r), c.actual, d.now)
	}
	d.inFlight -= a.cancelled
	if !a.decides {
		if a.counts {
			d.inFlight--
		}
		return false
	}
	r.bucket = cp.bucket[k]
	if a.won {
		d.run.HedgeWins++
	}
	return true
}

// An edge's copies: a goroutine a copy, their answers taken by the
// call's goroutine.

// graphCopy is the answer to one copy of a hedged attempt on a call
// edge.
type graphCopy struct {
	k    int32
	ans  driverAnswer
	live bool
	sent time.Duration // scenario time
}

// hedged sends the copies of one attempt on edge e, each to the replica
// the callee's balancer picks, and returns the answer that decides it;
// false when ctx ended first, or the graph shuts down.
func (g *Graph) hedged(ctx context.Context, e *graphEdge, sd *graphSender, req *strategies.Request, call driverCall, turn GraphTurn) (driverAnswer, bool) {
	h := e.policy.Hedge
	cp := new(hedgeCopies)
	answers := make(chan graphCopy, h.Copies()) // no copy waits to answer
	// With cancel the copies end with the call; without, they run to
	// their end (or the graph's shutdown), as the simulator's do.
	parent := ctx
	if !h.Cancel {
		parent = g.quit
	}
	send := func() {
		now := g.now()
		rep, bucket := g.route(e, now)
		k := cp.add(int32(bucket))
		cctx := cp.context(h, k, parent)
		c := call
		c.planned = now
		c.cancellable = h.Cancel
		t := turn
		t.Hedge = int(k)
		if c.turn != "" {
			c.turn = t.String()
		}
		go func() {
			ans, live := g.exchange(cctx, e, rep, bucket, c, t)
			answers <- graphCopy{k: k, ans: ans, live: live, sent: now}
		}()
	}
	next := func() <-chan time.Time {
		sd.mu.Lock()
		d, ok := cp.nextDelay(e.policy, sd.sender())
		sd.mu.Unlock()
		if !ok {
			return nil
		}
		return time.After(g.wall(d))
	}
	send()
	timer := next()
	for received := 0; ; {
		select {
		case <-ctx.Done():
			g.leaveCopies(e, sd, cp, answers, received)
			return driverAnswer{}, false
		case c := <-answers:
			received++
			if !c.live {
				// The graph shuts down, or the call ended.
				g.leaveCopies(e, sd, cp, answers, received)
				return driverAnswer{}, false
			}
			if g.copyAnswered(e, sd, cp, c) {
				g.leaveCopies(e, sd, cp, answers, received)
				return c.ans, true
			}
		case <-timer:
			timer = nil
			t := turn
			t.Step, t.Hedge = GraphHedge, int(cp.sent)
			g.turn(t)
			sd.mu.Lock()
			allowed := e.policy.AllowHedge(sd.sender(), req, g.now())
			sd.mu.Unlock()
			if allowed {
				send()
				timer = next()
			}
		}
	}
}

// copyAnswered takes the answer c to a copy of attempt cp on edge e,
// and reports whether it decides the attempt.
func (g *Graph) copyAnswered(e *graphEdge, sd *graphSender, cp *hedgeCopies, c graphCopy) bool {
	a := cp.answered(e.policy.Hedge, c.k, c.ans.res.Outcome)
	if a.observe {
		now := g.now()
		sd.mu.Lock()
		hedgeObserve(e.policy, sd.sender(), c.sent, now)
		sd.mu.Unlock()
	}
	return a.decides
}

// leaveCopies ends attempt cp, decided or given up, with received of its
// copies' answers taken (see hedgeCopies.end): the copies left to run
// are answered in the background, each counted at its replica by its
// own goroutine.
func (g *Graph) leaveCopies(e *graphEdge, sd *graphSender, cp *hedgeCopies, answers <-chan graphCopy, received int) {
	cp.end()
	if cp.out() == 0 {
		return
	}
	n := int(cp.sent) - received
	go func() {
		for range n {
			if c := <-answers; c.live {
				g.copyAnswered(e, sd, cp, c)
			}
		}
	}()
}
