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
)

func TestDLQReplayLosesNothing(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "down.yaml", `name: down
duration: 10s
server:
  concurrency: 10
  outages: [{start: 0s, duration: 1h, mode: error}]
workload: {requests: 20}
strategies:
  - {name: three, backoff: {kind: fixed, delay: 1s}, max_attempts: 3}
`)
	out := filepath.Join(dir, "out")
	code, _, stderr := herdlab("replay", file, "--time-scale", "0.02", "-o", out, "-q")
	require.Equal(t, exitOK, code, stderr)
	letters := filepath.Join(out, "dlq.jsonl")

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
	assert.Contains(t, stdout, "20 dead letters read, 20 sent, 20 delivered, 0 failed")
	assert.Len(t, keys, 20, "every dead letter, each with its own key")
	for k, n := range keys {
		assert.Equal(t, 1, n, k)
		assert.Len(t, k, 36, "a UUID")
	}
	assert.NoFileExists(t, letters+".failed.jsonl")

	// Still down: every letter fails and is kept.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	code, _, _ = herdlab("dlq", "replay", letters, "--target", down.URL, "--rate", "1000")
	assert.Equal(t, exitFailed, code)
	kept, err := os.ReadFile(letters + ".failed.jsonl")
	require.NoError(t, err)
	assert.Equal(t, 20, bytes.Count(kept, []byte("\n")), "one line a letter")
}

func TestDLQBadInput(t *testing.T) {
	code, _, stderr := herdlab("dlq", "replay", "x.jsonl")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, stderr, "--target URL is required")
	code, _, _ = herdlab("dlq", "resend", "x.jsonl", "--target", "http://127.0.0.1:1/")
	assert.Equal(t, exitBadInput, code)
}
