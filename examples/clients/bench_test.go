package clients

import (
	"flag"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeontools/herdlab/herdtest"
)

// BenchmarkRetryablehttp10k runs 10,000 senders with go-retryablehttp's
// defaults through a 30 s outage (testdata/outage-10k.yaml), and reports
// what a run costs: CPU seconds (user and system, the whole process's),
// attempts at the server per CPU second, and the peak of the heap and
// stacks in use during the run above what they were before, per sender.
func BenchmarkRetryablehttp10k(b *testing.B) {
	benchmarkOutage(b, "testdata/outage-10k.yaml", 10_000)
}

// BenchmarkRetryablehttp50k is the same with 50,000 senders (and a
// server 5 times the size). It takes about 20 s of CPU and 1.3 GB: it
// runs only when -bench names it (-bench 50k), not with -bench . .
func BenchmarkRetryablehttp50k(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "50k") {
		b.Skip("run with -bench 50k")
	}
	benchmarkOutage(b, "testdata/outage-50k.yaml", 50_000)
}

func benchmarkOutage(b *testing.B, path string, senders int) {
	b.ReportAllocs()
	opts := herdtest.Options{Only: true, NoRepeat: true, NoChecks: true}
	clients := herdtest.Clients{"retryablehttp-defaults": retryablehttpDefaults}
	runtime.GC()
	base := inUse()
	peak := newPeak(base, 20*time.Millisecond)
	cpu0 := cpuTime()
	var attempts float64
	for b.Loop() {
		res := herdtest.Run(b, path, clients, opts)
		attempts += res.Summary.Strategies[0].Attempts
	}
	cpu := (cpuTime() - cpu0).Seconds()
	top := peak.stop()
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
	b.ReportMetric(attempts/cpu, "attempts/cpu-s")
	b.ReportMetric(float64(top-base)/float64(senders), "peak-B/sender")
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inUse returns the bytes of heap spans and goroutine stacks in use
// (MemStats' HeapInuse + StackInuse), read without stopping the world.
func inUse() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	return n
}

// peak polls inUse every interval, from a goroutine of its own (outside
// any synctest bubble), and keeps the highest.
type peak struct {
	done chan struct{}
	wg   sync.WaitGroup
	max  uint64
}

func newPeak(start uint64, every time.Duration) *peak {
	p := &peak{done: make(chan struct{}), max: start}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			p.max = max(p.max, inUse())
			select {
			case <-t.C:
			case <-p.done:
				return
			}
		}
	})
	return p
}

// stop stops the polling and returns the peak.
func (p *peak) stop() uint64 {
	close(p.done)
	p.wg.Wait()
	return max(p.max, inUse())
}
