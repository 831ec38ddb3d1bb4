package realhttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/strategies"
)

// Graph serves a scenario's graph of services over real HTTP, as one
// strategy deploys it: every replica of every service is a test server
// (see Server) on a port of its own, with the service's capacity,
// queue and its discipline (FIFO, LIFO, adaptive LIFO, CoDel, shedding
// by queue delay), outages (those that hit the replica; a slow outage
// multiplies its service times), rate limit and the rest; the replicas
// of a service share one idempotency store. A service's downstream
// calls are made over HTTP while its replica holds the slot, by the
// same strategies code as the simulator's: each call edge retries by
// its policy, with a breaker and budget per calling replica; copies of
// a fan-out go in parallel, and a step ends when every call has its
// quorum, or as soon as one cannot (its other calls are cancelled: what
// they started below goes on, as work for no one). The callers' load
// balancer picks the replica of each attempt, and connects to it: a
// replica in a refuse outage refuses the connection.
//
// The fleet reaches the target service at URL: its one replica's port,
// or with replicas a front port whose balancer hands each request to a
// replica in the process (a replica in a refuse outage then resets the
// connection rather than refusing it).
//
// A Graph counts what reaches each service (attempts per bucket by the
// time they were sent, their outcomes, the queues sampled ten times a
// bucket), and Finish adds it to the fleet's run. A look-aside cache in
// front of a service is the simulator's (sim.Cache), looked up by its
// callers before each attempt. With deadline propagation each call
// carries its deadline, and work past it is dropped. Not served yet, and
// refused by NewGraph naming the field: a cache in front of the fleet's
// target.
type Graph struct {
	sc       *scenarios.Scenario
	st       *scenarios.Strategy
	scale    float64
	bucket   time.Duration
	target   int
	services []*graphService
	edges    []*graphEdge // the services' calls, in file order
	client   *http.Client
	idle     func() // closes the client's idle connections
	seed     uint64
	onTurn   func(GraphTurn) // GraphOptions.Turn

	front   *http.Server // the target's balancer, with replicas
	frontLn net.Listener
	served  chan struct{}

	admin     *http.Server // the control endpoint (StartAdmin)
	adminLn   net.Listener
	adminDone chan struct{}
	resetMu   sync.Mutex // one reset at a time

	quit     context.Context // ends at Shutdown: the calls in flight end
	stop     context.CancelFunc
	sampling sync.WaitGroup

	propagate atomic.Bool // the strategy's deadline propagation

	// single is, for a scenario of a single server, the scenario as
	// written (sc is its graph of one service); nil for a graph.
	single *scenarios.Scenario

	mu    sync.Mutex // guards start and what the graph draws
	start time.Time
	rDraw *rand.Rand // which calls are made (a call's probability)
}

// graphService is a service of the graph and its replicas.
type graphService struct {
	cfg       *scenarios.Service
	index     int
	bucketLen time.Duration
	replicas  []*graphReplica
	steps     map[string][][]int // the calls before and after the work, in groups made at once
	edges     []*graphEdge       // its calls' edges, as cfg.Calls

	mu       sync.Mutex // guards the balancer, the cache and the counts
	next     int        // round-robin's next replica
	rBalance *rand.Rand
	stats    *results.ServiceRun
	samples  []int // queue samples taken in each bucket

	// cache, with a cache in front of the service: the simulator's
	// (sim.Cache), its draws, and its flush outages not yet begun.
	cache   *sim.Cache
	rCache  *rand.Rand
	flushes []scenarios.Outage
}

// graphReplica is one replica of a service: its test server, and what
// the balancer knows of it (guarded by its service's mu).
type graphReplica struct {
	srv         *Server
	url         string
	index       int
	outstanding int           // attempts sent and not answered
	fails       int           // consecutive failures, for outlier detection
	ejected     time.Duration // not picked before then
	stats       *results.ServiceRun
	base        ServerStats // the server's counts when the run began
}

// graphEdge is one call of a service: the policy its copies retry by,
// and per replica of the caller, its breaker and budget.
type graphEdge struct {
	cfg      *scenarios.Call
	caller   *graphService
	callee   *graphService
	policy   *strategies.Policy
	index    int // among the graph's edges
	senders  []graphSender
	attempts atomic.Int64
}

// graphSender is a calling replica's state on an edge: its breaker,
// budget and throttle, and its draws of jitter. Senders that share a
// budget share one lock.
type graphSender struct {
	mu     *sync.Mutex
	state  strategies.Sender
	stated bool // the policy keeps state per sender
	r      *rand.Rand
}

// resetSenders gives edge e, the k-th, fresh senders for its policy.
func (e *graphEdge) resetSenders(seed uint64, k int) {
	groups := strategies.NewGroups(e.policy)
	shared := new(sync.Mutex)
	for r := range e.senders {
		mu := shared
		if !e.policy.Budget.HeldByGroup() {
			mu = new(sync.Mutex)
		}
		e.senders[r] = graphSender{mu: mu, stated: e.policy.PerSender(), r: rand.New(rand.NewPCG(seed^uint64(k+1)<<40^uint64(r+1), 5))}
		groups.Join(&e.senders[r].state, r)
	}
}

// GraphOptions configures a Graph: the servers' options (TimeScale,
// Seed, MaxConns... as for NewServer; for a graph of services, Log,
// Store and Events are not used: the replicas of a service share an
// in-memory store; a single server's replica takes them all; Observe
// is given the attempts at the fleet's target only), and the
// connections between services.
type GraphOptions struct {
	Server ServerOptions
	// MaxConns bounds the connections of the services' calls, per
	// callee replica; 0 means 1,024. Not used with Client.
	MaxConns int
	// Client, when set, makes the services' downstream calls (a POST to
	// a replica's URL, http://ADDR/): its transport must reach the
	// replicas where Serve put them. nil: a client of the graph's own,
	// over TCP, for Start.
	Client *http.Client
	// Turn, when set, is called before each step of the graph's code
	// that draws from randomness or state its goroutines share (see
	// GraphStep), from the goroutine about to take it, with a key that
	// is the same from run to run: a caller that returns in a set order
	// among the steps of one instant makes the graph reproducible (as
	// herdtest's arbiter does, in a synctest bubble). With Turn, each
	// downstream attempt carries its key (GraphTurnHeader), and the
	// calls' idempotency keys derive from the seed rather than being
	// random. nil: no turns.
	Turn func(GraphTurn)
}

// graphDefaultConns is the default bound on the connections to one
// replica from the graph's callers.
const graphDefaultConns = 1024

// graphSamples is how many times a bucket the queues are sampled.
const graphSamples = 10

// ErrGraphUnsupported is wrapped by the errors of NewGraph for what the
// real-HTTP graph does not serve yet; GraphUnsupported names the field.
var ErrGraphUnsupported = errors.New("not served over real HTTP yet")

// GraphUnsupported returns the field path of the first setting of sc,
// as st deploys it, that a Graph cannot serve, and why; "" when it can
// serve them all.
func GraphUnsupported(sc *scenarios.Scenario, st *scenarios.Strategy) (path string, err error) {
	if !sc.Graph() {
		if sc.Server.Model == scenarios.ModelOCC {
			return "server.model", fmt.Errorf("%w (scenario %s has model occ)", ErrServerModel, sc.Name)
		}
		return "", nil
	}
	for i, svc := range sc.ServicesFor(st) {
		at := fmt.Sprintf("services[%d]", i)
		switch {
		case svc.Cache != nil && i == sc.TargetIndex():
			return at + ".cache", fmt.Errorf("service %s: a cache in front of the fleet's target is %w (the fleet's driver has none; caches in front of inner services are served): simulate it with herdlab run", svc.Name, ErrGraphUnsupported)
		case svc.Model == scenarios.ModelOCC:
			return at + ".model", fmt.Errorf("service %s: %w", svc.Name, ErrServerModel)
		}
	}
	return "", nil
}

// NewGraph returns the graph of sc, which must be a valid scenario, as
// strategy st deploys it, with its edge policies. It does not listen yet
// (see Start).
//
// A scenario of a single server (its server: section, not services) is
// served as the simulator runs it: as a graph of one service named
// "server" (scenarios.Scenario.OneService), whose one replica is the
// test server NewServer(sc, opts.Server) makes, with its seed,
// idempotency store, request log and events. Unlike a Server alone, it
// knows the fleet's timeout: with deadline propagation it drops the
// work whose attempt has given up, as the simulator does, and counts
// late work. The fleet's run against it has no services nor edges.
func NewGraph(sc *scenarios.Scenario, st *scenarios.Strategy, opts GraphOptions) (*Graph, error) {
	if sc == nil || st == nil {
		return nil, errors.New("realhttp: NewGraph needs a scenario and a strategy")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("realhttp: NewGraph: invalid scenario: %w", err)
	}
	if path, err := GraphUnsupported(sc, st); err != nil {
		return nil, fmt.Errorf("realhttp: NewGraph: %s: %w", path, err)
	}
	// A single server is validated as written, and served as a graph of
	// one service: its replica is built from the server as written.
	single := sc
	if !sc.Graph() {
		sc = sc.OneService()
	} else {
		single = nil
	}
	scale := opts.Server.TimeScale
	if scale == 0 {
		scale = 1
	}
	conns := opts.MaxConns
	if conns <= 0 {
		conns = graphDefaultConns
	}
	client, idle := opts.Client, func() {}
	if client == nil {
		var tr *http.Transport
		client, tr = driverNewClient(conns)
		idle = tr.CloseIdleConnections
	} else {
		idle = client.CloseIdleConnections
	}
	quit, stop := context.WithCancel(context.Background())
	seed := opts.Server.Seed
	g := &Graph{
		sc: sc, st: st, scale: scale, bucket: sc.Bucket, target: sc.TargetIndex(),
		client: client, idle: idle, quit: quit, stop: stop, seed: seed, onTurn: opts.Turn,
		start: time.Now(), rDraw: rand.New(rand.NewPCG(seed, 4)), single: single,
	}
	g.propagate.Store(st.DeadlinePropagation)
	buckets := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	deployed := sc.ServicesFor(st)
	for i := range deployed {
		g.services = append(g.services, newGraphService(&deployed[i], i, buckets, seed))
		g.services[i].bucketLen = sc.Bucket
	}
	holds := g.holds()
	for i, s := range g.services {
		// The replicas of a service share its idempotency store, as they
		// would a datastore, and its count of duplicates: a retry that
		// another replica takes is answered from the store, or counted.
		// A single server's is the caller's, with its limits.
		store := opts.Server.Store
		if store == nil || single == nil {
			store = NewMemoryStore(MemoryLimits{})
		}
		seen := newServerSeen(cmp.Or(opts.Server.DuplicateWindow, serverDefaultDuplicateWindow))
		for r := range s.cfg.Replicas {
			so := opts.Server
			so.TimeScale = scale
			if i != g.target {
				so.Observe = nil
			}
			so.Store = store
			so.Seed = g.replicaSeed(seed, i, r)
			sub := single
			if single == nil {
				so.Log, so.Events = nil, nil
				sub = replicaScenario(sc, s.cfg, r, holds[i])
			}
			srv, err := newServer(sub, so)
			if err != nil {
				stop()
				return nil, err
			}
			srv.seen = seen
			if len(s.cfg.Calls) > 0 {
				// A service without calls frees its slot once its work
				// is done, before the store records the key.
				srv.calls = &graphCalls{g: g, svc: s, replica: r}
			}
			srv.queue = serverQueueOf(s.cfg)
			srv.propagate.Store(st.DeadlinePropagation)
			if i == g.target {
				srv.fleetTimeout.Store(int64(st.Policy().Timeout))
			}
			s.replicas[r].srv = srv
		}
	}
	for _, s := range g.services {
		for k := range s.cfg.Calls {
			c := &s.cfg.Calls[k]
			pol := scenarios.EdgeStrategy(st, s.cfg.Name, c)
			e := &graphEdge{cfg: c, caller: s, callee: g.services[sc.ServiceIndex(c.Service)], policy: pol.Policy(), index: len(g.edges)}
			e.senders = make([]graphSender, s.cfg.Replicas)
			e.resetSenders(seed, len(g.edges))
			s.edges = append(s.edges, e)
			g.edges = append(g.edges, e)
		}
	}
	return g, nil
}

func newGraphService(cfg *scenarios.Service, index, buckets int, seed uint64) *graphService {
	s := &graphService{cfg: cfg, index: index, steps: map[string][][]int{}, samples: make([]int, buckets),
		rBalance: rand.New(rand.NewPCG(seed^uint64(index+1)<<48, 6))}
	capacity := cfg.Server.Capacity()
	conc := 0
	if !cfg.Concurrency.Unlimited() {
		conc = int(cfg.Concurrency)
	}
	s.stats = &results.ServiceRun{Name: cfg.Name, Replica: -1, Series: make([]results.Bucket, buckets),
		Capacity: capacity * float64(cfg.Replicas), Concurrency: conc * cfg.Replicas}
	if c := cfg.Cache; c != nil {
		s.rCache = rand.New(rand.NewPCG(seed^uint64(index+1)<<48, 7))
		s.cache = sim.NewCache(c, cfg.Outages, s.rCache)
		s.stats.Cache = make([]results.CacheBucket, buckets)
		for _, o := range cfg.Outages {
			if o.Mode == scenarios.FlushMode {
				s.flushes = append(s.flushes, o)
			}
		}
	}
	for r := range cfg.Replicas {
		rep := &graphReplica{index: r}
		if cfg.Replicas > 1 {
			rep.stats = &results.ServiceRun{Name: cfg.Name, Replica: r, Series: make([]results.Bucket, buckets), Capacity: capacity, Concurrency: conc}
			s.stats.Replicas = append(s.stats.Replicas, rep.stats)
		}
		s.replicas = append(s.replicas, rep)
	}
	// The steps, as the simulator makes them: the calls before the work
	// and after it, a parallel call joining the group before it.
	for _, when := range []string{scenarios.Before, scenarios.After} {
		var groups [][]int
		for k, c := range cfg.Calls {
			if c.When != when {
				continue
			}
			if c.Parallel && len(groups) > 0 {
				groups[len(groups)-1] = append(groups[len(groups)-1], k)
				continue
			}
			groups = append(groups, []int{k})
		}
		s.steps[when] = groups
	}
	return s
}

// holds returns, per service, the longest timeout of an attempt that
// reaches it under any strategy (the fleet's at the target, the edges'
// elsewhere): how long its timeout outages hold a request past their
// end. 0 when some caller has none.
func (g *Graph) holds() []time.Duration {
	holds := make([]time.Duration, len(g.services))
	none := make([]bool, len(g.services))
	note := func(i int, t time.Duration) {
		if t <= 0 {
			none[i] = true
		}
		holds[i] = max(holds[i], t)
	}
	for k := range g.sc.Strategies {
		st := &g.sc.Strategies[k]
		note(g.target, st.Policy().Timeout)
		for _, s := range g.services {
			for c := range s.cfg.Calls {
				call := &s.cfg.Calls[c]
				pol := scenarios.EdgeStrategy(st, s.cfg.Name, call)
				note(g.sc.ServiceIndex(call.Service), pol.Timeout)
			}
		}
	}
	for i := range holds {
		if none[i] {
			holds[i] = 0
		}
	}
	return holds
}

// replicaScenario is the scenario replica r of service svc serves: the
// service's server section with the outages that hit the replica (but
// flushes, which empty the cache in front of it), and
// for the hold of a timeout outage, one strategy with the callers'
// longest timeout.
func replicaScenario(sc *scenarios.Scenario, svc *scenarios.Service, r int, hold time.Duration) *scenarios.Scenario {
	sub := &scenarios.Scenario{Name: fmt.Sprintf("%s/%s", sc.Name, svc.Name), Seed: sc.Seed, Runs: 1, Duration: sc.Duration, Bucket: sc.Bucket}
	sub.Server = svc.Server
	sub.Server.Outages = nil
	for _, o := range svc.Outages {
		if o.Hits(r) && o.Mode != scenarios.FlushMode { // a flush is the cache's (see graphService.flushDue)
			sub.Server.Outages = append(sub.Server.Outages, o)
		}
	}
	sub.Strategies = []scenarios.Strategy{{Name: "callers", Timeout: hold}}
	return sub
}

// Start puts every replica on a free loopback port, and the target's
// front (with replicas) on addr ("" is a free loopback port; see
// Server.Start); the scenario clock starts now.
func (g *Graph) Start(addr string) error {
	for _, s := range g.services {
		for _, rep := range s.replicas {
			a := ""
			if s.index == g.target && len(s.replicas) == 1 {
				a = addr
			}
			if err := rep.srv.Start(a); err != nil {
				if g.single != nil {
					return err // as a Server alone says it
				}
				return fmt.Errorf("service %s, replica %d: %w", s.cfg.Name, rep.index, err)
			}
			rep.url = rep.srv.URL()
		}
	}
	if t := g.services[g.target]; len(t.replicas) > 1 {
		a, err := serverResolve(addr)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("service %s: %w", t.cfg.Name, err)
		}
		g.frontLn = ln
		g.front = &http.Server{Handler: http.HandlerFunc(g.serveFront), ReadHeaderTimeout: serverDefaultReadTimeout}
		g.served = make(chan struct{})
		go func() {
			defer close(g.served)
			_ = g.front.Serve(ln)
		}()
	}
	g.restart()
	return nil
}

// restart puts the graph's clock at 0 now and starts sampling the
// queues; the servers' clocks were just started or reset.
func (g *Graph) restart() {
	g.mu.Lock()
	g.start = time.Now()
	g.mu.Unlock()
	g.sampling.Go(g.sample)
}

// URL is where the fleet sends its attempts: the target service's.
func (g *Graph) URL() string {
	if g.frontLn != nil {
		return "http://" + g.frontLn.Addr().String() + "/"
	}
	return g.services[g.target].replicas[0].url
}

// Addr returns the host:port of URL, or "" before Start.
func (g *Graph) Addr() string {
	if g.frontLn != nil {
		return g.frontLn.Addr().String()
	}
	return g.services[g.target].replicas[0].srv.Addr()
}

// Services returns, per service in file order, its replicas' URLs.
func (g *Graph) Services() map[string][]string {
	out := map[string][]string{}
	for _, s := range g.services {
		for _, rep := range s.replicas {
			out[s.cfg.Name] = append(out[s.cfg.Name], rep.url)
		}
	}
	return out
}

// now returns the graph's scenario time.
func (g *Graph) now() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(float64(time.Since(g.start)) / g.scale)
}

// wall returns the wall-clock length of scenario duration d.
func (g *Graph) wall(d time.Duration) time.Duration { return driverToWall(d, g.scale) }

// bucketAt returns the bucket of scenario time t.
func (g *Graph) bucketAt(t time.Duration) int {
	return int(min(t/g.bucket, time.Duration(len(g.services[0].stats.Series)-1)))
}

// Idle waits until no request is at any replica (served, queued, held),
// or ctx ends.
func (g *Graph) Idle(ctx context.Context) error {
	for _, s := range g.services {
		for _, rep := range s.replicas {
			if err := rep.srv.waitEmpty(ctx, func() {}); err != nil {
				return fmt.Errorf("service %s, replica %d: %w", s.cfg.Name, rep.index, err)
			}
		}
	}
	return nil
}

// Shutdown ends the calls in flight and shuts every server down.
func (g *Graph) Shutdown(ctx context.Context) error {
	g.stop()
	var errs []error
	if g.admin != nil {
		errs = append(errs, g.admin.Shutdown(ctx))
		<-g.adminDone
	}
	if g.front != nil {
		errs = append(errs, g.front.Shutdown(ctx))
		<-g.served
	}
	for _, s := range g.services {
		for _, rep := range s.replicas {
			if err := rep.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("service %s, replica %d: %w", s.cfg.Name, rep.index, err))
			}
		}
	}
	g.sampling.Wait()
	g.idle()
	return errors.Join(errs...)
}

// sample records every replica's queue and requests in service
// graphSamples times a bucket until the horizon or Shutdown.
func (g *Graph) sample() {
	step := g.bucket / graphSamples
	for n := 1; ; n++ {
		at := time.Duration(n) * step
		if at > g.sc.Duration {
			return
		}
		g.mu.Lock()
		due := g.start.Add(g.wall(at))
		g.mu.Unlock()
		t := time.NewTimer(time.Until(due))
		select {
		case <-t.C:
		case <-g.quit.Done():
			t.Stop()
			return
		}
		g.turn(GraphTurn{Step: GraphSample})
		k := g.bucketAt(at - 1)
		for _, s := range g.services {
			s.sampleQueues(k)
		}
	}
}

// sampleQueues records the replicas' queues and requests in service in
// bucket k: the last sample, the longest and the mean.
func (s *graphService) sampleQueues(k int) {
	var queued, busy int
	type qb struct{ q, b int }
	per := make([]qb, len(s.replicas))
	for i, rep := range s.replicas {
		rep.srv.mu.Lock()
		per[i] = qb{rep.srv.qlen, rep.srv.busy}
		rep.srv.mu.Unlock()
		queued += per[i].q
		busy += per[i].b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.samples[k]
	s.samples[k]++
	put := func(b *results.Bucket, q, in int) {
		b.Queue, b.InFlight = int64(q), int64(in)
		b.QueueMax = max(b.QueueMax, int64(q))
		b.QueueMean = (b.QueueMean*float64(n) + float64(q)) / float64(n+1)
	}
	put(&s.stats.Series[k], queued, busy)
	for i, rep := range s.replicas {
		if rep.stats != nil {
			put(&rep.stats.Series[k], per[i].q, per[i].b)
		}
	}
}

// Reset readies the graph for another run of the same strategy with
// seed: it waits until no request is at any replica, then resets every
// server's clock and draws (see Server.Reset), the balancers, breakers,
// budgets and counts.
func (g *Graph) Reset(ctx context.Context, seed uint64) error {
	if err := g.Idle(ctx); err != nil {
		return err
	}
	g.stop()
	g.sampling.Wait()
	g.quit, g.stop = context.WithCancel(context.Background())
	for i, s := range g.services {
		for _, rep := range s.replicas {
			if err := rep.srv.Reset(ctx, g.replicaSeed(seed, i, rep.index)); err != nil {
				return err
			}
			rep.base = rep.srv.Stats()
		}
		s.mu.Lock()
		s.next, s.rBalance = 0, rand.New(rand.NewPCG(seed^uint64(i+1)<<48, 6))
		buckets := len(s.stats.Series)
		fresh := newGraphService(s.cfg, s.index, buckets, seed)
		s.stats, s.samples = fresh.stats, fresh.samples
		s.cache, s.rCache, s.flushes = fresh.cache, fresh.rCache, fresh.flushes
		for r, rep := range s.replicas {
			rep.outstanding, rep.fails, rep.ejected = 0, 0, 0
			rep.stats = fresh.replicas[r].stats
		}
		s.mu.Unlock()
	}
	for k, e := range g.edges {
		e.attempts.Store(0)
		e.resetSenders(seed, k)
	}
	g.mu.Lock()
	g.rDraw, g.seed = rand.New(rand.NewPCG(seed, 4)), seed
	g.mu.Unlock()
	g.restart()
	return nil
}

// replicaSeed returns the seed of the draws of replica r of service i
// in a run of seed: a single server's is the run's, as a bare Server's
// (the same service times, failures and losses).
func (g *Graph) replicaSeed(seed uint64, i, r int) uint64 {
	if g.single != nil {
		return seed
	}
	return seed ^ uint64(i+1)<<32 ^ uint64(r+1)
}

// graphCalls makes the downstream calls of one replica of a service.
type graphCalls struct {
	g       *Graph
	svc     *graphService
	replica int
}

// ReplayGraph replays run run of strategy st of sc against a fresh
// Graph of its own on loopback (opts.Target is ignored): the fleet's
// run, with its services and edges (see Graph.Finish) once every
// request left at the graph is done. A scenario of a single server is
// replayed against its graph of one service, whose run has no services
// nor edges (its server's counts: processed, duplicates, wasted, lost).
func ReplayGraph(ctx context.Context, sc *scenarios.Scenario, st *scenarios.Strategy, run int, opts DriverOptions) (*results.Run, DriverStats, error) {
	g, err := NewGraph(sc, st, replayGraphOptions(sc, run, opts))
	if err != nil {
		return nil, DriverStats{}, err
	}
	if err := g.Start(""); err != nil {
		_ = g.Shutdown(context.Background())
		return nil, DriverStats{}, err
	}
	opts.Target = g.URL()
	r, stats, err := Replay(ctx, sc, st, run, opts)
	if err == nil {
		wait, cancel := context.WithTimeout(ctx, serverResetWait)
		if ierr := g.Idle(wait); ierr != nil {
			err = fmt.Errorf("waiting for the graph's work to end: %w", ierr)
		}
		cancel()
	}
	if r != nil {
		g.Finish(r)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := g.Shutdown(shutdown); serr != nil && err == nil {
		err = fmt.Errorf("shutting the graph down: %w", serr)
	}
	return r, stats, err
}

// replayGraphOptions returns the options of the graph that ReplayGraph
// starts for run run: the fleet's time scale, the run's seed, and for a
// single server, a cap on its connections of the fleet's pool
// (DriverOptions.MaxConns) and 64 more, so that the process holds both
// ends of the fleet's connections within twice the pool and 64 files
// (herdlab replay checks the open-file limit for that). A graph's
// replicas keep the default cap: their callers' connections are not
// the fleet's.
func replayGraphOptions(sc *scenarios.Scenario, run int, opts DriverOptions) GraphOptions {
	seed := sc.Seed
	if opts.Seed != 0 {
		seed = opts.Seed
	}
	o := GraphOptions{Server: ServerOptions{TimeScale: opts.TimeScale, Seed: sim.RunSeed(seed, run)}}
	if !sc.Graph() {
		o.Server.MaxConns = cmp.Or(opts.MaxConns, DriverDefaultMaxConns) + 64
	}
	return o
}
