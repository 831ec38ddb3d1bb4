//go:build !race

package scenarios

import "testing"

// skipUnderRace skips a test under the race detector (see race_test.go).
func skipUnderRace(*testing.T) {}
