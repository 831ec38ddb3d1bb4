package sim

import (
	"math/bits"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// hedging is the world's hedged copies (see strategies.Hedge): for each
// request, the copies of its attempt in flight. Without hedging copies is
// nil and an attempt is one copy, its tag the request's.
type hedging struct {
	hedge  *strategies.Hedge
	copies []copies
	// dead counts the cancelled copies in the server's queue.
	dead int
}

// queued returns the length of the server's queue: the copies there
// that were not cancelled.
func (w *world) queued() int { return w.queue.len() - w.dead }

// enqueued and dequeued count request i's copies in the server's queue.
func (w *world) enqueued(i int32) {
	if w.copies != nil {
		w.copies[i].inQueue++
	}
}

func (w *world) dequeued(i int32) {
	if w.copies == nil {
		return
	}
	c := &w.copies[i]
	c.inQueue--
	if c.dead > 0 {
		c.dead--
		w.dead--
	}
}

// copies are the copies of one request's attempt in flight: tags base to
// base+sent-1 (the request's tag is the latest).
type copies struct {
	sentAt [strategies.MaxHedges + 1]time.Duration
	base   int32 // the tag of the attempt's first copy
	sent   uint8 // copies sent
	done   uint8 // bit k: copy base+k has its answer, or its sender gave up on it
	// inQueue counts the request's copies in the server's queue (of any
	// attempt), dead those of them cancelled: skipped when their turn
	// comes, and not counted in the queue's length meanwhile.
	inQueue, dead uint8
}

// live reports whether attempt tag of request i is one its sender still
// waits for.
func (w *world) live(r *request, i, tag int32) bool {
	if r.state != stInFlight {
		return false
	}
	if w.copies == nil {
		return r.tag == tag
	}
	c := &w.copies[i]
	k := tag - c.base
	return k >= 0 && k < int32(c.sent) && c.done&(1<<k) == 0
}

// sentAt returns when attempt tag of request i was sent.
func (w *world) sentAt(r *request, i, tag int32) time.Duration {
	if w.copies == nil {
		return r.sentAt
	}
	c := &w.copies[i]
	return c.sentAt[min(max(tag-c.base, 0), int32(len(c.sentAt)-1))]
}

// firstCopy starts the copies of request i's attempt just begun (its tag
// r.tag), and schedules its first hedge.
func (w *world) firstCopy(r *request, i int32) {
	c := &w.copies[i]
	*c = copies{base: r.tag, sent: 1, inQueue: c.inQueue, dead: c.dead}
	c.sentAt[0] = w.now
	w.scheduleHedge(r, i)
}

// scheduleHedge schedules the next hedge of request i's attempt, if it
// may have one.
func (w *world) scheduleHedge(r *request, i int32) {
	c := &w.copies[i]
	if int(c.sent) >= w.hedge.Copies() {
		return
	}
	var sd *strategies.Sender
	if w.senders != nil {
		sd = &w.senders[r.sender].retry
	}
	if d, ok := w.policy.HedgeDelay(sd); ok {
		w.q.push(w.now+d, evHedge, i, c.base)
	}
}

// hedgeDue sends a hedge of request i's attempt whose first copy is tag
// base, if it still has no answer and the budget allows one.
func (w *world) hedgeDue(i, base int32) {
	r := &w.reqs[i]
	c := &w.copies[i]
	if r.state != stInFlight || c.base != base || c.done == 1<<c.sent-1 {
		return
	}
	var sd *strategies.Sender
	if w.senders != nil {
		sd = &w.senders[r.sender].retry
	}
	ok := w.policy.AllowHedge(sd, w.retryState(i), w.now)
	w.setRetryState(i)
	if !ok {
		return
	}
	w.run.Hedges++
	r.tag++
	c.sentAt[c.sent] = w.now
	c.sent++
	w.send(i, r.tag)
	w.scheduleHedge(r, i)
}

// copyAnswered is the answer o to copy tag of request i reaching its
// sender (a timeout when timedOut): a success wins the attempt; a
// failure ends it only when no other copy is still out.
func (w *world) copyAnswered(i, tag int32, o strategies.Outcome) {
	c := &w.copies[i]
	c.done |= 1 << (tag - c.base)
	if o == strategies.Success {
		if tag != c.base {
			w.run.HedgeWins++
		}
		if w.hedge.Cancel && c.inQueue > c.dead {
			// The losers waiting at the server are cancelled: every
			// copy of the request there is one now.
			w.queueChange()
			w.dead += int(c.inQueue - c.dead)
			c.dead = c.inQueue
		}
		w.outcome(i, o)
		return
	}
	if bits.OnesCount8(c.done) < int(c.sent) {
		return // another copy may still succeed
	}
	w.outcome(i, o)
}
