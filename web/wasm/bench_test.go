//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	skipUnlessCommandProfile(b)
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
		native += nativeRun(b, src, file)

		t := processCPU()
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

// skipUnlessCommandProfile skips a benchmark against native code unless
// this test binary is built with the herdlab command's profile
// (cmd/herdlab/default.pgo), so that its native side is built as the
// command is.
func skipUnlessCommandProfile(b *testing.B) {
	b.Helper()
	if pgo := buildSetting("-pgo"); !strings.HasSuffix(pgo, filepath.Join("cmd", "herdlab", "default.pgo")) {
		b.Skipf("built with -pgo=%q: run with the herdlab command's profile (go test ./web/wasm -pgo=cmd/herdlab/default.pgo -bench %s), so that the native side is built as the command is", pgo, strings.TrimPrefix(b.Name(), "Benchmark"))
	}
}

// nativeRun runs src natively as herdlab ui's engine runs it for the page
// (lab.Run, one run at a time), and returns its CPU time.
func nativeRun(b *testing.B, src []byte, file string) time.Duration {
	b.Helper()
	t := processCPU()
	res := lab.Run(context.Background(), string(src), file, lab.Options{MaxMemory: 2 << 30, Parallel: 1, Progress: func(float64) {}})
	cpu := processCPU() - t
	if res.Error != "" {
		b.Fatal(res.Error)
	}
	return cpu
}

// moduleRuns runs file through the module five times in one Node.js
// process (testdata/bench.cjs) and returns the CPU time of its start and
// then of each run.
func moduleRuns(b *testing.B, node, wasmExec, module, file string) []time.Duration {
	times, _ := nodeRuns(b, node, nil, wasmExec, module, file, 5)
	return times
}

// nodeRuns runs file through the module runs times in one Node.js process
// started with flags (testdata/bench.cjs), and returns the CPU time of
// its start and then of each run, and what V8 printed beside the answer
// (its traces, with a --trace flag).
func nodeRuns(b *testing.B, node string, flags []string, wasmExec, module, file string, runs int) ([]time.Duration, string) {
	args := append(slices.Clone(flags), filepath.Join("testdata", "bench.cjs"), wasmExec, module, file, strconv.Itoa(runs))
	cmd := exec.Command(node, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("node %v: %v", flags, err)
	}
	// V8's traces go to the same standard output through a buffer of
	// their own, flushed when full (mid-line) or at exit: the answer, a
	// line of its own, may fall inside a trace's line.
	text := string(out)
	i := strings.Index(text, `{"start_cpu_s"`)
	j := strings.Index(text[max(i, 0):], "}\n")
	if i < 0 || j < 0 {
		b.Fatalf("node %v: no answer: %s", flags, out)
	}
	answer, traces := text[i:i+j+1], text[:i]+text[i+j+2:]
	var a struct {
		StartCPU float64   `json:"start_cpu_s"`
		EndsCPU  []float64 `json:"ends_cpu_s"`
		Error    string    `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &a); err != nil {
		b.Fatalf("node %v: %v: %s", flags, err, out)
	}
	if a.Error != "" {
		b.Fatalf("the module's run: %s", a.Error)
	}
	if len(a.EndsCPU) != runs {
		b.Fatalf("the module made %d runs, not %d: %s", len(a.EndsCPU), runs, answer)
	}
	times := []time.Duration{seconds(a.StartCPU)}
	last := a.StartCPU
	for _, end := range a.EndsCPU {
		times = append(times, seconds(end-last))
		last = end
	}
	return times, traces
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

// BenchmarkFirstRunFloor measures what bounds a worker's first run in
// WebAssembly from below, on scenarios/thundering-herd.yaml, in turn with
// the same run natively (lab.Run, as in BenchmarkAgainstNative), all in
// CPU time. V8 runs a function first as its baseline compiler made it,
// and compiles the functions that run long with its optimising compiler,
// on its other threads: a first run either runs slow code or pays for
// compiling fast code.
//
//   - ahead-first/native: the first run when the module was compiled
//     whole by the optimising compiler before it (node --no-liftoff
//     --no-wasm-lazy-compilation): nothing is left to compile, and the
//     run costs what a settled one does.
//   - baseline-first/native: the first run when nothing is optimised
//     (node --liftoff-only): nothing to compile, the code slow.
//   - compile-ms/KB: what the optimising compiler costs a KB of the
//     module's code, every thread's CPU time, timed by a program that
//     compiles the whole module and does nothing else
//     (testdata/compile.cjs), over code-KB, the module's code.
//   - first-optimised-KB: the code (function bodies) that V8 compiles
//     with its optimising compiler during a first run as the site's
//     worker makes it (node --trace-wasm-compilation-times; the same
//     process with no run counts the start-up's, taken off), and
//     engine-optimised-KB the part of it that is package sim's.
//   - first-floor/native: the ahead first run, plus compiling what a
//     first run optimises: the least a first run costs that runs as fast
//     as a settled one once its hot code is compiled; engine-floor/native
//     counts only the engine's own code (package sim).
//   - second-optimised-KB and second-floor/native: the same for a second
//     run, which optimises code that each run enters once (more of the
//     runtime's, the scenario's parsing and validation), whose budget
//     the first run did not use up.
//
// Built as BenchmarkAgainstNative is, and skipped otherwise:
//
//	go test ./web/wasm -pgo=cmd/herdlab/default.pgo -run '^$' -bench FirstRunFloor -benchtime 2x -count 6
func BenchmarkFirstRunFloor(b *testing.B) {
	skipUnlessCommandProfile(b)
	node, wasmExec, module := buildModule(b)
	code, names := wasmFunctions(b, module)
	const engine = "github.com_zeontools_herdlab_sim."
	if !slices.ContainsFunc(slices.Collect(maps.Values(names)), func(n string) bool { return strings.HasPrefix(n, engine) }) {
		b.Fatalf("no function of the module is named %s...: the name section changed", engine)
	}
	file := filepath.Join("..", "..", "scenarios", "thundering-herd.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	defer gcfloor.Set(sim.HeapFloor)()
	ahead := []string{"--no-liftoff", "--no-wasm-lazy-compilation"}
	traced := []string{"--trace-wasm-compilation-times"}
	var native, compile, aheadFirst, baselineFirst time.Duration
	var optimised, engineOptimised, secondOptimised int
	for b.Loop() {
		native += nativeRun(b, src, file)

		out, err := exec.Command(node, append(slices.Clone(ahead), filepath.Join("testdata", "compile.cjs"), module)...).Output()
		if err != nil {
			b.Fatalf("node compile.cjs: %v", err)
		}
		var c struct {
			CPU float64 `json:"compile_cpu_s"`
		}
		if err := json.Unmarshal(out, &c); err != nil {
			b.Fatalf("node compile.cjs: %v: %s", err, out)
		}
		compile += seconds(c.CPU)

		runs, _ := nodeRuns(b, node, ahead, wasmExec, module, file, 1)
		aheadFirst += runs[1]
		runs, _ = nodeRuns(b, node, []string{"--liftoff-only"}, wasmExec, module, file, 1)
		baselineFirst += runs[1]

		// What V8 optimised in a process that made no run, one run and
		// two, each taken off the next.
		var all, eng [3]int
		for k := range 3 {
			_, trace := nodeRuns(b, node, traced, wasmExec, module, file, k)
			all[k], eng[k] = optimisedBytes(b, trace, names, engine)
		}
		optimised += all[1] - all[0]
		engineOptimised += eng[1] - eng[0]
		secondOptimised += all[2] - all[1]
	}
	n := float64(b.N)
	perKB := compile.Seconds() / n / (float64(code) / 1024) // s a KB
	nat := native.Seconds() / n
	b.ReportMetric(nat, "native-cpu-s")
	b.ReportMetric(aheadFirst.Seconds()/n/nat, "ahead-first/native")
	b.ReportMetric(baselineFirst.Seconds()/n/nat, "baseline-first/native")
	b.ReportMetric(perKB*1000, "compile-ms/KB")
	b.ReportMetric(float64(code)/1024, "code-KB")
	b.ReportMetric(float64(optimised)/n/1024, "first-optimised-KB")
	b.ReportMetric(float64(engineOptimised)/n/1024, "engine-optimised-KB")
	b.ReportMetric((aheadFirst.Seconds()/n+perKB*float64(optimised)/n/1024)/nat, "first-floor/native")
	b.ReportMetric((aheadFirst.Seconds()/n+perKB*float64(engineOptimised)/n/1024)/nat, "engine-floor/native")
	b.ReportMetric(float64(secondOptimised)/n/1024, "second-optimised-KB")
	b.ReportMetric((aheadFirst.Seconds()/n+perKB*float64(secondOptimised)/n/1024)/nat, "second-floor/native")
}

// optimisedTrace matches a function that V8 compiled with its optimising
// compiler, in what --trace-wasm-compilation-times prints (Node.js 20):
// "Compiled function 0x...#1495 using TurboFan, took 9 ms and 2111760
// / 3929416 max/total bytes; bodysize 5780 codesize 13808 name
// wasm-function#1495".
var optimisedTrace = regexp.MustCompile(`#(\d+) using TurboFan, took \d+ ms and [^;]*; bodysize (\d+)`)

// optimisedBytes sums the bodies of the functions that trace says V8
// optimised, and of those whose name starts with prefix.
func optimisedBytes(b testing.TB, trace string, names map[int]string, prefix string) (all, named int) {
	ms := optimisedTrace.FindAllStringSubmatch(trace, -1)
	if len(ms) == 0 {
		b.Fatalf("V8 optimised nothing, or its trace changed form: %.500s", trace)
	}
	for _, m := range ms {
		index, _ := strconv.Atoi(m[1])
		size, _ := strconv.Atoi(m[2])
		all += size
		if strings.HasPrefix(names[index], prefix) {
			named += size
		}
	}
	return all, named
}

// wasmFunctions reads a WebAssembly module's code section's size and its
// functions' names (the name section's, by index among imports and
// functions alike, as V8 counts them).
func wasmFunctions(b testing.TB, module string) (code int, names map[int]string) {
	data, err := os.ReadFile(module)
	if err != nil {
		b.Fatal(err)
	}
	r := wasmReader{data: data, at: 8} // past the magic number and version
	names = map[int]string{}
	for r.at < len(r.data) {
		id := r.data[r.at]
		r.at++
		size := r.uint()
		end := r.at + size
		switch {
		case id == 10: // code
			code = size
		case id == 0 && r.name() == "name":
			for r.at < end {
				sub := r.data[r.at]
				r.at++
				subEnd := r.uint()
				subEnd += r.at
				if sub == 1 { // function names
					for range r.uint() {
						index := r.uint()
						names[index] = r.name()
					}
				}
				r.at = subEnd
			}
		}
		r.at = end
	}
	if code == 0 || len(names) == 0 {
		b.Fatalf("%s: no code section or no function names", module)
	}
	return code, names
}

// TestWasmFunctions checks what BenchmarkFirstRunFloor reads of the
// module: its code's size, and the names by which it tells the engine's
// functions, indexed as V8's trace indexes them (a trace line names no
// function otherwise).
func TestWasmFunctions(t *testing.T) {
	_, _, module := buildModule(t)
	info, err := os.Stat(module)
	require.NoError(t, err)
	code, names := wasmFunctions(t, module)
	assert.Greater(t, code, int(info.Size())/2, "the code is most of the module")
	assert.Less(t, code, int(info.Size()))
	// The imports (the functions of Go's wasm_exec.js, a few dozen) come
	// first in the index, without names.
	first := slices.Min(slices.Collect(maps.Keys(names)))
	assert.True(t, first > 0 && first < 100, "the first named function is #%d", first)
	assert.Contains(t, slices.Collect(maps.Values(names)), "github.com_zeontools_herdlab_sim.__graph_.handle")

	all, engine := optimisedBytes(t, "Compiled function 0x1#7 using Liftoff, took 0 ms and 16504 bytes; bodysize 37 codesize 172\n"+
		"Compiled function 0x1#8 using TurboFan, took 9 ms and 2111760 / 3929416 max/total bytes; bodysize 5780 codesize 13808 name wasm-function#8\n"+
		"Compiled function 0x1#9 using TurboFan, took 1 ms and 392688 / 751952 max/total bytes; bodysize 1259 codesize 2600 name wasm-function#9\n",
		map[int]string{8: "github.com_zeontools_herdlab_sim.x", 9: "runtime.y"}, "github.com_zeontools_herdlab_sim.")
	assert.Equal(t, 5780+1259, all, "TurboFan's bodies, not Liftoff's")
	assert.Equal(t, 5780, engine)
}

// wasmReader reads a WebAssembly module's unsigned LEB128 integers and
// names.
type wasmReader struct {
	data []byte
	at   int
}

func (r *wasmReader) uint() int {
	var v, shift int
	for {
		c := r.data[r.at]
		r.at++
		v |= int(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
		shift += 7
	}
}

func (r *wasmReader) name() string {
	n := r.uint()
	s := string(r.data[r.at : r.at+n])
	r.at += n
	return s
}
