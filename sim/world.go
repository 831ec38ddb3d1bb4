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
	evHedge                  // a hedge of request a's attempt whose first copy is b is due
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

// request is one request's state: 32 bytes, two to a cache line, since
// a run holds millions and touches them in no particular order. What the
// events of an attempt do not read lives in slices beside the requests:
// the time each was created, read when it ends; and what only some
// scenarios need (the parts of its strategies.Request that the policy
// reads back, breaker permits, Retry-After hints, dispatcher queues),
// allocated only then.
type request struct {
	sentAt   time.Duration // when the attempt in flight was sent
	attempts int32         // its strategies.Request's Attempts
	backoffK int32         // and Backoff.K (see world.retryState)
	sender   int32
	tag      int32 // number of the attempt in flight; events of older attempts are stale
	arrived  int32 // bucket in which the attempt in flight reached the server, -1 if it has not
	state    uint8
	reason   strategies.Reason // why it is dead-lettered
	flags    uint8             // flagStarted, flagProcessed, flagWorker
}

// retryMemory is the part of a request's strategies.Request that only
// some policies read back (strategies.Policy.Reads).
type retryMemory struct {
	first time.Duration
	prev  float64
	cost  float32
}

// retryState puts request i's strategies.Request together, from the
// parts the world keeps, in w.retry, and returns it for a call to the
// policy; setRetryState keeps what the call changed. (A Request on the
// stack would escape to the heap through the policy's interfaces: an
// allocation per call.)
func (w *world) retryState(i int32) *strategies.Request {
	r := &w.reqs[i]
	q := &w.retry
	*q = strategies.Request{Attempts: r.attempts, Backoff: strategies.BackoffState{K: r.backoffK}}
	if w.memory != nil {
		m := &w.memory[i]
		q.First, q.Backoff.Prev, q.Cost = m.first, m.prev, m.cost
	}
	return q
}

// setRetryState keeps w.retry as request i's strategies.Request: the
// parts its policy reads back.
func (w *world) setRetryState(i int32) {
	r, q := &w.reqs[i], &w.retry
	r.attempts, r.backoffK = q.Attempts, q.Backoff.K
	if w.memory != nil {
		w.memory[i] = retryMemory{first: q.First, prev: q.Backoff.Prev, cost: q.Cost}
	}
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

// epoch is the wall-clock time of virtual time 0, for HTTP-date hints.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is one run of one strategy of a single-server scenario: the
// engine (clock, event list), the server model, the workload's senders,
// the dead-letter queue and the OCC row, each its own type (in
// world_server.go, world_fleet.go, world_dlq.go, world_occ.go), embedded
// so that the tuned loop reaches every field at a fixed offset. It
// belongs to one goroutine. A graph of services runs on graph instead.
type world struct {
	engine
	sc     *scenarios.Scenario
	policy *strategies.Policy

	rArrive, rServe, rNet, rFault, rRetry *rand.Rand

	latency sampler
	reqs    []request
	created []time.Duration     // per request: when it was created
	memory  []retryMemory       // per request, when the policy reads more than its attempts and backoff step
	retry   strategies.Request  // one request's, for a call to the policy (see retryState)
	permits []strategies.Permit // per request, with a breaker
	hints   []uint32            // per request, with a rate limit: the last 429's Retry-After header (see retryAfterHeader), plus 1 (0: none)
	next    []int32             // per request, with a dispatcher: the next in its sender's queue, -1 for none
	serverModel
	workload
	deadLetters
	occModel
	hedging

	lastOutageEnd time.Duration
	completion    time.Duration // the latest final state of any request
	drain         time.Duration // the latest final state of a request created by lastOutageEnd

	run        *results.Run
	bucket     time.Duration
	nextSample time.Duration // end of the bucket whose queue is sampled next
	sampled    int           // buckets sampled

	loads uint64 // the event queue's last run prefetched
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
		engine:  newEngine(st.Name, sc.Duration),
		sc:      sc,
		policy:  st.Policy(),
		rArrive: rand.New(rand.NewPCG(seed, 1)),
		rServe:  rand.New(rand.NewPCG(seed, 2)),
		rNet:    rand.New(rand.NewPCG(seed, 3)),
		rFault:  rand.New(rand.NewPCG(seed, 4)),
		rRetry:  rand.New(rand.NewPCG(seed, 5)),
		latency: newSampler(sc.Network.Latency),
		bucket:  sc.Bucket,
	}
	w.service = newSampler(&sc.Server.ServiceTime)
	w.slots = int(sc.Server.Concurrency)
	w.outages = sc.Server.Outages
	w.workers = int32(sc.Workload.Workers)
	w.blocking = sc.Workload.Dispatch == scenarios.DispatchBlocking
	w.limit = sc.Workload.Requests
	if sc.Server.Concurrency.Unlimited() {
		w.slots = -1
	}
	w.queueLimit = int(sc.Server.Queue)
	if sc.Server.Queue.Unlimited() {
		w.queueLimit = -1
	}
	if rl := sc.Server.RateLimit; rl != nil {
		w.tokens = float64(rl.Burst)
		w.hintFormat = rl.HintFormat()
	}
	w.clients = sc.Workload.Clients
	if sc.Workload.Uncapped() {
		w.limit = -1
	}
	if n := len(w.outages); n > 0 {
		w.lastOutageEnd = w.outages[n-1].End()
	}
	capacity := max(w.limit, 0)
	w.reqs = hugeSlice[request](capacity)
	w.created = hugeSlice[time.Duration](capacity)
	if w.policy.Reads() != 0 {
		w.memory = hugeSlice[retryMemory](capacity)
	}
	if w.policy.Breaker != nil {
		w.permits = hugeSlice[strategies.Permit](capacity)
	}
	if rl := sc.Server.RateLimit; rl != nil {
		w.hints = hugeSlice[uint32](capacity)
		w.rateHint = rl.Pushback
	}
	if h := sc.Server.FailurePushback; h != nil {
		w.failHint = h
		if w.hints == nil {
			w.hints = hugeSlice[uint32](capacity)
		}
	}
	if w.workers > 0 {
		w.next = hugeSlice[int32](capacity)
	}
	if h := w.policy.Hedge; h != nil {
		w.hedge = h
		w.copies = hugeSlice[copies](capacity)
	}
	if sc.Server.Model == scenarios.ModelOCC {
		w.occ = true
		w.versions = hugeSlice[int64](capacity)
	}
	w.sharedBudget = w.policy.Budget.HeldByGroup()
	w.rates = newClientRates(w.policy)
	if w.policy.PerSender() || w.workers > 0 {
		w.groups = strategies.NewGroups(w.policy)
		if n := sc.Workload.Senders; n > 0 {
			w.senders = make([]sender, n)
			for i := range w.senders {
				w.senders[i].pool = NewPool()
				w.groups.Join(&w.senders[i].retry, i)
			}
		} else {
			w.perRequest = true
			w.senders = hugeSlice[sender](capacity)
		}
	}
	buckets := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	w.run = results.NewRun(st.Name, run, buckets)
	w.run.QueueTracked = true
	if w.rates.throttle != nil {
		w.run.ClientRates = make([]results.ClientRate, buckets)
	}
	w.nextSample = sc.Bucket
	return w
}

// simulate runs the world to its horizon and returns what it counted.
func (w *world) simulate(ctx context.Context) (*results.Run, error) {
	start := time.Now()
	w.ctx = ctx
	defer w.releaseQueue() // after the run, no event is pushed or popped
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
			w.report()
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
	w.reportDone()
	for w.sampled < len(w.run.Series) {
		w.sample() // a last bucket cut short by the horizon ends there
	}
	w.finish()
	w.run.Events = w.events
	w.run.Wall = time.Since(start)
	return w.run, nil
}

// prefetchRun starts loading the requests of every event of a run the
// event queue has just loaded, and of the run after it, so that the
// cache misses of a million randomly touched requests overlap instead of
// stalling the engine one after the other.
func (w *world) prefetchRun() {
	run, loads := w.q.upcoming()
	if loads == w.loads {
		return
	}
	w.loads = loads
	w.prefetchEvents(run)
	w.prefetchEvents(w.q.following())
}

// prefetchEvents prefetches the request each of events names, and the
// creation time of those whose kind most often ends it (endsRequest):
// in one call to a loop in assembly, not a call a cache line.
func (w *world) prefetchEvents(events []event) {
	prefetchRequests(events, unsafe.Pointer(unsafe.SliceData(w.reqs)), len(w.reqs), unsafe.Pointer(unsafe.SliceData(w.created)), endsRequest)
}

// endsRequest is the set of event kinds that most often end a request,
// whose creation time is then read: the end of its service, and an
// answer.
const endsRequest = 1<<evServed | 1<<(evResponse+uint8(strategies.Success))

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
	w.tick(t)
}

// sample records the queues at the end of the current bucket, and the
// server queue's longest and mean length over it, and moves to the next
// bucket.
func (w *world) sample() {
	b := &w.run.Series[w.sampled]
	b.Queue = int64(w.queued())
	b.InFlight = int64(w.busy)
	b.DLQ = int64(w.dlqDepth)
	b.Delayed = int64(w.delayed)
	// A last bucket cut short by the horizon ends there.
	start, end := w.nextSample-w.bucket, min(w.nextSample, w.horizon)
	b.QueueMax = int64(w.queueMax)
	b.QueueMean = (w.queueArea + float64(w.queued())*float64(end-w.queueAt)) / float64(end-start)
	w.queueAt, w.queueArea, w.queueMax = end, 0, w.queued()
	if w.run.ClientRates != nil {
		w.run.ClientRates[w.sampled] = w.rates.sample()
	}
	w.sampled++
	w.nextSample += w.bucket
}

func (w *world) handle(e event) {
	switch e.kind() {
	case evArrival:
		w.arrive(e.a)
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
		if r := &w.reqs[e.a]; w.live(r, e.a, e.b) {
			w.q.push(w.now, evDeadline, e.a, e.b)
		}
	case evDeadline:
		if r := &w.reqs[e.a]; w.live(r, e.a, e.b) {
			w.run.TimedOut++
			w.current().TimedOut++
			if w.copies != nil {
				w.copyAnswered(e.a, e.b, strategies.Timeout)
			} else {
				w.outcome(e.a, strategies.Timeout)
			}
		}
	case evHedge:
		w.hedgeDue(e.a, e.b)
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
		w.response(e.a, e.b, strategies.Outcome(e.kind()-evResponse))
	}
}

// current returns the bucket holding now: the one whose end advance
// samples next (the last one at the horizon).
func (w *world) current() *results.Bucket {
	return &w.run.Series[min(w.sampled, len(w.run.Series)-1)]
}

// finish counts the final state of every request.
func (w *world) finish() {
	f := finals{run: w.run, lastOutageEnd: w.lastOutageEnd, drained: true}
	for i := range w.reqs {
		r := &w.reqs[i]
		f.add(r.state, r.reason, w.created[i])
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

// hugeSlice returns an empty slice of capacity n whose memory, if it is
// large, is backed by huge pages where the system allows (adviseHuge).
func hugeSlice[T any](n int) []T {
	s := make([]T, 0, n)
	var zero T
	adviseHuge(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n)*unsafe.Sizeof(zero))
	return s
}
