package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web/lab"
)

const badFile = "name: bad\nworkload: {requests: 10}\nstrategies:\n  - {name: s, backoff: {kind: fixed}, max_attempts: 0}\n"

var wallS = regexp.MustCompile(`"wall_s": [-0-9.e+]+`)

func normalize(summary string) string { return wallS.ReplaceAllString(summary, `"wall_s": 0`) }

func shipped(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../scenarios/" + name)
	require.NoError(t, err)
	return string(b)
}

func post(t *testing.T, ctx context.Context, url, client string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	require.NoError(t, err)
	if client != "" {
		req.Header.Set("Herdlab-Client", client)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// answer reads api/run's newline-delimited answer: its progress, and its
// result.
func answer(t *testing.T, resp *http.Response) ([]float64, lab.Result) {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	var progress []float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Progress *float64    `json:"progress"`
			Result   *lab.Result `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		switch {
		case line.Progress != nil:
			progress = append(progress, *line.Progress)
		case line.Result != nil:
			require.False(t, sc.Scan(), "the result is the last line")
			return progress, *line.Result
		}
	}
	t.Fatalf("no result: %v", sc.Err())
	return nil, lab.Result{}
}

func TestTheAppAndItsExamples(t *testing.T) {
	srv := httptest.NewServer(Handler(ServerOptions{Initial: &Initial{File: "mine.yaml", YAML: "name: mine\n"}}))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, page := get("/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, page, "app.js")
	assert.Equal(t, contentSecurity, resp.Header.Get("Content-Security-Policy"))
	for _, name := range []string{"app.js", "app.css", "charts.js", "charts.css", "worker.js", "THIRD_PARTY_LICENSES.txt"} {
		resp, body := get("/" + name)
		assert.Equal(t, http.StatusOK, resp.StatusCode, name)
		assert.NotEmpty(t, body, name)
	}
	_, config := get("/config.json")
	assert.JSONEq(t, `{"engine": "server", "initial": {"file": "mine.yaml", "yaml": "name: mine\n"}}`, config)

	_, index := get("/examples/index.json")
	var list []Example
	require.NoError(t, json.Unmarshal([]byte(index), &list))
	files, err := os.ReadDir("../scenarios")
	require.NoError(t, err)
	yamls := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".yaml") {
			yamls++
		}
	}
	assert.Len(t, list, yamls, "every shipped scenario")
	assert.Contains(t, list, Example{File: "thundering-herd.yaml", Name: "thundering-herd", Description: strings.Join(strings.Fields(scenarioDescription(t, "thundering-herd.yaml")), " ")})
	_, src := get("/examples/thundering-herd.yaml")
	assert.Equal(t, shipped(t, "thundering-herd.yaml"), src)
	for _, bad := range []string{"/examples/nope.yaml", "/examples/..%2Fgo.mod", "/examples/index.yaml.txt"} {
		resp, _ := get(bad)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, bad)
	}
}

func scenarioDescription(t *testing.T, file string) string {
	sc, err := scenarios.Load("../scenarios/" + file)
	require.NoError(t, err)
	return sc.Description
}

func TestTheAPI(t *testing.T) {
	srv := httptest.NewServer(Handler(ServerOptions{}))
	defer srv.Close()
	ctx := context.Background()

	resp := post(t, ctx, srv.URL+"/api/validate", "", map[string]string{"yaml": badFile, "file": "bad.yaml"})
	var v lab.Validation
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	resp.Body.Close()
	require.NotEmpty(t, v.Problems)
	assert.Equal(t, 4, v.Problems[0].Line)
	assert.Equal(t, "strategies[0].backoff.delay", v.Problems[0].Path)

	// A run: progress, then summary.json as the CLI writes it.
	src := shipped(t, "thundering-herd.yaml")
	progress, res := answer(t, post(t, ctx, srv.URL+"/api/run", "a", map[string]string{"yaml": src, "file": "thundering-herd.yaml"}))
	require.Empty(t, res.Error)
	sc, err := scenarios.Parse("thundering-herd.yaml", []byte(src))
	require.NoError(t, err)
	want, err := sim.Run(ctx, sc, sim.Options{})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, want.Summary))
	assert.Equal(t, normalize(b.String()), normalize(res.Summary))
	require.NotNil(t, res.Charts)
	assert.Len(t, res.Charts.Strategies, 5)
	assert.IsNonDecreasing(t, progress)

	// Refused: a bad file, at its line; a body too large; not JSON.
	_, res = answer(t, post(t, ctx, srv.URL+"/api/run", "a", map[string]string{"yaml": badFile, "file": "bad.yaml"}))
	require.NotEmpty(t, res.Problems)
	assert.Equal(t, 4, res.Problems[0].Line)
	resp = post(t, ctx, srv.URL+"/api/run", "a", map[string]string{"yaml": strings.Repeat("#", maxBody)})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/run", strings.NewReader("yaml: x"))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp.Body.Close()
}

func TestTheAPIRefusesARunOverItsMemory(t *testing.T) {
	srv := httptest.NewServer(Handler(ServerOptions{MaxMemory: 1 << 20, MaxMemoryName: "herdlab ui --max-memory"}))
	defer srv.Close()
	_, res := answer(t, post(t, context.Background(), srv.URL+"/api/run", "", map[string]string{"yaml": shipped(t, "thundering-herd.yaml"), "file": "thundering-herd.yaml"}))
	assert.Empty(t, res.Summary)
	assert.Contains(t, res.Error, "thundering-herd.yaml:26:13: workload.requests: a run needs about ")
	assert.Contains(t, res.Error, "the limit is 1.0 MB (herdlab ui --max-memory)")
}

func TestOneRunAClientAtATime(t *testing.T) {
	// A client's second run cancels its first, which answers that it was
	// cancelled; another client's run goes on. A run whose page went away
	// (its request cancelled) stops. The long run would take a minute.
	h := newHandler(ServerOptions{Parallel: 1})
	srv := httptest.NewServer(h)
	defer srv.Close()
	long := strings.Replace(shipped(t, "million.yaml"), "\nduration: 15m\n", "\nruns: 30\nduration: 15m\n", 1)
	require.Contains(t, long, "runs: 30")
	ctx := context.Background()
	running := func(client string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.running[client] != nil
	}

	first := post(t, ctx, srv.URL+"/api/run", "a", map[string]string{"yaml": long, "file": "million.yaml"})
	firstLine := bufio.NewReader(first.Body)
	_, err := firstLine.ReadString('\n') // it runs: a progress line
	require.NoError(t, err)
	other := post(t, ctx, srv.URL+"/api/run", "b", map[string]string{"yaml": shipped(t, "real-graph.yaml"), "file": "real-graph.yaml"})
	second := post(t, ctx, srv.URL+"/api/run", "a", map[string]string{"yaml": shipped(t, "real-graph.yaml"), "file": "real-graph.yaml"})
	rest, err := io.ReadAll(firstLine)
	require.NoError(t, err)
	first.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
	assert.Contains(t, lines[len(lines)-1], "context canceled", "the first run was cancelled")
	for _, resp := range []*http.Response{second, other} {
		_, res := answer(t, resp)
		assert.Empty(t, res.Error)
		assert.NotEmpty(t, res.Summary)
	}

	gone, cancel := context.WithCancel(ctx)
	resp := post(t, gone, srv.URL+"/api/run", "c", map[string]string{"yaml": long, "file": "million.yaml"})
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.True(t, running("c"))
	cancel()
	resp.Body.Close()
	assert.Eventually(t, func() bool { return !running("c") }, 20*time.Second, 10*time.Millisecond, "the run stops when its page goes away")
}

func TestTheAPISweeps(t *testing.T) {
	// api/sweep answers as api/run does: progress, then the sweep of a
	// scenario's sweep: section with its heatmap data.
	srv := httptest.NewServer(Handler(ServerOptions{}))
	defer srv.Close()
	src := "name: s\nduration: 1m\nserver: {concurrency: 10, outages: [{start: 0s, duration: 5s, mode: refuse}]}\nworkload: {requests: 500}\n" +
		"strategies: [{name: j, backoff: {kind: full-jitter, base: 1s, cap: 5s}, max_attempts: 5}]\n" +
		"sweep: {vary: [{path: workload.requests, values: [100, 1000, 3000]}]}\n"
	resp := post(t, context.Background(), srv.URL+"/api/sweep", "a", map[string]string{"yaml": src, "file": "s.yaml"})
	defer resp.Body.Close()
	var res lab.SweepResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Result *lab.SweepResult `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Result != nil {
			res = *line.Result
		}
	}
	require.Empty(t, res.Error)
	require.NotNil(t, res.Sweep)
	assert.Len(t, res.Sweep.Points, 3)
	require.Len(t, res.Heatmap.Strategies, 1)
	assert.Len(t, res.Heatmap.Strategies[0].Cells, 3)
}
