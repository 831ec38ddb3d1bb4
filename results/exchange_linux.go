//go:build linux && (amd64 || arm64)

package results

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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

// SyncFS makes durable every file written on the file system that holds
// dir, the WriteFileWhole files and their folder entries among them
// (syncfs(2)): one call for thousands of files.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
