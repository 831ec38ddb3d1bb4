package realhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// BenchmarkReplay replays 10,000 senders in a burst against a handler
// that answers 200 at once (ok), or 503 to every first attempt, retried
// after a full-jitter wait of up to 100ms (retry), through the default
// pool of 256 connections, and reports attempts per second of wall time.
func BenchmarkReplay(b *testing.B) {
	full := scenarios.Backoff{Kind: scenarios.BackoffFullJitter, Base: 100 * time.Millisecond, Cap: 100 * time.Millisecond}
	for _, bc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"senders=10000/ok", func(w http.ResponseWriter, r *http.Request) {}},
		{"senders=10000/retry", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(DriverAttemptHeader) == "1" {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := httptest.NewServer(bc.handler)
			defer srv.Close()
			sc, st := driverScenario(b, 10_000, driverStrategy(full, 3, 30*time.Second), nil)
			b.ReportAllocs()
			var attempts int64
			var wall time.Duration
			for b.Loop() {
				run, stats, err := Replay(context.Background(), sc, st, 0, DriverOptions{Target: srv.URL})
				if err != nil || run.Delivered != 10_000 {
					b.Fatalf("delivered %d of 10000: %v", run.Delivered, err)
				}
				attempts += run.Attempts
				wall += stats.Wall
			}
			b.ReportMetric(float64(attempts)/wall.Seconds(), "attempts/s")
		})
	}
}

// BenchmarkDriverTimingGap reports the median gap between a retry's
// planned and actual send time at 1,000 senders (see
// TestDriverTimingGap), in the driver and at the server.
func BenchmarkDriverTimingGap(b *testing.B) {
	var driver, server time.Duration
	n := 0
	for b.Loop() {
		d, s, _, _ := driverTimingRun(b)
		driver += d
		server += s
		n++
	}
	b.ReportMetric(float64(driver.Microseconds())/float64(n), "gap-p50-µs")
	b.ReportMetric(float64(server.Microseconds())/float64(n), "server-gap-p50-µs")
}
