//go:build unix

package results

import (
	"errors"
	"syscall"
)

// alive reports whether the process pid exists (signal 0 checks without
// sending anything; EPERM: it exists, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
