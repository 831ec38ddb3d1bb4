//go:build unix

package realhttp

import "syscall"

// driverOpenFileLimit returns the process's soft limit on open files
// (RLIMIT_NOFILE), and false when it cannot be read.
func driverOpenFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
