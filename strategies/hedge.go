package strategies

import (
	"math"
	"time"
)

// MaxHedges is the most hedged copies an attempt may have beyond its
// first: gRPC's hedging policy allows at most 5 attempts in all.
const MaxHedges = 4

// Hedge is a hedging policy (gRFC A6 hedging, failsafe-go's and Polly's
// hedge): while an attempt has no answer, another copy of it is sent
// after each Delay, up to Max copies beyond the first; the first success
// wins, and the attempt fails only when every copy sent has failed (the
// last one's outcome is then the attempt's, and the retry policy decides
// as after any failed attempt). Hedges draw on the policy's retry budget
// when it has one, as gRPC's retry throttling covers hedges: a hedge
// goes only while the budget would allow a retry, and takes what a retry
// costs.
type Hedge struct {
	// Delay is the wait from an attempt's first copy to its first hedge,
	// and between hedges, when Percentile is 0.
	Delay time.Duration
	// Percentile, in (0, 100), makes the delay that percentile of the
	// latencies the sender has observed (see Observe; P-square estimate,
	// Jain and Chlamtac 1985); a sender that has seen fewer than
	// MinObserved does not hedge.
	Percentile float64
	// Max is the most hedges an attempt may have; 0 means 1.
	Max int
	// Cancel makes the sender cancel the copies it no longer waits for
	// (the losers, once a copy has won; any it gave up on): a copy on
	// its way or waiting at the server is dropped there; one in service
	// finishes, as wasted work. Without it every copy is served.
	Cancel bool
}

// MinObserved is how many latencies a sender must have observed before
// a percentile hedge delay is used.
const MinObserved = 20

// max returns the most hedges an attempt may have.
func (h *Hedge) max() int {
	if h.Max <= 0 {
		return 1
	}
	return min(h.Max, MaxHedges)
}

// Copies returns the most copies an attempt may have, the first
// included.
func (h *Hedge) Copies() int { return 1 + h.max() }

// HedgeDelay returns how long after its latest copy an attempt of sender
// s sends its next hedge, and false when the sender does not hedge (yet):
// a percentile delay needs MinObserved latencies first.
func (p *Policy) HedgeDelay(s *Sender) (time.Duration, bool) {
	h := p.Hedge
	if h == nil {
		return 0, false
	}
	if h.Percentile == 0 {
		return h.Delay, true
	}
	e := &s.extended().latency
	if e.n < MinObserved {
		return 0, false
	}
	return max(time.Duration(e.quantile()), 1), true
}

// AllowHedge asks, at now, whether request q of sender s may send a
// hedge: always without a budget; with one, only while it would allow a
// retry, and the hedge takes what a retry costs (the cost is not
// refunded). A BudgetEnvoy budget is asked without holding a place.
func (p *Policy) AllowHedge(s *Sender, q *Request, now time.Duration) bool {
	b := p.Budget
	switch {
	case b == nil:
		return true
	case b.Kind == BudgetEnvoy:
		return b.RetriesAllowed(s.Shared(), now) > 0
	case b.Shared():
		_, ok := b.AcquireShared(s.Shared(), now)
		return ok
	}
	_, ok := b.Acquire(&s.Budget, ServerError)
	return ok
}

// Observe records, for a percentile hedge delay, the latency of a
// success. The drivers report every copy's success, whether or not it
// won its attempt, so that the sample is the service's, not the
// winners' (which a hedge makes faster: the delay would fall and the
// hedges grow). s may be nil when the policy keeps no sender state.
func (p *Policy) Observe(s *Sender, latency time.Duration) {
	if h := p.Hedge; h != nil && h.Percentile > 0 && latency > 0 {
		e := &s.extended().latency
		if e.p == 0 {
			e.p = h.Percentile / 100
		}
		e.add(float64(latency))
	}
}

// psquare is the P-square estimate of one quantile p of a stream (Jain
// and Chlamtac, "The P2 algorithm for dynamic calculation of quantiles
// and histograms without storing observations", CACM 1985): five markers,
// whose heights follow the minimum, the p/2, p and (1+p)/2 quantiles and
// the maximum.
type psquare struct {
	p     float64
	n     int64
	q     [5]float64 // marker heights
	pos   [5]float64 // marker positions, from 1
	want  [5]float64 // desired positions
	delta [5]float64 // their increments
}

func (e *psquare) add(x float64) {
	if e.n < 5 {
		e.q[e.n] = x
		e.n++
		if e.n == 5 {
			sortFive(&e.q)
			p := e.p
			e.pos = [5]float64{1, 2, 3, 4, 5}
			e.want = [5]float64{1, 1 + 2*p, 1 + 4*p, 3 + 2*p, 5}
			e.delta = [5]float64{0, p / 2, p, (1 + p) / 2, 1}
		}
		return
	}
	e.n++
	var k int
	switch {
	case x < e.q[0]:
		e.q[0], k = x, 0
	case x >= e.q[4]:
		e.q[4], k = x, 3
	default:
		for k = 0; k < 3 && x >= e.q[k+1]; k++ {
		}
	}
	for i := k + 1; i < 5; i++ {
		e.pos[i]++
	}
	for i := range e.want {
		e.want[i] += e.delta[i]
	}
	for i := 1; i <= 3; i++ {
		d := e.want[i] - e.pos[i]
		if (d >= 1 && e.pos[i+1]-e.pos[i] > 1) || (d <= -1 && e.pos[i-1]-e.pos[i] < -1) {
			s := math.Copysign(1, d)
			q := e.parabolic(i, s)
			if e.q[i-1] < q && q < e.q[i+1] {
				e.q[i] = q
			} else {
				e.q[i] = e.linear(i, s)
			}
			e.pos[i] += s
		}
	}
}

func (e *psquare) parabolic(i int, d float64) float64 {
	n, q := &e.pos, &e.q
	return q[i] + d/(n[i+1]-n[i-1])*((n[i]-n[i-1]+d)*(q[i+1]-q[i])/(n[i+1]-n[i])+(n[i+1]-n[i]-d)*(q[i]-q[i-1])/(n[i]-n[i-1]))
}

func (e *psquare) linear(i int, d float64) float64 {
	j := i + int(d)
	return e.q[i] + d*(e.q[j]-e.q[i])/(e.pos[j]-e.pos[i])
}

// quantile returns the estimate: the middle marker's height (with fewer
// than five observations, the nearest of those seen).
func (e *psquare) quantile() float64 {
	if e.n >= 5 {
		return e.q[2]
	}
	xs := e.q
	sortFive(&xs)
	seen := xs[5-e.n:]
	return seen[min(int(e.p*float64(e.n)), int(e.n)-1)]
}

func sortFive(a *[5]float64) {
	for i := 1; i < 5; i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
