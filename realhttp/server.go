package realhttp

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// ServerOptions configures a Server. The zero value is usable: time scale
// 1, no request log, a bounded in-memory idempotency store, seed 0, a
// 64 KiB body limit, 5 s for headers and 5 s for a body, a connection cap
// from the open-file limit, 250 ms a store call, a window of 1,000,000
// keys for counting duplicates, no events.
type ServerOptions struct {
	// TimeScale multiplies every duration of the scenario on the wall
	// clock: with 0.1, a 30 s outage takes 3 s and a 100 ms service
	// time 10 ms. 0 means 1; it must be positive and finite.
	//
	// Retry-After hints are written in scenario seconds whatever the
	// scale, so that whole-second hints survive compression: a 2 s hint
	// at scale 0.01 is written "2", and the driver waits 20 ms. An
	// HTTP-date hint is the response's Date header (the real wall clock,
	// to the second) plus the hint in scenario seconds: at scale 1 it is
	// a true date; at any other scale only its offset from Date means
	// something, and a client must parse it against Date, as
	// strategies.ParseRetryAfter(value, date) does, not against its own
	// clock.
	TimeScale float64
	// Log, when set, receives the request log: one JSON object per line
	// and per attempt that reached the handler (a refused connection
	// never does), written when the attempt's outcome is known, each
	// line with one Write call under a mutex. See ServerLogLine, and
	// LogFile for a log on disk of bounded size.
	Log io.Writer
	// Observe, when set, is given each attempt's log line (as Log
	// writes it, without the encoding) when its outcome is known, from
	// the attempt's handler goroutine: it must be safe for concurrent
	// use, and quick.
	Observe func(ServerLogLine)
	// Store keeps idempotency keys; nil means NewMemoryStore with its
	// default limits. It is used only with the scenario's
	// server.idempotency.
	Store IdempotencyStore
	// Seed seeds service times (PCG stream 2), random failures and
	// response loss (stream 4), as the simulator does. Real concurrency
	// orders the draws, so a run is not reproducible draw for draw.
	Seed uint64
	// MaxBody bounds a request body in bytes; a longer one is answered
	// 413 and is not an attempt. 0 means 64 KiB.
	MaxBody int64
	// ReadHeaderTimeout bounds the time a client takes to send a
	// request's headers, BodyTimeout the time it then takes to send the
	// body: a slower client has its connection closed, and its request
	// is not an attempt. 0 means 5 s each.
	ReadHeaderTimeout, BodyTimeout time.Duration
	// MaxConns bounds the connections open at once (its Graph's admin
	// listener's aside): at the bound the server stops accepting until
	// one closes, and new connections wait in the kernel's backlog. 0
	// means the open-file limit less 128 (10,000 when the limit is
	// unknown).
	MaxConns int
	// StoreTimeout bounds each call to the idempotency store: a call
	// that takes longer fails, and the request is answered 503
	// (store_error) at once. 0 means 250 ms.
	StoreTimeout time.Duration
	// StoreCheck is how often a store that can check itself (a
	// RedisStore: its epoch key) is checked; 0 means 1 s.
	StoreCheck time.Duration
	// DuplicateWindow is how many processed keys the server remembers
	// to count duplicates (a second processing of a key), with or
	// without idempotency, whatever the store keeps or loses: about 70
	// bytes a key, the oldest forgotten first (ServerStats.KeysForgotten
	// counts them: a duplicate of a forgotten key goes uncounted). 0
	// means 1,000,000.
	DuplicateWindow int
	// Events, when set, is told of what changes at the server: outages
	// starting and ending, clock resets, the listener failing to re-open
	// after a refuse outage, the store failing, recovering or losing its
	// data (see ServerEvent). It is called from the server's goroutines,
	// one call at a time, and must not call the Server's methods.
	Events func(ServerEvent)
}

// ErrServerModel is returned by NewServer for a scenario whose server
// model the test server does not implement (model occ).
var ErrServerModel = errors.New("realhttp: the test server implements only the queue server model")

// ServerReasonHeader names the response header in which the server says
// why it answered as it did: a ServerLogLine reason (processed, cached,
// in_progress, outage, overload, failure, rate_limit...).
const ServerReasonHeader = "Herdlab-Reason"

// The request headers the server reads; the driver sends them.
const (
	serverKeyHeader     = "Idempotency-Key"
	serverAttemptHeader = "Herdlab-Attempt" // attempt number, from 1
	serverRequestHeader = "Herdlab-Request" // the request's index in the workload
	serverPlannedHeader = "Herdlab-Planned" // when the attempt was due, scenario ns
	// serverOuterHeader is, on a graph's downstream call, when the
	// fleet's attempt above it gives up: scenario ns since the start.
	serverOuterHeader = "Herdlab-Outer"
	// serverDeadlineHeader is, on a graph's downstream call with
	// deadline propagation, when its caller gives the attempt up:
	// scenario ns since the start.
	serverDeadlineHeader = "Herdlab-Deadline"
	// serverCancelHeader marks a copy of an attempt hedged with cancel:
	// its value is the sender's timeout for it, in wall-clock ns (0:
	// none). A sender that hangs up on it sooner has cancelled it
	// (another copy won): the server takes it out of its queue without
	// serving it, as the simulator does. A hang-up at its timeout is a
	// sender giving up, whose work is still done (for no one).
	serverCancelHeader = "Herdlab-Cancel"
)

// Defaults and limits of the HTTP server.
const (
	serverDefaultAddr    = "127.0.0.1:0"
	serverDefaultMaxBody = 64 << 10
	serverMaxHeaderBytes = 64 << 10
	// serverDefaultReadTimeout is the default of the header and body
	// timeouts: slow senders cannot hold connections for free.
	serverDefaultReadTimeout = 5 * time.Second
	// serverIdleTimeout closes keep-alive connections idle that long.
	serverIdleTimeout = 60 * time.Second
	// serverWriteSlack is the time allowed to write one response: the
	// write deadline is pushed to now + serverWriteSlack right before
	// an answer is written, so time spent queued never eats into it.
	serverWriteSlack = 10 * time.Second
	// serverDefaultStoreTimeout bounds one call to the idempotency
	// store, unless ServerOptions.StoreTimeout says otherwise.
	serverDefaultStoreTimeout = 250 * time.Millisecond
	// serverDefaultStoreCheck is how often a store is checked.
	serverDefaultStoreCheck = time.Second
	// serverFileSlack is how many open files the server keeps beyond
	// its connection cap: listeners, the log, the store's connections.
	serverFileSlack = 128
	// serverDefaultMaxConns is the connection cap when the open-file
	// limit is unknown.
	serverDefaultMaxConns = 10_000
	// serverMaxPendingDone bounds the keys whose Done is retried in the
	// background; beyond it a key's Done is given up (counted).
	serverMaxPendingDone = 100_000
	// serverWarmupSteps is how many times capacity grows during a
	// warmup, as in the simulator.
	serverWarmupSteps = 100
)

// Server is the test server: an HTTP server that enforces a scenario's
// server section (the queue model) on the wall clock, everything timed
// from Start (or the last Reset) and multiplied by
// ServerOptions.TimeScale, as the simulator does on its virtual clock:
//
//   - Concurrency slots: a request holds a slot for its service time,
//     drawn from the scenario's distribution plus slowdown x requests in
//     service when it starts, sleeping on a timer. Requests beyond the
//     slots wait in a FIFO queue, bounded or not; one beyond a full queue
//     is answered 503 at once.
//   - Outages: refuse closes the listening socket for the window
//     (connections are refused; established ones are not killed, but idle
//     keep-alive connections are closed and a request that still arrives
//     on an old connection has its connection reset), and re-opens it on
//     the same address when the window ends (should another process have
//     taken the address meanwhile, an EventListenFailed says so); timeout
//     holds each request without an answer until its client gives up, or
//     until the outage's end plus the scenario's longest strategy
//     timeout, when the connection is closed without an answer; error
//     answers 503 at once.
//   - Warmup after each outage, random failures (503), a token-bucket
//     rate limit (429 with Retry-After), response loss (the request is
//     processed, then its connection reset without an answer),
//     drop_expired (queued work whose client has gone is skipped when it
//     reaches a slot).
//   - Idempotency by the Idempotency-Key header (see IdempotencyStore),
//     and a count of every second processing of a key, idempotency or
//     not (see ServerOptions.DuplicateWindow). A key longer than
//     ServerMaxKeyLen is answered 400.
//   - GET /metrics (Prometheus, on a private registry) and a JSON-lines
//     request log (see ServerLogLine). The admin listener (the metrics
//     again, and the control endpoint that resets the scenario clock)
//     is its Graph's (see Graph.StartAdmin), a single server's too.
//
// Every answer carries a ServerReasonHeader. A Server is safe for
// concurrent use; it serves once: Start, then Shutdown.
type Server struct {
	sc          *scenarios.Scenario
	srv         *scenarios.Server
	fingerprint string
	scale       float64
	store       IdempotencyStore
	seen        *serverSeen
	maxBody     int64
	hdrTimeout  time.Duration
	bodyTimeout time.Duration
	maxConns    int
	storeTime   time.Duration
	storeCheck  time.Duration
	holdCap     time.Duration // scenario time a timeout outage holds a request after it ends
	format      strategies.RetryAfterFormat
	service     Sampler
	mux         *http.ServeMux
	metrics     *serverMetrics
	logMu       sync.Mutex
	log         io.Writer
	logBuf      []byte // the line being written, under logMu
	observe     func(ServerLogLine)
	evMu        sync.Mutex
	events      func(ServerEvent)

	// release is closed when Shutdown begins: requests held by a
	// timeout outage end. quit is closed when Shutdown gives up waiting:
	// every request still at the server ends at once. bgStop is closed
	// when the requests are done: the background goroutines (bg) end.
	release, quit, bgStop         chan struct{}
	releaseOnce, quitOnce, bgOnce sync.Once
	bg                            sync.WaitGroup

	clockOnce sync.Once
	edgeMu    sync.Mutex // serialises the clock's ticks, listener changes included

	mu        sync.Mutex // guards what follows
	start     time.Time  // scenario time 0 on the wall clock
	edges     []serverEdge
	next      int // the next edge to carry out
	timer     *time.Timer
	gen       int  // clock generation: a stale tick does nothing
	resets    int  // Resets since Start
	stopped   bool // the clock is stopped for good (Shutdown)
	stopping  bool
	started   bool
	active    int           // requests in the handler
	idle      chan struct{} // closed when active drops to 0 while stopping
	busy      int           // requests in service
	slots     int           // concurrency, -1 unlimited
	qlimit    int           // queue bound, -1 unlimited
	qhead     *serverWaiter
	qtail     *serverWaiter
	qlen      int
	held      int // requests held by a timeout outage
	tokens    float64
	tokensAt  time.Duration
	rServe    *rand.Rand
	rFault    *rand.Rand
	lastID    uint64
	http      *http.Server
	ln        Listener
	served    chan struct{}       // closed when http.Server.Serve returns
	pending   []string            // keys whose Done failed, retried in the background, oldest first
	pendingOf map[string]struct{} // the same keys, to look up
	retrying  bool                // the retrier runs
	storeDown bool                // the last store check failed

	counts      [serverOutcomes][serverNumReasons]atomic.Int64
	processed   atomic.Int64
	duplicates  atomic.Int64
	wasted      atomic.Int64
	lost        atomic.Int64
	dropped     atomic.Int64
	storeErrs   atomic.Int64
	badKeys     atomic.Int64
	dataLost    atomic.Int64
	doneRetried atomic.Int64
	doneLost    atomic.Int64
	late        atomic.Int64 // work done after the fleet's attempt above it gave up
	shed        atomic.Int64 // taken from the queue and answered 503 (shed bound, CoDel)
	expired     atomic.Int64 // dropped, queued or in service, when the propagated deadline passed
	begins      atomic.Int64 // attempts that got a slot
	queueWait   atomic.Int64 // their waits in the queue, scenario ns summed

	// A replica of a graph's service: calls makes its downstream calls,
	// and fleetTimeout, at the fleet's target, bounds the fleet's attempt
	// (its deadline, for late work).
	calls        serverCalls
	fleetTimeout atomic.Int64
	queue        serverQueue
	// propagate drops work whose propagated deadline has passed (the
	// strategy's deadline_propagation): atomic, as a served graph's
	// strategy changes at a reset.
	propagate atomic.Bool
}

// serverCalls makes the downstream calls of a graph's service for the
// attempt a it serves: those made before its work or after it (when),
// until ctx ends (the attempt's propagated deadline). It reports
// whether they succeeded.
type serverCalls interface {
	run(ctx context.Context, a *serverAttempt, when string) bool
}

// NewServer returns the test server of sc's server section, which must
// be valid (an error otherwise), of the queue model (ErrServerModel
// otherwise): what a Graph makes of each replica, and what herdtest
// serves a single server on. Its services, if any, are not read
// (NewGraph serves them). It does not listen yet; its scenario clock
// starts now and restarts at Start. With a store that can check itself
// (a RedisStore), it checks it in the background until Shutdown.
func NewServer(sc *scenarios.Scenario, opts ServerOptions) (*Server, error) {
	if sc == nil {
		return nil, errors.New("realhttp: NewServer: nil scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("realhttp: NewServer: invalid scenario: %w", err)
	}
	return newServer(sc, opts)
}

// newServer is NewServer for a replica's scenario, made by NewGraph of a
// valid one (the service's section and the outages that hit the
// replica; for a single server, the scenario as written), which
// Validate would refuse: it has no workload.
func newServer(sc *scenarios.Scenario, opts ServerOptions) (*Server, error) {
	if sc.Server.Model == scenarios.ModelOCC {
		return nil, fmt.Errorf("%w (scenario %s has model occ)", ErrServerModel, sc.Name)
	}
	scale := opts.TimeScale
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0) || math.IsInf(scale, 1) {
		return nil, fmt.Errorf("realhttp: NewServer: time scale must be positive and finite, got %v", opts.TimeScale)
	}
	for _, o := range []struct {
		name string
		v    int64
	}{
		{"MaxBody", opts.MaxBody}, {"ReadHeaderTimeout", int64(opts.ReadHeaderTimeout)}, {"BodyTimeout", int64(opts.BodyTimeout)},
		{"MaxConns", int64(opts.MaxConns)}, {"StoreTimeout", int64(opts.StoreTimeout)}, {"StoreCheck", int64(opts.StoreCheck)},
		{"DuplicateWindow", int64(opts.DuplicateWindow)},
	} {
		if o.v < 0 {
			return nil, fmt.Errorf("realhttp: NewServer: %s must be >= 0, got %d", o.name, o.v)
		}
	}
	s := &Server{
		sc:          sc,
		srv:         &sc.Server,
		fingerprint: serverFingerprint(sc),
		scale:       scale,
		store:       opts.Store,
		seen:        newServerSeen(cmp.Or(opts.DuplicateWindow, serverDefaultDuplicateWindow)),
		maxBody:     cmp.Or(opts.MaxBody, serverDefaultMaxBody),
		hdrTimeout:  cmp.Or(opts.ReadHeaderTimeout, serverDefaultReadTimeout),
		bodyTimeout: cmp.Or(opts.BodyTimeout, serverDefaultReadTimeout),
		maxConns:    cmp.Or(opts.MaxConns, ServerDefaultMaxConns()),
		storeTime:   cmp.Or(opts.StoreTimeout, serverDefaultStoreTimeout),
		storeCheck:  cmp.Or(opts.StoreCheck, serverDefaultStoreCheck),
		holdCap:     serverHoldCap(sc),
		service:     NewSampler(&sc.Server.ServiceTime),
		log:         opts.Log,
		observe:     opts.Observe,
		events:      opts.Events,
		release:     make(chan struct{}),
		quit:        make(chan struct{}),
		bgStop:      make(chan struct{}),
		start:       time.Now(),
		edges:       serverEdges(&sc.Server),
		slots:       int(sc.Server.Concurrency),
		qlimit:      int(sc.Server.Queue),
		pendingOf:   map[string]struct{}{},
	}
	if s.store == nil {
		s.store = NewMemoryStore(MemoryLimits{})
	}
	if sc.Server.Concurrency.Unlimited() {
		s.slots = -1
	}
	if sc.Server.Queue.Unlimited() {
		s.qlimit = -1
	}
	if rl := sc.Server.RateLimit; rl != nil {
		s.format = rl.HintFormat()
	}
	s.resetDrawsLocked(opts.Seed)
	s.metrics = newServerMetrics(s)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /", s.serveWork)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	if c, ok := s.store.(storeChecker); ok && sc.Server.Idempotency {
		s.bg.Go(func() { s.checkStore(c) })
	}
	return s, nil
}

// ServerDefaultMaxConns returns the connection cap of a server whose
// ServerOptions.MaxConns is 0: the open-file limit less 128, at least
// 16; 10,000 when the limit is unknown.
func ServerDefaultMaxConns() int {
	limit, ok := driverOpenFileLimit()
	if !ok || limit > math.MaxInt32 {
		return serverDefaultMaxConns
	}
	return max(int(limit)-serverFileSlack, 16)
}

// resetDrawsLocked refills the rate limit's bucket and reseeds the
// server's draws, as at the start of a run.
func (s *Server) resetDrawsLocked(seed uint64) {
	s.rServe = rand.New(rand.NewPCG(seed, 2))
	s.rFault = rand.New(rand.NewPCG(seed, 4))
	s.tokensAt = 0
	if rl := s.srv.RateLimit; rl != nil {
		s.tokens = float64(rl.Burst)
	}
}

// serverFingerprint returns a short digest of what a test server of sc
// does: its server section and the hold of a timeout outage (the
// longest strategy timeout). It is a single server's Fingerprint.
func serverFingerprint(sc *scenarios.Scenario) string {
	b, err := json.Marshal(struct {
		Server  scenarios.Server
		HoldCap time.Duration
	}{sc.Server, serverHoldCap(sc)})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// serverHoldCap is how long after a timeout outage ends a request that
// arrived during it is still held: the longest per-attempt timeout of the
// scenario's strategies, so that every client following one of them
// gives up first; scenarios.DefaultTimeout if none has a timeout.
func serverHoldCap(sc *scenarios.Scenario) time.Duration {
	var hold time.Duration
	for i := range sc.Strategies {
		hold = max(hold, sc.Strategies[i].Timeout)
	}
	if hold <= 0 {
		return scenarios.DefaultTimeout
	}
	return hold
}

// CheckAddr checks addr as Start and Graph.StartAdmin take it: host:port with
// a valid port, the host possibly empty (loopback); "" is a free port on
// loopback.
func CheckAddr(addr string) error {
	_, err := serverResolve(addr)
	return err
}

// serverResolve checks addr and returns it with 127.0.0.1 for an empty
// host, or "127.0.0.1:0" when addr is empty.
func serverResolve(addr string) (string, error) {
	if addr == "" {
		return serverDefaultAddr, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("bad address %q: %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", fmt.Errorf("bad address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Start binds addr and serves in the background; the scenario clock
// starts now (and a refuse outage at 0 closes the socket at once, after
// the bind has proved the address free). An empty addr means
// 127.0.0.1:0 (a free port on loopback), and an addr without a host
// (":8080") binds 127.0.0.1 too: to listen on every interface, say so
// (0.0.0.0:8080). Start fails when addr is malformed or taken, when
// called twice, or after Shutdown.
func (s *Server) Start(addr string) error {
	addr, err := serverResolve(addr)
	if err != nil {
		return fmt.Errorf("realhttp: Start: %w", err)
	}
	if err := s.claim("Start"); err != nil {
		return err
	}
	ln, err := newServerListener(addr, s.maxConns)
	if err != nil {
		return fmt.Errorf("realhttp: Start: %w", err)
	}
	ln.onFail = func(err error) {
		s.emit(ServerEvent{Kind: EventListenFailed, At: s.now(), Err: fmt.Errorf("cannot re-open %s after the refuse outage (retrying): %w", ln.addr, err)})
	}
	ln.onRestored = func() { s.emit(ServerEvent{Kind: EventListenRestored, At: s.now()}) }
	s.serveOn(ln, s.httpServer())
	return nil
}

// Listener is a listener the server can take down for a refuse outage
// and put back up (SetUp): while it is down, new connections are
// refused and Accept waits. Open counts the connections open now.
// Start's TCP listener is one; herdtest's in-memory network is another.
type Listener interface {
	net.Listener
	SetUp(up bool)
	Open() int
}

// Serve serves on ln in the background, as Start does on the address
// it binds: the scenario clock starts now, and ln is taken down for
// each refuse outage. hs, when not nil, is the HTTP server to serve
// with, whose Handler passes requests on to s.Handler(); nil means the
// server's own settings. Serve fails when called twice, after Start, or
// after Shutdown.
func (s *Server) Serve(ln Listener, hs *http.Server) error {
	if err := s.claim("Serve"); err != nil {
		return err
	}
	if hs == nil {
		hs = s.httpServer()
	}
	s.serveOn(ln, hs)
	return nil
}

// claim marks the server started, and fails (naming the method that
// asks) when it was started or shut down already.
func (s *Server) claim(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return fmt.Errorf("realhttp: %s: the server has already been started or shut down", method)
	}
	s.started = true
	return nil
}

// httpServer returns the HTTP server of Start.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.hdrTimeout, // the body's is set per request
		// No WriteTimeout: each answer sets its own write deadline
		// (writeDeadline), once it is ready, so that a hold or a queue
		// never outlasts it, and a deadline is not set twice a request.
		IdleTimeout:    serverIdleTimeout,
		MaxHeaderBytes: serverMaxHeaderBytes,
	}
}

// serveOn serves hs on ln in the background, from scenario time 0.
func (s *Server) serveOn(ln Listener, hs *http.Server) {
	s.mu.Lock()
	s.http, s.ln = hs, ln
	s.served = make(chan struct{})
	s.mu.Unlock()
	s.clockOnce.Do(func() {})
	s.restartClock(true) // an outage at 0 closes the listener before anyone dials
	go func() {
		defer close(s.served)
		_ = hs.Serve(ln) // ErrServerClosed after Shutdown; Accept errors are retried by net/http
	}()
}

// Addr returns the host:port the server listens on, or "" before Start.
// It stays the same through refuse outages.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL returns http://host:port/, or "" before Start.
func (s *Server) URL() string {
	addr := s.Addr()
	if addr == "" {
		return ""
	}
	return "http://" + addr + "/"
}

// Handler returns the server's handler: the work (POST to any path) and
// GET /metrics. It may be served by another server, such as
// httptest.NewServer; the scenario clock then runs from NewServer, and
// since a handler cannot refuse connections, a request during a refuse
// outage has its connection reset instead.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.route) }

// route is the mux, with its most common request, a POST to /, sent to
// the work without its pattern matching, which took a tenth of the
// server's own time a request under load.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/" {
		s.serveWork(w, r)
		return
	}
	writeDeadline(w)
	s.mux.ServeHTTP(w, r)
}

// Shutdown stops the server gracefully: it stops the scenario clock,
// ends the requests held by a timeout outage (their connections are
// closed without an answer, as the outage would), stops accepting
// connections, and waits for the requests in service or queued to be
// answered. When ctx ends first, every request still at the server is
// cut short, its connection closed, and Shutdown returns ctx's error.
// Then it stops checking the store, and
// makes one last try of the Done calls still pending (a key whose Done
// still fails is given up, counted in ServerStats.DoneLost). No
// goroutine of the server survives it. Shutdown without Start (a server
// used through Handler) waits for the handler's requests the same way;
// later requests are answered 503.
func (s *Server) Shutdown(ctx context.Context) error {
	s.edgeMu.Lock()
	s.mu.Lock()
	s.gen++
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	hs := s.http
	s.mu.Unlock()
	s.edgeMu.Unlock()
	s.releaseOnce.Do(func() { close(s.release) })

	var err error
	if hs != nil {
		err = hs.Shutdown(ctx)
	}
	if err == nil {
		err = s.waitIdle(ctx)
	}
	if err != nil {
		s.quitOnce.Do(func() { close(s.quit) })
		if hs != nil {
			_ = hs.Close()
		}
		_ = s.waitIdle(context.Background()) // quick: every wait ends on quit
	}
	s.quitOnce.Do(func() { close(s.quit) })
	if hs != nil {
		<-s.served
	}
	s.bgOnce.Do(func() { close(s.bgStop) })
	s.bg.Wait()
	return err
}

// waitIdle marks the server stopping (new requests are answered 503) and
// waits until no request is in the handler, or ctx ends.
func (s *Server) waitIdle(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	if s.idle == nil {
		s.idle = make(chan struct{})
		if s.active == 0 {
			close(s.idle)
		}
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServerStats are the server's counts since NewServer (see Server.Stats);
// a Reset does not clear them.
type ServerStats struct {
	// Attempts counts the attempts that reached the handler and have an
	// outcome; refused connections never reach it.
	Attempts int64 `json:"attempts"`
	// ByOutcome and ByReason count them by outcome (success, timeout,
	// reset, 5xx, 429) and by reason (see ServerLogLine). Only non-zero
	// counts are present.
	ByOutcome map[string]int64 `json:"by_outcome"`
	ByReason  map[string]int64 `json:"by_reason"`
	// Processed counts the requests processed (their service time
	// served); Duplicates those processed again for a key this server
	// had processed, with or without idempotency (as far as the
	// duplicate window remembers; KeysForgotten counts the keys it
	// forgot); Wasted those processed for a client that had gone; Lost
	// the answers dropped on purpose (response loss); Dropped the
	// queued requests skipped by drop_expired.
	Processed     int64 `json:"processed"`
	Duplicates    int64 `json:"duplicates"`
	KeysForgotten int64 `json:"keys_forgotten"`
	Wasted        int64 `json:"wasted"`
	Lost          int64 `json:"lost"`
	Dropped       int64 `json:"dropped"`
	// LateWork counts, at a graph's service, the requests processed
	// after the fleet's attempt above them had given up; Shed those
	// taken from the queue and answered 503 by the shed bound or CoDel;
	// Expired those dropped, queued or in service, when their propagated
	// deadline passed (deadline_propagation); Started the
	// attempts that got a slot, QueueWait their waits in the queue
	// summed (scenario time).
	LateWork  int64         `json:"late_work"`
	Shed      int64         `json:"shed"`
	Expired   int64         `json:"deadline_dropped"`
	Started   int64         `json:"started"`
	QueueWait time.Duration `json:"queue_wait_ns"`
	// BadKeys counts the requests answered 400 for a key longer than
	// ServerMaxKeyLen (not attempts).
	BadKeys int64 `json:"bad_keys"`
	// StoreErrors counts the failed calls to the idempotency store;
	// StoreDataLost the times the store was found to have lost its data;
	// DoneRetried the keys whose Done failed and was retried in the
	// background, DonePending those still being retried, DoneLost those
	// given up (they stay in progress until their lease ends).
	StoreErrors   int64 `json:"store_errors"`
	StoreDataLost int64 `json:"store_data_lost"`
	DoneRetried   int64 `json:"done_retried"`
	DonePending   int   `json:"done_pending"`
	DoneLost      int64 `json:"done_lost"`
	// InFlight is the number of requests in service now, Queued waiting
	// for a slot, Held held without an answer by a timeout outage;
	// Conns the connections open now.
	InFlight int `json:"in_flight"`
	Queued   int `json:"queued"`
	Held     int `json:"held"`
	Conns    int `json:"conns"`
}

// Stats returns the server's counts now.
func (s *Server) Stats() ServerStats {
	_, forgotten := s.seen.stats()
	st := ServerStats{
		ByOutcome:     map[string]int64{},
		ByReason:      map[string]int64{},
		Processed:     s.processed.Load(),
		LateWork:      s.late.Load(),
		Shed:          s.shed.Load(),
		Expired:       s.expired.Load(),
		Started:       s.begins.Load(),
		QueueWait:     time.Duration(s.queueWait.Load()),
		Duplicates:    s.duplicates.Load(),
		KeysForgotten: forgotten,
		Wasted:        s.wasted.Load(),
		Lost:          s.lost.Load(),
		Dropped:       s.dropped.Load(),
		BadKeys:       s.badKeys.Load(),
		StoreErrors:   s.storeErrs.Load(),
		StoreDataLost: s.dataLost.Load(),
		DoneRetried:   s.doneRetried.Load(),
		DoneLost:      s.doneLost.Load(),
	}
	for o := range serverOutcomes {
		for r := range serverNumReasons {
			if n := s.counts[o][r].Load(); n > 0 {
				st.Attempts += n
				st.ByOutcome[strategies.Outcome(o).String()] += n
				st.ByReason[serverReason(r).String()] += n
			}
		}
	}
	s.mu.Lock()
	st.InFlight, st.Queued, st.Held, st.DonePending = s.busy, s.qlen, s.held, len(s.pending)
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		st.Conns = ln.Open()
	}
	return st
}

// now returns the scenario time: the wall time since start, divided by
// the scale. The caller holds s.mu.
func (s *Server) nowLocked() time.Duration {
	return time.Duration(float64(time.Since(s.start)) / s.scale)
}

// real returns the wall-clock length of the scenario duration d.
func (s *Server) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.scale)
}

// The kinds of clock edge.
const (
	serverEdgeDown     uint8 = iota // a refuse outage starts: close the listener
	serverEdgeUp                    // a refuse outage ends: re-open it
	serverEdgeCapacity              // capacity grows (a warmup step): start queued work
	serverEdgeStart                 // an outage starts: tell
	serverEdgeEnd                   // an outage ends: tell
)

// serverEdge is a scenario time at which the server changes.
type serverEdge struct {
	at     time.Duration
	kind   uint8
	outage int // the outage's index, for serverEdgeStart and serverEdgeEnd
}

// serverEdges lists the changes of srv's outages and warmups in time
// order.
func serverEdges(srv *scenarios.Server) []serverEdge {
	var edges []serverEdge
	for i, o := range srv.Outages {
		edges = append(edges, serverEdge{at: o.Start, kind: serverEdgeStart, outage: i})
		if o.Mode == scenarios.Refuse {
			edges = append(edges, serverEdge{at: o.Start, kind: serverEdgeDown}, serverEdge{at: o.End(), kind: serverEdgeUp})
		}
		edges = append(edges, serverEdge{at: o.End(), kind: serverEdgeEnd, outage: i}, serverEdge{at: o.End(), kind: serverEdgeCapacity})
		if wu := srv.Warmup; wu.Duration > 0 && o.Mode != scenarios.SlowMode {
			for k := 1; k <= serverWarmupSteps; k++ {
				edges = append(edges, serverEdge{at: o.End() + wu.Duration*time.Duration(k)/serverWarmupSteps, kind: serverEdgeCapacity})
			}
		}
	}
	// Outages are in order without overlap, so edges are sorted but for
	// the warmup of one outage running into the next. Stable: an up and
	// a down at the same instant keep their order, and the listener the
	// state of the later outage; an outage's end is told before the
	// next one's start.
	slices.SortStableFunc(edges, func(a, b serverEdge) int { return cmp.Compare(a.at, b.at) })
	return edges
}

// restartClock starts the scenario clock's timer from the first edge
// (resetting the clock's origin to now, and the listener to up, if
// reset), carrying out at once every edge already due.
func (s *Server) restartClock(reset bool) {
	s.edgeMu.Lock()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.edgeMu.Unlock()
		return
	}
	if reset {
		s.start = time.Now()
	}
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.next = 0
	gen := s.gen
	s.mu.Unlock()
	s.tickLocked(gen, reset)
	s.edgeMu.Unlock()
}

// tick carries out the edges that are due and arms the timer for the
// next one. Ticks run one at a time.
func (s *Server) tick(gen int) {
	s.edgeMu.Lock()
	defer s.edgeMu.Unlock()
	s.tickLocked(gen, false)
}

// tickLocked is tick with edgeMu held; from a restart, the listener is
// put up unless an edge due takes it down.
func (s *Server) tickLocked(gen int, restart bool) {
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		return
	}
	now := s.nowLocked()
	listener := -1 // 0 down, 1 up: the last listener edge due
	if restart {
		listener = 1
	}
	capacity := false
	var told []ServerEvent
	for s.next < len(s.edges) && s.edges[s.next].at <= now {
		switch e := s.edges[s.next]; e.kind {
		case serverEdgeDown:
			listener = 0
		case serverEdgeUp:
			listener = 1
		case serverEdgeStart, serverEdgeEnd:
			ev := ServerEvent{Kind: EventOutageStart, At: e.at, Outage: s.srv.Outages[e.outage]}
			if e.kind == serverEdgeEnd {
				ev.Kind = EventOutageEnd
			}
			told = append(told, ev)
		default:
			capacity = true
		}
		s.next++
	}
	if capacity {
		s.startQueuedLocked(now)
	}
	if s.next < len(s.edges) {
		wait := time.Until(s.start.Add(s.real(s.edges[s.next].at)))
		s.timer = time.AfterFunc(max(wait, 0), func() { s.tick(gen) })
	}
	hs, ln := s.http, s.ln
	s.mu.Unlock()
	for _, ev := range told {
		s.emit(ev)
	}
	if ln == nil || listener < 0 {
		return
	}
	if listener == 0 {
		ln.SetUp(false)
		hs.SetKeepAlivesEnabled(false) // closes idle keep-alive connections
	} else {
		hs.SetKeepAlivesEnabled(true)
		ln.SetUp(true)
	}
}

// capacityLocked returns how many requests may be in service at scenario
// time now: the concurrency, ramped up after each outage by the warmup
// in serverWarmupSteps steps, at least 1 (as in the simulator).
func (s *Server) capacityLocked(now time.Duration) int {
	if s.slots < 0 {
		return math.MaxInt
	}
	wu := s.srv.Warmup
	if wu.Duration == 0 {
		return s.slots
	}
	for i := len(s.srv.Outages) - 1; i >= 0; i-- {
		end := s.srv.Outages[i].End()
		if now < end || s.srv.Outages[i].Mode == scenarios.SlowMode {
			continue
		}
		since := now - end
		if since >= wu.Duration {
			break
		}
		step := float64(since*serverWarmupSteps/wu.Duration) / serverWarmupSteps
		frac := wu.From + (1-wu.From)*step
		return max(1, int(frac*float64(s.slots)))
	}
	return s.slots
}

// outageAt returns the outage in force at scenario time t, if any.
func (s *Server) outageAt(t time.Duration) (scenarios.Outage, bool) {
	for _, o := range s.srv.Outages {
		if t < o.Start {
			break
		}
		if t < o.End() && o.Mode != scenarios.SlowMode {
			return o, true
		}
	}
	return scenarios.Outage{}, false
}

// slowLocked returns the factor by which a slow outage multiplies the
// service time of work starting at t: 1 when none is in force.
func (s *Server) slowLocked(t time.Duration) float64 {
	for _, o := range s.srv.Outages {
		if o.Mode == scenarios.SlowMode && t >= o.Start && t < o.End() {
			return o.Factor
		}
	}
	return 1
}

// takeTokenLocked takes a token from the rate limit's bucket at scenario
// time now. Without one it returns the Retry-After hint in scenario
// time: the fixed hint, or the time until a token is free.
func (s *Server) takeTokenLocked(now time.Duration) (hint time.Duration, ok bool) {
	rl := s.srv.RateLimit
	s.tokens = min(float64(rl.Burst), s.tokens+(now-s.tokensAt).Seconds()*rl.Rate)
	s.tokensAt = now
	if s.tokens >= 1 {
		s.tokens--
		return 0, true
	}
	if rl.RetryAfter > 0 {
		return time.Duration(rl.RetryAfter), false
	}
	return time.Duration((1 - s.tokens) / rl.Rate * float64(time.Second)), false
}

// startServiceLocked takes a slot and returns the service time of the
// request that starts now, in scenario time (a draw from the
// distribution plus slowdown x the requests already in service), and
// whether its answer is to be lost (response loss). Both are drawn here,
// in the order slots are given, rather than when the work ends: requests
// ending at the same instant then cannot change each other's draws, and
// a server whose arrivals are admitted in a set order (herdtest's, in
// virtual time) draws the same for the same seed.
func (s *Server) startServiceLocked() (time.Duration, bool) {
	d := s.service.Sample(s.rServe) + s.srv.Slowdown*time.Duration(s.busy)
	if f := s.slowLocked(s.nowLocked()); f != 1 {
		d = time.Duration(float64(d) * f)
	}
	s.busy++
	lost := false
	if p := s.srv.ResponseLoss; p > 0 {
		lost = s.rFault.Float64() < p
	}
	return d, lost
}

// Sampler draws durations from a scenario distribution, as the
// simulator's sampler does.
type Sampler struct {
	dist scenarios.Dist
	a, b float64 // lognormal: mu and sigma of the log
}

// NewSampler returns a sampler of distribution d.
func NewSampler(d *scenarios.Dist) Sampler {
	s := Sampler{dist: *d}
	if d.Kind == scenarios.Lognormal {
		// A lognormal of mean m and standard deviation sd has
		// sigma^2 = ln(1 + sd^2/m^2) and mu = ln m - sigma^2/2.
		m, sd := float64(d.Mean), float64(d.StdDev)
		sigma2 := math.Log1p(sd * sd / (m * m))
		s.a, s.b = math.Log(m)-sigma2/2, math.Sqrt(sigma2)
	}
	return s
}

// Sample draws one duration; constant draws nothing from r.
func (s Sampler) Sample(r *rand.Rand) time.Duration {
	d := s.dist
	switch d.Kind {
	case scenarios.Constant:
		return d.Mean
	case scenarios.Exponential:
		return time.Duration(r.ExpFloat64() * float64(d.Mean))
	case scenarios.UniformDist:
		return d.Min + time.Duration(r.Float64()*float64(d.Max-d.Min))
	case scenarios.Lognormal:
		return time.Duration(math.Exp(s.a + s.b*r.NormFloat64()))
	case scenarios.Normal:
		return time.Duration(math.Abs(float64(d.Mean) + float64(d.StdDev)*r.NormFloat64()))
	}
	return 0
}
