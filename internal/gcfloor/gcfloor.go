// Package gcfloor keeps the garbage collector's heap goal from falling
// below a floor, as cmd/compile does at its start (its
// base.AdjustStartingHeap, Go issue 56546).
//
// With a small live heap, Go collects every time the heap grows by 4 MiB
// or so. herdlab's small runs (a sweep point, or a scenario of a few
// clients run a hundred times) allocate their results and little else,
// and at the default a collection every hundred runs or so is half of
// what a run of one request costs beyond its events
// (sim.BenchmarkSmallRuns). A floor of a few tens of megabytes spares
// those collections; a run whose live heap is past half the floor
// collects at GOGC=100, as if there were none.
//
// The floor is the process's: one at a time.
package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// startGoal is the heap goal the runtime uses, by fiat, for a live heap
// smaller than it, at GOGC=100: it scales with GOGC.
const startGoal = 4 << 20

// the floor in force.
var (
	mu      sync.Mutex
	active  bool                    // between Set and restore
	floor   uint64                  // bytes
	ceiling uint64 = math.MaxUint64 // see Cap
	gen     int                     // counts Set calls, so that an old one's collections stop
	before  int                     // GOGC when Set was called
	sample  = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
)

// Set makes the collector's heap goal at least f bytes (or Cap's bound,
// if lower), from now on: now and after each collection, it sets GOGC so
// that the next one comes when the heap reaches the floor, or twice the
// live heap (GOGC=100), whichever is more. It does nothing when the GOGC
// environment variable is set, so that a user's choice stands. It owns
// GOGC until restore, which puts back the GOGC it found.
func Set(f uint64) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	if !active {
		before = debug.SetGCPercent(100)
	}
	active, floor = true, f
	gen++
	g := gen
	adjustLocked()
	forEachGC(func() bool {
		mu.Lock()
		defer mu.Unlock()
		if gen != g {
			return false
		}
		adjustLocked()
		return true
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if gen == g && active {
			active = false
			gen++
			debug.SetGCPercent(before)
		}
	}
}

// Cap bounds the floor, now and later, to at most c bytes (0: no floor;
// math.MaxUint64: no bound): what a memory limit leaves for the heap
// beside the program's own needs.
func Cap(c uint64) {
	mu.Lock()
	defer mu.Unlock()
	ceiling = c
	if active {
		adjustLocked()
	}
}

// adjustLocked sets GOGC for the floor and the live heap now.
func adjustLocked() {
	f := min(floor, ceiling)
	metrics.Read(sample)
	live := uint64(0)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = sample[0].Value.Uint64()
	}
	debug.SetGCPercent(percent(f, live))
}

// percent returns the GOGC that makes the heap goal f bytes for a live
// heap of live bytes, or 100 when that is less: the goal is the larger of
// live x (1 + GOGC/100) and startGoal x GOGC/100.
func percent(f, live uint64) int {
	switch {
	case live >= f/2:
		return 100
	case live == 0:
		return int(max(100*f/startGoal, 100))
	}
	return int(max(min(100*f/startGoal, 100*(f-live)/live), 100))
}

// forEachGC calls fn after each collection until it returns false: a
// finalizer re-arms itself on an object nothing else refers to.
func forEachGC(fn func() bool) {
	type sentinel [32]byte // too large for the tiny allocator
	var again func(*sentinel)
	again = func(p *sentinel) {
		if fn() {
			runtime.SetFinalizer(p, again)
		}
	}
	runtime.SetFinalizer(new(sentinel), again)
}
