package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/realhttp"
)

func TestDLQReplayLosesNothing(t *testing.T) {
	dir := t.TempDir()
	// Buckets of 10 s: the replay keeps time under the race detector.
	file := writeScenario(t, dir, "down.yaml", `name: down
duration: 10s
bucket: 10s
server:
  concurrency: 10
  outages: [{start: 0s, duration: 1h, mode: error}]
workload: {requests: 20}
strategies:
  - {name: three, backoff: {kind: fixed, delay: 1s}, max_attempts: 3}
`)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "--time-scale", "0.1", "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	letters := filepath.Join(out, "dlq.jsonl")
	failed := filepath.Join(out, "dlq.failed.jsonl")

	// The destination is fixed: a server that records the keys it gets.
	var mu sync.Mutex
	keys := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
	}))
	defer srv.Close()
	code, stdout, stderr := herdlab("dlq", "replay", letters, "--target", srv.URL, "--rate", "1000")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, letters+": 20 dead letters read, 20 sent, 20 delivered, 0 failed")
	assert.Len(t, keys, 20, "every dead letter, each with its own key")
	for k, n := range keys {
		assert.Equal(t, 1, n, k)
		assert.Len(t, k, 36, "a UUID")
	}
	assert.NoFileExists(t, failed)

	// Still down: every letter fails and is kept, with why.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	code, _, stderr = herdlab("dlq", "replay", letters, "--target", down.URL, "--rate", "1000")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "20 not delivered: see "+failed)
	assert.NoFileExists(t, letters+".failed.jsonl")
	kept := readLetters(t, failed)
	require.Len(t, kept, 20, "one line a letter")
	for _, l := range kept {
		assert.Equal(t, 4, l.Attempts, "three, and this one")
		assert.Equal(t, "5xx", l.Outcome)
		assert.Equal(t, http.StatusServiceUnavailable, l.Status, "why it failed this time")
	}

	// What is left, sent again to a server that is back: the file of
	// what failed is replaced, and with nothing left, is empty.
	code, _, stderr = herdlab("dlq", "replay", failed, "--target", down.URL, "--rate", "1000")
	assert.Equal(t, exitFailed, code, stderr)
	again := readLetters(t, failed)
	require.Len(t, again, 20)
	assert.Equal(t, 5, again[0].Attempts, "the same file, one more attempt")
	code, _, stderr = herdlab("dlq", "replay", failed, "--target", srv.URL, "--rate", "1000")
	require.Equal(t, exitOK, code, stderr)
	left, err := os.ReadFile(failed)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing left")
}

// readLetters reads a dead-letter file.
func readLetters(t *testing.T, path string) []realhttp.DriverDeadLetter {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	letters, err := realhttp.DriverReadDeadLetters(bytes.NewReader(data))
	require.NoError(t, err)
	return letters
}

func TestDLQFailedName(t *testing.T) {
	for in, want := range map[string]string{
		"out/x/dlq.jsonl":        "out/x/dlq.failed.jsonl",
		"out/x/dlq.failed.jsonl": "out/x/dlq.failed.jsonl",
		"letters":                "letters.failed.jsonl",
	} {
		assert.Equal(t, want, failedName(in), in)
	}
}

func TestDLQBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"request\": 1, \"key\": \"nope\"}\nnot json\n"), 0o644))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "replay", "x.jsonl"}, "--target URL is required"},
		{[]string{"dlq", "resend", "x.jsonl", "--target", "http://127.0.0.1:1/"}, "usage: herdlab dlq replay"},
		{[]string{"dlq", "replay", "x.jsonl", "--target", "127.0.0.1:1"}, "--target: "},
		{[]string{"dlq", "replay", "x.jsonl", "--target", "http://127.0.0.1:1/", "--rate", "0"}, "--rate 0: want a number > 0"},
		{[]string{"dlq", "replay", filepath.Join(dir, "missing.jsonl"), "--target", "http://127.0.0.1:1/"}, filepath.Join(dir, "missing.jsonl")},
		{[]string{"dlq", "replay", bad, "--target", "http://127.0.0.1:1/"}, bad + ": realhttp: reading dead letters: line 1: key \"nope\""},
		{[]string{"dlq", "replay", bad, "--target", "http://127.0.0.1:1/"}, "line 2: "},
	}
	for _, tt := range tests {
		code, _, stderr := herdlab(tt.args...)
		assert.Equal(t, exitBadInput, code, tt.args)
		assert.Contains(t, stderr, tt.want, tt.args)
	}
	assert.NoFileExists(t, filepath.Join(dir, "bad.failed.jsonl"), "bad input writes nothing")
}
