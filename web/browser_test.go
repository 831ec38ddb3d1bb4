package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web/lab"
)

// chromium returns Debian's chromium, skipping the test without it
// unless HERDLAB_REQUIRE_CHROMIUM is set (.ci/run installs it and sets
// it).
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("HERDLAB_REQUIRE_CHROMIUM") != "" {
		t.Fatal("HERDLAB_REQUIRE_CHROMIUM is set: the browser tests need Debian's chromium")
	}
	t.Skip("no chromium for the browser tests (Debian's chromium; .ci/run installs it and sets HERDLAB_REQUIRE_CHROMIUM)")
	return ""
}

// console collects the console errors and warnings of a browser's
// tabs, and the exceptions their pages do not catch.
type console struct {
	mu   sync.Mutex
	said []string
}

func (c *console) watch(ctx context.Context) {
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				c.mu.Lock()
				c.said = append(c.said, fmt.Sprintf("console %s: %s", m.Type, m.Text))
				c.mu.Unlock()
			}
		}
	}()
}

// messages returns what the console said so far.
func (c *console) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.said)
}

// browser starts a headless Chromium and returns a context for a first
// tab, a function that opens another tab, and the console of both.
func browser(t testing.TB, extra ...chromedp.ExecAllocatorOption) (context.Context, func() context.Context, *console) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	first, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(first)) // start the browser
	c := &console{}
	c.watch(first)
	tab := func() context.Context {
		ctx, cancel := chromedp.NewContext(first)
		t.Cleanup(cancel)
		require.NoError(t, chromedp.Do(ctx))
		c.watch(ctx)
		return ctx
	}
	return first, tab, c
}

// cliSummary is summary.json of herdlab run for a shipped scenario, its
// engine wall time aside.
func cliSummary(t *testing.T, name string) string {
	t.Helper()
	sc, err := scenarios.Load("../scenarios/" + name)
	require.NoError(t, err)
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, results.WriteJSON(&b, res.Summary))
	return normalize(b.String())
}

// waitRun waits for the page's run after the n-th to be done.
func waitRun(n int) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.herdlab && herdlab.runs > %d && document.body.dataset.state === "done"`, n), chromedp.WithPollingTimeout(90*time.Second))
}

// waitState waits for the page to be in state.
func waitState(state string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.body.dataset.state === %q`, state), chromedp.WithPollingTimeout(30*time.Second))
}

// eval evaluates expr in the page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// do runs steps in the page.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func runs(t *testing.T, ctx context.Context) int { return eval[int](t, ctx, `herdlab.runs`) }

// screenshot saves the page to HERDLAB_SCREENSHOTS (or the test's
// temporary folder) and logs where.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HERDLAB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	// From the top: the page's header is sticky.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// site writes the static site, with the simulator built to WebAssembly,
// and serves it as a static host would.
func site(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	module := filepath.Join(dir, "herdlab.wasm")
	build := exec.Command("go", "build", "-o", module, "./wasm")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "GOOS=js GOARCH=wasm go build: %s", out)
	var rt Runtime
	rt.Wasm, err = os.ReadFile(module)
	require.NoError(t, err)
	rt.WasmExec, err = os.ReadFile(filepath.Join(runtime.GOROOT(), "lib", "wasm", "wasm_exec.js"))
	require.NoError(t, err)
	rt.GoLicense, err = os.ReadFile(filepath.Join(runtime.GOROOT(), "LICENSE"))
	require.NoError(t, err)
	root := filepath.Join(dir, "site")
	require.NoError(t, WriteSite(root, rt))
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestInTheBrowser drives the app in a real headless Chromium, served by
// herdlab ui's handler (the simulations run natively) and as the static
// site (they run in the browser, in WebAssembly): the figures in the page
// are the CLI's, an invalid file shows its problem at its line, a control
// reruns and changes the charts, a chart zooms, a shared link reproduces
// the run, a long run cancels, a run over the memory limit says so, a
// sweep's figures are herdlab sweep's, and nothing is said on the console.
func TestInTheBrowser(t *testing.T) {
	if raceDetector {
		// It builds the WebAssembly module and keeps a browser busy: make
		// test runs it in its second step, not beside the timing-sensitive
		// real-HTTP tests.
		t.Skip("run without the race detector (make test's second step)")
	}
	chromium(t)
	herd := cliSummary(t, "thundering-herd.yaml")
	graph := cliSummary(t, "real-graph.yaml")
	b, err := os.ReadFile("lab/testdata/small-sweep.yaml")
	require.NoError(t, err)
	browserSweep := string(b)
	want := lab.Sweep(context.Background(), browserSweep, "small-sweep.yaml", lab.Options{})
	require.Empty(t, want.Error)
	for _, engine := range []string{"server", "wasm"} {
		t.Run(engine, func(t *testing.T) {
			var url string
			if engine == "server" {
				srv := httptest.NewServer(Handler(ServerOptions{MaxMemory: 4 << 30}))
				t.Cleanup(srv.Close)
				url = srv.URL + "/"
			} else {
				url = site(t)
			}
			ctx, tab, console := browser(t)
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()

			// The default example runs as the page opens.
			do(t, ctx, chromedp.Navigate(url), waitRun(0))
			assert.Equal(t, engine, eval[string](t, ctx, `herdlab.engine`))
			got := eval[string](t, ctx, `herdlab.lastSummary`)
			assert.Equal(t, herd, normalize(got), "the page's summary.json is the CLI's")
			checkTable(t, ctx, got)
			screenshot(t, ctx, engine+"-thundering-herd")

			// Another example, chosen from the library.
			n := runs(t, ctx)
			do(t, ctx, chromedp.SetValue(chromedp.CSS(`#examples`), "real-graph.yaml"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector("#examples").dispatchEvent(new Event("change")), undefined`),
				waitRun(n))
			assert.Equal(t, graph, normalize(eval[string](t, ctx, `herdlab.lastSummary`)), "real-graph: the CLI's summary.json")
			screenshot(t, ctx, engine+"-real-graph")

			// An invalid file: its problem at its line, in the list and in
			// the editor.
			do(t, ctx,
				chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "bad.yaml"), undefined`, badFile)),
				waitState("invalid"),
				chromedp.WaitVisible(chromedp.CSS(`#problems li[data-line="4"]`)),
				chromedp.Poll[chromedp.Void](`!!document.querySelectorAll(".cm-content .cm-line")[3].querySelector(".cm-lintRange-error")`, chromedp.WithPollingTimeout(10*time.Second)))
			screenshot(t, ctx, engine+"-invalid")

			// A control: the outage lasts 60 s instead of 30 s; the editor's
			// text says so, the run redraws, and the load differs.
			n = runs(t, ctx)
			do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "thundering-herd.yaml"), undefined`, shipped(t, "thundering-herd.yaml"))), waitRun(n))
			before := eval[string](t, ctx, `JSON.stringify(herdlab.charts.plots.load.data.map((s) => Array.from(s)))`)
			n = runs(t, ctx)
			control := `#controls input[data-path="server.outages[0].duration"]`
			do(t, ctx, chromedp.SetValue(chromedp.CSS(control), "60s"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('`+control+`').dispatchEvent(new Event("change", {bubbles: true})), undefined`),
				waitRun(n))
			assert.Contains(t, eval[string](t, ctx, `herdlab.getScenario()`), "{start: 0s, duration: 60s, mode: refuse}")
			assert.NotEqual(t, before, eval[string](t, ctx, `JSON.stringify(herdlab.charts.plots.load.data.map((s) => Array.from(s)))`), "the chart's data changed")
			got = eval[string](t, ctx, `herdlab.lastSummary`)
			assert.Contains(t, got, `"end_s": 60`)
			changed := normalize(got)

			// Zoom: drag across the load chart; its time axis narrows.
			const span = `herdlab.charts.plots.load.scales.x.max - herdlab.charts.plots.load.scales.x.min`
			span0 := eval[float64](t, ctx, span)
			do(t, ctx, drag(t, ctx, `[data-chart="load"] .u-over`, 0.2, 0.4))
			assert.Less(t, eval[float64](t, ctx, span), span0/2, "the drag zoomed in on time")
			screenshot(t, ctx, engine+"-zoomed")

			// Share: a fresh tab opens the link and gets the same figures.
			do(t, ctx, chromedp.Click(chromedp.CSS(`#share`)))
			link, err := chromedp.Run(ctx, chromedp.Poll[string](`document.querySelector("#share-url").value`, chromedp.WithPollingTimeout(10*time.Second)))
			require.NoError(t, err)
			require.Contains(t, link, "#s=")
			other := tab()
			do(t, other, chromedp.Navigate(link), waitRun(0))
			assert.Equal(t, changed, normalize(eval[string](t, other, `herdlab.lastSummary`)), "the shared link reproduces the run")

			// Cancel: a long run stops at the button, and the page says so.
			do(t, ctx,
				chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "million.yaml"), undefined`, shipped(t, "million.yaml"))),
				waitState("running"),
				chromedp.Click(chromedp.CSS(`#cancel`)),
				waitState("cancelled"))
			screenshot(t, ctx, engine+"-cancelled")

			// A run over the memory it may take: a message in the page.
			huge := strings.Replace(shipped(t, "thundering-herd.yaml"), "requests: 50000", "requests: 200000000", 1)
			do(t, ctx,
				chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "huge.yaml"), undefined`, huge)),
				waitState("error"),
				chromedp.WaitVisible(chromedp.CSS(`#error`)))
			assert.Contains(t, eval[string](t, ctx, `document.querySelector("#error").textContent`), "of memory")
			screenshot(t, ctx, engine+"-memory")

			// A sweep: herdlab sweep's figures, a heatmap per strategy.
			n = runs(t, ctx)
			do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "small-sweep.yaml"), undefined`, browserSweep)), waitRun(n),
				chromedp.Poll[chromedp.Void](`!document.querySelector("#sweep").disabled`, chromedp.WithPollingTimeout(10*time.Second)),
				chromedp.Click(chromedp.CSS(`#sweep`)),
				chromedp.Poll[chromedp.Void](`herdlab.sweeps > 0 && document.body.dataset.state === "done"`, chromedp.WithPollingTimeout(2*time.Minute)))
			var swept results.Sweep
			require.NoError(t, json.Unmarshal([]byte(eval[string](t, ctx, `JSON.stringify(herdlab.lastSweep)`)), &swept))
			assert.Equal(t, *want.Sweep, swept, "herdlab sweep's figures")
			assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('#sweep-charts [data-chart^="heatmap-"]').length`), "a heatmap per strategy")
			screenshot(t, ctx, engine+"-sweep")
			assert.Empty(t, console.messages(), "nothing on the console")
		})
	}
}

// checkTable checks that the summary table shows summary's figures.
func checkTable(t *testing.T, ctx context.Context, summary string) {
	t.Helper()
	s, err := results.ReadJSON(strings.NewReader(summary))
	require.NoError(t, err)
	for _, st := range s.Strategies {
		for figure, want := range map[string]float64{"amplification": st.Amplification, "peak_load": st.PeakLoad, "delivered": st.Delivered} {
			got := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#summary tr[data-strategy=%q] td[data-figure=%q]').dataset.value`, st.Name, figure))
			assert.Equal(t, fmt.Sprint(want), got, "%s: %s", st.Name, figure)
		}
	}
}

// drag drags the mouse across the element sel, from a share from of its
// width to a share to, at half its height, once it is scrolled into view.
func drag(t *testing.T, ctx context.Context, sel string, from, to float64) chromedp.Action[chromedp.Void] {
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	box := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		el.scrollIntoView({block: "center"});
		const r = el.getBoundingClientRect();
		return [r.left, r.top, r.width, r.height];
	})()`, sel))
	x0, x1, y := box[0]+from*box[2], box[0]+to*box[2], box[1]+box[3]/2
	return chromedp.Steps(
		chromedp.MouseEvent(chromedp.MouseMoved, x0, y),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (x0+x1)/2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x1, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	)
}

// TestReportInTheBrowser opens report.html as herdlab run writes it, a
// file on its own: its charts are drawn from the data inlined (the
// load chart's series are the runs' attempts), zoom, and nothing is said
// on the console.
func TestReportInTheBrowser(t *testing.T) {
	if raceDetector {
		t.Skip("run without the race detector (make test's second step)")
	}
	chromium(t)
	sc, err := scenarios.Load("../scenarios/thundering-herd.yaml")
	require.NoError(t, err)
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	require.NoError(t, err)
	charts, err := results.ChartData(res.Summary, res.Runs)
	require.NoError(t, err)
	page := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, results.WriteFile(page, func(w io.Writer) error {
		return results.WriteHTML(w, res.Summary, nil, &results.Interactive{Charts: charts, Script: ChartScript(), Style: ChartStyle()})
	}))

	ctx, _, console := browser(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	do(t, ctx, chromedp.Navigate("file://"+page),
		chromedp.Poll[chromedp.Void](`window.herdlabReport && herdlabReport.plots.load`, chromedp.WithPollingTimeout(10*time.Second)))
	for i, st := range charts.Strategies {
		got := eval[[]float64](t, ctx, fmt.Sprintf(`Array.from(herdlabReport.plots.load.data[%d])`, i+1))
		assert.Equal(t, st.Attempts, got, st.Name)
	}
	for _, panel := range []string{"load", "queue", "latency", "recovery", "amplification"} {
		assert.True(t, eval[bool](t, ctx, fmt.Sprintf(`!!document.querySelector('[data-chart=%q]')`, panel)), panel)
	}
	const span = `herdlabReport.plots.load.scales.x.max - herdlabReport.plots.load.scales.x.min`
	span0 := eval[float64](t, ctx, span)
	do(t, ctx, drag(t, ctx, `[data-chart="load"] .u-over`, 0.1, 0.3))
	assert.Less(t, eval[float64](t, ctx, span), span0/2, "the drag zoomed in on time")
	screenshot(t, ctx, "report")
	assert.Empty(t, console.messages(), "nothing on the console")
}

// statusWriter records the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// answered records, for each request h answered, "METHOD /path STATUS".
type answered struct {
	mu   sync.Mutex
	list []string
}

func (a *answered) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		a.mu.Lock()
		a.list = append(a.list, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, sw.code))
		a.mu.Unlock()
	})
}

func (a *answered) of(path string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, s := range a.list {
		if strings.Contains(s, " "+path+" ") {
			out = append(out, s)
		}
	}
	return out
}

// TestTheUIRefusesOtherPagesInTheBrowser drives herdlab ui's handler
// from the pages of other sites in a real Chromium: a page of another
// origin that posts a scenario to the ui (as text/plain, which needs no
// permission, or as JSON) runs nothing and reads nothing; a name of
// another site rebound to 127.0.0.1 (Chromium's resolver maps
// rebind.example there), to which the browser grants the ui's answers,
// gets 403 for config.json and the API. And the ui's own page, when
// the ui runs as many simulations as it may, says why it runs none.
func TestTheUIRefusesOtherPagesInTheBrowser(t *testing.T) {
	if raceDetector {
		t.Skip("run without the race detector (make test's second step)")
	}
	chromium(t)
	var seen answered
	initial := &Initial{File: "secret.yaml", YAML: "# a secret\n" + shipped(t, "thundering-herd.yaml")}
	ui := httptest.NewServer(seen.wrap(Handler(ServerOptions{Initial: initial, MaxRuns: 1, Parallel: 1})))
	t.Cleanup(ui.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>another site</title><p>another site")
	}))
	t.Cleanup(other.Close)
	ctx, tab, _ := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.example 127.0.0.1"))
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"yaml": shipped(t, "thundering-herd.yaml"), "file": "th.yaml"})
	fetch := func(ctx context.Context, url, init string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q, %s).then((r) => r.text().then((b) => r.status + " " + b), (e) => "refused: " + e.name)`, url, init), chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		return v
	}

	// Another origin's page.
	do(t, ctx, chromedp.Navigate(other.URL))
	plain := fmt.Sprintf(`{method: "POST", headers: {"Content-Type": "text/plain"}, body: %q}`, body)
	assert.Equal(t, "refused: TypeError", fetch(ctx, ui.URL+"/api/run", plain), "the page reads nothing")
	assert.Equal(t, "0 ", fetch(ctx, ui.URL+"/api/run", strings.Replace(plain, "{", `{mode: "no-cors", `, 1)), "an opaque answer")
	assert.Equal(t, []string{"POST /api/run 403", "POST /api/run 403"}, seen.of("/api/run"), "refused: no simulation ran")
	jsonInit := fmt.Sprintf(`{method: "POST", headers: {"Content-Type": "application/json"}, body: %q}`, body)
	assert.Equal(t, "refused: TypeError", fetch(ctx, ui.URL+"/api/validate", jsonInit))
	for _, s := range seen.of("/api/validate") {
		assert.NotContains(t, s, "POST", "a JSON post from another origin is never sent: its preflight fails")
	}
	assert.Equal(t, "refused: TypeError", fetch(ctx, ui.URL+"/config.json", "{}"), "nor read")

	// A name rebound to this machine: the browser takes the ui for that
	// site's, and the ui refuses it.
	rebound := "http://rebind.example:" + ui.URL[strings.LastIndex(ui.URL, ":")+1:]
	do(t, ctx, chromedp.Navigate(rebound+"/config.json"))
	text := eval[string](t, ctx, `document.body.innerText`)
	assert.Contains(t, text, "is not this server's address")
	assert.NotContains(t, text, "secret")
	got := fetch(ctx, rebound+"/api/run", jsonInit)
	assert.True(t, strings.HasPrefix(got, "403 "), got)
	assert.Contains(t, seen.of("/config.json"), "GET /config.json 403")

	// The ui's own page: a validation it replaces is aborted, and the
	// server stops its work (the costly sweep takes seconds to validate),
	// answering nothing.
	do(t, ctx, chromedp.Navigate(ui.URL+"/"), waitRun(0))
	n := runs(t, ctx)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "costly.yaml"), undefined`, costlySweep())))
	time.Sleep(500 * time.Millisecond) // the server works on it
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "thundering-herd.yaml"), undefined`, shipped(t, "thundering-herd.yaml"))), waitRun(n))
	assert.Eventually(t, func() bool { return slices.Contains(seen.of("/api/validate"), "POST /api/validate 0") }, 5*time.Second, 10*time.Millisecond,
		"the replaced validation stopped: %v", seen.of("/api/validate"))

	// The ui's own page works, and says why when the ui is busy (a run
	// that would take minutes).
	long := strings.Replace(shipped(t, "million.yaml"), "\nduration: 15m\n", "\nruns: 30\nduration: 15m\n", 1)
	require.Contains(t, long, "runs: 30")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "million.yaml"), undefined`, long)),
		waitState("running"))
	second := tab()
	do(t, second, chromedp.Navigate(ui.URL+"/"), waitState("error"), chromedp.WaitVisible(chromedp.CSS(`#error`)))
	reason := eval[string](t, second, `document.querySelector("#error").textContent`)
	assert.Contains(t, reason, "HTTP 429: busy: herdlab ui runs at most 1 simulation at once")
	assert.NotContains(t, reason, `{"error"`, "the reason, not its JSON")
	screenshot(t, second, "server-busy")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#cancel`)), waitState("cancelled"))
}
