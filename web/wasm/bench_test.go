//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeontools/herdlab/internal/gcfloor"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web/lab"
)

// BenchmarkAgainstNative runs scenarios/thundering-herd.yaml (50,000
// requests, 5 strategies, one run each) natively and in WebAssembly, in
// turn, and reports what each costs in CPU time (user and system, every
// thread), not wall time, which on a shared machine counts the host's
// scheduling too:
//
//   - native-cpu-s: lab.Run in this process, one run at a time
//     (Parallel: 1), with the heap floor the herdlab command sets: what
//     herdlab ui's engine does for the page, and what the module does.
//   - native-sim-cpu-s: sim.Run alone, the same way (the simulation,
//     without parsing the file or summarising the runs).
//   - wasm-start-cpu-s: Node.js started, the module compiled and
//     instantiated, its main run, and V8's compilation of the functions
//     that made hot settled, as in a worker that waits for the page's
//     first run.
//   - wasm-first-cpu-s: the module's first run, as the static site's one
//     worker makes it (herdlabRun, with a progress callback, its answer
//     parsed). It includes compiling, on V8's other threads, the
//     functions the run makes hot (V8 runs a function first as its
//     baseline compiler made it, and optimises those that run long).
//   - wasm-second-cpu-s: the module's second run. V8 is often still
//     compiling then, on its other threads, what the first run made hot
//     (0.1-0.2 s of it on 2026-12-05, against 0.03-0.06 s a run later).
//   - wasm-settled-cpu-s: a settled run, the median of the third to the fifth:
//     what every run costs once V8's compilation is done, the
//     simulation's own cost.
//   - wasm-settled/native, wasm-second/native and wasm-first/native:
//     each over native-cpu-s. (Until 2026-12-05 wasm-cpu-s and
//     wasm/native were the second run's: the names are not reused.)
//
// The module is built as the site builds it, with its default.pgo; the
// native code as the herdlab command is, with the command's
// (cmd/herdlab/default.pgo), so that the benchmark runs only with that
// profile, as make bench does (it skips otherwise):
//
//	go test ./web/wasm -pgo=cmd/herdlab/default.pgo -run '^$' -bench AgainstNative -benchtime 3x -count 5
func BenchmarkAgainstNative(b *testing.B) {
	if pgo := buildSetting("-pgo"); !strings.HasSuffix(pgo, filepath.Join("cmd", "herdlab", "default.pgo")) {
		b.Skipf("built with -pgo=%q: run with the herdlab command's profile (go test ./web/wasm -pgo=cmd/herdlab/default.pgo -bench AgainstNative), so that the native side is built as the command is", pgo)
	}
	node, wasmExec, module := buildModule(b)
	file := filepath.Join("..", "..", "scenarios", "thundering-herd.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenarios.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	defer gcfloor.Set(sim.HeapFloor)() // as the herdlab command, and the module's main
	ctx := context.Background()
	var native, nativeSim, start, first, second, settled time.Duration
	for b.Loop() {
		t := processCPU()
		res := lab.Run(ctx, string(src), file, lab.Options{MaxMemory: 2 << 30, Parallel: 1, Progress: func(float64) {}})
		native += processCPU() - t
		if res.Error != "" {
			b.Fatal(res.Error)
		}

		t = processCPU()
		if _, err := sim.Run(ctx, sc, sim.Options{Parallel: 1, Progress: func(int) {}}); err != nil {
			b.Fatal(err)
		}
		nativeSim += processCPU() - t

		runs := moduleRuns(b, node, wasmExec, module, file)
		start += runs[0]
		first += runs[1]
		second += runs[2]
		settled += slices.Sorted(slices.Values(runs[3:]))[len(runs[3:])/2]
	}
	n := float64(b.N)
	b.ReportMetric(native.Seconds()/n, "native-cpu-s")
	b.ReportMetric(nativeSim.Seconds()/n, "native-sim-cpu-s")
	b.ReportMetric(start.Seconds()/n, "wasm-start-cpu-s")
	b.ReportMetric(first.Seconds()/n, "wasm-first-cpu-s")
	b.ReportMetric(second.Seconds()/n, "wasm-second-cpu-s")
	b.ReportMetric(settled.Seconds()/n, "wasm-settled-cpu-s")
	b.ReportMetric(settled.Seconds()/native.Seconds(), "wasm-settled/native")
	b.ReportMetric(second.Seconds()/native.Seconds(), "wasm-second/native")
	b.ReportMetric(first.Seconds()/native.Seconds(), "wasm-first/native")
}

// moduleRuns runs file through the module five times in one Node.js
// process (testdata/bench.cjs) and returns the CPU time of its start and
// then of each run.
func moduleRuns(b *testing.B, node, wasmExec, module, file string) []time.Duration {
	const runs = 5
	cmd := exec.Command(node, filepath.Join("testdata", "bench.cjs"), wasmExec, module, file, strconv.Itoa(runs))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("node: %v", err)
	}
	var a struct {
		StartCPU float64   `json:"start_cpu_s"`
		EndsCPU  []float64 `json:"ends_cpu_s"`
		Error    string    `json:"error"`
	}
	if err := json.Unmarshal(out, &a); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	if a.Error != "" {
		b.Fatalf("the module's run: %s", a.Error)
	}
	if len(a.EndsCPU) != runs {
		b.Fatalf("the module made %d runs, not %d: %s", len(a.EndsCPU), runs, out)
	}
	times := []time.Duration{seconds(a.StartCPU)}
	last := a.StartCPU
	for _, end := range a.EndsCPU {
		times = append(times, seconds(end-last))
		last = end
	}
	return times
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// buildSetting returns the value of the build setting key of this test
// binary ("" when it has none).
func buildSetting(key string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// BenchmarkProfile is the work whose CPU profile is default.pgo, with
// which the go command builds the module (profile-guided optimisation:
// it inlines the calls the profile finds hot, and a call costs more in
// WebAssembly than natively): scenarios/thundering-herd.yaml (a single
// server) and scenarios/real-graph.yaml (a graph) run as the page runs
// them, natively, one run at a time. When the simulator changes much,
// make it anew (TestTheProfileIsOfThisCode says when it must):
//
//	go test ./web/wasm -pgo=off -run '^$' -bench '^BenchmarkProfile$' -benchtime 10x -cpuprofile web/wasm/default.pgo -o /tmp/wasm.test
func BenchmarkProfile(b *testing.B) {
	var srcs []string
	files := []string{"thundering-herd", "real-graph"}
	for _, name := range files {
		src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", name+".yaml"))
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, string(src))
	}
	defer gcfloor.Set(sim.HeapFloor)()
	for b.Loop() {
		for i, src := range srcs {
			if res := lab.Run(context.Background(), src, files[i]+".yaml", lab.Options{MaxMemory: 2 << 30, Parallel: 1, Progress: func(float64) {}}); res.Error != "" {
				b.Fatal(res.Error)
			}
		}
	}
}

// processCPU is the CPU time (user and system) of this process so far,
// every thread's: the collector's workers count.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
