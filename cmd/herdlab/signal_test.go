//go:build !race

// How soon a signal stops herdlab is a matter of wall time, which the race
// detector stretches tenfold: make test runs this file in its second,
// plain go test.

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestASignalStopsEveryPhase sends SIGINT to herdlab while it checks a
// sweep's points, while it loads big files, and while it simulates: each
// stops within a second, exits 1, says it was interrupted, and leaves no
// output behind. The files are near the 1 MiB a scenario may be (20,000
// schedule steps), their sweeps vary the rate the schedule is checked
// against: validate takes about 15 s of CPU over 10,000 points, and run
// loads eight of them in about 4 s (checking a sweep what varies, one file
// took too little time to be caught at it).
func TestASignalStopsEveryPhase(t *testing.T) {
	dir := t.TempDir()
	var steps strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&steps, "      - {from: %ds, until: %d.5s, rate: 10}\n", i, i)
	}
	var slow []string
	for i := range 8 {
		slow = append(slow, writeScenario(t, dir, fmt.Sprintf("slow%d.yaml", i), fmt.Sprintf(`name: slow%d
duration: 10h
server: {concurrency: 10}
workload:
  requests: 100
  arrival:
    kind: poisson
    rate: 5
    schedule:
`, i)+steps.String()+`strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 10s}, max_attempts: 3}
sweep:
  vary:
    - {path: workload.arrival.rate, values: "1..100:100"}
    - {path: seed, values: "1..100:100"}
`))
	}
	long := writeScenario(t, dir, "long.yaml", `name: long
server:
  concurrency: 200
  outages: [{start: 0s, duration: 30s}]
workload: {requests: 1000000}
runs: 20
strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 60s}, max_attempts: 10}
`)
	out := filepath.Join(dir, "out")
	tests := []struct {
		phase string
		args  []string
		want  string
	}{
		// validate loads the file, then checks its sweep: a fast machine
		// is past the loading at the signal.
		{"validate", []string{"validate", slow[0]}, "interrupted while checking (the sweep of )?" + regexp.QuoteMeta(slow[0])},
		{"loading a run", append(append([]string{"run"}, slow...), "-o", out), "interrupted while loading " + regexp.QuoteMeta(filepath.Join(dir, "slow"))},
		{"simulating", []string{"run", long, "-o", out}, "interrupted while simulating long"},
	}
	for _, tt := range tests {
		t.Run(tt.phase, func(t *testing.T) {
			cmd := herdlabProcess(tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			time.Sleep(700 * time.Millisecond)
			sent := time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			err := cmd.Wait()
			took := time.Since(sent)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "exits with a code: %v; %s", err, stderr.String())
			assert.Equal(t, exitFailed, exit.ExitCode(), stderr.String())
			assert.Less(t, took, time.Second, "stops within a second of the signal")
			assert.Regexp(t, tt.want, stderr.String())
			assert.NoDirExists(t, out)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, len(slow)+1, "no temporary folder left")
		})
	}
}
