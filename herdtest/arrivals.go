package herdtest

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// arrival is one request of an open workload: when it is created and
// which sender makes it.
type arrival struct {
	at     time.Duration
	sender int
}

// openArrivals returns the requests of sc's open workload in the order
// they are created, with the simulator's times: the same draws of the
// arrival stream r, in the same order (see realhttp's driver, which
// makes them the same way). Senders are dealt requests in turn, or one
// sender per request when the workload has no senders.
func openArrivals(sc *scenarios.Scenario, r *rand.Rand) []arrival {
	w := sc.Workload
	a, horizon := w.Arrival, sc.Duration
	limit := w.Requests // 0: no cap (poisson)
	var out []arrival
	add := func(at time.Duration, s int) bool {
		if limit > 0 && len(out) >= limit {
			return false
		}
		if s < 0 {
			s = len(out)
			if w.Senders > 0 {
				s %= w.Senders
			}
		}
		out = append(out, arrival{at, s})
		return true
	}
	switch a.Kind {
	case scenarios.Burst:
		for add(a.At, -1) {
		}
	case scenarios.Uniform:
		for k := 0; k < limit; k++ {
			add(sim.UniformAt(a, limit, k), -1)
		}
	case scenarios.Poisson:
		if !a.PerSender {
			for t, ok := sim.NextPoisson(a, horizon, a.From, r); ok && add(t, -1); t, ok = sim.NextPoisson(a, horizon, t, r) {
			}
			break
		}
		stream := a.SenderStream(w.Senders)
		var q nextArrivals
		for s := range w.Senders {
			if t, ok := sim.NextPoisson(stream, horizon, a.From, r); ok {
				q = append(q, arrival{t, s})
			}
		}
		heap.Init(&q)
		for len(q) > 0 {
			next := q[0]
			if !add(next.at, next.sender) {
				break
			}
			if t, ok := sim.NextPoisson(stream, horizon, next.at, r); ok {
				q[0].at = t
				heap.Fix(&q, 0)
			} else {
				heap.Pop(&q)
			}
		}
	}
	return out
}

// nextArrivals is a heap of each sender's next arrival, earliest first,
// the lower sender first at a tie.
type nextArrivals []arrival

func (q nextArrivals) Len() int { return len(q) }
func (q nextArrivals) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].sender < q[j].sender
}
func (q nextArrivals) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *nextArrivals) Push(x any)   { *q = append(*q, x.(arrival)) }
func (q *nextArrivals) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
