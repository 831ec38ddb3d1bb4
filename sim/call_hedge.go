package sim

import (
	"math/bits"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// A graph's hedged calls (see strategies.Hedge): the copies of a call's
// attempt in flight, each a
// job at the replica the balancer picked for it. Without hedging on any
// edge copies is nil and an attempt is one copy, its tag the call's.

// callCopies are the copies of one call's attempt: tags base to
// base+sent-1 (the call's tag is the latest).
type callCopies struct {
	sentAt  [strategies.MaxHedges + 1]time.Duration
	until   [strategies.MaxHedges + 1]time.Duration // when its caller gives it up
	replica [strategies.MaxHedges + 1]int32
	job     [strategies.MaxHedges + 1]int32
	jobGen  [strategies.MaxHedges + 1]int32
	arrived [strategies.MaxHedges + 1]int32 // the bucket it reached its service in, -1 before
	base    int32
	sent    uint8
	done    uint8 // bit k: copy base+k has its answer, or its caller gave it up
}

// live reports whether attempt tag of call c is one its caller still
// waits for.
func (g *graph) live(cl *call, c, tag int32) bool {
	if cl.state != stInFlight {
		return false
	}
	if g.copies == nil {
		return cl.tag == tag
	}
	cp := &g.copies[c]
	k := tag - cp.base
	return k >= 0 && k < int32(cp.sent) && cp.done&(1<<k) == 0
}

// untilOf returns when the caller of attempt tag of call c gives it up.
func (g *graph) untilOf(cl *call, c, tag int32) time.Duration {
	if g.copies == nil || cl.flags&flagCached != 0 {
		return g.until(cl, c)
	}
	cp := &g.copies[c]
	return cp.until[min(max(tag-cp.base, 0), int32(len(cp.until)-1))]
}

// arrivedAt notes that attempt tag of call c reached its service in
// bucket k.
func (g *graph) arrivedAt(cl *call, c, tag int32, k int) {
	cl.arrived = int32(k)
	if g.copies != nil {
		cp := &g.copies[c]
		if i := tag - cp.base; i >= 0 && i < int32(cp.sent) {
			cp.arrived[i] = int32(k)
		}
	}
}

// hedgeDue sends a hedge of call c's attempt whose first copy is base,
// if it still has no answer and its edge's budget allows one.
func (g *graph) hedgeDue(c, base int32) {
	cl := &g.calls[c]
	cp := &g.copies[c]
	if cl.state != stInFlight || cl.flags&flagCached != 0 || cp.base != base || cp.done == 1<<cp.sent-1 {
		return
	}
	ei := g.edgeOf(c)
	e := &g.edges[ei]
	ok := e.policy.AllowHedge(e.sender(cl.sender), g.retryState(c, cl), g.now)
	g.setRetryState(c, cl)
	if !ok {
		return
	}
	if cl.fleetCall() {
		g.run.Hedges++
	}
	g.sendCopy(c, cl, ei, &g.services[e.callee])
	g.scheduleHedge(c)
}

// scheduleHedge schedules the next hedge of call c's attempt, if its
// edge hedges and it may have another.
func (g *graph) scheduleHedge(c int32) {
	cl := &g.calls[c]
	e := &g.edges[g.edgeOf(c)]
	h := e.policy.Hedge
	if h == nil || int(g.copies[c].sent) >= h.Copies() {
		return
	}
	if d, ok := e.policy.HedgeDelay(e.sender(cl.sender)); ok {
		g.q.push(g.now+d, gHedge, c, g.copies[c].base)
	}
}

// copyAnswered is the answer o to copy tag of call c reaching its caller
// (a timeout when its caller gave it up): it is counted at its replica; a
// success wins the attempt, a failure ends it only when no other copy is
// still out.
func (g *graph) copyAnswered(c, tag int32, o strategies.Outcome) {
	cl := &g.calls[c]
	cp := &g.copies[c]
	k := tag - cp.base
	cp.done |= 1 << k
	e := &g.edges[g.edgeOf(c)]
	g.sentTo(c, cl, cp.replica[k])
	cl.arrived = cp.arrived[k]
	if o != strategies.Success && bits.OnesCount8(cp.done) < int(cp.sent) {
		g.copyCounted(c, cl, &g.services[e.callee], o) // another copy may still succeed
		return
	}
	if o == strategies.Success && k > 0 && cl.fleetCall() {
		g.run.HedgeWins++
	}
	g.dropCopies(c, e.policy.Hedge != nil && e.policy.Hedge.Cancel)
	g.outcomeAt(c, e, &g.services[e.callee], o)
}

// dropCopies gives up call c's copies still out, its attempt decided:
// they are no longer outstanding at their replicas, and with cancel a
// copy still waiting in its replica's queue is taken out of it.
func (g *graph) dropCopies(c int32, cancel bool) {
	cp := &g.copies[c]
	s := &g.services[g.edges[g.edgeOf(c)].callee]
	for k := range int32(cp.sent) {
		if cp.done&(1<<k) != 0 {
			continue
		}
		cp.done |= 1 << k
		r := cp.replica[k]
		s.replicas[r].outstanding--
		j := cp.job[k]
		if jb := &g.jobs[j]; cancel && jb.gen == cp.jobGen[k] && jb.state == jobQueued && s.replicas[r].queue.remove(j) {
			s.queueChange(g.now, r, -1)
			g.freeJob(j)
		}
	}
}
