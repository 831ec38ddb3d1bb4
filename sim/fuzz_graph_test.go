package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/zeontools/herdlab/scenarios"
)

// fuzzGraphMemory is the memory limit a fuzzed graph is checked against
// (as herdlab validate checks it): what it accepts runs in a few
// milliseconds.
const fuzzGraphMemory = 96 << 20

// graphYAML writes a chain of layers+1 services, each calling the next
// with fanout copies (a quorum of quorum, 0: all), retried edgeAttempts
// times (0: unlimited), with replicas replicas each and, with keys > 0, a
// cache of keys keys at the bottom; the fleet sends requests requests
// with attempts attempts (0: unlimited), through an outage at the
// bottom when outage is set.
func graphYAML(layers, fanout, quorum, replicas, concurrency, attempts, edgeAttempts uint16, keys, requests uint32, outage bool, seconds, bucketMs uint16) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: graph\nduration: %ds\nbucket: %dms\nservices:\n", seconds, bucketMs)
	slots := "unlimited"
	if concurrency > 0 {
		slots = fmt.Sprint(concurrency)
	}
	for i := range int(layers) + 1 {
		fmt.Fprintf(&b, "  - name: s%d\n    concurrency: %s\n    service_time: 1ms\n    replicas: %d\n", i, slots, replicas)
		if i < int(layers) {
			fmt.Fprintf(&b, "    calls: [{service: s%d, fanout: %d, quorum: %d, retry: {max_attempts: %d, backoff: {kind: full-jitter, base: 10ms, cap: 1s}, timeout: 1s}}]\n", i+1, fanout, quorum, edgeAttempts)
			continue
		}
		if keys > 0 {
			fmt.Fprintf(&b, "    cache: {hit_ratio: 0.5, keys: %d}\n", keys)
		}
		if outage {
			b.WriteString("    outages: [{start: 0s, duration: 1s, mode: error}]\n")
		}
	}
	fmt.Fprintf(&b, "workload: {requests: %d}\nstrategies:\n  - {name: a, backoff: {kind: full-jitter, base: 100ms, cap: 1s}, max_attempts: %d}\n", requests, attempts)
	return b.String()
}

// FuzzGraph checks graphs of services as herdlab validate does (Parse,
// lint's errors, Fit against fuzzGraphMemory and a small event budget),
// then runs what it accepts: no panic, no fatal error (a run beyond its
// estimate would die of one, as fan-outs of 1,000 over 6 edges did), and
// every accepted graph runs within its estimate: what the run allocates
// in all, an upper bound of its peak, is within a few times the bytes
// the estimate gives it.
func FuzzGraph(f *testing.F) {
	f.Add(uint16(2), uint16(3), uint16(0), uint16(1), uint16(10), uint16(3), uint16(2), uint32(0), uint32(100), true, uint16(20), uint16(100))
	f.Add(uint16(6), uint16(1000), uint16(0), uint16(1), uint16(0), uint16(0), uint16(1), uint32(0), uint32(1), false, uint16(60), uint16(1000))
	f.Add(uint16(1), uint16(1), uint16(0), uint16(1), uint16(10), uint16(2), uint16(1), uint32(10_000_000), uint32(10), false, uint16(10), uint16(1000))
	f.Add(uint16(4), uint16(1), uint16(0), uint16(10_000), uint16(10), uint16(2), uint16(1), uint32(0), uint32(100), false, uint16(300), uint16(1000))
	f.Add(uint16(3), uint16(10), uint16(5), uint16(2), uint16(0), uint16(0), uint16(4), uint32(1000), uint32(50), true, uint16(30), uint16(10))
	f.Fuzz(func(t *testing.T, layers, fanout, quorum, replicas, concurrency, attempts, edgeAttempts uint16, keys, requests uint32, outage bool, seconds, bucketMs uint16) {
		layers %= 8
		y := graphYAML(layers, fanout, quorum, replicas, concurrency, attempts, edgeAttempts, keys, requests, outage, seconds, bucketMs)
		sc, err := scenarios.Parse("fuzz.yaml", []byte(y))
		if err != nil {
			return
		}
		if len(scenarios.LintErrors(sc, nil)) > 0 {
			return // refused up front
		}
		opts := Options{Parallel: 1, MaxEvents: fuzzEvents, MaxMemory: fuzzGraphMemory}
		if _, err := Fit(sc, opts, fuzzGraphMemory); err != nil {
			var se *scenarios.Error
			if !errors.As(err, &se) || se.Line < 1 || se.Path == "" {
				t.Fatalf("refused without a position: %v", err)
			}
			return
		}
		n := Estimate(sc, opts)
		before := allocated()
		res, err := Run(context.Background(), sc, opts)
		used := allocated() - before
		if err != nil {
			if errors.Is(err, ErrEventBudget) || errors.Is(err, ErrStuck) {
				return
			}
			t.Fatalf("run failed: %v\n%s", err, y)
		}
		for _, r := range res.Runs {
			checkRun(t, r)
		}
		// A run's own allocations: its world, its results, and the
		// garbage of a short run (event chunks, slices grown by
		// appending), within 4x the estimate and 16 MB.
		if bound := 4*(n.PerRun+n.Kept)*int64(n.Runs) + 16<<20; int64(used) > bound {
			t.Fatalf("the run allocated %d bytes, its estimate %d a run (%d runs): beyond %d\n%s", used, n.PerRun+n.Kept, n.Runs, bound, y)
		}
	})
}

// allocated returns the bytes the process has allocated on its heap so
// far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
