package realhttp

import (
	"context"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// graphCopy is the answer to one copy of a hedged attempt on a call edge.
type graphCopy struct {
	k    int
	rep  *graphReplica
	ans  driverAnswer
	live bool
	sent time.Duration // scenario time
}

// hedged sends the copies of one attempt on edge e, as the simulator's
// graph does (sim/call_hedge.go): a copy after each hedge delay while the
// attempt has no answer and the budget allows; the first success decides
// it, or the failure of the last copy out. The copies still out are left
// to run (their answers counted at their replicas as they come), or
// hung up on with Hedge.Cancel. It reports false when ctx ended first.
func (g *Graph) hedged(ctx context.Context, e *graphEdge, sd *graphSender, req *strategies.Request, call driverCall, turn GraphTurn) (driverAnswer, bool) {
	h := e.policy.Hedge
	copies := make(chan graphCopy, h.Copies())
	cancels := make([]context.CancelFunc, 0, h.Copies())
	// With cancel the copies end with the call; without, they run to
	// their end (or the graph's shutdown), as the simulator's do.
	parent := ctx
	if !h.Cancel {
		parent = g.quit
	}
	send := func(k int) {
		now := g.now()
		rep := e.callee.pick(now)
		bucket := g.bucketAt(now)
		e.callee.sent(rep, bucket)
		e.attempts.Add(1)
		cctx, cancel := context.WithCancel(parent)
		cancels = append(cancels, cancel)
		c := call
		c.planned = now
		c.cancellable = h.Cancel
		t := turn
		t.Hedge = k
		if c.turn != "" {
			c.turn = t.String()
		}
		go func() {
			ans, _, live := driverSend(cctx, g.client, rep.url, c)
			if live {
				t.Step = GraphAnswer
				g.turn(t)
				e.callee.answered(rep, bucket, ans, g.now())
			} else {
				e.callee.abandoned(rep)
			}
			copies <- graphCopy{k: k, rep: rep, ans: ans, live: live, sent: now}
		}()
	}
	delay := func() (time.Duration, bool) {
		sd.mu.Lock()
		defer sd.mu.Unlock()
		return e.policy.HedgeDelay(sd.sender())
	}
	send(0)
	sent, out := 1, 1
	var timer <-chan time.Time
	if d, ok := delay(); ok {
		timer = time.After(g.wall(d))
	}
	var decided graphCopy
	for decided.rep == nil {
		select {
		case <-ctx.Done():
			g.leaveCopies(e, sd, copies, out, cancels, h.Cancel)
			return driverAnswer{}, false
		case c := <-copies:
			out--
			if !c.live {
				// The graph shuts down, or the call ended.
				g.leaveCopies(e, sd, copies, out, cancels, true)
				return driverAnswer{}, false
			}
			g.observeCopy(e, sd, c)
			if c.ans.res.Outcome == strategies.Success || out == 0 {
				decided = c
			}
		case <-timer:
			timer = nil
			t := turn
			t.Step, t.Hedge = GraphHedge, sent
			g.turn(t)
			sd.mu.Lock()
			allowed := e.policy.AllowHedge(sd.sender(), req, g.now())
			sd.mu.Unlock()
			if !allowed {
				continue
			}
			send(sent)
			sent++
			out++
			if sent < h.Copies() {
				if d, ok := delay(); ok {
					timer = time.After(g.wall(d))
				}
			}
		}
	}
	cancels[decided.k]()
	g.leaveCopies(e, sd, copies, out, cancels, h.Cancel)
	return decided.ans, true
}

// leaveCopies leaves the n copies still out of a decided (or abandoned)
// attempt: hung up on when cancel, else left to run; either way their
// ends are awaited in the background, each counted at its replica as it
// comes, and their contexts released.
func (g *Graph) leaveCopies(e *graphEdge, sd *graphSender, copies <-chan graphCopy, n int, cancels []context.CancelFunc, cancel bool) {
	if cancel {
		for _, c := range cancels {
			c()
		}
	}
	if n == 0 {
		for _, c := range cancels {
			c()
		}
		return
	}
	go func() {
		for range n {
			if c := <-copies; c.live {
				g.observeCopy(e, sd, c)
			}
		}
		for _, c := range cancels {
			c()
		}
	}()
}

// observeCopy reports a copy's latency for a percentile hedge delay:
// every copy's answer, won or lost, as the simulator's graph does.
func (g *Graph) observeCopy(e *graphEdge, sd *graphSender, c graphCopy) {
	if e.policy.Hedge.Percentile == 0 || c.ans.res.Outcome != strategies.Success {
		return
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	e.policy.Observe(sd.sender(), max(g.now()-c.sent, time.Nanosecond))
}
