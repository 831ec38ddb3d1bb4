package main

import (
	"context"
	"fmt"
	"os"
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
idempotency (Idempotency-Key header). GET /metrics serves Prometheus
metrics. It binds 127.0.0.1 unless told otherwise and stops gracefully on
SIGINT or SIGTERM. The scenario clock starts when it starts listening.`,
	usage: "--scenario FILE.yaml [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("scenario", "", "the scenario whose server to serve (required)")
		fs.String("addr", "127.0.0.1:8080", "address to listen on")
		fs.Float64("time-scale", 1, "multiply every duration of the scenario (0.1: a 30 s outage takes 3 s)")
		fs.String("log", "", "write the request log (JSON lines) to this file")
		fs.String("idempotency-store", "", "keep idempotency keys in Redis: redis://HOST:PORT/DB (default: in memory)")
		fs.Duration("idempotency-ttl", 24*time.Hour, "how long Redis keeps a key")
	},
	run: serve,
}

func serve(c *cli, fs *flag.FlagSet) int {
	file, _ := fs.GetString("scenario")
	addr, _ := fs.GetString("addr")
	scale, _ := fs.GetFloat64("time-scale")
	logFile, _ := fs.GetString("log")
	if file == "" {
		fmt.Fprintln(c.stderr, "herdlab serve: --scenario FILE.yaml is required")
		return exitBadInput
	}
	if scale <= 0 {
		fmt.Fprintf(c.stderr, "herdlab serve: --time-scale %v: want a number > 0\n", scale)
		return exitBadInput
	}
	sc, err := scenarios.Load(file)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return exitBadInput
	}
	opts := realhttp.ServerOptions{TimeScale: scale, Seed: sc.Seed}
	if logFile != "" {
		f, err := os.Create(logFile)
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
			return exitBadInput
		}
		defer f.Close()
		opts.Log = f
	}
	if url, _ := fs.GetString("idempotency-store"); url != "" {
		ttl, _ := fs.GetDuration("idempotency-ttl")
		store, err := realhttp.NewRedisStore(c.ctx, url, ttl)
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
			return exitBadInput
		}
		defer store.Close()
		opts.Store = store
	}
	srv, err := realhttp.NewServer(sc, opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
		return exitBadInput
	}
	if err := srv.Start(addr); err != nil {
		fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(c.stdout, "serving %s at %s (metrics at %smetrics); Ctrl-C stops\n", sc.Name, srv.URL(), srv.URL())
	ctx := c.ctx
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(c.stderr, "herdlab serve: %v\n", err)
		return exitFailed
	}
	return exitOK
}
