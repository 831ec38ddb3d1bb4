package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/realhttp"
)

func TestServe(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "served.yaml", `server: {concurrency: 2, service_time: 10ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	log := filepath.Join(dir, "requests.jsonl")
	require.NoError(t, os.WriteFile(log, []byte("an older log\n"), 0o644))
	work, control, stdout := serveForTest(t, "--scenario", file, "--log", log)

	resp, err := http.Post(work, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	for _, url := range []string{control + "metrics", work + "metrics"} {
		metrics, err := http.Get(url)
		require.NoError(t, err)
		body, _ := io.ReadAll(metrics.Body)
		metrics.Body.Close()
		assert.Contains(t, string(body), "herdlab_server_attempts_total", url)
	}
	state, err := http.Get(control + "control/state")
	require.NoError(t, err)
	body, _ := io.ReadAll(state.Body)
	state.Body.Close()
	assert.Contains(t, string(body), `"scenario":"served"`)
	assert.Contains(t, stdout.String(), "time scale 1")
	older, err := os.ReadFile(log + ".1")
	require.NoError(t, err)
	assert.Equal(t, "an older log\n", string(older), "an existing log is kept, not truncated")
}

func TestServeStops(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "served.yaml", `server: {service_time: 1ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--scenario", file, "--addr", "0.0.0.0:0", "--metrics-addr", "127.0.0.1:0"}, w, &stderr)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(line, "serving served at http://"), line)
	go io.Copy(io.Discard, out)
	cancel() // as SIGINT would
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Contains(t, stderr.String(), "warning: --addr [::]:", "every interface")
	assert.Contains(t, stderr.String(), "beyond this machine, and the test server has no authentication")
	assert.NotContains(t, stderr.String(), "--metrics-addr 127.0.0.1", "loopback is not warned about")
}

func TestServePrintsItsCountsWhenItStops(t *testing.T) {
	// A key sent twice is processed twice (no idempotency): serve's last
	// line counts both attempts and the duplicate.
	dir := t.TempDir()
	file := writeScenario(t, dir, "served.yaml", `server: {service_time: 1ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--scenario", file, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, w, io.Discard)
		w.Close()
	}()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/) `).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, m[1], nil)
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	cancel() // as SIGINT would
	rest, _ := io.ReadAll(r)
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Regexp(t, `(^|\n)served 2 attempts: 2 processed, 1 duplicates \(processed again for a key\), 0 store errors, 0 times the store lost its data\n$`, string(rest))
}

func TestServePrintsOutagesAndStopsWhenItsAddressIsTaken(t *testing.T) {
	// At scale 0.1 the refuse outage lasts 300 ms; the test takes the
	// address meanwhile, so serve cannot serve the scenario on: it
	// says so, and exits 1.
	dir := t.TempDir()
	file := writeScenario(t, dir, "down.yaml", `server:
  service_time: 1ms
  outages: [{start: 0s, duration: 3s, mode: refuse}]
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	out, w := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"serve", "--scenario", file, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--time-scale", "0.1"}, w, &stderr)
		w.Close()
	}()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	m := regexp.MustCompile(`at http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	thief, err := net.Listen("tcp", m[1])
	require.NoError(t, err, "the address is free during the refuse outage")
	defer thief.Close()
	rest, _ := io.ReadAll(r)
	select {
	case code := <-done:
		assert.Equal(t, exitFailed, code)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Regexp(t, `t=0s: refuse outage starts, until t=3s\n.*t=3s: refuse outage ends\n`, string(rest))
	assert.Contains(t, stderr.String(), "cannot re-open "+m[1])
	assert.Contains(t, stderr.String(), "stopping, since the scenario cannot be served")
}

func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	occ := writeScenario(t, dir, "occ.yaml", `server: {model: occ}
network: {latency: 10ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	ok := writeScenario(t, dir, "ok.yaml", `server: {service_time: 1ms}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	log := filepath.Join(dir, "log.jsonl")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--scenario FILE.yaml is required"},
		{[]string{"serve", "--scenario", occ, "--time-scale", "0"}, "--time-scale 0: want a finite number > 0"},
		{[]string{"serve", "--scenario", occ}, "occ"},
		{[]string{"serve", "--scenario", dir + "/nope.yaml"}, "cannot read"},
		{[]string{"serve", "--scenario", ok, "--idempotency-store", "redis://127.0.0.1:1/0"}, "--idempotency-store: realhttp: idempotency store"},
		{[]string{"serve", "--scenario", ok, "--addr", "nohost"}, "--addr: bad address"},
		{[]string{"serve", "--scenario", ok, "--addr", "127.0.0.1:99999"}, "--addr: bad address"},
		{[]string{"serve", "--scenario", ok, "--metrics-addr", "x:y:z"}, "--metrics-addr: bad address"},
		{[]string{"serve", "--scenario", ok, "--addr", taken.Addr().String(), "--metrics-addr", "127.0.0.1:0", "--log", log}, "--addr " + taken.Addr().String() + ": "},
		{[]string{"serve", "--scenario", ok, "--addr", "127.0.0.1:0", "--metrics-addr", taken.Addr().String()}, "--metrics-addr " + taken.Addr().String() + ": "},
		{[]string{"serve", "--scenario", ok, "--max-conns", "-1"}, "--max-conns -1: want a number >= 0"},
		{[]string{"serve", "--scenario", ok, "--max-conns", "100000000"}, "ulimit -n"},
		{[]string{"serve", "--scenario", ok, "--idempotency-lease", "2h", "--idempotency-ttl", "1h"}, "--idempotency-lease 2h0m0s: want at most --idempotency-ttl"},
		{[]string{"serve", "--scenario", ok, "--store-timeout", "0s"}, "--store-timeout 0s: want a duration > 0"},
		{[]string{"serve", "--scenario", ok, "--duplicate-window", "0"}, "--duplicate-window 0: want a number > 0"},
		{[]string{"serve", "--scenario", ok, "--log-max-mb", "0"}, "--log-max-mb 0: want a number > 0"},
		{[]string{"serve", "--scenario", ok, "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		code, _, stderr := herdlab(tt.args...)
		assert.Equal(t, exitBadInput, code, tt.args)
		assert.Contains(t, stderr, tt.want, tt.args)
	}
}

func TestServeWarnsWithoutPersistence(t *testing.T) {
	// A Redis without persistence would lose every key in a restart:
	// serve warns before it serves.
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("HERDLAB_REQUIRE_REDIS") != "" {
			t.Fatalf("redis-server is not on the PATH, and HERDLAB_REQUIRE_REDIS is set: %v", err)
		}
		t.Skip("redis-server is not on the PATH (apt-get install redis-server; .ci/run does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	redis := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	require.NoError(t, redis.Start())
	defer func() { redis.Process.Kill(); redis.Wait() }()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)

	dir := t.TempDir()
	file := writeScenario(t, dir, "keys.yaml", `server: {service_time: 1ms, idempotency: true}
workload: {requests: 1}
strategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--scenario", file, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
			"--idempotency-store", "redis://127.0.0.1:" + port + "/0"}, w, &stderr)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(line, "serving "), line)
	go io.Copy(io.Discard, out)
	cancel()
	assert.Equal(t, exitOK, <-done)
	assert.Contains(t, stderr.String(), "warning: realhttp: the idempotency store is not durable: redis://127.0.0.1:"+port+"/0 has appendonly no")
	assert.NotContains(t, stderr.String(), "pool.go", "go-redis's own log lines do not reach the user")
}

func TestServeControlRefusesOtherPages(t *testing.T) {
	// serve's control endpoint is a server on the user's machine: a page
	// of another site may not reset it (a cross-origin POST, a text/plain
	// body) nor read it through a name rebound to 127.0.0.1; herdlab
	// replay --control still resets it. For a server and a graph alike.
	dir := t.TempDir()
	server := writeScenario(t, dir, "served.yaml", "server: {service_time: 1ms}\nworkload: {requests: 1}\nstrategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]\n")
	graph := writeScenario(t, dir, "graph.yaml", graphSmall)
	for _, file := range []string{server, graph} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, control, _ := serveForTest(t, "--scenario", file)
			resets := func() int {
				st, err := realhttp.Control{URL: control}.State(context.Background())
				require.NoError(t, err)
				return st.Resets
			}
			tests := []struct {
				name, method, path, host, ctype, origin, site string
				want                                          int
				why                                           string
			}{
				{"cross-origin reset", "POST", "control/reset", "", "text/plain", "http://evil.example", "cross-site", 403, "another origin"},
				{"cross-origin reset, an old browser", "POST", "control/reset", "", "application/json", "http://evil.example", "", 403, "another origin"},
				{"rebound reset", "POST", "control/reset", "rebind.example", "application/json", "", "", 403, "is not this server's address"},
				{"rebound state", "GET", "control/state", "rebind.example:8081", "", "", "", 403, "is not this server's address"},
				{"a text/plain reset", "POST", "control/reset", "", "text/plain", "", "", 415, "must be application/json"},
			}
			for _, tt := range tests {
				req, err := http.NewRequest(tt.method, control+tt.path, strings.NewReader(`{"seed": 1}`))
				require.NoError(t, err)
				if tt.method == "GET" {
					req.Body, req.ContentLength = nil, 0
				}
				if tt.host != "" {
					req.Host = tt.host
				}
				for k, v := range map[string]string{"Content-Type": tt.ctype, "Origin": tt.origin, "Sec-Fetch-Site": tt.site} {
					if v != "" {
						req.Header.Set(k, v)
					}
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, tt.want, resp.StatusCode, "%s: %s", tt.name, body)
				assert.Contains(t, string(body), tt.why, tt.name)
				assert.NotContains(t, string(body), "fingerprint", tt.name)
			}
			assert.Zero(t, resets(), "nothing was reset")
			_, err := realhttp.Control{URL: control}.Reset(context.Background(), 1)
			require.NoError(t, err, "herdlab replay's reset")
			assert.Equal(t, 1, resets())
		})
	}
}
