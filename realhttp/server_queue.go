package realhttp

import (
	"context"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// serverWaiter is a request waiting in the queue for a slot.
type serverWaiter struct {
	ctx        context.Context
	ready      chan struct{} // closed when the request gets a slot, or is dropped or shed
	service    time.Duration // its service time, set with the slot
	lost       bool          // its answer is to be lost, drawn with the slot
	queuedAt   time.Duration // scenario time it joined the queue
	dropped    bool          // skipped by drop_expired
	shed       bool          // answered 503 instead: its wait passed the shed bound, or CoDel dropped it
	cancelled  bool          // taken out of the queue: its sender cancelled it (see cancelWaiter)
	queued     bool          // in the queue now
	prev, next *serverWaiter
}

// serverQueue is the order in which a server's queue is served, as a
// graph's service sets it (a single server's is FIFO): see
// scenarios.Service.QueueDiscipline, and sim's service.pop for the same
// rules on the virtual clock.
type serverQueue struct {
	discipline scenarios.Discipline
	congested  time.Duration // adaptive-lifo: LIFO once the oldest waited longer
	codel      scenarios.CoDel
	shedAfter  time.Duration // shed a request that waited longer; 0 never
	state      serverCoDel
}

// serverCoDel is a CoDel queue's state (see popCoDelLocked).
type serverCoDel struct {
	intervalEnd time.Duration
	minDelay    time.Duration
	overloaded  bool
	reset       bool
}

// serverQueueOf returns the queue discipline of service svc.
func serverQueueOf(svc *scenarios.Service) serverQueue {
	q := serverQueue{discipline: svc.Discipline(), congested: svc.AdaptiveLIFO.Congested, codel: svc.CoDel}
	if svc.Shed != nil {
		q.shedAfter = svc.Shed.QueueDelay
	}
	return q
}

// enqueueLocked puts w at the back of the queue at now.
func (s *Server) enqueueLocked(w *serverWaiter, now time.Duration) {
	w.queuedAt, w.queued = now, true
	w.prev, w.next = s.qtail, nil
	if s.qtail != nil {
		s.qtail.next = w
	} else {
		s.qhead = w
	}
	s.qtail = w
	s.qlen++
}

// unlinkLocked takes w out of the queue.
func (s *Server) unlinkLocked(w *serverWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		s.qhead = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		s.qtail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	s.qlen--
}

// popLocked takes the next waiter to start at now off the queue, in the
// server's discipline (CoDel sheds on the way); nil when none is left.
func (s *Server) popLocked(now time.Duration) *serverWaiter {
	if s.qhead == nil {
		return nil
	}
	w := s.qhead
	switch s.queue.discipline {
	case scenarios.DisciplineLIFO:
		w = s.qtail
	case scenarios.DisciplineAdaptiveLIFO:
		if now-s.qhead.queuedAt > s.queue.congested {
			w = s.qtail
		}
	case scenarios.DisciplineCoDel:
		return s.popCoDelLocked(now)
	}
	s.unlinkLocked(w)
	return w
}

// popCoDelLocked is the CoDel of RPC servers (folly's, as the
// simulator's codelPop): at the end of each interval the queue is
// overloaded when the least queueing delay seen in it exceeded the
// target; while overloaded, a request that waited more than twice the
// target is shed rather than served.
func (s *Server) popCoDelLocked(now time.Duration) *serverWaiter {
	c := &s.queue.state
	target := s.queue.codel.Target
	for s.qhead != nil {
		w := s.qhead
		s.unlinkLocked(w)
		delay := now - w.queuedAt
		if now > c.intervalEnd && !c.reset {
			c.intervalEnd = now + s.queue.codel.Interval
			c.overloaded = c.minDelay > target
			c.reset = true
		}
		if c.reset {
			c.reset = false
			c.minDelay = delay
			return w
		}
		c.minDelay = min(c.minDelay, delay)
		if c.overloaded && delay > 2*target {
			s.shedLocked(w)
			continue
		}
		return w
	}
	return nil
}

// shedLocked answers waiter w 503 instead of serving it.
func (s *Server) shedLocked(w *serverWaiter) {
	w.shed = true
	close(w.ready)
}

// startQueuedLocked starts queued requests in the queue's discipline
// while slots are free; one that waited past the shed bound is shed,
// and with drop_expired, one whose client has gone is skipped.
func (s *Server) startQueuedLocked(now time.Duration) {
	for s.qhead != nil && s.busy < s.capacityLocked(now) {
		w := s.popLocked(now)
		if w == nil {
			return
		}
		switch {
		case s.queue.shedAfter > 0 && now-w.queuedAt > s.queue.shedAfter:
			s.shedLocked(w)
			continue
		case s.srv.DropExpired && w.ctx.Err() != nil:
			w.dropped = true
		default:
			w.service, w.lost = s.startServiceLocked()
		}
		close(w.ready)
	}
}

// cancelWaiter takes waiter, attempt a, out of the queue when its
// sender has hung up on it before its timeout: a hedge's loser,
// cancelled (see serverCancelHeader), which the simulator drops from its
// queue too. A hang-up at the timeout (within serverCancelSlack of it)
// is a sender giving up: that work stays queued, done for no one, as in
// the simulator (unless drop_expired).
func (s *Server) cancelWaiter(waiter *serverWaiter, a *serverAttempt, timeout time.Duration) {
	if timeout > 0 && time.Since(a.wall) >= timeout-serverCancelSlack(timeout) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !waiter.queued {
		return // served, shed or dropped already
	}
	s.unlinkLocked(waiter)
	waiter.cancelled = true
	close(waiter.ready)
}

// serverCancelSlack is how close to a sender's timeout a hang-up counts
// as the timeout rather than a cancellation: the sender's clock started
// before the request reached the server.
func serverCancelSlack(timeout time.Duration) time.Duration {
	return max(timeout/20, time.Millisecond)
}

// leaveQueue takes waiter out of the queue at Shutdown, or gives back
// the slot it was given meanwhile.
func (s *Server) leaveQueue(waiter *serverWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-waiter.ready:
		if !waiter.dropped && !waiter.shed && !waiter.cancelled {
			s.busy--
		}
		return
	default:
	}
	if waiter.queued {
		s.unlinkLocked(waiter)
	}
}
