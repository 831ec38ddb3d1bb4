package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// A graph run is the engine (engine.go), the services with their
// replicas (service.go), the calls between them with their retries
// (call.go) and the fleet that calls the target (fleet.go). One request of
// the fleet flows as:
//
//	fleet call -> attempt (a job at a replica of the target) -> queue ->
//	slot -> each step: downstream calls (jobs at other services, each
//	retried by its edge's policy) or the local work -> answer -> the
//	caller's policy decides: deliver, retry or give up.

// The kinds of event of a graph run.
const (
	gArrival    uint8 = iota // the fleet creates its next request(s)
	gTry                     // call a, at tag b, ends its backoff: its next attempt
	gAtService               // job a (generation b) reaches its replica
	gWorkDone                // job a (generation b) finished its local work
	gJobExpired              // job a's (generation b) propagated deadline passed
	gTimeout                 // the caller of attempt b of call a gives up, after every other event now
	gGiveUp                  // the caller of attempt b of call a gives up
	gWarmup                  // replica b of service a grew its capacity: start queued work
	gOutageEnd               // the graph's last outage ends: the backlog is counted
	gFlush                   // service a's cache is flushed
	gCacheHit                // the cache's answer to attempt b of call a reaches its caller: a hit
	gHedge                   // a hedge of call a's attempt whose first copy is b is due
	gOCCWrite                // occ: the conditional write of attempt b of call a reaches the row
	gReplay                  // the dead-letter replay sends dead letter number a back
	gWorker                  // fleet request a, queued in its sender's dispatcher, has a worker free: its next attempt
	gResponse                // + outcome: the answer to attempt b of call a reaches its caller
)

// noDeadline is a time after every horizon.
const noDeadline = time.Duration(math.MaxInt64)

// graph is one run of one strategy on a graph of services. It belongs to
// one goroutine.
type graph struct {
	engine
	sc        *scenarios.Scenario
	propagate bool // deadline propagation
	observes  bool // a percentile hedge delay observes every copy's latency (see jobSend)
	report    bool // the run reports its services and edges
	// waiters: an attempt queued at a replica is its call and tag, its
	// job made as it starts, not a job (see waiter)
	waiters bool
	// occ: the read time of each attempt whose caller gives up before
	// its write reaches the row (see occSend)
	abandoned map[uint64]time.Duration
	// what the fleet's requests done ahead (see tryAhead) change in
	// each bucket's sample, nil before any
	later []sampleChange
	// occ: a write's answer is taken as the write is (see occWrite)
	answerAhead bool

	rArrive, rServe, rNet, rFault, rRetry, rBalance, rCache *rand.Rand
	latency                                                 sampler

	services []service
	edges    []edge // edges[0] is the fleet's, toward the target
	target   int

	calls []call
	sides
	retry     strategies.Request // one call's, for a call to its policy (see retryState)
	freeCalls []int32
	jobs      []job
	freeJobs  []int32
	// Beside the jobs, by job: their propagated deadlines, with deadline
	// propagation; how they were sent, where a percentile hedge delay
	// observes them (see jobSend). nil where not needed.
	jobDeadlines []time.Duration
	jobSends     []jobSend
	tallies      []tally // maxGroup per job
	maxGroup     int

	fleet fleet
	ids   uint32 // calls made

	lastOutageEnd time.Duration
	completion    time.Duration // the latest final state of a fleet request
	drain         time.Duration // the latest final state of a fleet request created by lastOutageEnd

	run        *results.Run
	bucket     time.Duration
	nextSample time.Duration
	sampled    int

	loads uint64 // the event queue's last run prefetched
}

// newGraph prepares run number run of strategy st on sc's graph, with
// seed; services says whether the run reports its services and edges
// (not for a single server, the graph of one service newRun makes).
func newGraph(sc *scenarios.Scenario, st *scenarios.Strategy, run int, seed uint64, services bool) *graph {
	g := &graph{
		engine:    newEngine(st.Name, sc.Duration),
		sc:        sc,
		propagate: st.DeadlinePropagation,
		rArrive:   rand.New(rand.NewPCG(seed, 1)),
		rServe:    rand.New(rand.NewPCG(seed, 2)),
		rNet:      rand.New(rand.NewPCG(seed, 3)),
		rFault:    rand.New(rand.NewPCG(seed, 4)),
		rRetry:    rand.New(rand.NewPCG(seed, 5)),
		rBalance:  rand.New(rand.NewPCG(seed, 6)),
		rCache:    rand.New(rand.NewPCG(seed, 7)),
		latency:   newSampler(sc.Network.Latency),
		target:    sc.TargetIndex(),
		bucket:    sc.Bucket,
	}
	buckets := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	g.run = results.NewRun(st.Name, run, buckets)
	g.run.QueueTracked = true
	g.nextSample = sc.Bucket
	if all := sc.AllOutages(); len(all) > 0 {
		g.lastOutageEnd = all[len(all)-1].End()
	}
	deployed := sc.ServicesFor(st)
	g.services = make([]service, len(deployed))
	for i := range deployed {
		g.services[i] = newService(&deployed[i], buckets, services)
		g.services[i].index = int32(i)
		if c := deployed[i].Cache; c != nil {
			g.services[i].cache = NewCache(c, deployed[i].Outages, g.rCache)
		}
		if services {
			g.run.Services = append(g.run.Services, g.services[i].stats)
		}
	}
	g.edges = []edge{newEdge(st.Policy(), -1, g.target, nil, 0)}
	g.run.Edges = []results.EdgeRun{{Callee: sc.Services[g.target].Name}}
	for i := range sc.Services {
		svc := &g.services[i]
		for k := range svc.cfg.Calls {
			c := &svc.cfg.Calls[k]
			pol := scenarios.EdgeStrategy(st, svc.cfg.Name, c)
			svc.edges = append(svc.edges, int32(len(g.edges)))
			g.edges = append(g.edges, newEdge(pol.Policy(), i, sc.ServiceIndex(c.Service), c, svc.cfg.Replicas))
			g.run.Edges = append(g.run.Edges, results.EdgeRun{Caller: svc.cfg.Name, Callee: c.Service})
		}
		for _, s := range svc.steps {
			g.maxGroup = max(g.maxGroup, len(s.calls))
		}
	}
	g.fleet = newFleet(sc, &g.edges[0])
	// The fleet's requests, which no one cancels, may be tried ahead
	// (see tryAhead) where they call a service of model occ.
	g.edges[0].ahead = g.services[g.target].occ && !g.edges[0].policy.PerSender() && g.fleet.workers == 0 && !g.propagate
	// An answer taken ahead would put its dead letter in the queue out
	// of order, and be counted at an outage's end before its time.
	g.answerAhead = g.edges[0].ahead && sc.DLQ.Replay == nil && len(sc.AllOutages()) == 0 && g.services[g.target].cfg.Health == nil
	policies := make([]*strategies.Policy, len(g.edges))
	for i := range g.edges {
		policies[i] = g.edges[i].policy
	}
	g.observes = observesCopies(policies)
	// A call for each request of the fleet, kept to the end, and those
	// the services make, reused: room for them at once, where growing by
	// appending would copy a million calls several times.
	capacity := max(g.fleet.limit, 0)
	if g.maxGroup > 0 && capacity > 0 {
		capacity += capacity/8 + 1024
	}
	g.calls = hugeSlice[call](capacity)
	g.report = services
	g.sides = needsOf(deployed, policies, sc.Workload.Workers > 0).newSides(capacity)
	g.waiters = g.links == nil && g.copies == nil && g.keys == nil && g.latency.zero()
	if c := g.services[g.target].cfg; g.waiters && !c.Concurrency.Unlimited() {
		// A job is then an attempt in service at the one service
		// called: room for as many as it has slots (up to a request
		// each), where growing by appending would leave the smaller
		// tables behind.
		slots := min(int(c.Concurrency)*c.Replicas, capacity, 1<<17)
		g.jobs, g.freeJobs = make([]job, 0, slots), make([]int32, 0, slots)
	}
	if g.fleet.rates.throttle != nil {
		g.run.ClientRates = make([]results.ClientRate, len(g.run.Series))
	}
	return g
}

// simulate runs the graph to its horizon and returns what it counted.
func (g *graph) simulate(ctx context.Context) (*results.Run, error) {
	start := time.Now()
	g.fleet.schedule(g)
	if r := g.sc.DLQ.Replay; r != nil {
		g.q.push(r.At, gReplay, -1, 0)
	}
	for i := range g.services {
		g.services[i].scheduleWarmups(g, int32(i))
		if c := g.services[i].cache; c != nil {
			for _, o := range c.flushes {
				g.q.push(o.Start, gFlush, int32(i), 0)
			}
		}
	}
	if g.lastOutageEnd > 0 {
		g.q.push(g.lastOutageEnd, gOutageEnd, 0, 0)
	}
	if err := g.loop(ctx); err != nil {
		return nil, err
	}
	for g.sampled < len(g.run.Series) {
		g.sample()
	}
	g.finish()
	if !g.report {
		g.run.Edges = nil
	}
	g.run.Events = g.events
	g.run.Wall = time.Since(start)
	return g.run, nil
}

func (g *graph) handle(e event) {
	g.prefetchRun()
	switch e.kind() {
	case gArrival:
		g.fleet.arrive(g, e.a)
	case gTry:
		if c := &g.calls[e.a]; c.state == stWaiting && c.tag == e.b {
			if c.fleetCall() {
				g.fleet.delayed--
			}
			g.try(e.a, c)
		}
	case gAtService:
		if j := &g.jobs[e.a]; j.gen == e.b {
			g.atService(e.a)
		}
	case gWorkDone:
		if j := &g.jobs[e.a]; j.gen == e.b {
			g.workDone(e.a)
		}
	case gJobExpired:
		if j := &g.jobs[e.a]; j.gen == e.b && j.state == jobRunning {
			g.expireJob(e.a)
		}
	case gTimeout:
		// An answer due at this very instant still counts: give up only
		// after every other event now.
		if c := &g.calls[e.a]; g.live(c, e.a, e.b) {
			g.q.push(g.now, gGiveUp, e.a, e.b)
		}
	case gGiveUp:
		if c := &g.calls[e.a]; g.live(c, e.a, e.b) {
			if c.fleetCall() {
				g.run.TimedOut++
				g.run.Series[g.current()].TimedOut++
			}
			if g.copies != nil {
				g.copyAnswered(e.a, e.b, strategies.Timeout)
			} else {
				g.outcome(e.a, strategies.Timeout)
			}
		}
	case gHedge:
		g.hedgeDue(e.a, e.b)
	case gOCCWrite:
		g.occWrite(e.a, e.b)
	case gReplay:
		g.fleet.replay(g, e.a)
	case gWorker:
		g.try(e.a, &g.calls[e.a])
	case gWarmup:
		g.services[e.a].startQueued(g, e.b)
	case gFlush:
		g.services[e.a].cache.Flush()
	case gCacheHit:
		if c := &g.calls[e.a]; c.state == stInFlight && c.tag == e.b {
			c.state = stWaiting
			g.decide(e.a, c, strategies.Decision{Action: strategies.Deliver})
		}
	case gOutageEnd:
		backlog := int64(g.fleet.arrived) - g.run.Delivered - int64(g.fleet.dead)
		g.run.Backlog = &backlog
		g.run.GaveUpInOutage = int64(len(g.fleet.dlq))
	default:
		g.response(e.a, e.b, strategies.Outcome(e.kind()-gResponse))
	}
}

// prefetchRun starts loading the calls and jobs of every event of a run
// the event queue has just loaded, and of the run after it, so that the
// cache misses of a million randomly touched calls overlap instead of
// stalling the engine one after the other.
//
// It is called for every event, and inlined: only a run just loaded
// costs a call.
func (g *graph) prefetchRun() {
	if !canPrefetch || len(g.calls) < prefetchFrom || g.q.loaded() == g.loads {
		return // they stay in cache, or were fetched when the run was loaded
	}
	g.prefetchLoaded()
}

// prefetchLoaded is prefetchRun for a run the queue has just loaded.
func (g *graph) prefetchLoaded() {
	g.loads = g.q.loaded()
	g.prefetchEvents(g.q.upcoming())
	g.prefetchEvents(g.q.following())
}

// prefetchFrom is the number of calls from which prefetchRun prefetches:
// fewer, 256 KiB of calls (and their jobs), stay in the core's cache.
const prefetchFrom = 1 << 13

// prefetchEvents prefetches the call or the job (and its call) each of
// events names, and the creation time of the calls of the kinds that
// most often end one: in one call to a loop in assembly.
func (g *graph) prefetchEvents(events []event) {
	prefetchGraph(events, unsafe.Pointer(unsafe.SliceData(g.calls)), len(g.calls), unsafe.Pointer(unsafe.SliceData(g.created)),
		unsafe.Pointer(unsafe.SliceData(g.jobs)), len(g.jobs), callEvents, jobEvents, endsCall)
}

// The kinds of event that name a call, that name a job, and that most
// often end a call (the end of a job's work, a success).
const (
	callEvents = 1<<gTry | 1<<gWorker | 1<<gTimeout | 1<<gGiveUp | 1<<gCacheHit | 1<<gHedge | 1<<gOCCWrite | (1<<(gResponse+uint8(strategies.ClientError)+1)-1)&^(1<<gResponse-1)
	jobEvents  = 1<<gAtService | 1<<gWorkDone | 1<<gJobExpired
	endsCall   = 1<<gWorkDone | 1<<(gResponse+uint8(strategies.Success))
)

// advance samples every bucket that ends by t.
func (g *graph) advance(t time.Duration) {
	for g.nextSample <= t && g.sampled < len(g.run.Series) {
		g.sample()
	}
}

// sample records the queues at the end of the current bucket and moves to
// the next.
func (g *graph) sample() {
	start, end := g.nextSample-g.bucket, min(g.nextSample, g.horizon)
	for i := range g.services {
		g.services[i].sample(g.sampled, start, end)
	}
	b := &g.run.Series[g.sampled]
	t := &g.services[g.target].queues
	b.Queue, b.InFlight, b.QueueMax, b.QueueMean = t.Queue, t.InFlight, t.QueueMax, t.QueueMean
	if g.later != nil {
		ch := g.later[g.sampled]
		g.fleet.delayed += int(ch.delayed)
		g.fleet.dead += int(ch.dead)
	}
	b.DLQ = int64(g.fleet.dead)
	b.Delayed = int64(g.fleet.delayed)
	if g.run.ClientRates != nil {
		g.run.ClientRates[g.sampled] = g.fleet.rates.sample()
	}
	g.sampled++
	g.nextSample += g.bucket
}

// sampleChange is what is done ahead of the clock changes in a bucket's
// sample of the fleet (see countAt).
type sampleChange struct{ delayed, dead int32 }

// current returns the bucket holding now.
func (g *graph) current() int { return min(g.sampleOf(g.now), len(g.run.Series)-1) }

// finish counts the final state of every fleet request and checks that
// every call of every service is accounted for.
func (g *graph) finish() {
	g.fleet.finish(g)
	for i := range g.services {
		g.services[i].check()
	}
}

// conservation panics with a message when a count does not add up: a bug
// in the model, never bad input.
func conservation(format string, args ...any) {
	panic(fmt.Sprintf("sim: conservation broken: "+format, args...))
}
