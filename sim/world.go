package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// The kinds of event. A response event's kind is evResponse plus the
// outcome the sender sees.
const (
	evArrival   uint8 = iota // the workload creates its next request(s)
	evTry                    // request a is ready for its next attempt
	evAtServer               // attempt b of request a reaches the server
	evServed                 // the server finished serving attempt b of request a
	evTimeout                // the sender of attempt b of request a gives up on it
	evReplay                 // the DLQ replay sends dead letter number a back
	evWarmup                 // capacity grew during a warmup: start queued work
	evDeadline               // after everything else at this instant: the sender of attempt b of request a gives up
	evOCCRead                // occ: attempt b of request a reads the row's version at the server
	evOCCWrite               // occ: attempt b of request a, having read, sends its conditional write
	evOutageEnd              // the last outage ends: what is left to recover is counted
	evResponse               // + outcome: the answer to attempt b of request a reaches its sender
)

// retried marks an evTry that ends a backoff wait (b = retried), as
// opposed to one that hands a request to a freed worker.
const retried = 1

// The states of a request.
const (
	stWaiting   uint8 = iota // created, or waiting for its backoff: no attempt in flight
	stQueued                 // waiting for a worker of its sender's dispatcher
	stInFlight               // an attempt is in flight
	stDelivered              // final: the sender saw a success
	stDead                   // final (unless replayed): in the dead-letter queue
)

// request is one request's state: one cache line, since a run holds a
// million and touches them in no particular order. State that only some
// scenarios need (breaker permits, Retry-After hints, dispatcher queues)
// lives in slices beside the requests, allocated only then.
type request struct {
	retry   strategies.Request // attempts, backoff memory, first attempt
	created time.Duration
	sentAt  time.Duration // when the attempt in flight was sent
	sender  int32
	tag     int32 // number of the attempt in flight; events of older attempts are stale
	arrived int32 // bucket in which the attempt in flight reached the server, -1 if it has not
	state   uint8
	reason  strategies.Reason // why it is dead-lettered
	flags   uint8             // flagStarted, flagProcessed, flagWorker
}

// The flags of a request.
const (
	// flagStarted is set once the server begins processing the request:
	// with idempotency the key is recorded then, and repeats are answered
	// from the cache.
	flagStarted uint8 = 1 << iota
	// flagProcessed is set once processing ends, so that another
	// processing is a duplicate.
	flagProcessed
	// flagWorker is set while the request holds a worker of its sender's
	// dispatcher.
	flagWorker
)

// sender is one sender's state beyond the strategy's: its dispatcher.
type sender struct {
	retry strategies.Sender
	pool  Pool
}

// epoch is the wall-clock time of virtual time 0, for HTTP-date hints.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is one run of one strategy: the engine, the models and what they
// count. It belongs to one goroutine.
type world struct {
	sc      *scenarios.Scenario
	policy  *strategies.Policy
	q       *eventQueue
	now     time.Duration
	horizon time.Duration
	events  int64

	rArrive, rServe, rNet, rFault, rRetry *rand.Rand

	service, latency sampler
	reqs             []request
	permits          []strategies.Permit // per request, with a breaker
	hints            []uint32            // per request, with a rate limit: the last 429's Retry-After header (see retryAfterHeader), plus 1 (0: none)
	next             []int32             // per request, with a dispatcher: the next in its sender's queue, -1 for none
	versions         []int64             // per request, with model occ: the row version its attempt read
	occ              bool                // the server is a single row under optimistic concurrency control
	version          int64               // occ: the row's version, one more per committed write
	senders          []sender
	perRequest       bool // one sender per request: senders grow with requests
	workers          int32
	blocking         bool // the dispatcher's workers sleep through backoffs

	// server
	busy       int     // requests in service
	queue      ring    // the waiting room: request, attempt pairs
	queueLimit int     // -1: unlimited
	slots      int     // concurrency, -1: unlimited
	tokens     float64 // rate limit bucket
	tokensAt   time.Duration
	hintFormat strategies.RetryAfterFormat
	outages    []scenarios.Outage

	// the queue over the current bucket (see queueChange and sample)
	queueAt   time.Duration // since when its length has not changed
	queueArea float64       // the integral of its length from the bucket's start to queueAt: requests x ns
	queueMax  int           // its longest since the bucket's start

	// workload
	arrived int // requests created so far
	limit   int // requests to create, -1: no limit (poisson without a cap)

	dlq      []int32 // dead letters, in the order they arrived
	replayed int
	dlqDepth int // requests in the dead-letter queue now
	delayed  int // requests waiting for their backoff now

	lastOutageEnd time.Duration
	completion    time.Duration // the latest final state of any request
	drain         time.Duration // the latest final state of a request created by lastOutageEnd

	run        *results.Run
	bucket     time.Duration
	nextSample time.Duration // end of the bucket whose queue is sampled next
	sampled    int           // buckets sampled

	loads uint64 // the event queue's last run prefetched

	progress      func(int)
	progressEvery time.Duration
	progressNext  time.Duration

	ctx       context.Context // the run's; simulate checks it every checkEvery events
	maxEvents int64           // the event budget
	failed    error           // stops the run at the next check
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

func (r *ring) pop() (a, b int32) {
	a, b = r.buf[r.head], r.buf[r.head+1]
	r.head = (r.head + 2) % len(r.buf)
	r.size--
	return a, b
}

// maxInstant stops a run whose clock stands still: retries at the same
// instant forever, say. (Options.MaxEvents stops one that would take too
// long.)
const maxInstant = 1 << 26

// checkEvery is how many events go by between two looks at the context
// and the limits.
const checkEvery = 1 << 16

// ErrEventBudget is returned, wrapped, by a run that reached its event
// budget (Options.MaxEvents); ErrStuck by one whose clock stood still for
// maxInstant events.
var (
	ErrEventBudget = errors.New("sim: the run reached its event budget")
	ErrStuck       = errors.New("sim: the clock stands still")
)

// newWorld prepares run number run of strategy st.
func newWorld(sc *scenarios.Scenario, st *scenarios.Strategy, run int, seed uint64) *world {
	w := &world{
		sc:       sc,
		policy:   st.Policy(),
		q:        newEventQueue(),
		horizon:  sc.Duration,
		rArrive:  rand.New(rand.NewPCG(seed, 1)),
		rServe:   rand.New(rand.NewPCG(seed, 2)),
		rNet:     rand.New(rand.NewPCG(seed, 3)),
		rFault:   rand.New(rand.NewPCG(seed, 4)),
		rRetry:   rand.New(rand.NewPCG(seed, 5)),
		service:  newSampler(&sc.Server.ServiceTime),
		latency:  newSampler(sc.Network.Latency),
		workers:  int32(sc.Workload.Workers),
		blocking: sc.Workload.Dispatch == scenarios.DispatchBlocking,
		slots:    int(sc.Server.Concurrency),
		outages:  sc.Server.Outages,
		bucket:   sc.Bucket,
		limit:    sc.Workload.Requests,
	}
	if sc.Server.Concurrency.Unlimited() {
		w.slots = -1
	}
	w.queueLimit = int(sc.Server.Queue)
	if sc.Server.Queue.Unlimited() {
		w.queueLimit = -1
	}
	if rl := sc.Server.RateLimit; rl != nil {
		w.tokens = float64(rl.Burst)
		w.hintFormat, _ = strategies.ParseRetryAfterFormat(rl.Format)
	}
	if sc.Workload.Arrival.Kind == scenarios.Poisson && w.limit == 0 {
		w.limit = -1
	}
	if n := len(w.outages); n > 0 {
		w.lastOutageEnd = w.outages[n-1].End()
	}
	if w.limit > 0 {
		w.reqs = make([]request, 0, w.limit)
	}
	capacity := max(w.limit, 0)
	if w.policy.Breaker != nil {
		w.permits = make([]strategies.Permit, 0, capacity)
	}
	if sc.Server.RateLimit != nil {
		w.hints = make([]uint32, 0, capacity)
	}
	if w.workers > 0 {
		w.next = make([]int32, 0, capacity)
	}
	if sc.Server.Model == scenarios.ModelOCC {
		w.occ = true
		w.versions = make([]int64, 0, capacity)
	}
	needSenders := w.policy.Breaker != nil || w.policy.Budget != nil || w.workers > 0
	if needSenders {
		if n := sc.Workload.Senders; n > 0 {
			w.senders = make([]sender, n)
			for i := range w.senders {
				w.senders[i].pool = NewPool()
			}
		} else {
			w.perRequest = true
			w.senders = make([]sender, 0, capacity)
		}
	}
	buckets := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	w.run = results.NewRun(st.Name, run, buckets)
	w.run.QueueTracked = true
	w.nextSample = sc.Bucket
	return w
}

// simulate runs the world to its horizon and returns what it counted.
func (w *world) simulate(ctx context.Context) (*results.Run, error) {
	start := time.Now()
	w.ctx = ctx
	w.scheduleWorkload()
	if r := w.sc.DLQ.Replay; r != nil {
		w.q.push(r.At, evReplay, -1, 0)
	}
	for _, o := range w.outages {
		if wu := w.sc.Server.Warmup; wu.Duration > 0 {
			for i := 1; i <= warmupSteps; i++ {
				w.q.push(o.End()+mulDiv(wu.Duration, int64(i), warmupSteps), evWarmup, 0, 0)
			}
		}
	}
	if len(w.outages) > 0 {
		// Pushed first, it comes first among the events at that instant:
		// it sees what the outage left.
		w.q.push(w.lastOutageEnd, evOutageEnd, 0, 0)
	}
	var instant int64 // events at the current time
	check := min(int64(checkEvery), w.maxEvents)
	for {
		e, ok := w.q.pop()
		if !ok || e.at >= w.horizon {
			break // an event at or after the horizon never happens
		}
		w.prefetchRun()
		if e.at == w.now {
			instant++
		} else {
			instant = 0
		}
		w.advance(e.at)
		w.handle(e)
		w.events++
		if w.events >= check {
			check = min(w.events+checkEvery, w.maxEvents)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			switch {
			case w.failed != nil:
				return nil, w.failed
			case w.events >= w.maxEvents:
				return nil, fmt.Errorf("%w: strategy %s stopped after %s events, at t=%s of %s: raise --max-events if the scenario is this big; otherwise its retries never wait or never stop",
					ErrEventBudget, w.run.Strategy, results.Count(float64(w.events)), w.now, w.horizon)
			case instant >= maxInstant:
				return nil, fmt.Errorf("%w: strategy %s made %s events at t=%s without the clock moving: its retries never wait (a zero delay, or no backoff, with unlimited attempts?)",
					ErrStuck, w.run.Strategy, results.Count(float64(instant)), w.now)
			}
		}
	}
	w.advance(w.horizon)
	for w.sampled < len(w.run.Series) {
		w.sample() // a last bucket cut short by the horizon ends there
	}
	w.finish()
	w.run.Events = w.events
	w.run.Wall = time.Since(start)
	return w.run, nil
}

// prefetchRun starts loading the requests of every event of a run the
// event queue has just loaded, and of the run after it, so that the cache misses of a million
// randomly touched requests overlap instead of stalling the engine one
// after the other.
func (w *world) prefetchRun() {
	run, loads := w.q.upcoming()
	if loads == w.loads {
		return
	}
	w.loads = loads
	w.prefetchEvents(run)
	w.prefetchEvents(w.q.following())
}

func (w *world) prefetchEvents(events []event) {
	for i := range events {
		if a := events[i].a; uint(a) < uint(len(w.reqs)) {
			prefetch(unsafe.Pointer(&w.reqs[a]))
		}
	}
}

// warmupSteps is how many times capacity grows during a warmup.
const warmupSteps = 100

// mulDiv returns d * a / b (a, b > 0) in integers where d * a fits, and
// in floating point where it would overflow (a duration of years).
func mulDiv(d time.Duration, a, b int64) time.Duration {
	if d <= math.MaxInt64/time.Duration(a) {
		return d * time.Duration(a) / time.Duration(b)
	}
	return time.Duration(float64(d) * float64(a) / float64(b))
}

// advance moves the clock to t, sampling the queue at every bucket end
// passed.
func (w *world) advance(t time.Duration) {
	for w.nextSample <= t && w.sampled < len(w.run.Series) {
		w.sample()
	}
	if w.progress != nil && t >= w.progressNext {
		n := 0
		for w.progressNext <= t && w.progressNext < w.horizon {
			w.progressNext += w.progressEvery
			n++
		}
		w.progress(n)
	}
	w.now = t
}

// sample records the queues at the end of the current bucket, and the
// server queue's longest and mean length over it, and moves to the next
// bucket.
func (w *world) sample() {
	b := &w.run.Series[w.sampled]
	b.Queue = int64(w.queue.len())
	b.InFlight = int64(w.busy)
	b.DLQ = int64(w.dlqDepth)
	b.Delayed = int64(w.delayed)
	// A last bucket cut short by the horizon ends there.
	start, end := w.nextSample-w.bucket, min(w.nextSample, w.horizon)
	b.QueueMax = int64(w.queueMax)
	b.QueueMean = (w.queueArea + float64(w.queue.len())*float64(end-w.queueAt)) / float64(end-start)
	w.queueAt, w.queueArea, w.queueMax = end, 0, w.queue.len()
	w.sampled++
	w.nextSample += w.bucket
}

func (w *world) handle(e event) {
	switch e.kind {
	case evArrival:
		w.arrive()
	case evTry:
		if e.b == retried {
			w.delayed--
		}
		w.try(e.a)
	case evAtServer:
		w.atServer(e.a, e.b)
	case evServed:
		w.served(e.a, e.b)
	case evTimeout:
		// An answer due at this very instant still counts: give up only
		// after every other event now.
		if r := &w.reqs[e.a]; r.state == stInFlight && r.tag == e.b {
			w.q.push(w.now, evDeadline, e.a, e.b)
		}
	case evDeadline:
		if r := &w.reqs[e.a]; r.state == stInFlight && r.tag == e.b {
			w.run.TimedOut++
			w.current().TimedOut++
			w.outcome(e.a, strategies.Timeout)
		}
	case evReplay:
		w.replay(e.a)
	case evWarmup:
		w.startQueued()
	case evOCCRead:
		// The server answers with the row's version; the sender writes
		// as soon as the answer is back: two hops.
		w.versions[e.a] = w.version
		w.q.push(w.now+w.latency.sample(w.rNet)+w.latency.sample(w.rNet), evOCCWrite, e.a, e.b)
	case evOCCWrite:
		w.occWrite(e.a, e.b)
	case evOutageEnd:
		backlog := int64(w.arrived) - w.run.Delivered - int64(w.dlqDepth)
		w.run.Backlog = &backlog
		w.run.GaveUpInOutage = int64(len(w.dlq))
	default:
		w.response(e.a, e.b, strategies.Outcome(e.kind-evResponse))
	}
}

// current returns the bucket holding now: the one whose end advance
// samples next (the last one at the horizon).
func (w *world) current() *results.Bucket {
	return &w.run.Series[min(w.sampled, len(w.run.Series)-1)]
}

// newRequest creates the next request of the workload at now and makes
// its first try.
func (w *world) newRequest() {
	i := int32(len(w.reqs))
	s := int32(i)
	if n := len(w.senders); n > 0 && !w.perRequest {
		s = i % int32(n)
	}
	if w.perRequest {
		w.senders = append(w.senders, sender{pool: NewPool()})
	}
	w.reqs = append(w.reqs, request{created: w.now, sender: s, arrived: -1})
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
	permit, d, ok := w.policy.Begin(sd, &r.retry, w.now, w.rRetry)
	if !ok {
		w.run.ShortCircuited++
		w.current().ShortCircuited++
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
	if w.occ {
		w.q.push(w.now+w.latency.sample(w.rNet), evOCCRead, i, r.tag)
		return
	}
	if w.latency.zero() {
		w.atServer(i, r.tag)
	} else {
		w.q.push(w.now+w.latency.sample(w.rNet), evAtServer, i, r.tag)
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

// atServer is attempt tag of request i reaching the server at now.
func (w *world) atServer(i, tag int32) {
	r := &w.reqs[i]
	w.run.Attempts++
	b := w.current()
	b.Attempts++
	if r.state == stInFlight && r.tag == tag {
		r.arrived = int32(w.sampled)
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
	if w.queueLimit >= 0 && w.queue.len() >= w.queueLimit {
		w.run.Rejected++
		b.Rejected++
		w.reply(i, tag, strategies.ServerError)
		return
	}
	w.queueChange()
	w.queue.push(i, tag)
	w.queueMax = max(w.queueMax, w.queue.len())
	w.expire(i, tag)
}

// occWrite is the conditional write of attempt tag of request i reaching
// the row at now: it commits when no other write has committed since the
// attempt read the version, and fails otherwise.
func (w *world) occWrite(i, tag int32) {
	w.run.Attempts++
	w.current().Attempts++
	w.reqs[i].arrived = int32(w.sampled)
	w.run.Processed++
	o := strategies.ServerError // a conflict
	if w.versions[i] == w.version {
		w.version++
		o = strategies.Success
	}
	w.reply(i, tag, o)
}

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

// warmupSlots returns the slots of a server with slots in full since
// into its warmup wu: from wu.From of them, in warmupSteps steps, to all.
func warmupSlots(since time.Duration, wu scenarios.Warmup, slots int) int {
	step := float64(mulDiv(since, warmupSteps, int64(wu.Duration))) / warmupSteps
	return max(1, int((wu.From+(1-wu.From)*step)*float64(slots)))
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

// serve starts serving attempt tag of request i now, and returns when it
// will be done; false when there is no work to do.
func (w *world) serve(i, tag int32) (time.Duration, bool) {
	r := &w.reqs[i]
	if w.sc.Server.DropExpired && (r.state != stInFlight || r.tag != tag) {
		return 0, false // its sender has given up: skip the work
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
	waiting := r.state == stInFlight && r.tag == tag
	if !waiting {
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
		w.serve(w.queue.pop())
	}
}

// queueChange accounts for the queue's length up to now, before it
// changes: the bucket's integral of the length grows by length x time
// since the last change.
func (w *world) queueChange() {
	w.queueArea += float64(w.queue.len()) * float64(w.now-w.queueAt)
	w.queueAt = w.now
}

// expire makes the sender of attempt tag of request i give up at its
// timeout, unless an answer comes first.
func (w *world) expire(i, tag int32) {
	r := &w.reqs[i]
	if r.state != stInFlight || r.tag != tag {
		return
	}
	if t := w.policy.Timeout; t > 0 {
		w.q.push(max(r.sentAt+t, w.now), evTimeout, i, tag)
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
	if r.state != stInFlight || r.tag != tag {
		return
	}
	if t := w.policy.Timeout; t > 0 && w.now-r.sentAt > t {
		// The answer arrives after the timeout: the timeout event, at
		// an earlier time, has already handled the attempt.
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
	d := w.policy.Done(sd, &r.retry, permit, w.now, res, w.rRetry)
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
		w.final(r)
		w.run.Delivered++
		w.current().Delivered++
		w.run.RecordLatency(w.now - r.created)
	case strategies.Retry:
		r.state = stWaiting
		w.delayed++
		w.q.push(w.now+d.Wait, evTry, i, retried)
	case strategies.DeadLetter:
		r.state, r.reason = stDead, d.Reason
		w.final(r)
		w.dlq = append(w.dlq, i)
		w.dlqDepth++
	}
}

// final notes that request r reached a final state now.
func (w *world) final(r *request) {
	w.completion = w.now
	if r.created <= w.lastOutageEnd {
		w.drain = w.now
	}
}

// replay sends dead letter number k back (k = -1 starts the replay): the
// replay takes the dead letters in the queue when it starts, at the
// scenario's rate, with fresh attempt counts.
func (w *world) replay(k int32) {
	if k < 0 {
		w.replayed = len(w.dlq)
		k = 0
	}
	if int(k) >= w.replayed {
		return
	}
	i := w.dlq[k]
	w.dlq[k] = -1 // no longer in the queue
	w.dlqDepth--
	r := &w.reqs[i]
	r.retry = strategies.Request{}
	r.state = stWaiting
	w.run.Replayed++
	w.try(i)
	gap := time.Duration(float64(time.Second) / w.sc.DLQ.Replay.Rate)
	w.q.push(w.now+gap, evReplay, k+1, 0)
}

// finish counts the final state of every request.
func (w *world) finish() {
	f := finals{run: w.run, lastOutageEnd: w.lastOutageEnd, drained: true}
	for i := range w.reqs {
		r := &w.reqs[i]
		f.add(r.state, r.reason, r.created)
	}
	f.close(w.completion, w.drain)
}

// finals counts the final states of a run's requests into its run.
type finals struct {
	run           *results.Run
	lastOutageEnd time.Duration
	drained       bool // every request created by the end of the outage is final
}

// add counts one request, in state, created at created.
func (f *finals) add(state uint8, reason strategies.Reason, created time.Duration) {
	run := f.run
	run.Requests++
	switch state {
	case stDelivered:
	case stDead:
		run.DeadLettered++
		run.DeadLetteredBy[reason.String()]++
	default:
		run.Unfinished++
		if created <= f.lastOutageEnd {
			f.drained = false
		}
	}
}

// close sets the run's completion and drain times from the latest final
// state of any request (completion) and of one created by the end of the
// outage (drain), and checks conservation.
func (f *finals) close(completion, drain time.Duration) {
	run := f.run
	if run.Unfinished == 0 {
		run.Completion = &completion // a copy: the run must not hold the world
	}
	if f.drained {
		d := max(drain-f.lastOutageEnd, 0)
		run.Drain = &d
	}
	if got := run.Delivered + run.DeadLettered + run.Unfinished; got != run.Requests {
		conservation("%d requests but %d delivered + %d dead-lettered + %d unfinished",
			run.Requests, run.Delivered, run.DeadLettered, run.Unfinished)
	}
}
