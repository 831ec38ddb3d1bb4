package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/web"
)

var uiCmd = &command{
	summary: `Explore scenarios in the browser.

Starts the lab's web app and prints its URL: a scenario editor that
validates as you type (the errors of herdlab validate, at their line and
column), the scenario library as examples, controls for the numbers people
vary (requests, concurrency, outage length, base, cap, attempts...) that
rerun the simulation as they change, interactive charts of what the
reports show, downloads, and a link that carries the scenario (compressed,
in the URL's fragment) and reproduces the run. The simulations run here,
natively, one at a time for each page: a new run, or the page going away,
cancels the one in progress. Every page's runs together are bounded:
--max-runs at once, and --max-memory shared among them (each run counts
what the simulator estimates it takes, as herdlab run --max-memory does);
a run beyond either is refused (HTTP 429) with the reason, and the page
shows it. Everything the page needs is in this binary: it works offline.

FILE, if given, opens in the editor; one with problems opens with them
shown. The app binds 127.0.0.1 unless told otherwise: it has no
authentication, and anyone who can reach it can run simulations on this
machine, so a wider bind is warned about. Other web pages the browser
opens cannot drive it: it refuses (HTTP 403) a request addressed to a
name other than localhost, a loopback address or the address it listens
on (a page's name rebound to this machine), a simulation asked by a page
of another origin, and (HTTP 415) a body that is not JSON. make site
builds the same app as a static site, in which the simulator runs in the
browser in WebAssembly.`,
	usage: "[FILE.yaml] [flags]",
	flags: func(fs *flag.FlagSet) {
		fs.String("addr", "127.0.0.1:8090", "address to listen on")
		fs.Int("parallel", 0, "runs of a simulation at once (default: the number of CPUs, fewer if memory is short)")
		fs.Int("max-runs", 0, "simulations and sweeps in flight at once, every page's together (default: twice the CPUs, at least 2)")
		limitFlags(fs)
	},
	run: runUI,
}

func runUI(c *cli, fs *flag.FlagSet) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herdlab ui: "+format+"\n", args...)
		return exitBadInput
	}
	if fs.NArg() > 1 {
		return fail("name at most one scenario file to open")
	}
	l, ok := readLimits(c, fs)
	if !ok {
		return exitBadInput
	}
	parallel, _ := fs.GetInt("parallel")
	if parallel < 0 {
		return fail("--parallel %d: want 0 (one per CPU) or more", parallel)
	}
	maxRuns, _ := fs.GetInt("max-runs")
	if maxRuns < 0 {
		return fail("--max-runs %d: want 0 (twice the CPUs) or more", maxRuns)
	}
	o := web.ServerOptions{MaxMemory: l.memory, MaxMemoryName: "herdlab ui --max-memory" + l.note(), MaxEvents: l.events, Parallel: parallel, MaxRuns: maxRuns}
	if fs.NArg() == 1 {
		file := fs.Arg(0)
		src, err := os.ReadFile(file)
		if err != nil {
			return fail("%v", err)
		}
		if _, err := scenarios.Parse(file, src); err != nil {
			fmt.Fprintf(c.stderr, "herdlab ui: %s opens with its problems shown:\n%v\n", file, err)
		}
		o.Initial = &web.Initial{File: filepath.Base(file), YAML: string(src)}
	}
	addr, _ := fs.GetString("addr")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail("--addr %s: %v", addr, err)
	}
	if !loopback(ln.Addr().String()) {
		fmt.Fprintf(c.stderr, "herdlab ui: warning: --addr %s listens beyond this machine, and the app has no authentication: anyone who can reach it can run simulations here\n", ln.Addr())
	}
	o.Addr = ln.Addr().String()
	// The requests' contexts end with the command's: a signal cancels
	// the runs in progress.
	srv := &http.Server{Handler: web.Handler(o), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return c.ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(c.stdout, "herdlab ui: the lab is at http://%s/ (Ctrl-C stops it)\n", ln.Addr())
	select {
	case err := <-served:
		return fail("%v", err)
	case <-c.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close() // a page that keeps its connection open
		if !errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(c.stderr, "herdlab ui: %v\n", err)
			return exitFailed
		}
	}
	return exitOK
}
