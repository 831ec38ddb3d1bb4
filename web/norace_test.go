//go:build !race

package web

// raceDetector is set in a test binary built with -race.
const raceDetector = false
