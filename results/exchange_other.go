//go:build !(linux && (amd64 || arm64))

package results

import "errors"

// renameExchange is not available here: Commit falls back to two renames.
func renameExchange(a, b string) error { return errors.ErrUnsupported }
