package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServe(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "served.yaml", `server: {concurrency: 2, service_time: 10ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, w := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--scenario", file, "--addr", "127.0.0.1:0"}, w, io.Discard)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	go io.Copy(io.Discard, out)

	resp, err := http.Post(m[1], "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	metrics, err := http.Get(m[1] + "metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	assert.Contains(t, string(body), "herdlab_server_attempts_total")

	cancel() // as SIGINT would
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	occ := writeScenario(t, dir, "occ.yaml", `server: {model: occ}
network: {latency: 10ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--scenario FILE.yaml is required"},
		{[]string{"serve", "--scenario", occ, "--time-scale", "0"}, "--time-scale 0: want a number > 0"},
		{[]string{"serve", "--scenario", occ}, "occ"},
		{[]string{"serve", "--scenario", dir + "/nope.yaml"}, "cannot read"},
		{[]string{"serve", "--scenario", occ, "--idempotency-store", "redis://127.0.0.1:1/0"}, "idempotency store"},
	}
	for _, tt := range tests {
		code, _, stderr := herdlab(tt.args...)
		assert.Equal(t, exitBadInput, code, tt.args)
		assert.Contains(t, stderr, tt.want, tt.args)
	}
}
