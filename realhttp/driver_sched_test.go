//go:build unix

package realhttp

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDriverScheduler compares two ways of releasing pending retries
// when they are due: the driver's (a heap of events owned by one loop
// goroutine that sleeps on one timer) and time.AfterFunc per pending
// retry (a runtime timer each, whose callback runs in a goroutine of its
// own and hands the retry to the loop over a channel). Each iteration
// schedules n retries due uniformly over 100 ms and releases them all; it
// reports the CPU time per retry (user + system, the whole process) and
// how late the loop got them (p50, p99).
func BenchmarkDriverScheduler(b *testing.B) {
	const window = 100 * time.Millisecond
	for _, n := range []int{1_000, 10_000, 100_000} {
		r := rand.New(rand.NewPCG(1, 2))
		dues := make([]time.Duration, n)
		for i := range dues {
			dues[i] = time.Duration(r.Int64N(int64(window)))
		}
		for _, kind := range []string{"heap", "afterfunc"} {
			b.Run(kind+"/pending="+strconv.Itoa(n), func(b *testing.B) {
				late := make([]time.Duration, 0, n)
				var cpu time.Duration
				for b.Loop() {
					late = late[:0]
					before := driverCPUTime()
					if kind == "heap" {
						late = driverReleaseHeap(dues, late)
					} else {
						late = driverReleaseAfterFunc(dues, late)
					}
					cpu += driverCPUTime() - before
				}
				slices.Sort(late)
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/retry")
				b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-p50-µs")
				b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "late-p99-µs")
			})
		}
	}
}

// driverReleaseHeap releases retries due at dues (from now) as the
// driver's loop does, and appends how late each was released.
func driverReleaseHeap(dues []time.Duration, late []time.Duration) []time.Duration {
	var q driverQueue
	start := time.Now()
	for i, at := range dues {
		q.push(at, drvTry, int32(i), 0)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for q.len() > 0 {
		elapsed := time.Since(start)
		for q.len() > 0 && q.items[0].at <= elapsed {
			e := q.pop()
			late = append(late, elapsed-e.at)
		}
		if e, ok := q.peek(); ok {
			timer.Reset(e.at - elapsed)
			<-timer.C
		}
	}
	return late
}

// driverReleaseAfterFunc releases retries due at dues (from now) with a
// time.AfterFunc each, and appends how late the loop got each.
func driverReleaseAfterFunc(dues []time.Duration, late []time.Duration) []time.Duration {
	ch := make(chan int32, 4096)
	start := time.Now()
	for i, at := range dues {
		time.AfterFunc(at-time.Since(start), func() { ch <- int32(i) })
	}
	for range dues {
		i := <-ch
		late = append(late, time.Since(start)-dues[i])
	}
	return late
}

// driverCPUTime returns the CPU time the process has used.
func driverCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
