//go:build !linux

package sim

import "time"

// threadCPU falls back to the wall clock where the system has no
// thread's CPU time to read (see threadcpu_linux_test.go).
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }
