//go:build linux || darwin || freebsd || netbsd || dragonfly

package main

import "syscall"

// addressSpaceLimit returns the process's address-space limit in bytes
// (RLIMIT_AS, as `ulimit -v` sets it), and false when there is none
// (RLIM_INFINITY, all ones on Linux).
func addressSpaceLimit() (int64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &l); err != nil || l.Cur > 1<<62 {
		return 0, false
	}
	return int64(l.Cur), true
}
