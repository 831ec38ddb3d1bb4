package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/scenarios"
)

var serveCmd = &command{
	summary: `Serve a scenario's server model over HTTP, on the wall clock.

The test server enforces the scenario's server section: concurrency slots
and a bounded queue (overflow 503), service times, outage windows (refuse:
the listener is closed; timeout: no answer; error: 503), warmup, random
failures, the rate limit (429 with Retry-After), response loss and
idempotency (Idempotency-Key header, at most 256 bytes). It counts every
second processing of a key, with idempotency or without. It binds --addr
before anything else (exit 2 if it cannot), and the scenario clock starts
then; it prints when each outage starts and ends, and stops gracefully on
SIGINT or SIGTERM.

Metrics (/metrics) and the control endpoint (/control/state, and
/control/reset, which herdlab replay --control uses to start each run from
t=0) are on --metrics-addr, a listener of their own that outages leave
alone. Neither listener has authentication: both bind 127.0.0.1 unless
told otherwise, and a wider bind is warned about. So that the web pages
a browser opens cannot reset it, the metrics and control listener refuses
(HTTP 403) a request addressed to a name other than localhost, a loopback
address or the address it listens on (a page's name rebound to this
machine), a reset sent by a page of another origin, and (HTTP 415) a
reset whose body is not JSON.

With --idempotency-store, keys live in Redis, which must persist them
(appendonly yes, appendfsync always): serve warns when it does not, and
says so when Redis loses its data (restarted without persistence).

A scenario with services is served whole: every replica of every service
on a free loopback port of its own (printed), each calling its downstream
services over HTTP with the edge policies of --strategy (default: the
first), and the target service at --addr (with replicas, a balancer in
front of them). herdlab replay --control resets the graph for each run of
any strategy that deploys the services alike. A graph's replicas keep
their idempotency keys in memory, and write no log.`,
	usage: "--scenario FILE.yaml [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("scenario", "", "the scenario whose server to serve (required)")
		fs.String("strategy", "", "a graph of services: the strategy whose edge policies to serve (default: the first)")
		fs.String("addr", "127.0.0.1:8080", "address to listen on")
		fs.String("metrics-addr", "127.0.0.1:8081", "address of the metrics and control listener")
		fs.Float64("time-scale", 1, "multiply every duration of the scenario (0.1: a 30 s outage takes 3 s)")
		fs.Int("max-conns", 0, "connections open at once, at most (default: the open-file limit less 128)")
		fs.Duration("read-header-timeout", 5*time.Second, "time a client has to send a request's headers")
		fs.Duration("body-timeout", 5*time.Second, "time a client has to send a request's body")
		fs.String("log", "", "write the request log (JSON lines, in batches within 100 ms) to this file (an older one is kept as FILE.1)")
		fs.Int64("log-max-mb", 100, "start a new log file past this size, keeping the last one as FILE.1")
		fs.Int("duplicate-window", 1_000_000, "processed keys remembered to count duplicates (about 70 bytes each)")
		fs.Int("memory-store-keys", 1_000_000, "the in-memory idempotency store: keys at most (oldest processed forgotten first)")
		fs.Int64("memory-store-mb", 256, "the in-memory idempotency store: memory at most")
		fs.String("idempotency-store", "", "keep idempotency keys in Redis: redis://HOST:PORT/DB (default: in memory)")
		fs.Duration("idempotency-ttl", 24*time.Hour, "how long Redis keeps a processed key")
		fs.Duration("idempotency-lease", 30*time.Second, "how long a key stays in progress without its end being recorded")
		fs.Duration("store-timeout", 250*time.Millisecond, "each call to the idempotency store fails after this (answered 503)")
	},
	run: serve,
}

// serveOpts are serve's flags, checked.
type serveOpts struct {
	file, addr, metricsAddr, log, redis string
	strategy                            string
	server                              realhttp.ServerOptions
	logBytes                            int64
	memory                              realhttp.MemoryLimits
	redisOpts                           realhttp.RedisOptions
}

// serveFlags reads and checks every flag; a message for the first bad
// one.
func serveFlags(fs *flag.FlagSet) (serveOpts, error) {
	var o serveOpts
	o.file, _ = fs.GetString("scenario")
	o.addr, _ = fs.GetString("addr")
	o.metricsAddr, _ = fs.GetString("metrics-addr")
	o.log, _ = fs.GetString("log")
	o.redis, _ = fs.GetString("idempotency-store")
	o.strategy, _ = fs.GetString("strategy")
	scale, _ := fs.GetFloat64("time-scale")
	maxConns, _ := fs.GetInt("max-conns")
	header, _ := fs.GetDuration("read-header-timeout")
	body, _ := fs.GetDuration("body-timeout")
	logMB, _ := fs.GetInt64("log-max-mb")
	window, _ := fs.GetInt("duplicate-window")
	keys, _ := fs.GetInt("memory-store-keys")
	memMB, _ := fs.GetInt64("memory-store-mb")
	ttl, _ := fs.GetDuration("idempotency-ttl")
	lease, _ := fs.GetDuration("idempotency-lease")
	storeTimeout, _ := fs.GetDuration("store-timeout")
	switch {
	case o.file == "":
		return o, errors.New("--scenario FILE.yaml is required")
	case !(scale > 0) || math.IsInf(scale, 1):
		return o, fmt.Errorf("--time-scale %v: want a finite number > 0", scale)
	case maxConns < 0:
		return o, fmt.Errorf("--max-conns %d: want a number >= 0", maxConns)
	case header <= 0:
		return o, fmt.Errorf("--read-header-timeout %s: want a duration > 0", header)
	case body <= 0:
		return o, fmt.Errorf("--body-timeout %s: want a duration > 0", body)
	case logMB <= 0:
		return o, fmt.Errorf("--log-max-mb %d: want a number > 0", logMB)
	case window <= 0:
		return o, fmt.Errorf("--duplicate-window %d: want a number > 0", window)
	case keys <= 0:
		return o, fmt.Errorf("--memory-store-keys %d: want a number > 0", keys)
	case memMB <= 0:
		return o, fmt.Errorf("--memory-store-mb %d: want a number > 0", memMB)
	case ttl <= 0:
		return o, fmt.Errorf("--idempotency-ttl %s: want a duration > 0", ttl)
	case lease <= 0:
		return o, fmt.Errorf("--idempotency-lease %s: want a duration > 0", lease)
	case lease > ttl:
		return o, fmt.Errorf("--idempotency-lease %s: want at most --idempotency-ttl (%s)", lease, ttl)
	case storeTimeout <= 0:
		return o, fmt.Errorf("--store-timeout %s: want a duration > 0", storeTimeout)
	}
	if err := realhttp.CheckAddr(o.addr); err != nil {
		return o, fmt.Errorf("--addr: %v", err)
	}
	if err := realhttp.CheckAddr(o.metricsAddr); err != nil {
		return o, fmt.Errorf("--metrics-addr: %v", err)
	}
	if limit, ok := realhttp.OpenFileLimit(); ok && maxConns > 0 && uint64(maxConns)+128 > limit {
		return o, fmt.Errorf("--max-conns %d: the open-file limit is %d, and the server needs 128 files beyond its connections: "+
			"raise it with `ulimit -n %d` in the shell that runs herdlab, or lower --max-conns", maxConns, limit, maxConns+128)
	}
	o.server = realhttp.ServerOptions{
		TimeScale: scale, MaxConns: maxConns, ReadHeaderTimeout: header, BodyTimeout: body,
		DuplicateWindow: window, StoreTimeout: storeTimeout,
	}
	o.logBytes = logMB << 20
	o.memory = realhttp.MemoryLimits{Keys: keys, Bytes: memMB << 20}
	o.redisOpts = realhttp.RedisOptions{TTL: ttl, Lease: lease, Timeout: storeTimeout}
	return o, nil
}

// serve serves the scenario until a signal: a graph of services whole,
// a single server as a graph of one service (whose replica is the test
// server, with its store, log and events).
func serve(c *cli, fs *flag.FlagSet) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab serve: "+format+"\n", args...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(exitBadInput, "takes no arguments, got %q (the scenario is --scenario FILE.yaml)", fs.Arg(0))
	}
	o, err := serveFlags(fs)
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	sc, err := scenarios.Load(o.file)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return exitBadInput
	}
	if err := realhttp.CheckTimeScale(o.server.TimeScale, sc); err != nil {
		return fail(exitBadInput, "--time-scale %v: %v", o.server.TimeScale, err)
	}
	o.server.Seed = sc.Seed
	st := &sc.Strategies[0]
	if sc.Graph() {
		for _, name := range []string{"log", "idempotency-store"} {
			if fs.Changed(name) {
				return fail(exitBadInput, "--%s: a graph's replicas keep their keys in memory and write no log (serve a single server for that)", name)
			}
		}
		if o.strategy != "" {
			k := slices.IndexFunc(sc.Strategies, func(s scenarios.Strategy) bool { return s.Name == o.strategy })
			if k < 0 {
				return fail(exitBadInput, "--strategy %s: %s has no such strategy", o.strategy, o.file)
			}
			st = &sc.Strategies[k]
		}
		if path, err := realhttp.GraphUnsupported(sc, st); err != nil {
			line, col := sc.Position(path)
			return fail(exitBadInput, "%s:%d:%d: %s: %v", o.file, line, col, path, err)
		}
	} else {
		if o.strategy != "" {
			return fail(exitBadInput, "--strategy: %s has one server, the same for every strategy: --strategy is for a graph of services", o.file)
		}
		if sc.Server.Model == scenarios.ModelOCC {
			return fail(exitBadInput, "%s: %v", o.file, realhttp.ErrServerModel)
		}
		if o.redis != "" {
			store, err := realhttp.NewRedisStore(c.ctx, o.redis, o.redisOpts)
			if err != nil {
				return fail(exitBadInput, "--idempotency-store: %v", err)
			}
			defer store.Close()
			if err := store.CheckPersistence(c.ctx); err != nil {
				fmt.Fprintf(c.stderr, "herdlab serve: warning: %v\n", err)
			}
			o.server.Store = store
		} else {
			o.server.Store = realhttp.NewMemoryStore(o.memory)
		}
		if o.log != "" {
			log, err := realhttp.OpenLogFile(o.log, o.logBytes)
			if err != nil {
				return fail(exitBadInput, "--log: %v", err)
			}
			defer func() {
				if err := log.Close(); err != nil {
					fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
				}
			}()
			o.server.Log = log
		}
	}

	ctx, stop := context.WithCancelCause(c.ctx)
	defer stop(nil)
	events := &servePrinter{w: c.stdout, stop: stop}
	o.server.Events = events.print
	g, err := realhttp.NewGraph(sc, st, realhttp.GraphOptions{Server: o.server})
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return g.Shutdown(sctx)
	}
	// Bind both before anything is served or said.
	if err := g.StartAdmin(o.metricsAddr); err != nil {
		shutdown()
		return fail(exitBadInput, "--metrics-addr %s: %v", o.metricsAddr, err)
	}
	if err := g.Start(o.addr); err != nil {
		shutdown()
		return fail(exitBadInput, "--addr %s: %v", o.addr, err)
	}
	served, admin := "the test server", "its metrics and control endpoint (which resets the scenario clock)"
	if sc.Graph() {
		served, admin = "the target service", "the control endpoint (which resets the scenario clock)"
	}
	for _, w := range []struct{ flag, addr, what string }{
		{"--addr", g.Addr(), served},
		{"--metrics-addr", g.AdminAddr(), admin},
	} {
		if !loopback(w.addr) {
			fmt.Fprintf(c.stderr, "herdlab serve: warning: %s %s listens beyond this machine, and %s has no authentication\n", w.flag, w.addr, w.what)
		}
	}
	if sc.Graph() {
		fmt.Fprintf(c.stdout, "serving %s (strategy %s) at %s (control at %s, time scale %v); Ctrl-C stops\n",
			sc.Name, st.Name, g.URL(), g.AdminURL(), o.server.TimeScale)
		urls := g.Services()
		for _, svc := range sc.Services {
			fmt.Fprintf(c.stdout, "  %s: %v\n", svc.Name, urls[svc.Name])
		}
	} else {
		fmt.Fprintf(c.stdout, "serving %s at %s (metrics and control at %s, time scale %v); Ctrl-C stops\n",
			sc.Name, g.URL(), g.AdminURL(), o.server.TimeScale)
	}
	events.start()

	<-ctx.Done()
	code := exitOK
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		fmt.Fprintf(c.stderr, "herdlab serve: %v: stopping, since the scenario cannot be served\n", cause)
		code = exitFailed
	}
	if err := shutdown(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
		code = exitFailed
	}
	if !sc.Graph() {
		serveCounts(c.stdout, g.TargetStats())
	}
	return code
}

// serveCounts prints a single server's counts, once it has stopped.
func serveCounts(w io.Writer, st realhttp.ServerStats) {
	fmt.Fprintf(w, "served %d attempts: %d processed, %d duplicates (processed again for a key), %d store errors, %d times the store lost its data\n",
		st.Attempts, st.Processed, st.Duplicates, st.StoreErrors, st.StoreDataLost)
	if st.KeysForgotten > 0 {
		fmt.Fprintf(w, "the duplicate window forgot %d keys: duplicates of those were not counted (raise --duplicate-window)\n", st.KeysForgotten)
	}
	if st.DoneLost > 0 {
		fmt.Fprintf(w, "%d processed keys could not be marked processed in the store: they stay in progress until their lease ends\n", st.DoneLost)
	}
}

// loopback reports whether the host of addr is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// servePrinter prints the server's events, one a line, holding those
// that come before the line that says where the server is; a listener
// that cannot re-open stops the server (stop).
type servePrinter struct {
	w    io.Writer
	stop context.CancelCauseFunc

	mu    sync.Mutex
	ready bool
	held  []string
}

func (p *servePrinter) print(ev realhttp.ServerEvent) {
	line := time.Now().Format("15:04:05.000") + " " + ev.String()
	p.mu.Lock()
	if p.ready {
		fmt.Fprintln(p.w, line)
	} else {
		p.held = append(p.held, line)
	}
	p.mu.Unlock()
	if ev.Kind == realhttp.EventListenFailed {
		p.stop(ev.Err)
	}
}

// start prints the events held, and every one after as it comes.
func (p *servePrinter) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range p.held {
		fmt.Fprintln(p.w, line)
	}
	p.held, p.ready = nil, true
}
