package sim

import (
	"math"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// serverModel is the single server's state: its slots and waiting room,
// its rate limit's bucket, its outages, and the queue's length over the
// current bucket.
type serverModel struct {
	service    sampler
	busy       int     // requests in service
	queue      ring    // the waiting room: request, attempt pairs
	queueLimit int     // -1: unlimited
	slots      int     // concurrency, -1: unlimited
	tokens     float64 // rate limit bucket
	tokensAt   time.Duration
	hintFormat strategies.RetryAfterFormat
	outages    []scenarios.Outage
	// pushback hints (see scenarios.RateLimit.Pushback and
	// Server.FailurePushback); a failure's is marked in hints
	rateHint, failHint *time.Duration

	// the queue over the current bucket (see queueChange and sample)
	queueAt   time.Duration // since when its length has not changed
	queueArea float64       // the integral of its length from the bucket's start to queueAt: requests x ns
	queueMax  int           // its longest since the bucket's start
}

// ring is a FIFO of (request, attempt) pairs.
type ring struct {
	buf        []int32 // pairs: request, attempt
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(a, b int32) {
	if 2*r.size == len(r.buf) {
		grown := make([]int32, max(2*len(r.buf), 64))
		for i := range r.size {
			j := (r.head + 2*i) % len(r.buf)
			grown[2*i], grown[2*i+1] = r.buf[j], r.buf[j+1]
		}
		r.buf, r.head = grown, 0
	}
	j := (r.head + 2*r.size) % len(r.buf)
	r.buf[j], r.buf[j+1] = a, b
	r.size++
}

// peek returns the request of the pair pop returns next; ok is false
// when the ring is empty.
func (r *ring) peek() (a int32, ok bool) {
	if r.size == 0 {
		return 0, false
	}
	return r.buf[r.head], true
}

func (r *ring) pop() (a, b int32) {
	a, b = r.buf[r.head], r.buf[r.head+1]
	r.head = (r.head + 2) % len(r.buf)
	r.size--
	return a, b
}

// atServer is attempt tag of request i reaching the server at now.
func (w *world) atServer(i, tag int32) {
	r := &w.reqs[i]
	w.run.Attempts++
	b := w.current()
	b.Attempts++
	if w.live(r, i, tag) {
		r.arrived = int32(w.sampled)
	} else if w.hedge != nil && w.hedge.Cancel {
		return // a copy its sender cancelled on its way: dropped as it arrives
	}
	srv := &w.sc.Server
	if o, down := w.outage(w.now); down {
		switch o.Mode {
		case scenarios.Refuse:
			w.reply(i, tag, strategies.Refused)
		case scenarios.ErrorMode:
			w.reply(i, tag, strategies.ServerError)
		default: // timeout: no answer; the sender gives up
			w.expire(i, tag)
		}
		return
	}
	if srv.RateLimit != nil && !w.takeToken() {
		w.run.Throttled++
		b.Throttled++
		w.hints[i] = w.retryAfterHint()
		w.reply(i, tag, strategies.TooManyRequests)
		return
	}
	if srv.Idempotency && r.flags&flagStarted != 0 {
		w.reply(i, tag, w.cached(r))
		return
	}
	if srv.FailureProbability > 0 && w.rFault.Float64() < srv.FailureProbability {
		if w.failHint != nil {
			w.hints[i] = failureHint
		}
		w.reply(i, tag, strategies.ServerError)
		return
	}
	if w.busy < w.capacity() {
		done, ok := w.serve(i, tag)
		if ok && !(w.latency.zero() && done <= r.sentAt+w.policy.Timeout) {
			w.expire(i, tag) // the answer may come too late
		}
		return
	}
	if w.queueLimit >= 0 && w.queued() >= w.queueLimit {
		w.run.Rejected++
		b.Rejected++
		w.reply(i, tag, strategies.ServerError)
		return
	}
	w.queueChange()
	w.queue.push(i, tag)
	w.enqueued(i)
	w.queueMax = max(w.queueMax, w.queued())
	w.expire(i, tag)
}

// failureHint marks, in hints, a 5xx of the failure probability that
// carries the failure pushback.
const failureHint = math.MaxUint32

// outage returns the outage in force at t, if any.
func (w *world) outage(t time.Duration) (scenarios.Outage, bool) {
	for _, o := range w.outages {
		if t < o.Start {
			break
		}
		if t < o.End() {
			return o, true
		}
	}
	return scenarios.Outage{}, false
}

// capacity returns how many requests the server may serve at once now:
// its concurrency, ramped up after an outage by the warmup.
func (w *world) capacity() int {
	if w.slots < 0 {
		return math.MaxInt
	}
	wu := w.sc.Server.Warmup
	if wu.Duration == 0 {
		return w.slots
	}
	for i := len(w.outages) - 1; i >= 0; i-- {
		end := w.outages[i].End()
		if w.now < end {
			continue
		}
		if since := w.now - end; since < wu.Duration {
			return warmupSlots(since, wu, w.slots)
		}
		break
	}
	return w.slots
}

// takeToken takes a token from the rate limit's bucket, if one is there.
func (w *world) takeToken() bool {
	rl := w.sc.Server.RateLimit
	w.tokens = min(float64(rl.Burst), w.tokens+(w.now-w.tokensAt).Seconds()*rl.Rate)
	w.tokensAt = w.now
	if w.tokens >= 1 {
		w.tokens--
		return true
	}
	return false
}

// retryAfterHint returns the Retry-After header of a 429 sent now, plus
// one (see retryAfterHeader).
func (w *world) retryAfterHint() uint32 {
	rl := w.sc.Server.RateLimit
	wait := time.Duration(rl.RetryAfter)
	if wait == 0 {
		wait = time.Duration((1 - w.tokens) / rl.Rate * float64(time.Second))
	}
	return uint32(retryAfterHeader(wait, w.hintFormat, w.now)) + 1
}

// serve starts serving attempt tag of request i now, and returns when it
// will be done; false when there is no work to do.
func (w *world) serve(i, tag int32) (time.Duration, bool) {
	r := &w.reqs[i]
	if (w.sc.Server.DropExpired || w.hedge != nil && w.hedge.Cancel) && !w.live(r, i, tag) {
		return 0, false // its sender has given up, or cancelled it: skip the work
	}
	if w.sc.Server.Idempotency && r.flags&flagStarted != 0 {
		w.reply(i, tag, w.cached(r))
		return 0, false
	}
	r.flags |= flagStarted
	d := w.service.sample(w.rServe) + w.slowdown()
	w.busy++
	w.q.push(w.now+d, evServed, i, tag)
	return w.now + d, true
}

// slowdown returns what the requests in service add to a service time
// that starts now: Slowdown for each, at most maxSample in all.
func (w *world) slowdown() time.Duration {
	sd := w.sc.Server.Slowdown
	if sd == 0 || w.busy == 0 {
		return 0
	}
	if time.Duration(w.busy) > maxSample/sd {
		return maxSample
	}
	return sd * time.Duration(w.busy)
}

// cached is the answer of an idempotent server to a repeat of request r,
// whose key it has seen: the stored success once the first processing is
// done, and while it is still going on a 503 that asks the sender to come
// back (the request is not processed twice either way).
func (w *world) cached(r *request) strategies.Outcome {
	if r.flags&flagProcessed != 0 {
		return strategies.Success
	}
	return strategies.ServerError
}

// served is the server finishing attempt tag of request i now.
func (w *world) served(i, tag int32) {
	w.busy--
	r := &w.reqs[i]
	w.run.Processed++
	if r.flags&flagProcessed != 0 {
		w.run.Duplicates++
	}
	r.flags |= flagProcessed
	if !w.live(r, i, tag) {
		w.run.Wasted++
	}
	if p := w.sc.Server.ResponseLoss; p > 0 && w.rFault.Float64() < p {
		w.run.Lost++
		w.reply(i, tag, strategies.Reset)
	} else {
		w.reply(i, tag, strategies.Success)
	}
	w.startQueued()
}

// startQueued starts queued work while the server has free slots.
func (w *world) startQueued() {
	for w.queue.len() > 0 && w.busy < w.capacity() {
		w.queueChange()
		i, tag := w.queue.pop()
		if next, ok := w.queue.peek(); ok {
			// Waiting, it has left the cache; it is served next.
			prefetch(unsafe.Pointer(&w.reqs[next]))
		}
		w.dequeued(i)
		w.serve(i, tag)
	}
}

// queueChange accounts for the queue's length up to now, before it
// changes: the bucket's integral of the length grows by length x time
// since the last change.
func (w *world) queueChange() {
	w.queueArea += float64(w.queued()) * float64(w.now-w.queueAt)
	w.queueAt = w.now
}

// warmupSlots returns the slots of a server with slots in full since
// into its warmup wu: from wu.From of them, in warmupSteps steps, to all.
func warmupSlots(since time.Duration, wu scenarios.Warmup, slots int) int {
	step := float64(mulDiv(since, warmupSteps, int64(wu.Duration))) / warmupSteps
	return max(1, int((wu.From+(1-wu.From)*step)*float64(slots)))
}

// retryAfterHeader returns the number a Retry-After header written at
// virtual time now carries for a wait: delta-seconds rounded up, or for
// an HTTP-date the second it names, counted from the virtual epoch (the
// second at or after now + wait). It is what strategies.FormatRetryAfter
// writes, without the string.
func retryAfterHeader(wait time.Duration, format strategies.RetryAfterFormat, now time.Duration) int64 {
	if format == strategies.RetryAfterHTTPDate {
		return int64((now + wait + time.Second - 1) / time.Second)
	}
	return int64((wait + time.Second - 1) / time.Second)
}

// retryAfterWait returns the wait a sender parses from the header h when
// it receives it at now, as strategies.ParseRetryAfter does: a date in
// the past means now.
func retryAfterWait(h int64, format strategies.RetryAfterFormat, now time.Duration) time.Duration {
	if format == strategies.RetryAfterHTTPDate {
		return max(time.Duration(h)*time.Second-now, 0)
	}
	return time.Duration(h) * time.Second
}
