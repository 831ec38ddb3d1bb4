package herdtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zeontools/herdlab/herdtest/internal/memnet"
	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// server is what a run serves the fleet: the scenario's server, or its
// graph of services (graphServer).
type server interface {
	Stats() realhttp.ServerStats
	Shutdown(ctx context.Context) error
}

// serve serves the scenario in the bubble: its graph of services when it
// has one, else its server.
func (p *player) serve() (server, error) {
	if p.sc.Graph() {
		return p.serveGraph()
	}
	return p.serveOne()
}

// graphServer is a scenario's graph of services in the bubble: every
// replica of every service a realhttp server on an in-memory network of
// its own (the fleet's target, with one replica, on the fleet's), its
// downstream calls through one client over those networks.
type graphServer struct {
	g      *realhttp.Graph
	p      *player
	client *http.Client
	nets   map[string]*graphNet // by host:port
}

// graphNet is one replica's network, and the refuse outages that hit
// the replica.
type graphNet struct {
	net    *memnet.Network
	refuse []scenarios.Outage
}

// The networks of the graph's replicas are named after the service's
// index and the replica's: s1-r0.graph.herdlab.test:80.
func graphAddr(at realhttp.GraphAt) string {
	return fmt.Sprintf("s%d-r%d.graph.%s:80", at.Index, at.Replica, serverHost)
}

// serveGraph serves the scenario's graph of services, as the player's
// strategy deploys it: the fleet reaches the target (its replica, or its
// front with several) on the player's network, where the target's
// refuse outages refuse the fleet's connections (player.dial); each
// replica of a service is on a network of its own, which the graph's
// calls dial, refused there by the outages that hit the replica.
// Arrivals at every replica wait for their turn: the fleet's by sender,
// request and attempt, the graph's calls by the key they carry
// (realhttp.GraphTurnHeader); so do the graph's own steps that draw
// from shared state (GraphOptions.Turn).
func (p *player) serveGraph() (server, error) {
	k := slices.IndexFunc(p.sc.Strategies, func(st scenarios.Strategy) bool { return st.Name == p.name })
	if k < 0 {
		return nil, fmt.Errorf("no strategy %s", p.name)
	}
	st := &p.sc.Strategies[k]
	gs := &graphServer{p: p, nets: map[string]*graphNet{}}
	// One connection per attempt (no keep-alive): a connection's delays
	// are drawn from a stream seeded by the attempt it carries, which
	// a pool would hand out in the scheduler's order.
	gs.client = &http.Client{
		Transport: graphTransport{&http.Transport{
			DialContext:       gs.dial,
			DisableKeepAlives: true,
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	g, err := realhttp.NewGraph(p.sc, st, realhttp.GraphOptions{
		Server: realhttp.ServerOptions{Seed: p.seed, Observe: p.observe},
		Client: gs.client,
		Turn:   p.graphTurn,
	})
	if err != nil {
		return nil, err
	}
	gs.g = g
	deployed := p.sc.ServicesFor(st)
	target := p.sc.TargetIndex()
	fleet := func(at realhttp.GraphAt) bool {
		return at.Index == target && (at.Replica < 0 || deployed[target].Replicas == 1)
	}
	err = g.Serve(func(at realhttp.GraphAt, h http.Handler) (realhttp.Listener, *http.Server, error) {
		var refuse []scenarios.Outage
		if at.Replica >= 0 {
			for _, o := range deployed[at.Index].Outages {
				if o.Mode == scenarios.Refuse && o.Hits(at.Replica) {
					refuse = append(refuse, o)
				}
			}
		}
		hs := &http.Server{Handler: p.graphGate(h), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
		n := &graphNet{refuse: refuse}
		if fleet(at) {
			n.net = p.net
			p.refuse = refuse
			hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
				if mc, ok := c.(*memnet.Conn); ok {
					if s, ok := mc.Tag().(int); ok {
						return context.WithValue(ctx, senderKey{}, s)
					}
				}
				return ctx
			}
			hs.Protocols = new(http.Protocols)
			hs.Protocols.SetHTTP1(true)
			hs.Protocols.SetUnencryptedHTTP2(true) // gRPC's prior knowledge, over Net.Dial
			gs.nets[serverAddr] = n
		} else {
			n.net = memnet.New(graphAddr(at))
			gs.nets[graphAddr(at)] = n
		}
		return listener{n.net.Listener(), n.net}, hs, nil
	})
	if err != nil {
		_ = g.Shutdown(context.Background())
		return nil, err
	}
	return gs, nil
}

// graphTurn waits for the turn of a step of the graph's code.
func (p *player) graphTurn(t realhttp.GraphTurn) {
	p.arb.enter(graphKey(t, int64(t.Step)))
}

// The step of a call's arrival at its callee, in a turnKey, after the
// graph's own steps (realhttp.GraphStep).
const stepArrive = 100

// graphKey returns the turn key of graph step t, as step: a sample
// with the samples, anything else after the fleet's attempts, by the
// calling replica, its attempt, the call and its copy, the call's
// attempt, the hedged copy, and the step.
func graphKey(t realhttp.GraphTurn, step int64) turnKey {
	if t.Step == realhttp.GraphSample {
		return turnKey{phase: phaseSample, sender: 1}
	}
	return turnKey{phase: phaseGraph, graph: [8]int64{int64(t.Service), int64(t.Replica), int64(t.ID),
		int64(t.Edge), int64(t.Copy), int64(t.Attempt), int64(t.Hedge), step}}
}

// graphGate lets a call of the graph reach the replica's handler h at
// its turn, by the key it carries; anything else (the fleet's attempts)
// goes through the player's gate.
func (p *player) graphGate(h http.Handler) http.Handler {
	fleet := p.gate(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := realhttp.ParseGraphTurn(r.Header.Get(realhttp.GraphTurnHeader))
		if !ok {
			fleet.ServeHTTP(w, r)
			return
		}
		p.arb.enter(graphKey(t, stepArrive))
		h.ServeHTTP(w, r)
	})
}

// graphTransport passes the attempt's turn (its header) to the dial, in
// the request's context.
type graphTransport struct{ inner *http.Transport }

type graphTurnKey struct{}

func (t graphTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := req.Header.Get(realhttp.GraphTurnHeader); v != "" {
		req = req.WithContext(context.WithValue(req.Context(), graphTurnKey{}, v))
	}
	return t.inner.RoundTrip(req)
}

func (t graphTransport) CloseIdleConnections() { t.inner.CloseIdleConnections() }

// dial connects a call of the graph to the replica at addr, or refuses it
// during a refuse outage that hits the replica, decided by the clock as
// player.dial decides the fleet's. The connection's delays are drawn
// from a stream seeded by the run and the attempt it carries.
func (gs *graphServer) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	p := gs.p
	n := gs.nets[addr]
	if n == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("herdtest: no replica at %s", addr)}
	}
	h := fnv.New64a()
	turn, _ := ctx.Value(graphTurnKey{}).(string)
	_, _ = h.Write([]byte(addr + " " + turn))
	delay := p.delays(p.seed^0x6772617068, h.Sum64())
	if refusing(n.refuse, p.since()) {
		return nil, refuse(delay, n.net.Listener().Addr())
	}
	if delay != nil {
		// The connect is free, as over the warm pool a service keeps to
		// another: an attempt takes one delay each way, as simulated.
		var legs atomic.Int32
		draw := delay
		delay = func() time.Duration {
			if legs.Add(1) <= 2 {
				return 0
			}
			return draw()
		}
	}
	return n.net.Dial(ctx, memnet.DialOptions{Delay: delay, Tag: -1})
}

// Stats returns the counts of the fleet's target (its replicas').
func (gs *graphServer) Stats() realhttp.ServerStats { return gs.g.TargetStats() }

// Shutdown ends the graph's calls and shuts its servers down.
func (gs *graphServer) Shutdown(ctx context.Context) error {
	err := gs.g.Shutdown(ctx)
	gs.client.CloseIdleConnections()
	return err
}

// openBetween counts the connections between services still open.
func (gs *graphServer) openBetween() int {
	var open int
	for addr, n := range gs.nets {
		if addr != serverAddr {
			open += n.net.Open()
		}
	}
	return open
}

// Finish adds the graph's services and calls to the fleet's run.
func (gs *graphServer) Finish(run *results.Run) { gs.g.Finish(run) }
