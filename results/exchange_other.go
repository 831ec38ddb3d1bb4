//go:build !(linux && (amd64 || arm64))

package results

import "errors"

// exchange is not available here: Commit falls back to two renames.
func exchange(a, b string) error { return errors.ErrUnsupported }
