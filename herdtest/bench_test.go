package herdtest

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTenThousandSenders runs 10,000 senders of a hand-written
// loop (go-retryablehttp's default waits: 1, 2, 4, 8 s, 5 attempts)
// through a 30 s outage, and reports the CPU time a run takes, the
// attempts per CPU second and the peak memory per sender (heap and
// stacks in use, polled every 10 ms, less what was in use before).
func BenchmarkTenThousandSenders(b *testing.B) {
	benchSenders(b, "testdata/bench-10k.yaml", 10_000)
}

func benchSenders(b *testing.B, file string, senders int) {
	client := exponentialLoop(5, time.Second, 30*time.Second)
	var attempts float64
	var cpu time.Duration
	var peak uint64
	for b.Loop() {
		runtime.GC()
		base := inUse()
		stop, peakOf := pollPeak()
		before := cpuTime()
		res := Run(b, file, Clients{"loop": client}, Options{Only: true, NoRepeat: true, NoChecks: true})
		cpu += cpuTime() - before
		stop()
		peak = max(peak, peakOf()-min(base, peakOf()))
		attempts += res.Summary.Strategies[0].Attempts
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(attempts/cpu.Seconds(), "attempts/cpu-s")
	b.ReportMetric(float64(peak)/float64(senders), "B/sender")
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inUse returns the heap objects' and goroutine stacks' bytes now.
func inUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// pollPeak polls inUse every 10 ms until stop; peak returns the most
// seen.
func pollPeak() (stop func(), peak func() uint64) {
	var mu sync.Mutex
	var most uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			v := inUse()
			mu.Lock()
			most = max(most, v)
			mu.Unlock()
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }, func() uint64 { mu.Lock(); defer mu.Unlock(); return most }
}

// BenchmarkFiftyThousandSenders is BenchmarkTenThousandSenders with
// 50,000 senders and a server five times larger.
func BenchmarkFiftyThousandSenders(b *testing.B) {
	benchSenders(b, "testdata/bench-50k.yaml", 50_000)
}
