//go:build !amd64

package sim

import "unsafe"

// prefetch does nothing on this architecture.
func prefetch(unsafe.Pointer) {}
