package herdtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zeontools/herdlab/scenarios"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retryLoop is a hand-written retry loop: up to attempts tries, each
// with timeout (0: none), wait(k) before retry k (from 0).
func retryLoop(attempts int, timeout time.Duration, wait func(k int) time.Duration) Client {
	return func(n Net) (Send, error) {
		c := &http.Client{Transport: n.Transport, Timeout: timeout}
		return func(ctx context.Context, r Request) error {
			var err error
			for k := range attempts {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
				if err = Response(c.Do(req)); err == nil || ctx.Err() != nil || k == attempts-1 {
					return err
				}
				select {
				case <-time.After(wait(k)):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return err
		}, nil
	}
}

// loop retries every wait.
func loop(attempts int, wait, timeout time.Duration) Client {
	return retryLoop(attempts, timeout, func(int) time.Duration { return wait })
}

// exponentialLoop has go-retryablehttp's default waits: base x 2^k
// capped at most, without jitter or a timeout of its own.
func exponentialLoop(attempts int, base, most time.Duration) Client {
	return retryLoop(attempts, 0, func(k int) time.Duration { return min(base<<k, most) })
}

func TestAHandWrittenLoop(t *testing.T) {
	res := Run(t, "testdata/outage.yaml", Clients{"hand-loop": loop(30, time.Second, 5*time.Second)}, Options{NoChecks: true})
	require.Len(t, res.Summary.Strategies, 3)
	for _, st := range res.Summary.Strategies {
		t.Logf("%s: delivered %.3f peak %v attempts %v recovery %v latency %v client %+v", st.Name, st.DeliveredRatio, st.PeakLoad, st.Attempts, *st.RecoveryTimeS, st.LatencyS, st.Client)
	}
	assert.True(t, res.Deterministic["hand-loop"])
}

// TestRealAndSimulatedAgree runs a hand-written loop that retries as the
// file's fixed-1s strategy does (every second, 30 attempts, 5 s timeout)
// and compares it with the simulation of that strategy: with the same
// arrivals, server and draws, the real HTTP clients in virtual time make
// the same herd.
func TestRealAndSimulatedAgree(t *testing.T) {
	res := Run(t, "testdata/outage.yaml", Clients{"hand-loop": loop(30, time.Second, 5*time.Second)}, Options{NoChecks: true, NoRepeat: true})
	sim, real := res.Summary.Strategies[0], res.Summary.Strategies[2]
	require.Equal(t, "fixed-1s", sim.Name)
	require.Equal(t, "hand-loop", real.Name)
	assert.Nil(t, sim.Client)
	require.NotNil(t, real.Client)
	assert.Equal(t, "herdtest", real.Client.Runner)
	assert.Equal(t, sim.Delivered, real.Delivered)
	assert.InEpsilon(t, sim.Attempts, real.Attempts, 0.01, "attempts")
	assert.InEpsilon(t, sim.PeakLoad, real.PeakLoad, 0.01, "peak load")
	assert.InEpsilon(t, *sim.RecoveryTimeS, *real.RecoveryTimeS, 0.15, "recovery")
	assert.InEpsilon(t, sim.LatencyS.P50, real.LatencyS.P50, 0.01, "median latency")
	// Jitter, simulated, spreads the same fleet: the herd is the loop's.
	assert.Greater(t, real.PeakLoad, 3*res.Summary.Strategies[1].PeakLoad)
}

// TestTheSameSeedWritesTheSameBytes runs a deterministic client three
// times, at GOMAXPROCS 1, 2 and 2, and compares the output folders byte
// for byte (the wall time aside): through a refuse outage with network
// latency, and through ties: 1,000 requests reaching the server at the
// same instant, and their retries a second later, with no latency, so
// that the order in which the arbiter admits them decides who gets a
// slot (the test fails without it).
func TestTheSameSeedWritesTheSameBytes(t *testing.T) {
	skipUnderRace(t)
	for _, file := range []string{"testdata/outage.yaml", "testdata/ties.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var outs []string
			for _, procs := range []int{1, 2, 2} {
				prev := runtime.GOMAXPROCS(procs)
				out := filepath.Join(t.TempDir(), "out")
				res := Run(t, file, Clients{"hand-loop": loop(30, time.Second, 5*time.Second)}, Options{Out: out, NoChecks: true, Only: true})
				runtime.GOMAXPROCS(prev)
				assert.True(t, res.Deterministic["hand-loop"], "GOMAXPROCS %d", procs)
				outs = append(outs, out)
			}
			for _, out := range outs[1:] {
				for _, name := range []string{"summary.json", "timeseries.csv", "report.md"} {
					assert.Equal(t, readOutput(t, outs[0], name), readOutput(t, out, name), name)
				}
			}
			summary, err := os.ReadFile(filepath.Join(outs[0], "summary.json"))
			require.NoError(t, err)
			assert.Contains(t, string(summary), `"client": {`)
			assert.Contains(t, string(summary), `"deterministic": true`)
			assert.NotRegexp(t, `"wall_s": 0[,\n]`, string(summary), "what the client's runs cost is reported")
		})
	}
}

// wallTime is the figure of summary.json that changes between identical
// runs (results.Engine).
var wallTime = regexp.MustCompile(`"wall_s": [^,\n}]+`)

// readOutput returns the output file name of folder dir, its wall time
// left out.
func readOutput(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return wallTime.ReplaceAllString(string(b), `"wall_s": WALL`)
}

// TestRandomnessOfItsOwnIsReported: a client drawing jitter from
// math/rand's global source cannot be seeded; the repeated first run
// tells, and the summary says so.
func TestRandomnessOfItsOwnIsReported(t *testing.T) {
	jittered := retryLoop(30, 0, func(int) time.Duration { return time.Duration(rand.Int64N(int64(2 * time.Second))) })
	res := Run(t, "testdata/outage.yaml", Clients{"global-rand": jittered}, Options{NoChecks: true, Only: true})
	assert.False(t, res.Deterministic["global-rand"])
	require.NotNil(t, res.Summary.Strategies[0].Client.Deterministic)
	assert.False(t, *res.Summary.Strategies[0].Client.Deterministic)
}

// TestClockSeededJitterNeedsTheNetwork: jitter drawn from the clock's
// nanoseconds (as go-retryablehttp's LinearJitterBackoff seeds it) is the
// same for every client when all fail at the same virtual instant; the
// scenario's latency, drawn per connection, sets them apart as a real
// network would.
func TestClockSeededJitterNeedsTheNetwork(t *testing.T) {
	clockJitter := retryLoop(30, 0, func(int) time.Duration {
		// As LinearJitterBackoff does: a source seeded by the clock.
		jitter := rand.New(rand.NewPCG(uint64(time.Now().Nanosecond()), 0)).Int64N(int64(time.Second))
		return time.Second + time.Duration(jitter)
	})
	peak := func(file string) float64 {
		res := Run(t, file, Clients{"clock": clockJitter}, Options{NoChecks: true, Only: true, NoRepeat: true})
		return res.Summary.Strategies[0].PeakLoad
	}
	dir := t.TempDir()
	noLatency := filepath.Join(dir, "no-latency.yaml")
	b, err := os.ReadFile("testdata/clock.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(noLatency, []byte(strings.Replace(string(b), "network:\n  latency: {dist: exponential, mean: 1ms}\n", "", 1)), 0o644))
	lockstep, spread := peak(noLatency), peak("testdata/clock.yaml")
	t.Logf("peak load: %.0f attempts in a 10 ms bucket without latency, %.0f with it", lockstep, spread)
	assert.Equal(t, 1000.0, lockstep, "every client retries in the same 10 ms")
	assert.Less(t, spread, lockstep/20)
}

// TestMisuseFailsClearly: a client on http.DefaultTransport, one that
// never reaches the server, and one whose Send ignores its context each
// fail the run with a message saying what to fix.
func TestMisuseFailsClearly(t *testing.T) {
	sc, err := scenarios.Load("testdata/checked.yaml")
	require.NoError(t, err)
	tests := []struct {
		name   string
		client Client
		want   string
	}{
		{"default transport", func(n Net) (Send, error) {
			return func(ctx context.Context, r Request) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
				return Response(http.DefaultClient.Do(req))
			}, nil
		}, "http.DefaultTransport"},
		{"never sends", func(n Net) (Send, error) {
			return func(ctx context.Context, r Request) error { return errors.New("no") }, nil
		}, "no attempt reached the server"},
		{"ignores its context", func(n Net) (Send, error) {
			return func(ctx context.Context, r Request) error {
				time.Sleep(2 * stuckAfter)
				return nil
			}, nil
		}, "Send must return when its context ends"},
		{"fails to build", func(n Net) (Send, error) { return nil, errors.New("bad config") }, "building sender 0's client: bad config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, sc, Clients{"client": tt.client}, Options{Only: true, NoRepeat: true, NoChecks: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.IsType(t, &http.Transport{}, http.DefaultTransport, "the guard is removed after the run")
}

// failRecorder is a testing.TB that records failures instead of failing.
type failRecorder struct {
	testing.TB
	errors []string
}

func (f *failRecorder) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// TestTheScenariosChecksJudgeTheClient: a client that gives up during the
// outage fails the file's check, with the check table in the failure;
// one that outlasts it passes.
func TestTheScenariosChecksJudgeTheClient(t *testing.T) {
	rec := &failRecorder{TB: t}
	res := Run(rec, "testdata/checked.yaml", Clients{"client": loop(3, time.Second, time.Second)}, Options{NoRepeat: true})
	require.Len(t, rec.errors, 1)
	assert.Contains(t, rec.errors[0], "delivered_ratio")
	assert.Contains(t, rec.errors[0], "FAIL")
	require.NotEmpty(t, res.Checks)

	rec = &failRecorder{TB: t}
	Run(rec, "testdata/checked.yaml", Clients{"client": loop(10, time.Second, time.Second)}, Options{NoRepeat: true})
	assert.Empty(t, rec.errors)
}

// TestAClientBesideTheFilesModelOfIt: a client that stands in for a
// strategy of the file is compared with that strategy simulated (the
// file's model of it): Result.Models, and comparison.md and its chart
// in the output folder, as herdlab replay writes them.
func TestAClientBesideTheFilesModelOfIt(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	res := Run(t, "testdata/checked.yaml", Clients{"client": loop(10, time.Second, time.Second)}, Options{Out: out, NoRepeat: true})
	require.NotNil(t, res.Models)
	require.Len(t, res.Models.Summary.Strategies, 1)
	model, real := res.Models.Summary.Strategies[0], res.Summary.Strategies[0]
	assert.Equal(t, "client", model.Name)
	assert.Nil(t, model.Client, "the model is simulated")
	assert.NotNil(t, real.Client, "the client is not")
	assert.InEpsilon(t, model.Attempts, real.Attempts, 0.02)
	md, err := os.ReadFile(filepath.Join(out, "comparison.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| client | attempts |")
	assert.FileExists(t, filepath.Join(out, "comparison.png"))

	// Only the clients: nothing to compare.
	res = Run(t, "testdata/checked.yaml", Clients{"client": loop(10, time.Second, time.Second)}, Options{Only: true, NoRepeat: true, NoChecks: true})
	assert.Nil(t, res.Models)
}
