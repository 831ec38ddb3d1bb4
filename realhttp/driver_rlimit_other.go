//go:build !unix

package realhttp

// driverOpenFileLimit reports that the open-file limit is unknown on
// this platform: the check is skipped.
func driverOpenFileLimit() (uint64, bool) { return 0, false }
