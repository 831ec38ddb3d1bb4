//go:build linux && (amd64 || arm64)

package results

import (
	"runtime"
	"syscall"
	"unsafe"
)

// renameat2 is the system call that can exchange two paths.
var renameat2 = map[string]uintptr{"amd64": 316, "arm64": 276}[runtime.GOARCH]

// renameExchange swaps the folders at a and b in one step (renameat2 with
// RENAME_EXCHANGE), so that no reader ever finds b missing or mixed.
func renameExchange(a, b string) error {
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	const renameExchange = 2
	atFDCWD := -100
	_, _, errno := syscall.Syscall6(renameat2, uintptr(atFDCWD), uintptr(unsafe.Pointer(pa)), uintptr(atFDCWD), uintptr(unsafe.Pointer(pb)), renameExchange, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
