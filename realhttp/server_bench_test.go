package realhttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServer measures the test server's throughput over loopback:
// concurrent keep-alive clients POST to a server of unlimited
// concurrency whose service time is zero, so that only the server's own
// work (admission, the scenario model, idempotency keys, metrics) and
// net/http are measured. Compare with BenchmarkBareHandler.
func BenchmarkServer(b *testing.B) {
	for _, keys := range []bool{false, true} {
		name := "key=none"
		if keys {
			name = "key=unique"
		}
		b.Run(name, func(b *testing.B) {
			s := startBenchServer(b)
			serverBenchLoop(b, s.URL(), keys)
			if st := s.Stats(); st.Processed < int64(b.N) {
				b.Fatalf("processed %d of %d", st.Processed, b.N)
			}
		})
	}
}

// BenchmarkServerUnderWrk measures the test server with a real load
// generator, wrk (keep-alive, loopback: Debian's package wrk), against a
// bare net/http handler measured the same way, in turn, in the same
// benchmark: each iteration is a 1 s wrk run at each, alternating, with
// POSTs without a body (the driver's) and of a small body. It
// reports both mean rates and the median of the iterations' ratios,
// server/bare. wrk's load is not Go's
// client's: its requests cost the server more of the shared CPUs, and
// show the server's own work more. Every attempt must succeed but those
// wrk abandons: at the end of each run it closes its connections with
// up to one request on each in flight, and a request whose connection
// closes before its answer is work for a client that has gone, a
// timeout (TestServerCountsAnAbandonedAttempt; with no service time,
// about one in a million attempts). It is skipped without wrk.
func BenchmarkServerUnderWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	for _, c := range []struct{ name, script string }{
		{"body=none", "testdata/post.lua"},    // the driver's attempts
		{"body=2B", "testdata/post-body.lua"}, // a small JSON body
	} {
		b.Run(c.name, func(b *testing.B) {
			s := startBenchServer(b)
			bare, stop := startBareHandler(b)
			defer stop()
			var server, floor float64
			var ratios []float64
			for b.Loop() {
				sr, br := wrkRate(b, wrk, c.script, s.URL()), wrkRate(b, wrk, c.script, bare)
				server, floor = server+sr, floor+br
				ratios = append(ratios, sr/br)
			}
			// Every attempt succeeds but those wrk abandons: at the end of
			// a run it closes its connections, and a request whose
			// connection closes before the server answers it is work for
			// a client that has gone (timeout, reason processed), at most
			// one a connection a run.
			st := s.Stats()
			abandoned := st.ByOutcome["timeout"]
			if st.Processed == 0 || st.ByOutcome["success"]+abandoned != st.Attempts || st.Wasted != abandoned ||
				abandoned > int64(wrkConns*len(ratios)) {
				b.Fatalf("of %d attempts, %d succeeded and %d were abandoned by wrk at the end of its %d runs (at most %d): %v",
					st.Attempts, st.ByOutcome["success"], abandoned, len(ratios), wrkConns*len(ratios), st.ByReason)
			}
			b.ReportMetric(float64(abandoned), "abandoned")
			b.ReportMetric(server/float64(b.N), "server-req/s")
			b.ReportMetric(floor/float64(b.N), "bare-req/s")
			// The median of the pairs' ratios: a pair that the machine's
			// other work slowed on one side only does not move it.
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "server/bare")
		})
	}
}

// wrkConns is wrkRate's keep-alive connections.
const wrkConns = 16

// wrkRate runs wrk for 1 s at url, 2 threads and wrkConns keep-alive
// connections, POSTing as script says, and returns the
// requests per second it reports; an error answer fails the benchmark.
func wrkRate(b *testing.B, wrk, script, url string) float64 {
	out, err := exec.Command(wrk, "-t2", "-c"+strconv.Itoa(wrkConns), "-d1s", "-s", script, url).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
		b.Fatalf("wrk saw errors:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "Requests/sec:"); ok {
			rate, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				b.Fatalf("wrk: %q: %v", line, err)
			}
			return rate
		}
	}
	b.Fatalf("wrk gave no rate:\n%s", out)
	return 0
}

// startBenchServer starts a test server of unlimited concurrency and no
// service time on loopback, shut down when the benchmark ends: only its
// own work and net/http's are measured.
func startBenchServer(b *testing.B) *Server {
	sc := serverTestScenario(b, "  concurrency: unlimited\n  service_time: {dist: uniform, min: 0s, max: 1ns}\n")
	s, err := NewServer(sc, ServerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(""); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return s
}

// BenchmarkBareHandler measures a bare net/http handler (read the body,
// answer 200) the same way as BenchmarkServer: the floor the test server
// is compared with.
func BenchmarkBareHandler(b *testing.B) {
	url, stop := startBareHandler(b)
	defer stop()
	serverBenchLoop(b, url, false)
}

// startBareHandler starts a bare net/http handler (read the body, answer
// 200) on loopback, and returns its URL and what stops it.
func startBareHandler(b *testing.B) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", "3")
		_, _ = w.Write([]byte("ok\n"))
	}), ReadHeaderTimeout: serverDefaultReadTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	return "http://" + ln.Addr().String() + "/", func() {
		_ = hs.Shutdown(context.Background())
		<-done
	}
}

// serverBenchLoop POSTs to url from parallel clients sharing one
// keep-alive transport, and reports requests per second.
func serverBenchLoop(b *testing.B, url string, keys bool) {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var next atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, err := http.NewRequest(http.MethodPost, url, nil)
			if err != nil {
				b.Error(err)
				return
			}
			req.Body = io.NopCloser(strings.NewReader("{}"))
			req.ContentLength = 2
			if keys {
				req.Header.Set("Idempotency-Key", "k"+strconv.FormatInt(next.Add(1), 10))
			}
			resp, err := c.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
