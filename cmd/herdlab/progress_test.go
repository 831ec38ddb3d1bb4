package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

func TestProgressIsSilentOffATerminal(t *testing.T) {
	var buf bytes.Buffer
	assert.Nil(t, startProgress(&buf, "x", 100), "not a file")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	p := startProgress(w, "x", 100)
	assert.Nil(t, p, "a pipe is not a terminal")
	p.add(5) // a nil progress takes work and shows nothing
	p.finish()
}

// TestETA follows the estimate of the time left through work whose units
// get cheaper, as a simulation's do once the herd has passed: the
// estimate goes by the last five seconds, not by the average since the
// start, which lags behind such work.
func TestETA(t *testing.T) {
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	tests := []struct {
		at   float64 // seconds since the work began
		done int     // of 100 units
		left float64 // seconds; -1: no estimate yet
	}{
		{0.1, 0, -1}, // nothing done: no rate
		{1, 5, 19},   // 5 a second since the start: 95 / 5
		{2, 10, 18},  // 90 / 5
		{5, 25, 75 / (25 / 4.9)},
		{6, 45, 55.0 / 8},  // the last 5 s, from (1 s, 5): 40 units, 8 a second
		{7, 65, 35.0 / 11}, // from (2 s, 10): 55 in 5 s (the average since the start says 3.8 s)
		{9, 100, 0},        // done
	}
	var e eta
	for _, tt := range tests {
		e.observe(sec(tt.at), tt.done)
		left, ok := e.left(100)
		if tt.left < 0 {
			assert.False(t, ok, "at %vs", tt.at)
			continue
		}
		require.True(t, ok, "at %vs", tt.at)
		assert.InDelta(t, tt.left, left.Seconds(), 0.01, "at %vs", tt.at)
	}
}

func TestTiming(t *testing.T) {
	assert.Equal(t, "3s", timing(3200*time.Millisecond, 0, false))
	assert.Equal(t, "3s, about 11s left", timing(3200*time.Millisecond, 10600*time.Millisecond, true))
	assert.Equal(t, "1m5s, almost done", timing(65*time.Second, 400*time.Millisecond, true))
}

// TestProgressCountsTheTimeBeforeItShows: the elapsed time is the work's,
// not the bar's (which appears only after a while).
func TestProgressCountsTheTimeBeforeItShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := showProgress(&buf, "herd", 100, 2*time.Second, 100*time.Millisecond)
		time.Sleep(time.Second)
		p.add(50)
		time.Sleep(1150 * time.Millisecond) // the bar shows at 2 s, and draws at 2.1 s
		p.finish()
		assert.Contains(t, buf.String(), "herd 2s, about 2s left", "2.1 s of work for half of it")
	})
}

// syncBuffer is a bytes.Buffer that another goroutine (a progress bar, a
// command) writes while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestProgressEndsAtDoneWhenTheWorkEndsEarly: a herd's runs end when
// their last request is finished, at a sixth of their horizon; the bar's
// last line says 100% and done, and stays (it was cleared, after sitting
// at the share of the horizon passed).
func TestProgressEndsAtDoneWhenTheWorkEndsEarly(t *testing.T) {
	sc, err := scenarios.Parse("herd.yaml", []byte(`
duration: 15m
server: {concurrency: 100, service_time: {dist: exponential, mean: 100ms}, queue: 1000, outages: [{start: 0s, duration: 30s, mode: refuse}]}
workload: {requests: 20000, arrival: {kind: burst, at: 0s}}
strategies: [{name: full-jitter, backoff: {kind: full-jitter, base: 1s, cap: 60s}, max_attempts: 10, timeout: 10s}]
`))
	require.NoError(t, err)
	var buf syncBuffer
	p := showProgress(&buf, "herd", sim.ProgressUnits, 0, time.Millisecond)
	res, err := sim.Run(context.Background(), sc, sim.Options{Progress: p.add})
	require.NoError(t, err)
	require.NotNil(t, res.Runs[0].Completion)
	require.Less(t, *res.Runs[0].Completion, sc.Duration/2, "the work ends early")
	p.finish()
	out := buf.String()
	require.True(t, strings.HasSuffix(out, "\n"), "the last line stays: %q", out)
	lines := strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
	last := lines[len(lines)-1]
	assert.Contains(t, last, "100%", last)
	assert.Regexp(t, `herd \d+s, done\s*$`, last)
}

// TestProgressSaysStopped: work cut short does not end at 100%.
func TestProgressSaysStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		p := showProgress(&buf, "herd", 100, 0, 100*time.Millisecond)
		p.add(40)
		time.Sleep(time.Second)
		p.finish()
		lines := strings.FieldsFunc(buf.String(), func(r rune) bool { return r == '\r' || r == '\n' })
		last := lines[len(lines)-1]
		assert.Contains(t, last, "40%", last)
		assert.NotContains(t, last, "100%", last)
		assert.Regexp(t, `herd 1s, stopped\s*$`, last)
	})
}
