package herdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeontools/herdlab/checks"
	"github.com/zeontools/herdlab/internal/outputs"
	"github.com/zeontools/herdlab/plots"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

// Request is one request of the scenario's workload, as a sender sends
// it: through all its attempts, until it is delivered or given up.
type Request struct {
	// N is the request's index in the workload, from 0.
	N int64
	// Sender is the index of the sender that makes it, from 0.
	Sender int
	// Key is its idempotency key, the same for every attempt. herdlab's
	// transport sends it as the Idempotency-Key header unless the
	// request has one.
	Key string
}

// Send sends one request with the sender's client and returns nil once
// it is delivered (a 2xx answer: see Response), or an error when the
// client gives up. It must return soon after ctx ends: at the scenario's
// horizon herdtest cancels every request still going, and waits for it.
type Send func(ctx context.Context, r Request) error

// Client builds one sender's client, and returns how it sends a request.
// herdtest calls it inside the synctest bubble, once per sender and run,
// with the sender's way to the server, n: everything the client holds
// (its transport, its connection pool, its timers) must be made here,
// from n.Transport (HTTP) or n.Dial (gRPC), never shared with anything
// made outside the bubble (a package-level client, http.DefaultClient,
// http.DefaultTransport), which the Go runtime treats as a fatal error
// that ends the whole test binary. Register what must be closed at the
// end with n.Cleanup (a gRPC connection, for one).
type Client func(n Net) (Send, error)

// Clients are the clients under test, by strategy name: a name that is a
// strategy of the scenario file stands in for it; another name is added
// beside the file's strategies.
type Clients map[string]Client

// Net is one sender's way to the scenario's server, in the bubble.
type Net struct {
	// Sender is the sender's index, from 0.
	Sender int
	// URL is the server's address, http://herdlab.test/. Every request
	// sent through Transport reaches the scenario's server, whatever its
	// URL, method and path.
	URL string
	// Addr is the server's host and port, herdlab.test:80: a gRPC
	// target is "passthrough:///" + Addr, with grpc.WithContextDialer(n.Dial).
	Addr string
	// Transport is this sender's HTTP transport to the server: a
	// connection pool of its own, over in-memory connections with the
	// scenario's network latency. Use it as an http.Client's Transport,
	// or wrap it (a library's round tripper built around a base
	// transport); never replace it with http.DefaultTransport.
	Transport http.RoundTripper
	// Seed is a seed for the sender's own randomness, derived from the
	// run's: a client that draws its jitter from it (rather than from
	// math/rand's global source or the clock) is reproducible.
	Seed uint64

	dial    func(ctx context.Context) (net.Conn, error)
	cleanup func(func())
}

// Dial opens a connection to the server, over the in-memory network (the
// address is ignored): grpc.WithContextDialer takes it.
func (n Net) Dial(ctx context.Context, _ string) (net.Conn, error) { return n.dial(ctx) }

// Cleanup registers f to run when the run ends, after every request is
// over and before the server shuts down: close there what the client
// keeps open (a grpc.ClientConn). Cleanups run last registered first.
func (n Net) Cleanup(f func()) { n.cleanup(f) }

// Response turns an HTTP client's answer into Send's result: nil for a
// 2xx, an error naming the status otherwise, and err as it is. It reads
// and closes the body, so that the connection is reused.
func Response(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("herdtest: the server answered %s", resp.Status)
	}
	return nil
}

// Options changes how Run runs. The zero value runs every strategy of the
// file, the scenario's runs of each, with its seed, and writes nothing.
type Options struct {
	// Out, when set, is the folder the run's files are written to, as
	// herdlab run writes them (summary.json, timeseries.csv, the
	// charts, report.md and report.html): replaced whole.
	Out string
	// Runs is how many independent runs each strategy has; 0 means the
	// scenario's runs.
	Runs int
	// Seed replaces the scenario's seed when not 0.
	Seed uint64
	// Only runs the clients under test and none of the file's other
	// strategies (which otherwise run simulated, beside them).
	Only bool
	// NoRepeat skips the determinism check: by default the first run
	// of each client is run twice, and a client whose two runs differ is
	// reported as drawing randomness herdlab does not seed (Result.
	// Deterministic, and the report).
	NoRepeat bool
	// NoChecks skips the scenario's checks.
	NoChecks bool
}

// Result is what Run returns: the summary and every run (strategy by
// strategy in the file's order, those added by Clients last), the checks
// and whether each client under test was reproducible.
type Result struct {
	Scenario *scenarios.Scenario
	Summary  *results.Summary
	Runs     []*results.Run
	Checks   []checks.Result
	// Deterministic says, for each client under test, whether its first
	// run gave the same results twice (absent with Options.NoRepeat).
	Deterministic map[string]bool
	// Models, when clients stand in for strategies of the file (without
	// Options.Only), are those strategies simulated, the file's models
	// of the clients: comparison.md sets them beside the clients.
	Models *sim.Result
}

// Run runs the scenario file path with the clients under test standing
// in for their strategies, each run in a synctest bubble of its own (in
// virtual time: a 30 s outage takes as long as the work it causes), and
// the file's other strategies simulated. It writes the outputs to
// opts.Out, applies the scenario's checks (failing t with their table
// when one fails), and returns the results. A problem in the file, a
// client that fails to build or that never reaches the server fails t
// at once.
//
// The user's code must not call synctest.Wait: herdtest's own arbiter
// does, to admit the attempts that reach the server at one instant in a
// set order (sender, request, attempt), so that a client without
// randomness of its own gives the same results for the same seed.
func Run(t testing.TB, path string, clients Clients, opts Options) *Result {
	t.Helper()
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatalf("herdtest: %v", err)
	}
	res, err := run(t, sc, clients, opts)
	if err != nil {
		t.Fatalf("herdtest: %s: %v", path, err)
	}
	if !opts.NoChecks && len(sc.Checks) > 0 {
		var b strings.Builder
		rep := &checks.Report{File: path, Scenario: sc.Name, Runs: res.Scenario.Runs, Checks: res.Checks}
		_ = checks.WriteText(&b, []*checks.Report{rep})
		if rep.Failed() > 0 {
			t.Errorf("herdtest: %s: checks failed:\n%s", path, b.String())
		} else {
			t.Logf("herdtest: %s: checks:\n%s", path, b.String())
		}
	}
	return res
}

// run is Run without the file and the test's failures for the checks.
func run(t testing.TB, sc *scenarios.Scenario, clients Clients, opts Options) (*Result, error) {
	if len(clients) == 0 {
		return nil, errors.New("no client under test")
	}
	if opts.Runs < 0 {
		return nil, fmt.Errorf("Options.Runs %d: want >= 0", opts.Runs)
	}
	file := sc
	sc = withClients(sc, clients, opts)
	if err := supported(sc); err != nil {
		return nil, err
	}
	res := &Result{Scenario: sc}
	if !opts.NoRepeat {
		res.Deterministic = map[string]bool{}
	}
	for k := range sc.Strategies {
		st := &sc.Strategies[k]
		newClient, real := clients[st.Name]
		for r := range sc.Runs {
			var one *results.Run
			var err error
			if real {
				one, err = bubble(t, sc, st.Name, newClient, r)
				if err == nil && r == 0 && !opts.NoRepeat {
					var again *results.Run
					again, err = bubble(t, sc, st.Name, newClient, r)
					if err == nil {
						res.Deterministic[st.Name] = sameRun(one, again)
					}
				}
			} else {
				one, err = sim.RunOne(context.Background(), sc, k, r, nil, 0)
			}
			if err != nil {
				return nil, fmt.Errorf("strategy %s, run %d: %w", st.Name, r, err)
			}
			res.Runs = append(res.Runs, one)
		}
	}
	res.Summary = sim.Summary(sc, res.Runs)
	for i := range res.Summary.Strategies {
		st := &res.Summary.Strategies[i]
		if _, real := clients[st.Name]; real {
			c := &results.ClientCode{Runner: "herdtest"}
			if d, ok := res.Deterministic[st.Name]; ok {
				c.Deterministic = &d
			}
			st.Client = c
		}
	}
	if !opts.NoChecks {
		res.Checks = checks.Evaluate(sc, res.Summary)
	}
	if models := standIns(file, clients, opts); len(models) > 0 {
		var err error
		if res.Models, err = sim.Run(context.Background(), sc, sim.Options{Strategies: models}); err != nil {
			return nil, fmt.Errorf("simulating %s: %w", strings.Join(models, ", "), err)
		}
	}
	if opts.Out != "" {
		if err := write(opts.Out, sc, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// standIns returns the clients that stand in for a strategy of the
// file (its model of them), in the file's order; none with
// Options.Only.
func standIns(file *scenarios.Scenario, clients Clients, opts Options) []string {
	if opts.Only {
		return nil
	}
	var names []string
	for _, st := range file.Strategies {
		if clients[st.Name] != nil {
			names = append(names, st.Name)
		}
	}
	return names
}

// withClients returns a copy of sc with the clients' strategies: those
// of the file, and the ones the clients add (a strategy of the defaults:
// it only names the client), the other strategies left out with
// Options.Only, and Options' runs and seed.
func withClients(sc *scenarios.Scenario, clients Clients, opts Options) *scenarios.Scenario {
	c := *sc
	c.Strategies = slices.Clone(sc.Strategies)
	names := make([]string, 0, len(clients))
	for name := range clients {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.ContainsFunc(c.Strategies, func(st scenarios.Strategy) bool { return st.Name == name }) {
			st := scenarios.NewStrategy(name)
			// A placeholder, valid: the client under test retries as it does.
			st.Backoff.Kind, st.MaxAttempts = scenarios.BackoffNone, 1
			c.Strategies = append(c.Strategies, st)
		}
	}
	if opts.Only {
		c.Strategies = slices.DeleteFunc(c.Strategies, func(st scenarios.Strategy) bool { return clients[st.Name] == nil })
	}
	if opts.Runs > 0 {
		c.Runs = opts.Runs
	}
	if opts.Seed != 0 {
		c.Seed = opts.Seed
	}
	return &c
}

// supported refuses what herdtest does not serve yet.
func supported(sc *scenarios.Scenario) error {
	switch {
	case sc.Server.Model == scenarios.ModelOCC:
		return errors.New("herdtest serves the queue server model, not occ")
	case sc.DLQ.Replay != nil:
		return errors.New("herdtest does not replay dead letters (dlq.replay): the client under test owns its failures")
	}
	return nil
}

// bubble runs client name's run r in a synctest bubble of its own, in a
// subtest of t; for a benchmark (synctest.Test takes a *testing.T), in
// a test of its own.
func bubble(tb testing.TB, sc *scenarios.Scenario, name string, newClient Client, r int) (*results.Run, error) {
	var out *results.Run
	var err error
	test := func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			out, err = play(sc, name, newClient, r, t.Logf)
		})
	}
	subtest := fmt.Sprintf("%s/run%d", name, r)
	start := time.Now() // the wall clock, outside the bubble
	if t, ok := tb.(*testing.T); ok {
		t.Run(subtest, test)
	} else {
		all := func(string, string) (bool, error) { return true, nil }
		testing.RunTests(all, []testing.InternalTest{{Name: subtest, F: test}})
	}
	if out != nil {
		// What the run cost, as a simulated run's Wall is: the
		// summary's engine.wall_s, the one figure that differs between
		// identical runs.
		out.Wall = time.Since(start)
	}
	if out == nil && err == nil {
		err = errors.New("the run failed (see the test's log)")
	}
	return out, err
}

// write writes the run's files to the folder out, replaced whole.
func write(out string, sc *scenarios.Scenario, res *Result) error {
	out = filepath.Clean(out)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	stage, err := results.StageDir(out)
	if err != nil {
		return err
	}
	defer stage.Abort()
	files, err := outputs.Files(context.Background(), sc, &sim.Result{Summary: res.Summary, Runs: res.Runs}, &plots.Options{})
	if err != nil {
		return err
	}
	if m := res.Models; m != nil {
		// The clients beside the file's models of them: the clients'
		// runs alone, so that the chart draws only what is compared.
		var runs []*results.Run
		for _, r := range res.Runs {
			if slices.ContainsFunc(m.Summary.Strategies, func(st results.StrategySummary) bool { return st.Name == r.Strategy }) {
				runs = append(runs, r)
			}
		}
		real := sim.Summary(sc, runs)
		chart, err := plots.ComparisonChart(real, runs, m.Runs, plots.Options{})
		if err != nil {
			return err
		}
		files = append(files,
			results.File{Name: "comparison.png", Write: results.Raw(chart.Data)},
			results.File{Name: "comparison.md", Write: func(w io.Writer) error {
				return results.WriteComparison(w, m.Summary, real, "comparison.png")
			}},
		)
	}
	if err := stage.WriteFiles(files); err != nil {
		return err
	}
	return stage.Commit()
}

// sameRun reports whether two runs gave the same results, their wall
// time aside.
func sameRun(a, b *results.Run) bool {
	x, y := *a, *b
	x.Wall, y.Wall = 0, 0
	return reflect.DeepEqual(&x, &y)
}
