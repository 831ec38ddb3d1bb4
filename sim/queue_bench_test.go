package sim

import (
	"container/heap"
	"fmt"
	"testing"
	"time"
)

// BenchmarkEngine measures the event list in the classic hold model: N
// pending events, then each op pops the minimum and pushes a new event at
// its time plus an increment. Increments come from a precomputed table, so
// the figures are the queue's alone. The distributions:
//
//	exp1s    exponential, mean 1 s: N events a second, spread over ~5 s
//	unif60s  uniform on [0, 60 s): full jitter with a 60 s cap
//	exp1h    exponential, mean 1 h: sparse, N events an hour
//
// Before the timed loop the queue runs 2N ops (at least 100k), so that the
// pending times reach their steady state and the wheel has adapted to them.
// The wheel alone is measured at 10^7 pending too, as BenchmarkScale's
// largest run has.
func BenchmarkEngine(b *testing.B) {
	for _, impl := range []string{"container-heap", "heap", "wheel"} {
		for _, pending := range []int{1e3, 1e5, 1e6, 1e7} {
			if pending > 1e6 && impl != "wheel" {
				continue // the heaps at 10^7 take minutes to set up
			}
			for _, dist := range []string{"exp1s", "unif60s", "exp1h"} {
				name := fmt.Sprintf("queue=%s/pending=%s/incr=%s", impl, sci(pending), dist)
				b.Run(name, func(b *testing.B) {
					incr := holdIncrements(dist, 1<<20, 11)
					warm := max(2*pending, 100_000)
					queues := map[string]holdQueue{"container-heap": &boxedHeap{}, "heap": newHeapQueue(), "wheel": newWheelQueue()}
					hold(b, queues[impl], pending, warm, incr)
				})
			}
		}
	}
}

// holdQueue is what the hold model needs of a queue.
type holdQueue interface {
	push(at time.Duration, kind uint8, a, b int32)
	pop() (event, bool)
}

// hold runs the hold model on q. Every queue is called through the
// interface, so the comparison is fair, if a few ns slower than the
// engine's direct calls.
func hold(b *testing.B, q holdQueue, pending, warm int, incr []time.Duration) {
	mask := len(incr) - 1
	for i := range pending {
		q.push(incr[i&mask], 0, int32(i), 0)
	}
	i := 0
	for range warm {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind(), e.a, e.b)
		i++
	}
	b.ReportAllocs()
	for b.Loop() {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind(), e.a, e.b)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// boxedHeap is the event list written with container/heap, the baseline
// the typed heap and the wheel are measured against: its interface
// boxes every event pushed and popped.
type boxedHeap struct {
	items []event
	seq   uint64
}

func (h *boxedHeap) Len() int           { return len(h.items) }
func (h *boxedHeap) Less(i, j int) bool { return eventBefore(&h.items[i], &h.items[j]) }
func (h *boxedHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *boxedHeap) Push(x any)         { h.items = append(h.items, x.(event)) }
func (h *boxedHeap) Pop() any {
	e := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return e
}

func (h *boxedHeap) push(at time.Duration, kind uint8, a, b int32) {
	heap.Push(h, newEvent(at, h.seq, kind, a, b))
	h.seq++
}

func (h *boxedHeap) pop() (event, bool) {
	if len(h.items) == 0 {
		return event{}, false
	}
	return heap.Pop(h).(event), true
}

// sci writes a power of ten as 1e3, 1e6.
func sci(n int) string {
	e := 0
	for ; n >= 10 && n%10 == 0; n /= 10 {
		e++
	}
	return fmt.Sprintf("%de%d", n, e)
}
