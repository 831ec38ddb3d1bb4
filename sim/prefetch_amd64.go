package sim

import "unsafe"

// prefetch asks the CPU to start loading the cache line at p, without
// waiting for it.
//
//go:noescape
func prefetch(p unsafe.Pointer)

// prefetchRequests prefetches, for each of events whose a is below n,
// the request at reqs (of 32 bytes) it names, and, where ends has the
// bit of its kind, its creation time at created (of 8 bytes): the loop
// of world.prefetchEvents in one call rather than a call a line.
//
//go:noescape
func prefetchRequests(events []event, reqs unsafe.Pointer, n int, created unsafe.Pointer, ends uint64)

// The layout prefetchRequests reads: an index out of range here fails
// the build.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(request{})-32]
	_ = [1]struct{}{}[unsafe.Sizeof(event{})-24]
	_ = [1]struct{}{}[unsafe.Offsetof(event{}.sk)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(event{}.a)-16]
)
