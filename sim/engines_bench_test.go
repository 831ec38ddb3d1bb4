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
// scenarios/million.yaml, every strategy once, each run of the file in a
// process of its own (this test binary, run again), so that its CPU time
// (user and system) and peak resident memory are its own. It reports
// their medians and the events of a run. (Until the single-server engine
// was retired, it ran both engines in turn: see docs/performance.md.)
func BenchmarkOneEngine(b *testing.B) {
	for _, file := range []string{"thundering-herd", "million"} {
		b.Run(file, func(b *testing.B) {
			var cpu, rss []float64
			var events int64
			for b.Loop() {
				r := runEngine(b, "../scenarios/"+file+".yaml")
				cpu = append(cpu, r.CPU)
				rss = append(rss, r.RSSMB)
				events = r.Events
			}
			b.ReportMetric(median(cpu), "cpu-s")
			b.ReportMetric(median(rss), "MB")
			b.ReportMetric(float64(events), "events")
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

// runEngine runs every strategy of file once, in turn, in a process of
// its own (TestEngineChild) and returns what it measured.
func runEngine(b *testing.B, file string) engineRun {
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HERDLAB_ENGINE_CHILD="+file)
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
	start, _ := cpuTimes()
	var events int64
	for s := range sc.Strategies {
		r, err := RunOne(context.Background(), sc, s, 0, nil, 0)
		require.NoError(t, err)
		events += r.Events
	}
	end, _ := cpuTimes()
	js, _ := json.Marshal(engineRun{CPU: (end - start).Seconds(), Events: events})
	os.Stdout.WriteString("engine-run: " + string(js) + "\n")
}
