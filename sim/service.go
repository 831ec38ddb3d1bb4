package sim

import (
	"math"
	"slices"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// service is one service of a graph: its replicas, each a server with
// slots and a waiting room, and the steps of serving one request.
type service struct {
	cfg      *scenarios.Service
	index    int32 // in the graph's services
	service  sampler
	replicas []replica
	steps    []step
	edges    []int32 // the graph's edge of each of cfg.Calls
	slots    int     // per replica, -1 unlimited
	limit    int     // queue per replica, -1 unlimited
	format   strategies.RetryAfterFormat
	order    uint8 // the queue discipline
	next     int   // round-robin: the next replica

	// the outages that fail its attempts, and those that slow it down,
	// each in order of start
	downs, slows []window

	stats  *results.ServiceRun // without a series where the run does not report it
	queues results.Bucket      // the queue figures of the last bucket sampled
	cache  *Cache              // nil without one
	// occ: the service is a single row under optimistic concurrency
	// control (see occ.go), last written at this time (-1: never)
	occ     bool
	written time.Duration
	// the service's queue (all replicas) over the current bucket
	queued    int
	queueAt   time.Duration
	queueArea float64
	queueMax  int
	busy      int
	ended     int64 // attempts that reached it and are over: answered, or dropped
}

// The queue disciplines.
const (
	fifo uint8 = iota
	lifo
	adaptiveLIFO
	codel
)

var disciplines = [...]uint8{scenarios.DisciplineFIFO: fifo, scenarios.DisciplineLIFO: lifo, scenarios.DisciplineAdaptiveLIFO: adaptiveLIFO, scenarios.DisciplineCoDel: codel}

// window is an outage of a service, its mode and times decided once.
type window struct {
	start, end time.Duration
	mode       uint8   // for a down window: downRefuse, downError or downTimeout
	replicas   []int   // those hit; nil for all
	factor     float64 // for a slow window
}

// The modes of an outage that fails attempts.
const (
	downRefuse uint8 = iota
	downError
	downTimeout
)

func (w *window) hits(r int) bool { return w.replicas == nil || slices.Contains(w.replicas, r) }

// windows sorts outages into those that fail attempts and those that
// slow the service down (a flush is the cache's).
func windows(outages []scenarios.Outage) (downs, slows []window) {
	for _, o := range outages {
		w := window{start: o.Start, end: o.End(), replicas: o.Replicas, factor: o.Factor}
		switch o.Mode {
		case scenarios.FlushMode:
			continue
		case scenarios.SlowMode:
			slows = append(slows, w)
			continue
		case scenarios.Refuse:
			w.mode = downRefuse
		case scenarios.ErrorMode:
			w.mode = downError
		default: // timeout: no answer
			w.mode = downTimeout
		}
		downs = append(downs, w)
	}
	return downs, slows
}

// step is one step of serving a request: a group of calls started
// together (indexes into cfg.Calls), or the local work.
type step struct {
	calls []int
	work  bool
}

// replica is one copy of a service.
type replica struct {
	busy        int
	queue       deque
	outstanding int           // attempts sent to it awaiting an answer, as the balancer sees them
	fails       int           // failures in a row, with outlier detection
	ejected     time.Duration // not picked before then, with outlier detection
	tokens      float64
	tokensAt    time.Duration
	stats       *results.ServiceRun // nil for a service of one replica
	queueAt     time.Duration
	queueArea   float64
	queueMax    int
	codel       codelState
	starting    bool // startQueued is taking jobs from its queue
}

// codelState is a CoDel queue's state (see codelPop).
type codelState struct {
	intervalEnd time.Duration
	minDelay    time.Duration // the least queueing delay in the interval
	overloaded  bool
	reset       bool // the next delay starts the interval's minimum
}

// job is one attempt at a replica: queued, then served in steps. It
// takes 64 bytes, a cache line: what only some runs need is kept beside
// it (graph.jobDeadlines, graph.jobSends), so that a queue of millions
// of jobs holds no more.
type job struct {
	call, tag    int32  // the attempt served
	id           uint32 // the call's id: tells it from a later call in its place
	fleet        bool   // the attempt is a fleet request's
	state        uint8
	timed        bool  // its caller's timeout is set (see graph.expire)
	gen          int32 // one more each time the job is freed: events of an older use are stale
	svc, replica int32
	step         int32         // the step in progress
	pending      int32         // calls of the current step not yet decided
	calls        int32         // the first of its downstream calls, -1 for none
	outer        time.Duration // the fleet's deadline above it
	queuedAt     time.Duration // when it reached its replica
	doneAt       time.Duration // when its local work ends, once started
}

// jobSend is how a job's attempt was sent, kept where a percentile hedge
// delay observes every copy's latency: its call's edge and sender, and
// when its caller sent it.
type jobSend struct {
	edge, sender int32
	sentAt       time.Duration
}

// The states of a job.
const (
	jobFree uint8 = iota
	jobSent
	jobQueued
	jobRunning
)

// tally counts the copies of one call of a step.
type tally struct {
	ok, failed   int32
	need, fanout int32
	done         bool
}

func newService(cfg *scenarios.Service, buckets int, series bool) service {
	s := service{
		cfg:      cfg,
		service:  newSampler(&cfg.ServiceTime),
		replicas: make([]replica, cfg.Replicas),
		slots:    int(cfg.Concurrency),
		limit:    int(cfg.Queue),
		occ:      cfg.Model == scenarios.ModelOCC,
		written:  -1,
		order:    disciplines[cfg.Discipline()],
	}
	s.downs, s.slows = windows(cfg.Outages)
	if cfg.Concurrency.Unlimited() {
		s.slots = -1
	}
	if cfg.Queue.Unlimited() {
		s.limit = -1
	}
	capacity := cfg.Server.Capacity()
	conc := max(s.slots, 0)
	s.stats = &results.ServiceRun{Name: cfg.Name, Replica: -1, Capacity: capacity * float64(cfg.Replicas), Concurrency: conc * cfg.Replicas}
	if series {
		s.stats.Series = make([]results.Bucket, buckets)
	}
	if cfg.Cache != nil {
		s.stats.Cache = make([]results.CacheBucket, buckets)
	}
	if rl := cfg.RateLimit; rl != nil {
		s.format = rl.HintFormat()
	}
	for r := range s.replicas {
		rep := &s.replicas[r]
		if rl := cfg.RateLimit; rl != nil {
			rep.tokens = float64(rl.Burst)
		}
		if cfg.Replicas > 1 {
			rep.stats = &results.ServiceRun{Name: cfg.Name, Replica: r, Series: make([]results.Bucket, buckets), Capacity: capacity, Concurrency: conc}
			s.stats.Replicas = append(s.stats.Replicas, rep.stats)
		}
	}
	// The steps: the calls before the local work, grouped (a parallel
	// call joins the group before it), the work, the calls after it.
	for _, when := range []string{scenarios.Before, scenarios.After} {
		if when == scenarios.After {
			s.steps = append(s.steps, step{work: true})
		}
		for k, c := range cfg.Calls {
			if c.When != when {
				continue
			}
			if c.Parallel && len(s.steps) > 0 && !s.steps[len(s.steps)-1].work {
				last := &s.steps[len(s.steps)-1]
				last.calls = append(last.calls, k)
				continue
			}
			s.steps = append(s.steps, step{calls: []int{k}})
		}
	}
	return s
}

// scheduleWarmups schedules the capacity steps of the warmups after each
// outage.
func (s *service) scheduleWarmups(g *graph, i int32) {
	wu := s.cfg.Warmup
	if wu.Duration == 0 {
		return
	}
	for _, o := range s.downs {
		for r := range s.replicas {
			if !o.hits(r) {
				continue
			}
			for k := 1; k <= warmupSteps; k++ {
				g.q.push(o.end+mulDiv(wu.Duration, int64(k), warmupSteps), gWarmup, i, int32(r))
			}
		}
	}
}

// pick chooses the replica for an attempt sent now, among those not
// ejected by the outlier detection (among all when every one is).
func (s *service) pick(g *graph) int32 {
	if len(s.replicas) == 1 {
		return 0
	}
	return s.pickOf(g)
}

// pickOf is pick among several replicas.
func (s *service) pickOf(g *graph) int32 {
	n := len(s.replicas)
	now := g.now
	healthy := n
	if s.cfg.Health != nil {
		healthy = 0
		for r := range s.replicas {
			if s.replicas[r].ejected <= now {
				healthy++
			}
		}
	}
	ok := func(r int) bool { return healthy == 0 || s.replicas[r].ejected <= now }
	// draw returns a healthy replica at random: the k-th healthy one.
	draw := func(skip int) int {
		m := healthy
		if m == 0 {
			m = n
		}
		if skip >= 0 && ok(skip) {
			m--
		}
		k := g.rBalance.IntN(m)
		for r := range s.replicas {
			if r == skip || !ok(r) {
				continue
			}
			if k == 0 {
				return r
			}
			k--
		}
		return skip
	}
	switch s.cfg.Balancer {
	case scenarios.RandomBalancer:
		if healthy == n {
			return int32(g.rBalance.IntN(n))
		}
		return int32(draw(-1))
	case scenarios.LeastOutstanding:
		best := -1
		for r := range s.replicas {
			if ok(r) && (best < 0 || s.replicas[r].outstanding < s.replicas[best].outstanding) {
				best = r
			}
		}
		return int32(best)
	case scenarios.PowerOfTwoChoices:
		var a, b int
		switch {
		case healthy == n:
			a = g.rBalance.IntN(n)
			b = g.rBalance.IntN(n - 1)
			if b >= a {
				b++
			}
		case healthy == 1:
			return int32(draw(-1))
		default:
			a = draw(-1)
			b = draw(a)
		}
		if s.replicas[b].outstanding < s.replicas[a].outstanding {
			return int32(b)
		}
		return int32(a)
	}
	for range n {
		r := s.next
		s.next = (s.next + 1) % n
		if ok(r) {
			return int32(r)
		}
	}
	return 0
}

// observe updates replica r's outlier detection with the outcome o of an
// attempt it served.
func (s *service) observe(now time.Duration, r int32, o strategies.Outcome) {
	h := s.cfg.Health
	if h == nil || r < 0 {
		return
	}
	rep := &s.replicas[r]
	switch o {
	case strategies.Success, strategies.TooManyRequests, strategies.ClientError:
		rep.fails = 0
	default:
		rep.fails++
		if rep.fails >= h.Consecutive {
			rep.ejected = now + h.EjectFor
			rep.fails = 0
		}
	}
}

// slow returns the factor by which a slow outage multiplies replica r's
// service time at t: 1 when none is in force.
func (s *service) slow(t time.Duration, r int) float64 {
	for i := range s.slows {
		if o := &s.slows[i]; t >= o.start && t < o.end && o.hits(r) {
			return o.factor
		}
	}
	return 1
}

// outage returns the outage in force at t on replica r, if any.
func (s *service) outage(t time.Duration, r int) (*window, bool) {
	for i := range s.downs {
		o := &s.downs[i]
		if t < o.start {
			break
		}
		if t < o.end && o.hits(r) {
			return o, true
		}
	}
	return nil, false
}

// capacity returns the slots of replica r now, ramped up after an outage
// by the warmup.
func (s *service) capacity(now time.Duration, r int) int {
	if s.slots < 0 {
		return math.MaxInt
	}
	if s.cfg.Warmup.Duration == 0 {
		return s.slots
	}
	return s.warming(now, r)
}

// warming is capacity for a service with a warmup.
func (s *service) warming(now time.Duration, r int) int {
	wu := s.cfg.Warmup
	for i := len(s.downs) - 1; i >= 0; i-- {
		o := &s.downs[i]
		if now < o.end || !o.hits(r) {
			continue
		}
		if since := now - o.end; since < wu.Duration {
			return warmupSlots(since, wu, s.slots)
		}
		break
	}
	return s.slots
}

// takeToken takes a token from replica r's rate limit bucket.
func (s *service) takeToken(now time.Duration, r int) bool {
	rl := s.cfg.RateLimit
	rep := &s.replicas[r]
	rep.tokens = min(float64(rl.Burst), rep.tokens+(now-rep.tokensAt).Seconds()*rl.Rate)
	rep.tokensAt = now
	if rep.tokens >= 1 {
		rep.tokens--
		return true
	}
	return false
}

// hint returns the Retry-After header of a 429 of replica r sent now,
// plus one.
func (s *service) hint(now time.Duration, r int) uint32 {
	rl := s.cfg.RateLimit
	wait := time.Duration(rl.RetryAfter)
	if wait == 0 {
		wait = time.Duration((1 - s.replicas[r].tokens) / rl.Rate * float64(time.Second))
	}
	return uint32(retryAfterHeader(wait, s.format, now)) + 1
}

// count adds to the service's and the replica's counts (a replica keeps
// its own where there are several).
func (s *service) count(r int32, f func(*results.ServiceRun)) {
	f(s.stats)
	if len(s.replicas) > 1 {
		f(s.replicas[r].stats)
	}
}

// bucket adds to the service's and the replica's bucket k (where it
// keeps a series).
func (s *service) bucket(r int32, k int, f func(*results.Bucket)) {
	if s.stats.Series == nil {
		return
	}
	f(&s.stats.Series[k])
	if len(s.replicas) > 1 {
		f(&s.replicas[r].stats.Series[k])
	}
}

// queueChange accounts for the queues' lengths up to now, before replica
// r's changes by delta.
func (s *service) queueChange(now time.Duration, r int32, delta int) {
	s.queueArea += float64(s.queued) * float64(now-s.queueAt)
	s.queueAt = now
	s.queued += delta
	s.queueMax = max(s.queueMax, s.queued)
	rep := &s.replicas[r]
	rep.queueArea += float64(rep.queue.len()) * float64(now-rep.queueAt)
	rep.queueAt = now
	rep.queueMax = max(rep.queueMax, rep.queue.len()+delta)
}

// sample records the queues and the work in service at the end of bucket
// k, from start to end.
func (s *service) sample(k int, start, end time.Duration) {
	b := &s.queues
	b.Queue, b.InFlight = int64(s.queued), int64(s.busy)
	b.QueueMax = int64(s.queueMax)
	b.QueueMean = (s.queueArea + float64(s.queued)*float64(end-s.queueAt)) / float64(end-start)
	s.queueAt, s.queueArea, s.queueMax = end, 0, s.queued
	if s.stats.Series != nil {
		t := &s.stats.Series[k]
		t.Queue, t.InFlight, t.QueueMax, t.QueueMean = b.Queue, b.InFlight, b.QueueMax, b.QueueMean
	}
	for r := range s.replicas {
		rep := &s.replicas[r]
		if rep.stats == nil {
			continue
		}
		b := &rep.stats.Series[k]
		n := rep.queue.len()
		b.Queue, b.InFlight = int64(n), int64(rep.busy)
		b.QueueMax = int64(rep.queueMax)
		b.QueueMean = (rep.queueArea + float64(n)*float64(end-rep.queueAt)) / float64(end-start)
		rep.queueAt, rep.queueArea, rep.queueMax = end, 0, n
	}
}

// check panics if the service's counts do not add up: every attempt that
// reached it was answered, dropped, or is still queued, served or on its
// way back.
func (s *service) check() {
	if s.stats.Series != nil {
		var attempts int64
		for _, b := range s.stats.Series {
			attempts += b.Attempts
		}
		if attempts != s.stats.Attempts {
			conservation("service %s: %d attempts in its series, %d counted", s.cfg.Name, attempts, s.stats.Attempts)
		}
	}
	attempts := s.stats.Attempts
	for _, rep := range s.stats.Replicas {
		attempts -= rep.Attempts
	}
	if len(s.stats.Replicas) > 0 && attempts != 0 {
		conservation("service %s: its replicas' attempts do not add up to its own (%d apart)", s.cfg.Name, attempts)
	}
	if live := int64(s.queued + s.busy); s.stats.Attempts != s.ended+live {
		conservation("service %s: %d attempts reached it, but %d are over and %d queued or in service", s.cfg.Name, s.stats.Attempts, s.ended, live)
	}
}

// A block of a deque holds 1,024 waiters (16 KiB).
const (
	dequeBlockBits = 10
	dequeBlock     = 1 << dequeBlockBits
)

// deque is a double-ended queue of waiters: a ring of blocks of
// dequeBlock waiters each. While the ring is one block, the block
// doubles as it fills, from 16 waiters to dequeBlock. Past that, a full
// ring takes an eighth more blocks (one at least), where its last
// waiter is, without copying what it holds but for part of a block. So
// a long queue holds about its own length (a doubling ring holds up to
// twice that) and leaves no buffers behind as it grows (a doubling
// ring's came to a quarter of a byte a request at the peak at 10^7
// requests through a queue of 100,000).
type deque struct {
	blocks     [][]waiter
	n          int // the ring's length in waiters
	head, size int // the front's place in the ring, and the waiters
}

func (d *deque) len() int { return d.size }

// slot returns the waiter at place p of the ring (p < n).
func (d *deque) slot(p int) *waiter {
	return &d.blocks[p>>dequeBlockBits][p&(dequeBlock-1)]
}

// place returns the place in the ring of the waiter i places from the
// front (i < n).
func (d *deque) place(i int) int {
	p := d.head + i
	if p >= d.n {
		p -= d.n
	}
	return p
}

func (d *deque) push(w waiter) {
	if d.size == d.n {
		d.grow()
	}
	*d.slot(d.place(d.size)) = w
	d.size++
}

// grow makes room in a full deque.
func (d *deque) grow() {
	if d.n < dequeBlock {
		grown := make([]waiter, max(2*d.n, 16))
		for i := range d.size {
			grown[i] = d.at(i)
		}
		d.blocks, d.n, d.head = [][]waiter{grown}, len(grown), 0
		return
	}
	// The new blocks go before the front's block, whose part before
	// the front holds the last waiters: they move to the first new
	// block, and the rest of the new blocks and that part are free.
	k := max(len(d.blocks)/8, 1)
	first, off := d.head>>dequeBlockBits, d.head&(dequeBlock-1)
	ring := make([][]waiter, 0, len(d.blocks)+k)
	ring = append(ring, d.blocks[:first]...)
	for range k {
		ring = append(ring, make([]waiter, dequeBlock))
	}
	copy(ring[first], d.blocks[first][:off])
	d.blocks = append(ring, d.blocks[first:]...)
	d.n += k * dequeBlock
	d.head += k * dequeBlock
}

func (d *deque) front() waiter { return *d.slot(d.head) }

// at returns the waiter i places from the front.
func (d *deque) at(i int) waiter { return *d.slot(d.place(i)) }

// remove takes job j out of the queue wherever it is (a cancelled hedged
// copy, in a graph without waiters), keeping the others' order; false
// when j is not in it.
func (d *deque) remove(j int32) bool {
	for i := range d.size {
		if d.at(i).ref != j {
			continue
		}
		for ; i < d.size-1; i++ {
			*d.slot(d.place(i)) = d.at(i + 1)
		}
		d.size--
		return true
	}
	return false
}

func (d *deque) popFront() waiter {
	w := *d.slot(d.head)
	if d.head++; d.head == d.n {
		d.head = 0
	}
	d.size--
	return w
}

func (d *deque) popBack() waiter {
	d.size--
	return d.at(d.size)
}

// take returns the next waiter of replica r to start now, in the
// service's discipline, shedding (503) on the way those its shed bound or
// CoDel drops; false when none is left.
func (s *service) take(g *graph, r int32) (waiter, bool) {
	for {
		w, ok := s.pop(g, r)
		if !ok {
			return waiter{}, false
		}
		if sh := s.cfg.Shed; sh != nil && g.now-w.queuedAt > sh.QueueDelay {
			s.shed(g, r, w)
			continue
		}
		return w, true
	}
}

// pop takes the next waiter off replica r's queue by the discipline.
func (s *service) pop(g *graph, r int32) (waiter, bool) {
	rep := &s.replicas[r]
	if rep.queue.len() == 0 {
		return waiter{}, false
	}
	switch s.order {
	case lifo:
		s.queueChange(g.now, r, -1)
		return rep.queue.popBack(), true
	case adaptiveLIFO:
		s.queueChange(g.now, r, -1)
		if g.now-rep.queue.front().queuedAt > s.cfg.AdaptiveLIFO.Congested {
			return rep.queue.popBack(), true
		}
		return rep.queue.popFront(), true
	case codel:
		return s.codelPop(g, r)
	}
	s.queueChange(g.now, r, -1)
	return rep.queue.popFront(), true
}

// codelPop takes the waiter at the head of replica r's queue, dropping
// (503) on the way those CoDel sloughs off. This is the CoDel of RPC
// servers (folly's executors/Codel, which Facebook's "Fail at Scale"
// describes), not the packet CoDel of RFC 8289, whose ever closer drops
// do not hold back traffic that does not slow down when dropped: at the
// end of each interval the queue is overloaded when the least queueing
// delay seen in it exceeded target; while overloaded, a request that
// waited more than twice the target is dropped rather than served.
func (s *service) codelPop(g *graph, r int32) (waiter, bool) {
	rep := &s.replicas[r]
	c := &rep.codel
	target := s.cfg.CoDel.Target
	for rep.queue.len() > 0 {
		s.queueChange(g.now, r, -1)
		w := rep.queue.popFront()
		delay := g.now - w.queuedAt
		if g.now > c.intervalEnd && !c.reset {
			c.intervalEnd = g.now + s.cfg.CoDel.Interval
			c.overloaded = c.minDelay > target
			c.reset = true
		}
		if c.reset {
			// The first delay of an interval starts its minimum, and is
			// not dropped: more than one request must come in an
			// interval before CoDel drops.
			c.reset = false
			c.minDelay = delay
			return w, true
		}
		c.minDelay = min(c.minDelay, delay)
		if c.overloaded && delay > 2*target {
			s.shed(g, r, w)
			continue
		}
		return w, true
	}
	return waiter{}, false
}

// shed answers waiter w, taken from replica r's queue, with a 503
// instead of serving it.
func (s *service) shed(g *graph, r int32, w waiter) {
	s.count(r, func(x *results.ServiceRun) { x.Shed++ })
	g.answerWaiter(s, w, strategies.ServerError)
}
