package sim

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// BenchmarkOneEngine runs scenarios/thundering-herd.yaml and
// scenarios/million.yaml on the single-server engine and, written as a
// graph of one service, on the graph engine: in turn, each run in a
// process of its own (this test binary, run again), so that each
// engine's CPU time (user and system) and peak resident memory are its
// own. It reports both, the ratios graph/server (the medians of the
// iterations'), and the events of a run on each.
func BenchmarkOneEngine(b *testing.B) {
	for _, file := range []string{"thundering-herd", "million"} {
		b.Run(file, func(b *testing.B) {
			var cpu, rss, ratioCPU, ratioRSS [2][]float64
			var events [2]int64
			for b.Loop() {
				for k, engine := range []string{"server", "graph"} {
					r := runEngine(b, "../scenarios/"+file+".yaml", engine)
					cpu[k] = append(cpu[k], r.CPU)
					rss[k] = append(rss[k], r.RSSMB)
					events[k] = r.Events
				}
				n := len(cpu[0]) - 1
				ratioCPU[0] = append(ratioCPU[0], cpu[1][n]/cpu[0][n])
				ratioRSS[0] = append(ratioRSS[0], rss[1][n]/rss[0][n])
			}
			b.ReportMetric(median(cpu[0]), "server-cpu-s")
			b.ReportMetric(median(cpu[1]), "graph-cpu-s")
			b.ReportMetric(median(rss[0]), "server-MB")
			b.ReportMetric(median(rss[1]), "graph-MB")
			b.ReportMetric(median(ratioCPU[0]), "graph/server-cpu")
			b.ReportMetric(median(ratioRSS[0]), "graph/server-MB")
			b.ReportMetric(float64(events[0]), "server-events")
			b.ReportMetric(float64(events[1]), "graph-events")
		})
	}
}

// engineRun is what one run in a process of its own measured.
type engineRun struct {
	CPU    float64 // seconds, user and system, of the run alone
	RSSMB  float64 // the process's peak resident memory
	Events int64
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// runEngine runs every strategy of file once, in turn, on engine
// ("server" or "graph", the scenario written as one service) in a
// process of its own (TestEngineChild) and returns what it measured.
func runEngine(b *testing.B, file, engine string) engineRun {
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HERDLAB_ENGINE_CHILD="+file, "HERDLAB_ENGINE="+engine)
	out, err := cmd.Output()
	require.NoError(b, err, "%s", out)
	var r engineRun
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "engine-run: "); ok {
			require.NoError(b, json.Unmarshal([]byte(rest), &r))
			r.RSSMB = float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
			return r
		}
	}
	b.Fatalf("the child said nothing:\n%s", out)
	return r
}

// TestEngineChild is BenchmarkOneEngine's child: it does nothing unless
// HERDLAB_ENGINE_CHILD names a scenario file.
func TestEngineChild(t *testing.T) {
	file := os.Getenv("HERDLAB_ENGINE_CHILD")
	if file == "" {
		t.Skip("BenchmarkOneEngine's child process")
	}
	sc, err := scenarios.Load(file)
	require.NoError(t, err)
	graph := os.Getenv("HERDLAB_ENGINE") == "graph"
	if graph {
		sc = oneService(sc)
	}
	start, _ := cpuTimes()
	var events int64
	for s := range sc.Strategies {
		if graph {
			r, err := RunOne(context.Background(), sc, s, 0, nil, 0)
			require.NoError(t, err)
			events += r.Events
			continue
		}
		w := newWorld(sc, &sc.Strategies[s], 0, RunSeed(sc.Seed, 0))
		w.setLimits(nil, expectedRequests(sc), 0)
		r, err := w.simulate(context.Background())
		require.NoError(t, err)
		events += r.Events
	}
	end, _ := cpuTimes()
	js, _ := json.Marshal(engineRun{CPU: (end - start).Seconds(), Events: events})
	os.Stdout.WriteString("engine-run: " + string(js) + "\n")
}
