package realhttp

import "time"

// driverEvent is something the replay driver's loop does at a scenario
// time: an arrival, a try of a request, a DLQ replay send.
type driverEvent struct {
	at   time.Duration // scenario time since the start
	seq  uint64        // push order: events at the same time keep FIFO order
	a    int32         // the request (or dead letter number for a replay)
	kind uint8
	b    uint8
}

// driverQueue is the driver's scheduler: a binary min-heap of events by
// (at, seq). The loop that owns it sleeps on one timer set to the wall
// time of the earliest event, so that a pending retry costs 32 bytes and
// no goroutine or runtime timer (see BenchmarkDriverScheduler). It is not
// safe for concurrent use.
type driverQueue struct {
	items []driverEvent
	seq   uint64
}

func (q *driverQueue) len() int { return len(q.items) }

func (q *driverQueue) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// push schedules an event.
func (q *driverQueue) push(at time.Duration, kind uint8, a int32, b uint8) {
	q.items = append(q.items, driverEvent{at: at, seq: q.seq, a: a, kind: kind, b: b})
	q.seq++
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// peek returns the earliest event without removing it.
func (q *driverQueue) peek() (driverEvent, bool) {
	if len(q.items) == 0 {
		return driverEvent{}, false
	}
	return q.items[0], true
}

// pop removes and returns the earliest event; the queue must not be
// empty.
func (q *driverQueue) pop() driverEvent {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items = q.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
