package sim

import "unsafe"

// prefetch asks the CPU to start loading the cache line at p, without
// waiting for it.
//
//go:noescape
func prefetch(p unsafe.Pointer)
