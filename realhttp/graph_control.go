package realhttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"

	"github.com/zeontools/herdlab/internal/localhost"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// GraphCounts are what a graph's services counted since the last
// reset: per service in file order (its replicas within), with what its
// replicas saw (work processed, duplicated, wasted, late, lost; waits in
// the queue), and the attempts sent along each service's calls. They do
// not hold the fleet's own attempts: AddTo adds them from the fleet's
// run.
type GraphCounts struct {
	Target   int                   `json:"target"`
	Services []*results.ServiceRun `json:"services"`
	Calls    []results.EdgeRun     `json:"calls"`
	// Single is true for the counts of a single server (a scenario's
	// server: section, served as a graph of one service): AddTo gives
	// its run no services nor edges, as the simulator's has none.
	Single bool `json:"single,omitempty"`
}

// Counts returns the graph's counts now; call it once the graph is
// idle.
func (g *Graph) Counts() GraphCounts {
	c := GraphCounts{Target: g.target, Single: g.single != nil}
	for _, e := range g.edges {
		c.Calls = append(c.Calls, results.EdgeRun{Caller: e.caller.cfg.Name, Callee: e.callee.cfg.Name, Attempts: e.attempts.Load()})
	}
	for _, s := range g.services {
		s.mu.Lock()
		out := cloneServiceRun(s.stats)
		for i, rep := range s.replicas {
			st := rep.srv.Stats()
			xs := []*results.ServiceRun{out}
			if rep.stats != nil {
				xs = append(xs, out.Replicas[i])
			}
			for _, x := range xs {
				x.Processed += st.Processed - rep.base.Processed
				x.Duplicates += st.Duplicates - rep.base.Duplicates
				x.Wasted += st.Wasted - rep.base.Wasted
				x.LateWork += st.LateWork - rep.base.LateWork
				x.Shed += st.Shed - rep.base.Shed
				x.DeadlineDropped += st.Expired - rep.base.Expired
				x.Lost += st.Lost - rep.base.Lost
				x.Started += st.Started - rep.base.Started
				x.QueueWait += st.QueueWait - rep.base.QueueWait
			}
		}
		s.mu.Unlock()
		c.Services = append(c.Services, out)
	}
	return c
}

// cloneServiceRun copies s, its series and its replicas.
func cloneServiceRun(s *results.ServiceRun) *results.ServiceRun {
	c := *s
	c.Series = append([]results.Bucket(nil), s.Series...)
	c.Cache = append([]results.CacheBucket(nil), s.Cache...)
	c.Replicas = nil
	for _, r := range s.Replicas {
		c.Replicas = append(c.Replicas, cloneServiceRun(r))
	}
	return &c
}

// Finish adds the graph's counts to run, the fleet's run against it
// (see GraphCounts.AddTo). Call it once the graph is idle. A single
// server's run gets the server's counts (processed, duplicates, wasted,
// lost), and no services nor edges, as the simulator's has none.
func (g *Graph) Finish(run *results.Run) { g.Counts().AddTo(run) }

// AddTo adds the counts to run, the fleet's run against the graph, whose
// own counts describe the target: the services (the target's with the
// fleet's attempts, as the fleet's driver counted them), the edges (the
// fleet's first), and the work only the target's replicas see. A single
// server's counts (Single) add only that work: its run has no services
// nor edges, in process as against a herdlab serve.
func (c GraphCounts) AddTo(run *results.Run) {
	if c.Target < 0 || c.Target >= len(c.Services) {
		return
	}
	t := c.Services[c.Target]
	run.Edges = append([]results.EdgeRun{{Callee: t.Name, Attempts: run.Attempts}}, c.Calls...)
	t.Attempts += run.Attempts
	t.Rejected += run.Rejected
	t.Throttled += run.Throttled
	for k := range min(len(t.Series), len(run.Series)) {
		b, f := &t.Series[k], run.Series[k]
		t.OK += f.OK
		b.Attempts += f.Attempts
		b.OK += f.OK
		b.NotOK += f.NotOK
		b.NotOKTimeout += f.NotOKTimeout
		b.Rejected += f.Rejected
		b.Throttled += f.Throttled
	}
	run.Services = c.Services
	run.Processed, run.Duplicates, run.Wasted, run.Lost = t.Processed, t.Duplicates, t.Wasted, t.Lost
	if c.Single {
		run.Services, run.Edges = nil, nil
	}
}

// wire returns the counts as JSON carries them: an unbounded capacity
// (which JSON has no number for) as -1; unwire undoes it.
func (c GraphCounts) wire(to bool) { results.WireServices(c.Services, to) }

// Fingerprint returns a short digest of what a test server of sc
// serves, as its control endpoint reports it (ServerState.Fingerprint):
// for a single server, of its server section and the hold of a timeout
// outage (the longest strategy timeout); for a graph, of its services
// ("graph-" and hex digits). A replay compares it with the one the
// served scenario reports, to know that the target enforces the
// scenario it replays.
func Fingerprint(sc *scenarios.Scenario) string {
	if !sc.Graph() {
		return serverFingerprint(sc)
	}
	return graphFingerprint(sc)
}

// graphFingerprint returns a short digest of what a Graph of sc serves:
// its services. It is a graph's Fingerprint.
func graphFingerprint(sc *scenarios.Scenario) string {
	b, err := json.Marshal(sc.Services)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "graph-" + hex.EncodeToString(sum[:8])
}

// Strategy returns the name of the strategy the graph serves.
func (g *Graph) Strategy() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st.Name
}

// ResetStrategy is Reset for strategy name, whose edge policies the
// graph serves from then on. It must deploy the services as the one
// served does (its services section may not change them): ports and
// replicas are fixed once the graph listens.
func (g *Graph) ResetStrategy(ctx context.Context, seed uint64, name string) error {
	k := slices.IndexFunc(g.sc.Strategies, func(s scenarios.Strategy) bool { return s.Name == name })
	if k < 0 {
		return fmt.Errorf("no strategy %q in scenario %s", name, g.sc.Name)
	}
	st := &g.sc.Strategies[k]
	if cur := g.Strategy(); name != cur && !reflect.DeepEqual(g.sc.ServicesFor(st), g.sc.ServicesFor(g.st)) {
		return fmt.Errorf("strategy %s deploys the services otherwise than %s, which this graph serves: serve it with --strategy %s", name, cur, name)
	}
	if _, err := GraphUnsupported(g.sc, st); err != nil {
		return err
	}
	if err := g.Idle(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	g.st = st
	g.mu.Unlock()
	for _, e := range g.edges {
		pol := scenarios.EdgeStrategy(st, e.caller.cfg.Name, e.cfg)
		e.policy = pol.Policy() // Reset gives it fresh senders
	}
	g.propagate.Store(st.DeadlinePropagation)
	for _, s := range g.services {
		for _, rep := range s.replicas {
			rep.srv.propagate.Store(st.DeadlinePropagation)
			if s.index == g.target {
				rep.srv.fleetTimeout.Store(int64(st.Policy().Timeout))
			}
		}
	}
	return g.Reset(ctx, seed)
}

// State returns the graph's state: the target's as a ServerState, with
// the strategy served and the counts since the last reset. A single
// server's is its server's state (Server.State: its fingerprint, its
// full stats), with the strategy and the counts.
func (g *Graph) State() ServerState {
	t := g.services[g.target].replicas[0].srv.State()
	if g.single != nil {
		t.Strategy = g.Strategy()
		c := g.Counts()
		c.wire(true)
		t.Graph = &c
		return t
	}
	st := ServerState{Scenario: g.sc.Name, Fingerprint: graphFingerprint(g.sc), TimeScale: g.scale, T: g.now().Seconds(),
		Resets: t.Resets, Outage: t.Outage, Strategy: g.Strategy()}
	for _, rep := range g.services[g.target].replicas {
		s := rep.srv.Stats()
		st.Stats.Attempts += s.Attempts
		st.Stats.Processed += s.Processed
		st.Stats.Duplicates += s.Duplicates
		st.Stats.Wasted += s.Wasted
		st.Stats.Lost += s.Lost
	}
	c := g.Counts()
	c.wire(true)
	st.Graph = &c
	return st
}

// StartAdmin serves the graph's admin listener on addr (as Start takes
// it), with timeouts on reading a request (5 s) and on idle connections
// (60 s), and headers of 64 KiB at most:
//   - GET /control/state, the graph's State (with ?idle=1 once no
//     request is at any replica, waiting up to 30 s: 409 Conflict when
//     requests stayed);
//   - POST /control/reset with {"seed": N, "strategy": NAME}, which
//     resets every replica and the graph's counts for a run of that
//     strategy (the one served when empty), waiting up to 30 s for the
//     graph to empty, and answers the state after it (409 Conflict when
//     requests stayed; 400 for a bad body);
//   - when the fleet's target has one replica (a single server's always
//     has), GET /metrics, its metrics. Every replica's metrics are on
//     its own port too (GET /metrics).
//
// No outage closes the listener. Nothing on it is authenticated: keep
// it on loopback. It answers only requests addressed to a loopback name
// or address, or to the address it listens on, and refuses a reset sent
// by a web page or with a body that is not JSON (internal/localhost).
// StartAdmin fails when called twice.
func (g *Graph) StartAdmin(addr string) error {
	a, err := serverResolve(addr)
	if err != nil {
		return fmt.Errorf("realhttp: StartAdmin: %w", err)
	}
	if g.admin != nil {
		return errors.New("realhttp: StartAdmin: the admin listener has already been started")
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		return fmt.Errorf("realhttp: StartAdmin: %w", err)
	}
	mux := http.NewServeMux()
	if t := g.services[g.target]; len(t.replicas) == 1 {
		mux.Handle("GET /metrics", t.replicas[0].srv.metrics.handler())
	}
	mux.HandleFunc("GET "+ControlStatePath, controlState(g.Idle, g.State))
	mux.HandleFunc("POST "+ControlResetPath, controlResetHandler(g.resetFor, g.State))
	g.admin = &http.Server{
		Handler:           localhost.Guard(mux, ln.Addr().String()),
		ReadHeaderTimeout: serverDefaultReadTimeout,
		ReadTimeout:       serverDefaultReadTimeout,
		WriteTimeout:      serverWriteSlack + serverResetWait,
		IdleTimeout:       serverIdleTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes,
	}
	g.adminLn = ln
	g.adminDone = make(chan struct{})
	go func() {
		defer close(g.adminDone)
		_ = g.admin.Serve(ln)
	}()
	return nil
}

// AdminAddr returns the host:port of the admin listener, or "" before
// StartAdmin.
func (g *Graph) AdminAddr() string {
	if g.adminLn == nil {
		return ""
	}
	return g.adminLn.Addr().String()
}

// AdminURL returns http://host:port/ of the control endpoint, or ""
// before StartAdmin.
func (g *Graph) AdminURL() string {
	if g.adminLn == nil {
		return ""
	}
	return "http://" + g.adminLn.Addr().String() + "/"
}

// resetFor is the control endpoint's reset: for the strategy the body
// names (the one served when empty), one reset at a time.
func (g *Graph) resetFor(ctx context.Context, body controlReset) error {
	if body.Strategy == "" {
		body.Strategy = g.Strategy()
	}
	g.resetMu.Lock()
	defer g.resetMu.Unlock()
	return g.ResetStrategy(ctx, body.Seed, body.Strategy)
}

// ResetStrategy asks a served graph to reset for a run of strategy (see
// Graph.ResetStrategy), and returns its state after.
func (c Control) ResetStrategy(ctx context.Context, seed uint64, strategy string) (ServerState, error) {
	body, _ := json.Marshal(controlReset{Seed: seed, Strategy: strategy})
	return c.call(ctx, http.MethodPost, ControlResetPath, body)
}

// Counts returns a served graph's counts from its state (nil for a
// single server's).
func (st ServerState) Counts() *GraphCounts {
	if st.Graph == nil {
		return nil
	}
	c := *st.Graph
	c.wire(false)
	return &c
}
