package realhttp

import (
	"context"
	"io"
	"net"
	"net/http"
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
	sc := serverTestScenario(b, "  concurrency: unlimited\n  service_time: {dist: uniform, min: 0s, max: 1ns}\n")
	for _, keys := range []bool{false, true} {
		name := "key=none"
		if keys {
			name = "key=unique"
		}
		b.Run(name, func(b *testing.B) {
			s, err := NewServer(sc, ServerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(""); err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := s.Shutdown(context.Background()); err != nil {
					b.Error(err)
				}
			}()
			serverBenchLoop(b, s.URL(), keys)
			if st := s.Stats(); st.Processed < int64(b.N) {
				b.Fatalf("processed %d of %d", st.Processed, b.N)
			}
		})
	}
}

// BenchmarkBareHandler measures a bare net/http handler (read the body,
// answer 200) the same way as BenchmarkServer: the floor the test server
// is compared with.
func BenchmarkBareHandler(b *testing.B) {
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
	defer func() {
		_ = hs.Shutdown(context.Background())
		<-done
	}()
	serverBenchLoop(b, "http://"+ln.Addr().String()+"/", false)
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
