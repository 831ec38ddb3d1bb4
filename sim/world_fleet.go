package sim

import (
	"unsafe"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// workload is the fleet's side: the requests it has created, and the
// senders' breakers, budgets and dispatchers.
type workload struct {
	senders    []sender
	perRequest bool // one sender per request: senders grow with requests
	workers    int32
	blocking   bool              // the dispatcher's workers sleep through backoffs
	arrived    int               // requests created so far
	limit      int               // requests to create, -1: no limit (poisson without a cap)
	stream     scenarios.Arrival // with a poisson stream per sender: one sender's
	delayed    int               // requests waiting for their backoff now
	groups     *strategies.Groups
	clients    *scenarios.Clients // a closed loop: each client's next request comes when its previous one ends
	rates      clientRates
	// sharedBudget is set when the strategy's budget is held by a group
	// of senders: its denials are counted.
	sharedBudget bool
}

// sender is one sender's state beyond the strategy's: its dispatcher.
type sender struct {
	retry strategies.Sender
	pool  Pool
}

// newRequest creates the next request of the workload at now and makes
// its first try.
func (w *world) newRequest() {
	i := int32(len(w.reqs))
	s := int32(i)
	if n := len(w.senders); n > 0 && !w.perRequest {
		s = i % int32(n)
	}
	w.newRequestFrom(s)
}

// newRequestFrom creates the next request of the workload at now, from
// sender s, and makes its first try.
func (w *world) newRequestFrom(s int32) {
	i := int32(len(w.reqs))
	if w.perRequest {
		w.senders = append(w.senders, sender{pool: NewPool()})
		w.groups.Join(&w.senders[len(w.senders)-1].retry, len(w.senders)-1)
	}
	w.reqs = append(w.reqs, request{sender: s, arrived: -1})
	w.created = append(w.created, w.now)
	// Requests are created one after another: fetch the lines the next
	// ones go to, which at 10^7 requests have left the cache since the
	// slices were zeroed. (The two capacities differ where the slices
	// grow by appending.)
	if j := int(i) + 16; j&1 == 0 && j < cap(w.reqs) {
		prefetch(unsafe.Pointer(unsafe.SliceData(w.reqs[j : j+1])))
		if j&7 == 0 && j < cap(w.created) {
			prefetch(unsafe.Pointer(unsafe.SliceData(w.created[j : j+1])))
		}
	}
	if w.memory != nil {
		w.memory = append(w.memory, retryMemory{})
	}
	if w.permits != nil {
		w.permits = append(w.permits, strategies.Permit{})
	}
	if w.hints != nil {
		w.hints = append(w.hints, 0)
	}
	if w.next != nil {
		w.next = append(w.next, -1)
	}
	if w.versions != nil {
		w.versions = append(w.versions, 0)
	}
	if w.copies != nil {
		w.copies = append(w.copies, copies{})
	}
	w.arrived++
	w.try(i)
}

// try makes request i's next attempt at now, through its sender's
// dispatcher and breaker.
func (w *world) try(i int32) {
	r := &w.reqs[i]
	if w.workers > 0 && r.flags&flagWorker == 0 {
		if !w.senders[r.sender].pool.Acquire(i, w.workers, w.next) {
			r.state = stQueued
			return
		}
		r.flags |= flagWorker
	}
	var sd *strategies.Sender
	if w.senders != nil {
		sd = &w.senders[r.sender].retry
	}
	permit, d, ok := w.policy.Begin(sd, w.retryState(i), w.now, w.rRetry)
	w.setRetryState(i)
	if !ok {
		switch d.Local {
		case strategies.ShortCircuit:
			w.run.ShortCircuited++
			w.current().ShortCircuited++
		case strategies.Rejected:
			w.run.ClientRejected++
		case strategies.RateWait:
			w.run.RateLimited++
		}
		w.free(i, d)
		w.decide(i, d)
		return
	}
	if w.permits != nil {
		w.permits[i] = permit
	}
	r.state = stInFlight
	r.tag++
	r.sentAt = w.now
	r.arrived = -1
	if w.failHint != nil {
		w.hints[i] = 0 // an earlier attempt's mark is no hint for this one
	}
	if w.occ {
		w.q.push(w.now+w.latency.sample(w.rNet), evOCCRead, i, r.tag)
		return
	}
	if w.copies != nil {
		w.firstCopy(r, i)
	}
	w.send(i, r.tag)
}

// send sends attempt tag of request i now: it reaches the server after
// the network's latency.
func (w *world) send(i, tag int32) {
	if w.latency.zero() {
		w.atServer(i, tag)
	} else {
		w.q.push(w.now+w.latency.sample(w.rNet), evAtServer, i, tag)
	}
}

// free ends request i's hold on its worker after decision d, except in a
// blocking dispatcher, where the worker sleeps through the request's
// backoff and is freed only when the request is delivered or given up.
func (w *world) free(i int32, d strategies.Decision) {
	r := &w.reqs[i]
	if r.flags&flagWorker == 0 || (w.blocking && d.Action == strategies.Retry) {
		return
	}
	r.flags &^= flagWorker
	w.release(r.sender)
}

// release frees a worker of sender s and gives it the next request
// waiting in the dispatcher's queue.
func (w *world) release(s int32) {
	if w.workers == 0 {
		return
	}
	if i, ok := w.senders[s].pool.Release(w.next); ok {
		w.reqs[i].state = stWaiting
		w.q.push(w.now, evTry, i, 0)
	}
}

// expire makes the sender of attempt tag of request i give up at its
// timeout, unless an answer comes first.
func (w *world) expire(i, tag int32) {
	r := &w.reqs[i]
	if !w.live(r, i, tag) {
		return
	}
	if t := w.policy.Timeout; t > 0 {
		w.q.push(max(w.sentAt(r, i, tag)+t, w.now), evTimeout, i, tag)
	}
}

// reply sends the answer o to attempt tag of request i: it reaches the
// sender after the network's return hop.
func (w *world) reply(i, tag int32, o strategies.Outcome) {
	if w.latency.zero() {
		w.response(i, tag, o)
		return
	}
	w.q.push(w.now+w.latency.sample(w.rNet), evResponse+uint8(o), i, tag)
}

// response is the answer o to attempt tag of request i reaching its
// sender now. An answer after the sender gave up is dropped.
func (w *world) response(i, tag int32, o strategies.Outcome) {
	r := &w.reqs[i]
	if w.copies != nil && o == strategies.Success && tag == w.copies[i].base && w.hedge.Percentile > 0 {
		// The first copy's latency, live or not: the service's.
		w.policy.Observe(&w.senders[r.sender].retry, w.now-w.copies[i].sentAt[0])
	}
	if !w.live(r, i, tag) {
		return
	}
	if t := w.policy.Timeout; t > 0 && w.now-w.sentAt(r, i, tag) > t {
		// The answer arrives after the timeout: the timeout event, at
		// an earlier time, has already handled the attempt.
		return
	}
	if w.copies != nil {
		w.copyAnswered(i, tag, o)
		return
	}
	w.outcome(i, o)
}

// outcome is the sender of request i learning that its attempt in flight
// came to o.
func (w *world) outcome(i int32, o strategies.Outcome) {
	r := &w.reqs[i]
	if r.arrived >= 0 {
		classify(&w.run.Series[min(int(r.arrived), len(w.run.Series)-1)], o)
	}
	res := strategies.Result{Outcome: o}
	if o == strategies.TooManyRequests && w.hints[i] > 0 {
		res.RetryAfter = retryAfterWait(int64(w.hints[i]-1), w.hintFormat, w.now)
		res.HasRetryAfter = true
		w.hints[i] = 0
	}
	switch {
	case o == strategies.TooManyRequests && w.rateHint != nil:
		res.Pushback, res.HasPushback = *w.rateHint, true
	case o == strategies.ServerError && w.failHint != nil && w.hints[i] == failureHint:
		res.Pushback, res.HasPushback = *w.failHint, true
		w.hints[i] = 0
	}
	if o != strategies.Success {
		w.current().Failed++
	}
	var sd *strategies.Sender
	if w.senders != nil {
		sd = &w.senders[r.sender].retry
	}
	var permit strategies.Permit
	if w.permits != nil {
		permit = w.permits[i]
	}
	var d strategies.Decision
	if w.rates.throttle != nil {
		r0, on0 := w.rates.rate(sd)
		d = w.policy.Done(sd, w.retryState(i), permit, w.now, res, w.rRetry)
		w.rates.changed(sd, r0, on0)
	} else {
		d = w.policy.Done(sd, w.retryState(i), permit, w.now, res, w.rRetry)
	}
	w.setRetryState(i)
	if d.Reason == strategies.BudgetDenied && w.sharedBudget {
		w.run.SharedBudgetDenied++
	}
	r.state = stWaiting
	w.free(i, d)
	w.decide(i, d)
}

// decide carries out the decision d about request i.
func (w *world) decide(i int32, d strategies.Decision) {
	r := &w.reqs[i]
	switch d.Action {
	case strategies.Deliver:
		r.state = stDelivered
		w.final(i, r)
		w.run.Delivered++
		w.current().Delivered++
		w.run.RecordLatency(w.now - w.created[i])
	case strategies.Retry:
		r.state = stWaiting
		w.delayed++
		w.q.push(w.now+d.Wait, evTry, i, retried)
	case strategies.DeadLetter:
		r.state, r.reason = stDead, d.Reason
		w.final(i, r)
		w.dlq = append(w.dlq, i)
		w.dlqDepth++
	}
}

// final notes that request i, r, reached a final state now; in a closed
// loop its client sends the next after its think time.
func (w *world) final(i int32, r *request) {
	w.finished++
	w.completion = w.now
	if w.created[i] <= w.lastOutageEnd {
		w.drain = w.now
	}
	if c := w.clients; c != nil && w.now+c.ThinkTime < w.horizon {
		w.q.push(w.now+c.ThinkTime, evArrival, r.sender, 0)
	}
}
