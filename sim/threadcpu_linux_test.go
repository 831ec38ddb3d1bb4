package sim

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time (user and system) of the calling OS
// thread so far: what a measurement of the machine counts, not the
// host's scheduling of a shared VM, which the wall clock would count too.
// The caller locks its goroutine to the thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
