package herdtest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

// graphService returns the figures of service name in st.
func graphService(t *testing.T, st results.StrategySummary, name string) results.ServiceFigures {
	t.Helper()
	for _, s := range st.Services {
		if s.Name == name && s.Replica == nil {
			return s
		}
	}
	t.Fatalf("%s: no service %s", st.Name, name)
	return results.ServiceFigures{}
}

// TestAGraphAgreesWithTheSimulation runs a hand-written loop that
// retries as the file's fixed-1s strategy does against a graph of
// services (a front whose call to a backend, refusing connections for
// 5 s, retries 3 times), and compares it with the simulation of that
// strategy: the attempts at the front and at the backend, the requests
// delivered and their median latency. The front has 2 replicas behind
// its balancer, or one that refuses the clients' connections for 3 s.
func TestAGraphAgreesWithTheSimulation(t *testing.T) {
	b, err := os.ReadFile("testdata/graph.yaml")
	require.NoError(t, err)
	refusing := filepath.Join(t.TempDir(), "front-refuses.yaml")
	src := strings.Replace(string(b), "    replicas: 2\n", "    outages: [{start: 0s, duration: 3s, mode: refuse}]\n", 1)
	require.NoError(t, os.WriteFile(refusing, []byte(src), 0o644))
	for _, file := range []string{"testdata/graph.yaml", refusing} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			res := Run(t, file, Clients{"hand-loop": loop(10, time.Second, 3*time.Second)}, Options{NoChecks: true, NoRepeat: true})
			sim, real := res.Summary.Strategies[0], res.Summary.Strategies[1]
			require.Equal(t, "fixed-1s", sim.Name)
			require.Equal(t, "hand-loop", real.Name)
			for _, st := range []results.StrategySummary{sim, real} {
				t.Logf("%s: delivered %v attempts %v front %v backend %v, median latency %.3fs", st.Name, st.Delivered, st.Attempts,
					graphService(t, st, "front").Attempts, graphService(t, st, "backend").Attempts, st.LatencyS.P50)
			}
			assert.InEpsilon(t, sim.Delivered, real.Delivered, 0.02, "delivered")
			assert.InEpsilon(t, sim.Attempts, real.Attempts, 0.03, "attempts")
			assert.InEpsilon(t, graphService(t, sim, "front").Attempts, graphService(t, real, "front").Attempts, 0.03, "attempts at the front")
			assert.InEpsilon(t, graphService(t, sim, "backend").Attempts, graphService(t, real, "backend").Attempts, 0.03, "attempts at the backend")
			assert.InEpsilon(t, sim.LatencyS.P50, real.LatencyS.P50, 0.03, "median latency")
		})
	}
}

// TestAGraphWritesTheSameBytes runs a deterministic client against a
// graph twice, at GOMAXPROCS 1 and 2, and compares the output folders
// byte for byte, services.csv with them: the graph's own steps (the
// balancers' picks, the calls' draws, retries, hedges and budgets, the
// cache) wait for their turns as the clients' attempts do. Without
// them, the files differ.
func TestAGraphWritesTheSameBytes(t *testing.T) {
	skipUnderRace(t)
	for _, file := range []string{"testdata/graph-burst.yaml", "testdata/graph-features.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var outs []string
			for _, procs := range []int{1, 2, 2} {
				prev := runtime.GOMAXPROCS(procs)
				out := filepath.Join(t.TempDir(), "out")
				res := Run(t, file, Clients{"hand-loop": loop(10, time.Second, 3*time.Second)}, Options{Out: out, NoChecks: true, Only: true})
				runtime.GOMAXPROCS(prev)
				assert.True(t, res.Deterministic["hand-loop"], "GOMAXPROCS %d", procs)
				outs = append(outs, out)
			}
			for _, out := range outs[1:] {
				for _, name := range []string{"summary.json", "timeseries.csv", "services.csv"} {
					if line, differ := firstDiff(readOutput(t, outs[0], name), readOutput(t, out, name)); differ {
						t.Errorf("%s differs from line %d", name, line)
					}
				}
			}
			services, err := os.ReadFile(filepath.Join(outs[0], "services.csv"))
			require.NoError(t, err)
			assert.Contains(t, string(services), "backend")
		})
	}
}

// firstDiff returns the first line (from 1) where a and b differ.
func firstDiff(a, b string) (int, bool) {
	if a == b {
		return 0, false
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return i + 1, true
		}
	}
	return min(len(x), len(y)) + 1, true
}
