//go:build !amd64

package sim

import "unsafe"

// canPrefetch is false: the engine skips the work of finding what to
// prefetch.
const canPrefetch = false

// prefetch does nothing on this architecture.
func prefetch(unsafe.Pointer) {}

// prefetchGraph does nothing on this architecture.
func prefetchGraph([]event, unsafe.Pointer, int, unsafe.Pointer, unsafe.Pointer, int, uint64, uint64, uint64) {
}
