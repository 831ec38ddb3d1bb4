package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveBenchScenario is the scenario BenchmarkServeUnderWrk serves: the
// server of realhttp's BenchmarkServerUnderWrk, of unlimited concurrency
// and no service time, so that only the server's own work and net/http's
// are measured.
const serveBenchScenario = `name: bench
server:
  concurrency: unlimited
  service_time: {dist: uniform, min: 0s, max: 1ns}
workload: {requests: 1}
strategies:
  - {name: s, backoff: {kind: fixed, delay: 1s}, max_attempts: 3, timeout: 1s}
`

// serveBenchConns is wrk's connections (-c): at the end of each of its
// runs, as many requests may be in flight, abandoned by wrk.
const serveBenchConns = 16

// BenchmarkServeUnderWrk measures herdlab serve as a user runs it: the
// herdlab binary, built by the benchmark, serving a scenario of unlimited
// concurrency and no service time on loopback, against a bare net/http
// handler (testdata/barehandler: read the body, answer 200) in a process
// of its own, built with the same toolchain: two processes of the same
// standing, each with the machine's GOMAXPROCS, measured the same way.
// Each iteration runs wrk (2 threads, 16 keep-alive connections, 1 s) at
// each in turn, and at a second bare handler, the first of the three
// taking turns. It reports the mean rates, the median of the
// iterations' ratios serve/bare, the same of bare2/bare (what the
// machine's other work does to a ratio of rates measured in turn: 1 on
// a quiet machine), each process's CPU time a request (from /proc, on
// Linux) and their ratio as a rate, serve/bare-cpu (bare's CPU time a
// request over serve's), which the machine's other work moves far less.
// It checks that every attempt at herdlab serve succeeded but for those
// wrk abandoned: a run's end closes its connections, and a request
// whose connection closes before its answer counts as a timeout
// (reason processed: work for a client that has gone), at most one a
// connection a run. With log=file, serve writes its request log, and
// the log must hold a line for every attempt once serve has stopped.
// It is skipped without wrk or the go command.
func BenchmarkServeUnderWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skip("the go command is not on PATH: the benchmark builds herdlab with it")
	}
	dir := b.TempDir()
	herdlab, bare := filepath.Join(dir, "herdlab"), filepath.Join(dir, "barehandler")
	for _, build := range [][2]string{{herdlab, "."}, {bare, "./testdata/barehandler"}} {
		if out, err := exec.Command(goCmd, "build", "-o", build[0], build[1]).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", build[1], err, out)
		}
	}
	file := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(file, []byte(serveBenchScenario), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, script string
		log          bool
	}{
		{"log=none/body=none", "../../realhttp/testdata/post.lua", false}, // the driver's attempts
		{"log=none/body=2B", "../../realhttp/testdata/post-body.lua", false},
		{"log=file/body=none", "../../realhttp/testdata/post.lua", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			args := []string{"serve", "--scenario", file, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}
			logFile := filepath.Join(b.TempDir(), "requests.jsonl")
			if c.log {
				// A bound no run reaches: every line stays in the one file.
				args = append(args, "--log", logFile, "--log-max-mb", "100000")
			}
			serve := startBenchProcess(b, herdlab, args...)
			m := regexp.MustCompile(`at (http://\S+/) \(metrics and control at (http://\S+/)`).FindStringSubmatch(serve.first)
			if m == nil {
				b.Fatalf("herdlab serve said %q", serve.first)
			}
			work, admin := m[1], m[2]
			// The bare handler, and a second one: the median ratio of
			// their rates is what the machine's other work does to a
			// ratio of rates measured in turn (1 on a quiet machine).
			sides := []*benchSide{{name: "serve", p: serve, url: work}}
			for _, name := range []string{"bare", "bare2"} {
				p := startBenchProcess(b, bare)
				addr, ok := strings.CutPrefix(p.first, "listening at ")
				if !ok {
					b.Fatalf("barehandler said %q", p.first)
				}
				sides = append(sides, &benchSide{name: name, p: p, url: "http://" + strings.TrimSpace(addr) + "/"})
			}
			var ratios, control []float64
			runs := 0
			for b.Loop() {
				for k := range sides { // each first in turn
					sides[(k+runs)%len(sides)].measure(b, wrk, c.script)
				}
				runs++
				n := len(sides[0].rates)
				ratios = append(ratios, sides[0].rates[n-1]/sides[1].rates[n-1])
				control = append(control, sides[2].rates[n-1]/sides[1].rates[n-1])
			}

			byPair := serveAttempts(b, admin)
			var total, success, abandoned int64
			for pair, n := range byPair {
				total += n
				switch pair {
				case "success/processed":
					success = n
				case "timeout/processed":
					abandoned = n
				}
			}
			if success == 0 || success+abandoned != total || abandoned > int64(serveBenchConns*runs) {
				b.Fatalf("of %d attempts, %d succeeded and %d were abandoned by wrk at the end of its %d runs (at most %d): %v",
					total, success, abandoned, runs, serveBenchConns*runs, byPair)
			}
			serve.stop(b)
			if c.log {
				if lines := countLines(b, logFile); lines != total {
					b.Fatalf("the request log holds %d lines for %d attempts", lines, total)
				}
			}
			b.ReportMetric(sides[0].meanRate(), "serve-req/s")
			b.ReportMetric(sides[1].meanRate(), "bare-req/s")
			b.ReportMetric(median(ratios), "serve/bare")
			b.ReportMetric(median(control), "bare2/bare")
			if sc, bc := sides[0].cpuPerRequest(), sides[1].cpuPerRequest(); sc > 0 && bc > 0 {
				b.ReportMetric(sc, "serve-cpu-us/req")
				b.ReportMetric(bc, "bare-cpu-us/req")
				// The rate serve would have beside the bare handler's with
				// the CPU each takes a request: the ratio of rates measured
				// in CPU time, which the machine's other work moves little.
				b.ReportMetric(bc/sc, "serve/bare-cpu")
			}
			b.ReportMetric(float64(abandoned), "abandoned")
		})
	}
}

// benchSide is a server BenchmarkServeUnderWrk measures: its wrk runs'
// rates and answers, and the CPU time the server took during them.
type benchSide struct {
	name    string
	p       *benchProcess
	url     string
	rates   []float64
	answers int64
	cpu     time.Duration
}

// measure runs wrk once at the side.
func (s *benchSide) measure(b *testing.B, wrk, script string) {
	before := s.p.cpu(b)
	rate, n := wrkRun(b, wrk, script, s.url)
	s.cpu += s.p.cpu(b) - before
	s.rates = append(s.rates, rate)
	s.answers += n
}

func (s *benchSide) meanRate() float64 {
	var sum float64
	for _, r := range s.rates {
		sum += r
	}
	return sum / float64(len(s.rates))
}

// cpuPerRequest is the server's CPU time an answer, in microseconds; 0
// without /proc.
func (s *benchSide) cpuPerRequest() float64 {
	return float64(s.cpu.Microseconds()) / float64(s.answers)
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// wrkRun runs wrk for 1 s at url, 2 threads and serveBenchConns
// keep-alive connections, POSTing as script says, and returns the rate
// it reports and the answers it counted; an error answer fails the
// benchmark.
func wrkRun(b *testing.B, wrk, script, url string) (rate float64, answers int64) {
	out, err := exec.Command(wrk, "-t2", "-c"+strconv.Itoa(serveBenchConns), "-d1s", "-s", script, url).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) || bytes.Contains(out, []byte("Socket errors")) {
		b.Fatalf("wrk saw errors:\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^\s*(\d+) requests in .*\n(?s:.*)^Requests/sec:\s*([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("wrk gave no rate:\n%s", out)
	}
	answers, _ = strconv.ParseInt(string(m[1]), 10, 64)
	rate, _ = strconv.ParseFloat(string(m[2]), 64)
	return rate, answers
}

// benchProcess is a program the benchmark started, and the first line
// it printed.
type benchProcess struct {
	cmd   *exec.Cmd
	first string
	done  chan error
	rest  *syncBuffer
}

// startBenchProcess starts path with args, waits for its first line on
// stdout, and kills it when the benchmark ends if it still runs.
func startBenchProcess(b *testing.B, path string, args ...string) *benchProcess {
	b.Helper()
	p := &benchProcess{cmd: exec.Command(path, args...), done: make(chan error, 1), rest: &syncBuffer{}}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := &syncBuffer{}
	p.cmd.Stderr = stderr
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(out)
	p.first, err = r.ReadString('\n')
	go func() {
		_, _ = io.Copy(p.rest, r)
		p.done <- p.cmd.Wait()
	}()
	b.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	if err != nil {
		b.Fatalf("%s said nothing: %v\n%s", filepath.Base(path), err, stderr)
	}
	return p
}

// cpu returns the CPU time the process has used, user and system, from
// /proc/PID/stat (in the kernel's USER_HZ ticks, 100 a second); 0 where
// there is no /proc.
func (p *benchProcess) cpu(b *testing.B) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command's name, which ends with the last ')':
	// utime and stime are the stat's 14th and 15th fields.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		b.Fatalf("/proc/%d/stat: %q", p.cmd.Process.Pid, stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q", p.cmd.Process.Pid, stat)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// stop stops the process with SIGINT, as Ctrl-C does, and fails the
// benchmark unless it exits 0 within 15 s.
func (p *benchProcess) stop(b *testing.B) {
	b.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-p.done:
		if err != nil {
			b.Fatalf("%s: %v\n%s", p.cmd.Path, err, p.rest)
		}
	case <-time.After(15 * time.Second):
		b.Fatalf("%s did not stop on SIGINT", p.cmd.Path)
	}
}

// serveAttempts reads herdlab serve's attempts counter from its metrics
// at admin, by "outcome/reason", the pairs of no attempt left out.
func serveAttempts(b *testing.B, admin string) map[string]int64 {
	resp, err := http.Get(admin + "metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	pairs := map[string]int64{}
	re := regexp.MustCompile(`(?m)^herdlab_server_attempts_total\{outcome="([^"]+)",reason="([^"]+)"\} (\S+)$`)
	for _, m := range re.FindAllSubmatch(body, -1) {
		v, err := strconv.ParseFloat(string(m[3]), 64)
		if err != nil {
			b.Fatalf("metrics: %q: %v", m[0], err)
		}
		if v > 0 {
			pairs[string(m[1])+"/"+string(m[2])] = int64(v)
		}
	}
	return pairs
}

// countLines returns the lines of the file at path.
func countLines(b *testing.B, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
