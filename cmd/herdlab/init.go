package main

import (
	"errors"
	"fmt"
	"os"

	flag "github.com/spf13/pflag"
)

var initCmd = &command{
	summary: `Write a commented starting scenario to fill in.

Writes to FILE, or to standard output without one; refuses to overwrite
an existing FILE without --force. The scenario has one server with an
explicit queue, a burst of requests, an outage, and two strategies that
share their timeout and max_attempts, so that they differ only in their
backoff; --graph writes a small graph (gateway -> api -> db) instead.
It validates, runs, and passes lint as written: change one thing at a
time. Run 'herdlab help scenario FIELD' for any field.`,
	usage: "[FILE] [--graph] [--force]",
	flags: func(fs *flag.FlagSet) {
		fs.Bool("graph", false, "write a graph of services (gateway -> api -> db)")
		fs.Bool("force", false, "overwrite FILE if it exists")
	},
	run: func(c *cli, fs *flag.FlagSet) int {
		if fs.NArg() > 1 {
			fmt.Fprintln(c.stderr, "herdlab init: name at most one FILE")
			return exitBadInput
		}
		graph, _ := fs.GetBool("graph")
		force, _ := fs.GetBool("force")
		text := initScenario
		if graph {
			text = initGraph
		}
		if fs.NArg() == 0 {
			fmt.Fprint(c.stdout, text)
			return exitOK
		}
		file := fs.Arg(0)
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if force {
			flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(file, flags, 0o644)
		if errors.Is(err, os.ErrExist) {
			fmt.Fprintf(c.stderr, "herdlab init: %s exists: choose another name, or --force to overwrite it\n", file)
			return exitBadInput
		}
		if err == nil {
			_, err = f.WriteString(text)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "herdlab init: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(c.stdout, "wrote %s: fill it in, then herdlab validate %s and herdlab run %s\n", file, file, file)
		return exitOK
	},
}

// initScenario is what herdlab init writes.
const initScenario = `# A herdlab scenario: one server, a burst of requests, an outage, and two
# retry strategies compared against them. Every field is described by
# 'herdlab help scenario FIELD' (such as: herdlab help scenario server.queue);
# 'herdlab help scenario' says how an editor checks the file as you type.
name: my-scenario             # names the output folder
description: >                # what you want to find out
  A burst of 2,000 requests meets a 30 s outage: does jitter spread the
  retries enough for the server to recover?
seed: 1                       # the same seed gives the same figures
runs: 1                       # independent replications; their mean is reported
duration: 5m                  # the simulated horizon
bucket: 1s                    # width of a time bucket in the charts

server:
  concurrency: 10             # requests served at once
  service_time: 100ms         # time to serve one: capacity is 10 / 0.1 s = 100 requests a second
  queue: 200                  # waiting room; omitted, it would be unlimited and refuse nothing
  outages:
    - start: 10s              # the server goes down 10 s in...
      duration: 30s           # ...for 30 s...
      mode: refuse            # ...refusing connections (also: timeout, error)

workload:
  requests: 2000              # how many requests are made
  arrival:
    kind: burst               # all at once (also: poisson with rate, uniform)
    at: 5s                    # when they come
  senders: 100                # independent clients, each with its own breaker and budget

# The strategies share timeout and max_attempts, so that they differ only
# in what you compare: here, the backoff.
strategies:
  - name: full-jitter
    backoff: {kind: full-jitter, base: 1s, cap: 60s}   # U(0, min(cap, base x 2^k))
    timeout: 5s               # per-attempt timeout, the same for both
    max_attempts: 5           # counting the first, the same for both (gRPC's ceiling)
  - name: decorrelated-jitter
    backoff: {kind: decorrelated-jitter, base: 1s, cap: 60s}
    timeout: 5s
    max_attempts: 5
`

// initGraph is what herdlab init --graph writes.
const initGraph = `# A herdlab graph scenario: the fleet calls gateway, which calls api, which
# calls db; db fails for 30 s. The strategies compare where retries are
# made. Every field is described by 'herdlab help scenario FIELD' (such as:
# herdlab help scenario services.calls); 'herdlab help scenario' says how an
# editor checks the file as you type.
name: my-graph                # names the output folder
description: >                # what you want to find out
  db is down for 30 s: does retrying at every layer multiply the load on
  it, compared with retrying at the edge only?
seed: 1                       # the same seed gives the same figures
runs: 1                       # independent replications; their mean is reported
duration: 5m                  # the simulated horizon
bucket: 1s                    # width of a time bucket in the charts

services:
  - name: gateway
    concurrency: 50           # requests served at once, per replica
    service_time: 5ms         # its own work for one request
    queue: 500                # waiting room; omitted, it would be unlimited
    replicas: 2               # copies behind a round-robin balancer
    calls:
      - service: api          # every request calls api once
  - name: api
    concurrency: 20
    service_time: 20ms
    queue: 200
    replicas: 2
    calls:
      - service: db
  - name: db
    concurrency: 10
    service_time: 50ms        # capacity 10 / 0.05 s = 200 requests a second
    queue: 100
    outages:
      - {start: 20s, duration: 30s, mode: error}   # fast 503s for 30 s

workload:
  target: gateway             # the service the fleet calls
  requests: 6000              # how many requests are made
  arrival:
    kind: poisson             # at random, at rate a second...
    rate: 100                 # ...half of db's capacity
    from: 0s
    until: 60s
  senders: 100                # independent clients

# Both strategies give the fleet the same timeout, attempts and budget;
# they differ in what the services do on their calls (edges).
strategies:
  - name: edge-only
    backoff: {kind: full-jitter, base: 200ms, cap: 10s}
    timeout: 2s               # per-attempt timeout of the fleet
    max_attempts: 4           # counting the first
    budget: {kind: tokens}    # gRPC's retry throttling, per sender
    edges:
      default: {max_attempts: 1}                  # services do not retry
      gateway->api: {timeout: 1s}                 # each layer waits less than its caller
      api->db: {timeout: 300ms}
  - name: every-layer
    backoff: {kind: full-jitter, base: 200ms, cap: 10s}
    timeout: 2s
    max_attempts: 4
    budget: {kind: tokens}
    edges:
      default:                                    # every call retries too...
        max_attempts: 3
        backoff: {kind: full-jitter, base: 50ms, cap: 1s}
        budget: {kind: tokens}                    # ...within a budget of its own
      gateway->api: {timeout: 1s}
      api->db: {timeout: 300ms}
`
