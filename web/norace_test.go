//go:build !race

package web

import "testing"

// raceDetector is set in a test binary built with -race.
const raceDetector = false

// skipUnderRace skips a test under the race detector (see race_test.go).
func skipUnderRace(*testing.T) {}
