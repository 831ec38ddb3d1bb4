package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zeontools/herdlab/internal/pgo"
)

// TestTheProfileIsOfThisCode checks that the functions default.pgo finds
// hottest in herdlab are still in its source: the go command builds the
// herdlab command with default.pgo (profile-guided optimisation), and a
// profile of code that is gone optimises nothing. When the simulator is
// rewritten, it fails until the profile is made anew (BenchmarkProfile).
func TestTheProfileIsOfThisCode(t *testing.T) {
	pgo.Check(t, "default.pgo", "../..", "go test ./cmd/herdlab -pgo=off -run '^$' -bench '^BenchmarkProfile$' -benchtime 2x -cpuprofile cmd/herdlab/default.pgo -o /tmp/herdlab.test")
}

// BenchmarkProfile runs what the command's profile, default.pgo, is made
// of: the work users run most, as they run it. A run of
// thundering-herd.yaml and of million.yaml, and the AWS study's sweep
// (aws-occ-10.yaml from 10 to 190 clients), each writing its outputs.
// Run it without a profile (-pgo=off), so that the profile is of the code
// as it is without one:
//
//	go test ./cmd/herdlab -pgo=off -run '^$' -bench '^BenchmarkProfile$' -benchtime 2x -cpuprofile cmd/herdlab/default.pgo -o /tmp/herdlab.test
func BenchmarkProfile(b *testing.B) {
	var clients []string
	for n := 10; n <= 190; n += 10 {
		clients = append(clients, fmt.Sprint(n))
	}
	jobs := [][]string{
		{"run", "../../scenarios/thundering-herd.yaml", "-q"},
		{"run", "../../scenarios/million.yaml", "-q"},
		{"sweep", "../../scenarios/aws-occ-10.yaml", "--vary", "workload.requests=" + strings.Join(clients, ","), "-q"},
	}
	for b.Loop() {
		for _, args := range jobs {
			if code, _, errOut := herdlab(append(args, "-o", b.TempDir()+"/out")...); code != exitOK {
				b.Fatalf("herdlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
		}
	}
}
