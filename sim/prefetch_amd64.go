package sim

import "unsafe"

// canPrefetch says that prefetch and prefetchGraph prefetch.
const canPrefetch = true

// prefetch asks the CPU to start loading the cache line at p, without
// waiting for it.
//
//go:noescape
func prefetch(p unsafe.Pointer)

// prefetchGraph prefetches, for each of events, the call it names where
// callKinds has the bit of its kind, or where jobKinds has it, the job it
// names (of 64 bytes) and that job's call (its first field, read: jobs
// must hold njobs of them); and with the call, where endKinds has the
// bit, its creation time. An index out of range names nothing. It is
// the loop of graph.prefetchEvents in one call.
//
//go:noescape
func prefetchGraph(events []event, calls unsafe.Pointer, ncalls int, created unsafe.Pointer, jobs unsafe.Pointer, njobs int, callKinds, jobKinds, endKinds uint64)

// The layout prefetchGraph reads: an index out of range here fails
// the build.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(event{})-24]
	_ = [1]struct{}{}[unsafe.Offsetof(event{}.sk)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(event{}.a)-16]
	_ = [1]struct{}{}[unsafe.Sizeof(call{})-32]
	_ = [1]struct{}{}[unsafe.Sizeof(job{})-64] // prefetch_amd64.s: a job at a<<6
	_ = [1]struct{}{}[unsafe.Offsetof(job{}.call)]
)
