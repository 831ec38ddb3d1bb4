package main_test

import (
	"testing"

	"github.com/zeontools/herdlab/internal/pgo"
)

// TestTheProfileIsOfThisCode checks that the functions default.pgo finds
// hottest in herdlab are still in its source: the go command builds the
// module with default.pgo, and a profile of code that is gone optimises
// nothing (BenchmarkAgainstNative measures what it gains). When the
// simulator is rewritten, it fails until the profile is made anew.
func TestTheProfileIsOfThisCode(t *testing.T) {
	pgo.Check(t, "default.pgo", "../..", "go test ./web/wasm -pgo=off -run '^$' -bench '^BenchmarkProfile$' -benchtime 10x -cpuprofile web/wasm/default.pgo -o /tmp/wasm.test")
}
