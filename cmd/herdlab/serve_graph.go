package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/realhttp"
	"github.com/zeontools/herdlab/scenarios"
)

// serveGraph serves the graph of services of sc until a signal.
func serveGraph(c *cli, fs *flag.FlagSet, o serveOpts, sc *scenarios.Scenario) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab serve: "+format+"\n", args...)
		return code
	}
	for _, name := range []string{"log", "idempotency-store"} {
		if fs.Changed(name) {
			return fail(exitBadInput, "--%s: a graph's replicas keep their keys in memory and write no log (serve a single server for that)", name)
		}
	}
	st := &sc.Strategies[0]
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
	g, err := realhttp.NewGraph(sc, st, realhttp.GraphOptions{Server: o.server})
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return g.Shutdown(sctx)
	}
	if err := g.StartAdmin(o.metricsAddr); err != nil {
		shutdown()
		return fail(exitBadInput, "--metrics-addr %s: %v", o.metricsAddr, err)
	}
	if err := g.Start(o.addr); err != nil {
		shutdown()
		return fail(exitBadInput, "--addr %s: %v", o.addr, err)
	}
	for _, w := range []struct{ flag, addr, what string }{
		{"--addr", o.addr, "the target service"},
		{"--metrics-addr", o.metricsAddr, "the control endpoint (which resets the scenario clock)"},
	} {
		if !loopback(w.addr) {
			fmt.Fprintf(c.stderr, "herdlab serve: warning: %s %s listens beyond this machine, and %s has no authentication\n", w.flag, w.addr, w.what)
		}
	}
	fmt.Fprintf(c.stdout, "serving %s (strategy %s) at %s (control at %s, time scale %v); Ctrl-C stops\n",
		sc.Name, st.Name, g.URL(), g.AdminURL(), o.server.TimeScale)
	urls := g.Services()
	for _, svc := range sc.Services {
		fmt.Fprintf(c.stdout, "  %s: %v\n", svc.Name, urls[svc.Name])
	}
	<-c.ctx.Done()
	code := exitOK
	if err := shutdown(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
		code = exitFailed
	}
	return code
}
