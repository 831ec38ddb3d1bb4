package sim

import (
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// A service of model occ is a single row under optimistic concurrency
// control: an attempt reads the row's version, and as soon as the answer
// is back writes, on condition that no other write committed since. It
// has no slots, queue or outages; nothing waits at it.
//
// The read changes nothing, so it is no event: an attempt draws its three
// hops as it is sent (to the row, back, to the row again), and its write
// checks whether another committed since the read's time. That is the
// same as comparing the version read with the version written, as the
// row's writes commit in time order. Where the fleet's requests may be
// tried ahead (see tryAhead), and no outage's end counts the requests
// finished by then, the write's answer is no event either: what the
// caller makes of it is done as the write commits or fails, at the
// answer's time, so that an attempt is one event.

// occSend sends call c's attempt, just begun, to its occ service: its
// write reaches the row three hops later. A caller whose timeout comes
// before that gives up first (its write still comes, and may commit).
func (g *graph) occSend(c int32) {
	cl := &g.calls[c]
	g.sentTo(c, cl, 0)
	g.services[g.edges[g.edgeOf(c)].callee].replicas[0].outstanding++
	read := g.now + g.latency.sample(g.rNet)
	write := read + g.latency.sample(g.rNet) + g.latency.sample(g.rNet)
	g.reads[c] = read
	if until := g.until(cl, c); write >= until && until < g.horizon {
		g.expire(c, cl.tag)
		// The call may be tried again before the write comes: the
		// write keeps its read's time here.
		if g.abandoned == nil {
			g.abandoned = map[uint64]time.Duration{}
		}
		g.abandoned[attemptKey(c, cl.tag)] = read
	}
	g.q.push(write, gOCCWrite, c, cl.tag)
}

// attemptKey names attempt tag of call c.
func attemptKey(c, tag int32) uint64 { return uint64(uint32(c))<<32 | uint64(uint32(tag)) }

// occWrite is the conditional write of attempt tag of call c reaching
// the row now: it commits when no other write has since the attempt read
// the row, and fails otherwise.
func (g *graph) occWrite(c, tag int32) {
	cl := &g.calls[c]
	s := &g.services[g.edges[g.edgeOf(c)].callee]
	read := g.reads[c]
	if g.abandoned != nil {
		if at, ok := g.abandoned[attemptKey(c, tag)]; ok {
			read = at
			delete(g.abandoned, attemptKey(c, tag))
		}
	}
	k := g.current()
	s.count(0, func(x *results.ServiceRun) {
		x.Attempts++
		x.Processed++
	})
	s.bucket(0, k, func(b *results.Bucket) { b.Attempts++ })
	s.ended++
	if cl.fleetCall() {
		g.run.Attempts++
		g.run.Series[k].Attempts++
		g.run.Processed++
	}
	if g.live(cl, c, tag) {
		cl.arrived = int32(k)
	}
	o := strategies.ServerError // a conflict
	if s.written < read {
		s.written = g.now
		o = strategies.Success
	}
	at := g.now + g.latency.sample(g.rNet)
	if g.answerAhead && g.live(cl, c, tag) && at < g.horizon && at <= g.untilOf(cl, c, tag) {
		// The answer is taken now, as it would be at its time: nothing
		// until then can change it (see tryAhead), nor what its caller
		// makes of it.
		now := g.now
		g.now = at
		g.outcome(c, o) // what response does for an answer in time
		g.now = now
		return
	}
	g.replyAt(c, tag, o, false, at)
}
