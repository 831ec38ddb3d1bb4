package sim

import (
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
func BenchmarkEngine(b *testing.B) {
	for _, impl := range []string{"heap", "wheel"} {
		for _, pending := range []int{1e3, 1e5, 1e6} {
			for _, dist := range []string{"exp1s", "unif60s", "exp1h"} {
				name := fmt.Sprintf("queue=%s/pending=%s/incr=%s", impl, sci(pending), dist)
				b.Run(name, func(b *testing.B) {
					incr := holdIncrements(dist, 1<<20, 11)
					warm := max(2*pending, 100_000)
					switch impl {
					case "heap":
						holdHeap(b, newHeapQueue(), pending, warm, incr)
					case "wheel":
						holdWheel(b, newWheelQueue(), pending, warm, incr)
					}
				})
			}
		}
	}
}

// holdHeap and holdWheel are the same loop, written twice so that the calls
// are direct, as in the engine.
func holdHeap(b *testing.B, q *heapQueue, pending, warm int, incr []time.Duration) {
	mask := len(incr) - 1
	for i := range pending {
		q.push(incr[i&mask], 0, int32(i), 0)
	}
	i := 0
	for range warm {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind, e.a, e.b)
		i++
	}
	b.ReportAllocs()
	for b.Loop() {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind, e.a, e.b)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func holdWheel(b *testing.B, q *wheelQueue, pending, warm int, incr []time.Duration) {
	mask := len(incr) - 1
	for i := range pending {
		q.push(incr[i&mask], 0, int32(i), 0)
	}
	i := 0
	for range warm {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind, e.a, e.b)
		i++
	}
	b.ReportAllocs()
	for b.Loop() {
		e, _ := q.pop()
		q.push(e.at+incr[i&mask], e.kind, e.a, e.b)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// sci writes a power of ten as 1e3, 1e6.
func sci(n int) string {
	e := 0
	for ; n >= 10 && n%10 == 0; n /= 10 {
		e++
	}
	return fmt.Sprintf("%de%d", n, e)
}
