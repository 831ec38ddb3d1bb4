//go:build !(linux || darwin || freebsd || netbsd || dragonfly)

package main

// addressSpaceLimit reports no address-space limit where the system has
// no RLIMIT_AS.
func addressSpaceLimit() (int64, bool) { return 0, false }
