package realhttp

import (
	"context"
	"math/bits"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// The driver's hedged copies, as sim/world_hedge.go makes them: an
// attempt's copies go out after each hedge delay while it has no answer;
// the first success wins it, and it fails when every copy has failed.

// driverCopies are the copies of one request's attempt: tags base to
// base+sent-1 (the request's tag is the latest).
type driverCopies struct {
	bucket [strategies.MaxHedges + 1]int32 // the bucket each was sent in
	cancel [strategies.MaxHedges + 1]context.CancelFunc
	base   int32
	sent   uint8
	done   uint8 // bit k: copy base+k has its answer, or was cancelled
	gen    uint8 // counts the attempts, for the hedge events
}

// copyOf returns request i's copies and the index of copy tag among
// them, false when tag is not one of its attempt in flight's copies.
func (d *driver) copyOf(i, tag int32) (*driverCopies, int32, bool) {
	c := &d.copies[i]
	k := tag - c.base
	return c, k, k >= 0 && k < int32(c.sent)
}

// firstCopy starts the copies of request i's attempt just begun, and
// schedules its first hedge.
func (d *driver) firstCopy(i int32) {
	r := &d.reqs[i]
	c := &d.copies[i]
	*c = driverCopies{base: r.tag, sent: 1, gen: c.gen + 1}
	c.bucket[0] = r.bucket
	d.scheduleHedge(i)
}

func (d *driver) scheduleHedge(i int32) {
	r := &d.reqs[i]
	c := &d.copies[i]
	if int(c.sent) >= d.policy.Hedge.Copies() {
		return
	}
	if delay, ok := d.policy.HedgeDelay(d.senderOf(r)); ok {
		d.q.push(d.now+delay, drvHedge, i, c.gen)
	}
}

// hedgeDue sends a hedge of request i's attempt gen, if it still has no
// answer and the budget allows one.
func (d *driver) hedgeDue(i int32, gen uint8) {
	r := &d.reqs[i]
	c := &d.copies[i]
	if r.state != drvInFlight || c.gen != gen || c.done == 1<<c.sent-1 {
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
	c.bucket[c.sent] = r.bucket
	c.sent++
	d.send(i)
	d.scheduleHedge(i)
}

// copyContext returns the context of copy tag of request i: one the
// winner can cancel, with Hedge.Cancel.
func (d *driver) copyContext(i, tag int32) context.Context {
	if d.copies == nil || !d.policy.Hedge.Cancel {
		return d.runCtx
	}
	c, k, _ := d.copyOf(i, tag)
	ctx, cancel := context.WithCancel(d.runCtx)
	c.cancel[k] = cancel
	return ctx
}

// copyAnswered counts the answer c to a copy of request i, and reports
// whether it decides the attempt: a success, or the last copy's failure.
func (d *driver) copyAnswered(c driverDone) bool {
	r := &d.reqs[c.i]
	cp, k, ok := d.copyOf(c.i, c.tag)
	if !ok || cp.done&(1<<k) != 0 {
		return false
	}
	cp.done |= 1 << k
	if cancel := cp.cancel[k]; cancel != nil {
		cancel()
	}
	o := c.res.Outcome
	if o == strategies.Success && d.policy.Hedge.Percentile > 0 {
		// Every copy's latency, whether or not it won: the service's,
		// unbiased by which copy won, as the simulator observes it
		// (sim/job.go) and a call edge (observeCopy).
		d.policy.Observe(d.senderOf(r), max(d.now-c.actual, time.Nanosecond))
	}
	if r.state != drvInFlight {
		d.inFlight-- // a loser's answer, after the winner's
		return false
	}
	r.bucket = cp.bucket[k]
	if o == strategies.Success {
		if k > 0 {
			d.run.HedgeWins++
		}
		for j := range cp.sent {
			if cp.done&(1<<j) == 0 && cp.cancel[j] != nil {
				// Cancelled: its goroutine reports nothing.
				cp.cancel[j]()
				cp.done |= 1 << j
				d.inFlight--
			}
		}
		return true
	}
	if bits.OnesCount8(cp.done) < int(cp.sent) {
		d.inFlight-- // another copy may still succeed
		return false
	}
	return true
}
