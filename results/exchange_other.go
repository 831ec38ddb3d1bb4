//go:build !(linux && (amd64 || arm64))

package results

import "errors"

// renameExchange is not available here: Commit falls back to two renames.
func renameExchange(a, b string) error { return errors.ErrUnsupported }

// SyncFS makes dir's folder entries durable; elsewhere than Linux, the
// files written with WriteFileWhole in it may still be lost to a power
// loss, and a sweep that resumes makes those records again.
func SyncFS(dir string) error { return syncDir(dir) }
