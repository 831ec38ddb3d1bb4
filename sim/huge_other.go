//go:build !linux

package sim

import "unsafe"

// adviseHuge does nothing on this system.
func adviseHuge(unsafe.Pointer, uintptr) {}
