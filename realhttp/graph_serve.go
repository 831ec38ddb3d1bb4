package realhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// GraphStep is what a step of a graph's code that a GraphTurn names
// does.
type GraphStep int

// The steps of GraphOptions.Turn, in the order of their values.
const (
	// GraphSample samples every replica's queue (Graph's own timer).
	GraphSample GraphStep = iota
	// GraphDraw draws which calls of a step are made (a call's
	// probability).
	GraphDraw
	// GraphAttempt begins an attempt of a call: the cache's lookup, the
	// policy's Begin (breaker, budget, jitter), the balancer's pick.
	GraphAttempt
	// GraphHedge sends a hedged copy of an attempt after its delay.
	GraphHedge
	// GraphAnswer takes an attempt's answer: outlier detection, the
	// cache's fill, the policy's Done.
	GraphAnswer
)

// GraphTurnHeader carries, on a graph's downstream attempt made with
// GraphOptions.Turn set, the GraphTurn of the attempt (its String): a
// server in front of the callee can order arrivals by it.
const GraphTurnHeader = "Herdlab-Graph-Turn"

// GraphTurn names a step of a graph's code that draws from randomness or
// state shared by the goroutines of the graph (see GraphOptions.Turn),
// by what stays the same from run to run of one seed when the attempts
// that reach the replicas are admitted in a set order: not by goroutine.
type GraphTurn struct {
	Step GraphStep
	// Service and Replica are the calling replica's (the service's index
	// in file order), ID the number its server gave the attempt being
	// served there, from 1 (in arrival order at that replica).
	Service, Replica int
	ID               uint64
	// Edge is the call's index among the graph's calls (the services'
	// calls in file order), Copy the copy of its fan-out, from 0.
	Edge, Copy int
	// Attempt is the call's attempt, from 1; Hedge the copy of a hedged
	// attempt, from 0.
	Attempt, Hedge int
}

// String returns t as GraphTurnHeader carries it: its fields in order,
// separated by dots.
func (t GraphTurn) String() string {
	return fmt.Sprintf("%d.%d.%d.%d.%d.%d.%d.%d", t.Step, t.Service, t.Replica, t.ID, t.Edge, t.Copy, t.Attempt, t.Hedge)
}

// ParseGraphTurn reads a GraphTurn written by its String.
func ParseGraphTurn(s string) (GraphTurn, bool) {
	f := strings.Split(s, ".")
	if len(f) != 8 {
		return GraphTurn{}, false
	}
	var n [8]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return GraphTurn{}, false
		}
		n[i] = v
	}
	return GraphTurn{Step: GraphStep(n[0]), Service: int(n[1]), Replica: int(n[2]), ID: uint64(n[3]),
		Edge: int(n[4]), Copy: int(n[5]), Attempt: int(n[6]), Hedge: int(n[7])}, true
}

// turn calls the Turn hook, if any, with t.
func (g *Graph) turn(t GraphTurn) {
	if g.onTurn != nil {
		g.onTurn(t)
	}
}

// callKey returns the idempotency key of a downstream call: random, or
// with a Turn hook, derived from the seed and the call's place (the
// same from run to run).
func (g *Graph) callKey(t GraphTurn) uuid.UUID {
	if g.onTurn == nil {
		return uuid.New()
	}
	var b [48]byte
	binary.LittleEndian.PutUint64(b[0:], g.seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(t.Service))
	binary.LittleEndian.PutUint64(b[16:], uint64(t.Replica))
	binary.LittleEndian.PutUint64(b[24:], t.ID)
	binary.LittleEndian.PutUint64(b[32:], uint64(t.Edge))
	binary.LittleEndian.PutUint64(b[40:], uint64(t.Copy))
	sum := sha256.Sum256(b[:])
	var k uuid.UUID
	copy(k[:], sum[:16])
	k[6] = k[6]&0x0f | 0x80 // version 8 (custom), RFC 9562
	k[8] = k[8]&0x3f | 0x80
	return k
}

// GraphAt is a place where a Graph serves: replica Replica of service
// Service (Index in file order), or with Replica -1, the front of the
// fleet's target (which has several replicas).
type GraphAt struct {
	Service string
	Index   int
	Replica int
}

// Serve serves the graph on the caller's listeners, as Start does on
// loopback ports. listen returns, for each replica and for the target's
// front when it has several replicas, the listener to serve on and the
// HTTP server to serve with, whose Handler passes requests on to h
// (nil: the graph's own settings). A replica's URL is http://ADDR/,
// ADDR its listener's address: the graph's client (GraphOptions.Client)
// must reach it there. The scenario clock starts now. Serve fails when
// called twice, or after Start.
func (g *Graph) Serve(listen func(at GraphAt, h http.Handler) (Listener, *http.Server, error)) error {
	if g.served != nil || g.services[g.target].replicas[0].url != "" {
		return errors.New("realhttp: Graph.Serve: the graph is already served")
	}
	for _, s := range g.services {
		for _, rep := range s.replicas {
			ln, hs, err := listen(GraphAt{Service: s.cfg.Name, Index: s.index, Replica: rep.index}, rep.srv.Handler())
			if err != nil {
				return fmt.Errorf("service %s, replica %d: %w", s.cfg.Name, rep.index, err)
			}
			if err := rep.srv.Serve(ln, hs); err != nil {
				return fmt.Errorf("service %s, replica %d: %w", s.cfg.Name, rep.index, err)
			}
			rep.url = rep.srv.URL()
		}
	}
	if t := g.services[g.target]; len(t.replicas) > 1 {
		h := http.HandlerFunc(g.serveFront)
		ln, hs, err := listen(GraphAt{Service: t.cfg.Name, Index: t.index, Replica: -1}, h)
		if err != nil {
			return fmt.Errorf("service %s, front: %w", t.cfg.Name, err)
		}
		if hs == nil {
			hs = &http.Server{Handler: h, ReadHeaderTimeout: serverDefaultReadTimeout}
		}
		g.frontLn, g.front, g.served = ln, hs, make(chan struct{})
		go func() {
			defer close(g.served)
			_ = hs.Serve(ln)
		}()
	}
	g.restart()
	return nil
}

// TargetStats returns the counts of the fleet's target since the graph
// started: with one replica (a single server's), its server's (see
// Server.Stats); with several, the requests in service, processed,
// duplicated, wasted and lost, summed.
func (g *Graph) TargetStats() ServerStats {
	if t := g.services[g.target]; len(t.replicas) == 1 {
		return t.replicas[0].srv.Stats()
	}
	var st ServerStats
	for _, rep := range g.services[g.target].replicas {
		s := rep.srv.Stats()
		st.Attempts += s.Attempts
		st.InFlight += s.InFlight
		st.Processed += s.Processed
		st.Duplicates += s.Duplicates
		st.Wasted += s.Wasted
		st.Lost += s.Lost
	}
	return st
}
