package herdtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeontools/herdlab/herdtest/internal/memnet"
	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/strategies"
)

// The server's address in the bubble: any name would do, as nothing
// resolves it; .test is reserved for testing (RFC 2606).
const (
	serverHost = "herdlab.test"
	serverAddr = serverHost + ":80"
	serverURL  = "http://" + serverHost + "/"
)

// stuckAfter is how long after the horizon, in virtual time, herdtest
// waits for the requests still going to return once their context has
// ended: a Send that ignores its context fails the run then.
const stuckAfter = time.Hour

// The states of a request.
const (
	reqGoing uint8 = iota
	reqDelivered
	reqGaveUp
)

// reqRecord is what became of one request, in scenario time.
type reqRecord struct {
	created, final time.Duration
	state          uint8
}

// player is one run of a client under test, in its bubble.
type player struct {
	sc      *scenarios.Scenario
	name    string
	seed    uint64
	start   time.Time
	horizon time.Duration
	buckets int
	arb     *arbiter
	net     *memnet.Network
	latency *realhttp.Sampler
	refuse  []scenarios.Outage

	mu       sync.Mutex // guards what follows
	run      *results.Run
	reqs     []reqRecord
	cleanups []func()
}

// since returns the scenario time now.
func (p *player) since() time.Duration { return time.Since(p.start) }

// play is one run, inside the bubble: the server, the network, the
// senders and their requests, until the horizon, then everything closed.
func play(sc *scenarios.Scenario, name string, newClient Client, run int, logf func(string, ...any)) (*results.Run, error) {
	seed := sim.RunSeed(sc.Seed, run)
	p := &player{
		sc:      sc,
		name:    name,
		seed:    seed,
		start:   time.Now(),
		horizon: sc.Duration,
		buckets: int((sc.Duration + sc.Bucket - 1) / sc.Bucket),
		arb:     newArbiter(),
		net:     memnet.New(serverAddr),
	}
	defer p.arb.close()
	p.run = results.NewRun(name, run, p.buckets)
	if d := sc.Network.Latency; d != nil {
		s := realhttp.NewSampler(d)
		p.latency = &s
	}
	for _, o := range sc.Server.Outages {
		if o.Mode == scenarios.Refuse {
			p.refuse = append(p.refuse, o)
		}
	}
	guard, unguard := guardDefaultTransport()
	defer unguard()

	srv, err := p.serve()
	if err != nil {
		return nil, err
	}
	rArrive := rand.New(rand.NewPCG(seed, 1))
	var arrivals []arrival
	senders := sc.Workload.Senders
	if c := sc.Workload.Clients; c != nil {
		senders = c.Count
	} else {
		arrivals = openArrivals(sc, rArrive)
		if senders == 0 {
			senders = len(arrivals)
		}
	}
	sends, transports, err := p.build(newClient, senders)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.horizon)
		var wg sync.WaitGroup
		sampled := make(chan struct{})
		go p.sample(srv, sampled)
		if c := sc.Workload.Clients; c != nil {
			p.closedLoop(ctx, &wg, c, sends, rArrive)
		} else {
			p.openLoop(ctx, &wg, arrivals, sends)
		}
		<-ctx.Done()
		cancel()
		err = p.wait(&wg, logf)
		<-sampled
	}
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	for _, t := range transports {
		if t != nil {
			t.CloseIdleConnections()
		}
	}
	shut, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = fmt.Errorf("the server did not shut down: %w", serr)
	}
	if n := guard.used.Load(); n > 0 {
		return nil, fmt.Errorf("%d requests: %w", n, errDefaultTransport)
	}
	if err != nil {
		return nil, err
	}
	// The closes still travelling (each arrives after its latency) and
	// the goroutines they wake finish, then what became idle meanwhile
	// is closed too, before the count.
	p.settle()
	for _, t := range transports {
		t.CloseIdleConnections()
	}
	p.settle()
	if n := p.net.Open(); n > 0 {
		return nil, fmt.Errorf("%d connections still open at the end: close every response body (herdtest.Response does) and register what the client keeps open with Net.Cleanup", n)
	}
	if g, ok := srv.(*graphServer); ok {
		if n := g.openBetween(); n > 0 {
			return nil, fmt.Errorf("%d connections between services still open at the end", n)
		}
	}
	p.finish()
	if g, ok := srv.(*graphServer); ok {
		g.Finish(p.run)
	}
	if p.run.Attempts == 0 && p.run.Requests > 0 {
		return nil, errors.New("no attempt reached the server: build the client on Net.Transport (HTTP) or Net.Dial (gRPC)")
	}
	return p.run, nil
}

// serveOne serves the scenario's server on the player's network, each
// attempt at its turn (see gate).
func (p *player) serveOne() (server, error) {
	srv, err := realhttp.NewServer(p.sc, realhttp.ServerOptions{Seed: p.seed, Observe: p.observe})
	if err != nil {
		return nil, err
	}
	hs := &http.Server{
		Handler: p.gate(srv.Handler()),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if mc, ok := c.(*memnet.Conn); ok {
				return context.WithValue(ctx, senderKey{}, mc.Tag())
			}
			return ctx
		},
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		Protocols:         new(http.Protocols),
	}
	hs.Protocols.SetHTTP1(true)
	hs.Protocols.SetUnencryptedHTTP2(true) // gRPC's prior knowledge, over Net.Dial
	if err := srv.Serve(listener{p.net.Listener(), p.net}, hs); err != nil {
		return nil, err
	}
	return srv, nil
}

// settleTime is how long, in virtual time, the end of a run waits for
// the closes still travelling: far longer than any latency.
const settleTime = time.Minute

// settle waits settleTime, then until every goroutine of the bubble
// waits (the arbiter's turn comes only then).
func (p *player) settle() {
	time.Sleep(settleTime)
	p.arb.enter(turnKey{phase: phaseSample})
}

// build calls newClient for every sender.
func (p *player) build(newClient Client, senders int) ([]Send, []*transport, error) {
	sends := make([]Send, senders)
	transports := make([]*transport, senders)
	for s := range senders {
		var conns atomic.Int64
		dial := func(ctx context.Context) (net.Conn, error) { return p.dial(ctx, s, conns.Add(1)) }
		t := &transport{inner: &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		}}
		transports[s] = t
		n := Net{
			Sender:    s,
			URL:       serverURL,
			Addr:      serverAddr,
			Transport: t,
			Seed:      sim.RunSeed(p.seed, s),
			dial:      dial,
			cleanup: func(f func()) {
				p.mu.Lock()
				p.cleanups = append(p.cleanups, f)
				p.mu.Unlock()
			},
		}
		send, err := newClient(n)
		if err != nil {
			return nil, transports, fmt.Errorf("building sender %d's client: %w", s, err)
		}
		if send == nil {
			return nil, transports, fmt.Errorf("sender %d's client returned a nil Send", s)
		}
		sends[s] = send
	}
	return sends, transports, nil
}

// dial opens sender s's connection number k, or fails as a refused TCP
// connect during a refuse outage (decided by the clock, at the dial:
// no race with the outage's edge). Each connection draws its latency
// from a stream of its own, seeded by the run, the sender and k.
func (p *player) dial(ctx context.Context, s int, k int64) (net.Conn, error) {
	delay := p.delays(p.seed^0x6c6174656e6379, uint64(s)<<24|uint64(k))
	if now := p.since(); refusing(p.refuse, now) {
		p.refused(now)
		return nil, refuse(delay, addr{})
	}
	return p.net.Dial(ctx, memnet.DialOptions{Delay: delay, Tag: s})
}

// delays returns a connection's one-way delays, drawn from the
// scenario's latency on the PCG stream (seed, stream); nil without a
// latency. The two ends of a connection draw in turn (a request, then
// its answer), from their own goroutines: hence the lock.
func (p *player) delays(seed, stream uint64) func() time.Duration {
	if p.latency == nil {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, stream))
	var mu sync.Mutex
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return p.latency.Sample(r)
	}
}

// refusing reports whether one of outages (refuse outages) is in force
// at t.
func refusing(outages []scenarios.Outage, t time.Duration) bool {
	return slices.ContainsFunc(outages, func(o scenarios.Outage) bool { return t >= o.Start && t < o.End() })
}

// refuse is a connect refused by the host at addr: it takes the SYN's
// delay there and the reset's back, and fails as a refused TCP connect.
func refuse(delay func() time.Duration, addr net.Addr) error {
	if delay != nil {
		time.Sleep(delay() + delay())
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// addr is the server's address, for errors.
type addr struct{}

func (addr) Network() string { return "tcp" }
func (addr) String() string  { return serverAddr }

// listener is the in-memory network's listener as realhttp serves it.
// Refusals are the dialer's (see player.dial): taking it down does
// nothing more.
type listener struct {
	net.Listener
	n *memnet.Network
}

func (listener) SetUp(bool)  {}
func (l listener) Open() int { return l.n.Open() }

type senderKey struct{}

// gate sends every request to the server's work handler (whatever its
// method and path, it is an attempt), after its turn: attempts reaching
// the server at one instant go in the order of sender, request and
// attempt.
func (p *player) gate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := r.Context().Value(senderKey{}).(int)
		key := turnKey{phase: phaseAttempt, sender: int64(s), request: -1, attempt: -1}
		if n, err := strconv.ParseInt(r.Header.Get(requestHeader), 10, 64); err == nil {
			key.request = n
		}
		if n, err := strconv.ParseInt(r.Header.Get(attemptHeader), 10, 64); err == nil {
			key.attempt = n
		}
		p.arb.enter(key)
		if isGRPC(r) {
			w = &grpcWriter{ResponseWriter: w}
		}
		r.Method, r.URL.Path = http.MethodPost, "/"
		h.ServeHTTP(w, r)
	})
}

// bucketOf returns the bucket of scenario time t, the last for t at or
// past the horizon.
func (p *player) bucketOf(t time.Duration) int {
	return min(int(t/p.sc.Bucket), p.buckets-1)
}

// observe counts one attempt at the server, in the bucket it arrived in:
// its outcome if it had one before the horizon (unresolved otherwise).
func (p *player) observe(l realhttp.ServerLogLine) {
	arrived := time.Duration(l.AtNS - p.start.UnixNano())
	if arrived >= p.horizon {
		return
	}
	resolved := p.since() < p.horizon
	p.mu.Lock()
	defer p.mu.Unlock()
	r, b := p.run, &p.run.Series[p.bucketOf(arrived)]
	r.Attempts++
	b.Attempts++
	if !resolved {
		return
	}
	switch l.Outcome {
	case strategies.Success.String():
		b.OK++
		return
	case strategies.Timeout.String():
		b.NotOKTimeout++
		b.TimedOut++
		r.TimedOut++
	case strategies.TooManyRequests.String():
		b.Throttled++
		r.Throttled++
	default:
		if l.Reason == "overload" {
			b.Rejected++
			r.Rejected++
		}
	}
	b.NotOK++
	b.Failed++
}

// refused counts an attempt refused at its connect, at t.
func (p *player) refused(t time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.run.Series[p.bucketOf(t)]
	p.run.Attempts++
	b.Attempts++
	b.NotOK++
	b.Failed++
}

// sample records the requests in service at each bucket's end, and the
// server's counts at the horizon, each at its turn (before the attempts
// of that instant, after its timers).
func (p *player) sample(srv server, done chan<- struct{}) {
	defer close(done)
	for k := 1; k <= p.buckets; k++ {
		end := min(time.Duration(k)*p.sc.Bucket, p.horizon)
		time.Sleep(end - p.since())
		p.arb.enter(turnKey{phase: phaseSample})
		st := srv.Stats()
		p.mu.Lock()
		p.run.Series[k-1].InFlight = int64(st.InFlight)
		if k == p.buckets {
			p.run.Processed, p.run.Duplicates, p.run.Wasted, p.run.Lost = st.Processed, st.Duplicates, st.Wasted, st.Lost
		}
		p.mu.Unlock()
	}
}

// openLoop creates the open workload's requests at their times, each
// sent in a goroutine of its own, until the horizon.
func (p *player) openLoop(ctx context.Context, wg *sync.WaitGroup, arrivals []arrival, sends []Send) {
	p.reqs = make([]reqRecord, 0, len(arrivals))
	wg.Go(func() {
		for _, a := range arrivals {
			if a.at >= p.horizon {
				return
			}
			time.Sleep(a.at - p.since())
			n := p.newRequest(a.at)
			wg.Go(func() { p.send(ctx, sends[a.sender], n, a.sender) })
		}
	})
}

// closedLoop runs the closed loop's clients: each sends its next request
// ThinkTime after its previous one ended, its first at a time drawn as
// the simulator draws it; Workload.Requests caps them all.
func (p *player) closedLoop(ctx context.Context, wg *sync.WaitGroup, c *scenarios.Clients, sends []Send, r *rand.Rand) {
	limit := p.sc.Workload.Requests
	for s := range c.Count {
		at := sim.ClientStart(c, r)
		wg.Go(func() {
			for at < p.horizon {
				time.Sleep(at - p.since())
				p.mu.Lock()
				full := limit > 0 && len(p.reqs) >= limit
				p.mu.Unlock()
				if full || ctx.Err() != nil {
					return
				}
				p.send(ctx, sends[s], p.newRequest(at), s)
				at = p.since() + c.ThinkTime
			}
		})
	}
}

// newRequest records a request created at t and returns its number.
func (p *player) newRequest(t time.Duration) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, reqRecord{created: t})
	return int64(len(p.reqs) - 1)
}

// send sends request n of sender s and records what became of it.
func (p *player) send(ctx context.Context, send Send, n int64, s int) {
	key := fmt.Sprintf("%016x-%d", p.seed, n)
	err := send(withRequest(ctx, &requestState{n: n, key: key}), Request{N: n, Sender: s, Key: key})
	now := p.since()
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := &p.reqs[n]
	rec.final = now
	switch {
	case now >= p.horizon: // cut short by the horizon, or over after it
	case err == nil:
		rec.state = reqDelivered
	default:
		rec.state = reqGaveUp
	}
}

// wait waits for every request to return after the horizon. One still
// going stuckAfter later fails the run, and logf says so at once; wait
// goes on waiting all the same, as a bubble cannot end with goroutines
// in it: should they never return, synctest fails the test with their
// stacks (a deadlock).
func (p *player) wait(wg *sync.WaitGroup, logf func(string, ...any)) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(stuckAfter)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	err := fmt.Errorf("requests still going %s after the horizon, though their context ended then: Send must return when its context ends", stuckAfter)
	logf("herdtest: %v", err)
	<-done
	return err
}

// finish counts what became of the requests, in request order (so that
// float sums are the same from run to run), as the simulator counts it.
func (p *player) finish() {
	r := p.run
	var lastEnd time.Duration
	hasOutage := false
	if all := p.sc.AllOutages(); len(all) > 0 {
		lastEnd, hasOutage = all[len(all)-1].End(), true
	}
	r.Requests = int64(len(p.reqs))
	dead := make([]int64, p.buckets)
	var backlog, gaveUpInOutage int64
	var completion, drain time.Duration
	drained := true
	for i := range p.reqs {
		q := &p.reqs[i]
		switch q.state {
		case reqDelivered:
			r.Delivered++
			r.Series[p.bucketOf(q.final)].Delivered++
			r.RecordLatency(q.final - q.created)
		case reqGaveUp:
			r.DeadLettered++
			r.DeadLetteredBy[GaveUp]++
			dead[p.bucketOf(q.final)]++
		default:
			r.Unfinished++
			if q.created <= lastEnd {
				drained = false
			}
		}
		if q.state != reqGoing {
			completion = max(completion, q.final)
			if q.created <= lastEnd {
				drain = max(drain, q.final)
			}
		}
		if q.created <= lastEnd && (q.state == reqGoing || q.final > lastEnd) {
			backlog++
		}
		if q.state == reqGaveUp && q.final <= lastEnd {
			gaveUpInOutage++
		}
	}
	var inDLQ int64
	for k := range dead {
		inDLQ += dead[k]
		r.Series[k].DLQ = inDLQ
	}
	if hasOutage && lastEnd < p.horizon {
		r.Backlog, r.GaveUpInOutage = &backlog, gaveUpInOutage
	}
	if r.Unfinished == 0 {
		r.Completion = &completion
	}
	if drained {
		d := max(drain-lastEnd, 0)
		r.Drain = &d
	}
}

// GaveUp is the reason of a dead letter of a client under test: its Send
// returned an error before the horizon.
const GaveUp = "gave_up"
