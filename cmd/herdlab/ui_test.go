package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startUI runs herdlab ui with args until the test ends, and returns the
// URL it printed and its stderr.
func startUI(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan int, 1)
	stderr := &syncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"ui"}, args...), w, stderr)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel() // as SIGINT would
		select {
		case code := <-done:
			assert.Equal(t, exitOK, code, stderr.String())
		case <-time.After(10 * time.Second):
			t.Error("ui did not stop")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go io.Copy(io.Discard, out)
	m := regexp.MustCompile(`^herdlab ui: the lab is at (http://\S+/) \(Ctrl-C stops it\)\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1], stderr
}

func TestUI(t *testing.T) {
	// The file named opens in the editor: config.json carries it.
	dir := t.TempDir()
	file := writeScenario(t, dir, "mine.yaml", "workload: {requests: 10}\nstrategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]\n")
	url, stderr := startUI(t, file, "--addr", "127.0.0.1:0")
	assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)
	resp, err := http.Get(url + "config.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var config struct {
		Engine  string
		Initial struct{ File, YAML string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&config))
	assert.Equal(t, "server", config.Engine)
	assert.Equal(t, "mine.yaml", config.Initial.File)
	assert.Contains(t, config.Initial.YAML, "requests: 10")
	page, err := http.Get(url)
	require.NoError(t, err)
	page.Body.Close()
	assert.Equal(t, http.StatusOK, page.StatusCode)
	assert.Empty(t, stderr.String(), "loopback is not warned about")
}

func TestUIWarnsBeyondLoopbackAndOpensAFileWithProblems(t *testing.T) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "bad.yaml", "workload: {requests: 10}\nstrategies: [{name: s, backoff: {kind: fixed}}]\n")
	_, stderr := startUI(t, file, "--addr", "0.0.0.0:0")
	assert.Contains(t, stderr.String(), "warning: --addr [::]:")
	assert.Contains(t, stderr.String(), "anyone who can reach it can run simulations here")
	assert.Contains(t, stderr.String(), "bad.yaml opens with its problems shown")
	assert.Contains(t, stderr.String(), "bad.yaml:2:")
}

func TestUIBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"ui", "no-such-file.yaml"},
		{"ui", "a.yaml", "b.yaml"},
		{"ui", "--addr", "nonsense"},
		{"ui", "--max-memory", "lots"},
		{"ui", "--parallel", "-1"},
		{"ui", "--max-runs", "-1"},
	} {
		code, _, stderr := herdlab(args...)
		assert.Equal(t, exitBadInput, code, "%v", args)
		assert.Contains(t, stderr, "herdlab ui: ", "%v", args)
	}
}

func TestUIAnswersOnlyItsOwnAddress(t *testing.T) {
	// herdlab ui refuses a Host that is not loopback nor the address it
	// listens on (DNS rebinding), on loopback and on every interface
	// alike; on every interface, the machine's addresses are its own.
	dir := t.TempDir()
	file := writeScenario(t, dir, "secret.yaml", "workload: {requests: 10}\nstrategies: [{name: once, backoff: {kind: none}, max_attempts: 1}]\n")
	get := func(url, host string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url+"config.json", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		url, _ := startUI(t, file, "--addr", addr)
		port := url[strings.LastIndex(url, ":")+1 : len(url)-1]
		local := "http://127.0.0.1:" + port + "/"
		code, body := get(local, "rebind.example:"+port)
		assert.Equal(t, http.StatusForbidden, code, addr)
		assert.Contains(t, body, "is not this server's address", addr)
		assert.NotContains(t, body, "requests: 10", addr)
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, ""} {
			code, body := get(local, host)
			assert.Equal(t, http.StatusOK, code, "%s %s", addr, host)
			assert.Contains(t, body, "requests: 10", addr)
		}
		if addr == "0.0.0.0:0" {
			if ip := anInterfaceAddress(); ip != "" {
				code, _ := get("http://"+net.JoinHostPort(ip, port)+"/", "")
				assert.Equal(t, http.StatusOK, code, "the machine's address %s", ip)
			}
		}
		resp, err := http.Post(local+"api/validate", "text/plain", strings.NewReader(`{"yaml": "x"}`))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	}
}

// anInterfaceAddress returns an IPv4 address of this machine that is not
// loopback, or "".
func anInterfaceAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
