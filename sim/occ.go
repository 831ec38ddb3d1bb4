package sim

import (
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// A service of model occ is a single row under optimistic concurrency
// control: an attempt reads
// the row's version, and as soon as the answer is back writes, on
// condition that no other write committed since. It has no slots, queue
// or outages; nothing waits at it.

// occSend sends call c's attempt, just begun, to its occ service: it
// reads the row after the network's latency.
func (g *graph) occSend(c int32) {
	cl := &g.calls[c]
	g.sentTo(c, 0)
	g.services[g.edges[g.edgeOf(c)].callee].replicas[0].outstanding++
	g.q.push(g.now+g.latency.sample(g.rNet), gOCCRead, c, cl.tag)
}

// occRead is attempt tag of call c reading its service's row version;
// the caller writes as soon as the answer is back: two hops.
func (g *graph) occRead(c, tag int32) {
	g.versions[c] = g.services[g.edges[g.edgeOf(c)].callee].version
	g.q.push(g.now+g.latency.sample(g.rNet)+g.latency.sample(g.rNet), gOCCWrite, c, tag)
}

// occWrite is the conditional write of attempt tag of call c reaching
// the row now: it commits when no other write has since the attempt read
// the version, and fails otherwise.
func (g *graph) occWrite(c, tag int32) {
	cl := &g.calls[c]
	s := &g.services[g.edges[g.edgeOf(c)].callee]
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
	cl.arrived = int32(k)
	o := strategies.ServerError // a conflict
	if g.versions[c] == s.version {
		s.version++
		o = strategies.Success
	}
	g.reply(c, tag, o, true)
}
