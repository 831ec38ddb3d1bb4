package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/web/lab"
)

// graphState is what the page's picture of the graph shows: the card's
// visibility, its nodes (service names; "" the fleet), edges and their
// labels, whether it has a run's figures, and the runs done when it was
// drawn.
type graphState struct {
	Hidden   bool              `json:"hidden"`
	Strategy string            `json:"strategy"`
	Nodes    []string          `json:"nodes"`
	Loads    map[string]string `json:"loads"`
	Titles   map[string]string `json:"titles"`
	Edges    []graphEdgeState  `json:"edges"`
	Figures  string            `json:"figures"`
	Outdated bool              `json:"outdated"`
	Runs     int               `json:"runs"`
}

type graphEdgeState struct {
	From, To, Policy string
	Label            string // the label's lines, joined by spaces
	Amplification    string // data-amplification: "" before a run
}

// graphScript is a JavaScript function that returns the graphState of
// the page as JSON text.
const graphScript = `(() => {
	const card = document.querySelector("#graph-card");
	const wrap = document.querySelector("#graph .graph-wrap");
	const nodes = [...document.querySelectorAll("#graph .node")];
	return JSON.stringify({
		hidden: card.hidden,
		strategy: document.querySelector("#graph svg")?.dataset.strategy ?? "",
		nodes: nodes.map((n) => n.dataset.service),
		loads: Object.fromEntries(nodes.filter((n) => n.dataset.load).map((n) => [n.dataset.service, n.dataset.load])),
		titles: Object.fromEntries(nodes.map((n) => [n.dataset.service, n.querySelector("title").textContent])),
		edges: [...document.querySelectorAll("#graph .edge")].map((e, k) => ({
			From: e.dataset.from, To: e.dataset.to, Policy: e.dataset.policy,
			Label: [...document.querySelectorAll("#graph .edge-label")[k].querySelectorAll("text")].map((t) => t.textContent).join(" "),
			Amplification: e.dataset.amplification ?? "",
		})),
		figures: wrap?.dataset.figures ?? "",
		outdated: !!wrap?.classList.contains("outdated"),
		runs: window.herdlab?.runs ?? 0,
	});
})()`

func readGraph(t *testing.T, ctx context.Context) graphState {
	t.Helper()
	var g graphState
	require.NoError(t, json.Unmarshal([]byte(eval[string](t, ctx, graphScript)), &g))
	return g
}

// waitFigures waits for the picture to show the figures of the run of
// the editor's text.
func waitFigures() chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`document.querySelector("#graph .graph-wrap")?.dataset.figures === "current"`, chromedp.WithPollingTimeout(30*time.Second))
}

// TestGraphPicture drives the page's picture of a service graph in a
// real Chromium, on both engines: a single server has none; a graph
// scenario has one node per service and one edge per call, each
// labelled with its policy as web/lab computes it; an edit that adds a
// service or removes a call redraws it from the validation, before any
// run; a run colours each service by its peak load over capacity and
// labels each edge with its amplification, which an edit greys out at
// once and clears; the strategy select shows another strategy's
// policies; a file with problems keeps the last valid graph, marked.
func TestGraphPicture(t *testing.T) {
	if raceDetector {
		t.Skip("run without the race detector (make test's second step)")
	}
	chromium(t)
	src := shipped(t, "real-graph.yaml")
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
			ctx, _, console := browser(t)
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()

			// A single server: no card.
			do(t, ctx, chromedp.Navigate(url), waitRun(0))
			assert.True(t, readGraph(t, ctx).Hidden, "no graph card for a single server")

			// The graph, drawn from the validation, then the run's figures.
			n := runs(t, ctx)
			do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, "real-graph.yaml"), undefined`, src)), waitRun(n), waitFigures())
			g := readGraph(t, ctx)
			require.False(t, g.Hidden)
			assert.Equal(t, []string{"", "gateway", "orders", "db"}, g.Nodes, "the fleet and a node per service, left to right")
			assert.Equal(t, "every-layer", g.Strategy, "the first strategy")
			checkEdges(t, g, src, "every-layer")
			summary := eval[string](t, ctx, `herdlab.lastSummary`)
			checkFigures(t, g, summary)
			assert.Equal(t, 4+3, eval[int](t, ctx, `[...document.querySelectorAll("#graph .node, #graph .edge")].filter((e) => e.getAttribute("role") === "img" && e.getAttribute("aria-label") === e.querySelector("title").textContent).length`),
				"each node and call is an image named by its title, for screen readers")
			screenshot(t, ctx, engine+"-graph")

			// Another strategy: its own policies, and its own figures.
			do(t, ctx, chromedp.SetValue(chromedp.CSS(`#graph select`), "edge-only"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector("#graph select").dispatchEvent(new Event("change")), undefined`))
			g = readGraph(t, ctx)
			assert.Equal(t, "edge-only", g.Strategy)
			checkEdges(t, g, src, "edge-only")
			checkFigures(t, g, summary)

			// Every drawing from now on is recorded as it happens.
			do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.graphSeen = [];
				new MutationObserver(() => graphSeen.push(`+graphScript+`)).observe(document.querySelector("#graph"), {childList: true});
				undefined`))
			seen := func() []graphState {
				var out []graphState
				for _, s := range eval[[]string](t, ctx, `graphSeen`) {
					var g graphState
					require.NoError(t, json.Unmarshal([]byte(s), &g))
					out = append(out, g)
				}
				return out
			}
			edit := func(text string) {
				t.Helper()
				do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.editor.dispatch({changes: {from: 0, to: herdlab.editor.state.doc.length, insert: %q}}), undefined`, text)))
			}

			// An edit that adds a service: the picture has it before the
			// run, without figures (greyed at once, cleared when redrawn);
			// then the run fills them in.
			added := strings.Replace(src, "    calls: [{service: db}]\n", "    calls: [{service: db}, {service: audit}]\n", 1)
			added = strings.Replace(added, "\nworkload:\n", "  - name: audit\n    concurrency: 10\n    service_time: {dist: exponential, mean: 5ms}\n\nworkload:\n", 1)
			require.NotEqual(t, src, added)
			n = runs(t, ctx)
			edit(added)
			assert.Equal(t, "stale", readGraph(t, ctx).Figures, "the figures grey out as the text changes")
			assert.Contains(t, eval[string](t, ctx, `document.querySelector("#graph .graph-note").textContent`), "earlier version")
			do(t, ctx, waitRun(n), waitFigures())
			var structure *graphState
			for _, s := range seen() {
				if len(s.Nodes) == 5 && structure == nil {
					structure = &s
				}
			}
			require.NotNil(t, structure, "the new service was drawn: %+v", seen())
			assert.Equal(t, []string{"", "gateway", "orders", "db", "audit"}, structure.Nodes)
			assert.Equal(t, "none", structure.Figures, "drawn from the validation, with no figures")
			assert.Equal(t, n, structure.Runs, "before the run")
			assert.Len(t, structure.Edges, 4)
			g = readGraph(t, ctx)
			assert.Equal(t, "current", g.Figures, "the run filled them in")
			assert.Equal(t, "edge-only", g.Strategy, "the strategy chosen stays")
			checkEdges(t, g, added, "edge-only")
			checkFigures(t, g, eval[string](t, ctx, `herdlab.lastSummary`))

			// An edit that removes a call (and its policies): orders no
			// longer calls db, which nothing calls (first layer, below
			// gateway).
			removed := strings.Replace(src, "    calls: [{service: db}]\n", "", 1)
			removed = strings.ReplaceAll(removed, "      orders->db: {timeout: 500ms}\n", "")
			require.NotEqual(t, src, removed)
			do(t, ctx, chromedp.Evaluate[chromedp.Void](`graphSeen.length = 0, undefined`))
			n = runs(t, ctx)
			edit(removed)
			do(t, ctx, waitRun(n), waitFigures())
			structure = nil
			for _, s := range seen() {
				if len(s.Edges) == 2 && structure == nil {
					structure = &s
				}
			}
			require.NotNil(t, structure, "the call was removed: %+v", seen())
			assert.Equal(t, "none", structure.Figures)
			assert.Equal(t, n, structure.Runs, "before the run")
			assert.Equal(t, []string{"", "gateway", "db", "orders"}, structure.Nodes)
			checkEdges(t, readGraph(t, ctx), removed, "edge-only")

			// A file with problems: the last valid graph stays, marked.
			edit(strings.Replace(removed, "  - name: orders\n", "  - name: orders\n    replicas: -1\n", 1))
			do(t, ctx, waitState("invalid"))
			g = readGraph(t, ctx)
			assert.False(t, g.Hidden)
			assert.True(t, g.Outdated)
			assert.Len(t, g.Edges, 2)
			assert.Contains(t, eval[string](t, ctx, `document.querySelector("#graph .graph-note").textContent`), "last valid version")

			if engine == "server" {
				// The layout does not depend on the engine.
				checkLayouts(t, ctx)
			}
			assert.Empty(t, console.messages(), "nothing on the console")
		})
	}
}

// skips is a graph whose calls skip a layer (gateway->auth) and repeat
// (orders calls auth twice): they run in lanes above the rows.
const skips = `name: skips
duration: 10s
services:
  - name: gateway
    calls: [{service: orders}, {service: auth}]
  - name: orders
    concurrency: 10
    calls: [{service: auth}, {service: auth, when: after}]
  - name: auth
    concurrency: 10
workload: {target: gateway, requests: 100}
strategies:
  - name: s
    max_attempts: 3
    backoff: {kind: full-jitter, base: 10ms, cap: 100ms}
    timeout: 1s
    edges:
      default: {timeout: 200ms}
`

// checkLayouts draws the graph of each shipped graph scenario, and of
// skips, from the editor's text, and checks that no label of a call
// overlaps another or a service's box, nor two boxes each other.
func checkLayouts(t *testing.T, ctx context.Context) {
	t.Helper()
	files, err := filepath.Glob("../scenarios/*.yaml")
	require.NoError(t, err)
	texts := map[string]string{"skips.yaml": skips}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(b), "\nservices:\n") {
			texts[filepath.Base(f)] = string(b)
		}
	}
	require.GreaterOrEqual(t, len(texts), 5, "the shipped graph scenarios")
	for name, text := range texts {
		v := lab.Validate(text, name)
		require.NotNil(t, v.Graph, name)
		do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.editor.dispatch({changes: {from: 0, to: herdlab.editor.state.doc.length, insert: %q}}), undefined`, text)),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector("#graph .graph-wrap")?.dataset.figures === "none" && document.querySelectorAll("#graph .node").length === %d && document.querySelectorAll("#graph .edge").length === %d`,
				len(v.Graph.Strategies[0].Services)+1, len(v.Graph.Strategies[0].Edges)), chromedp.WithPollingTimeout(30*time.Second)))
		overlaps := eval[[]string](t, ctx, `(() => {
			const items = [...document.querySelectorAll("#graph .edge-label, #graph .node")].map((e) => ({
				b: e.getBBox(), what: e.classList.contains("node") ? "box " + e.dataset.service : "label " + e.dataset.from + "->" + e.dataset.to }));
			const out = [];
			for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
				const a = items[i].b, b = items[j].b;
				const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
				const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
				if (w > 1 && h > 1) out.push(items[i].what + " and " + items[j].what);
			}
			return out;
		})()`)
		assert.Empty(t, overlaps, "%s: nothing overlaps", name)
		if name == "skips.yaml" {
			screenshot(t, ctx, "graph-skips")
		}
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#cancel").click(), undefined`))
}

// checkEdges checks that g shows the edges of strategy name of the
// scenario src, as web/lab computes them, each labelled with its
// policy.
func checkEdges(t *testing.T, g graphState, src, name string) {
	t.Helper()
	v := lab.Validate(src, "x.yaml")
	require.Empty(t, v.Error)
	require.NotNil(t, v.Graph)
	for _, st := range v.Graph.Strategies {
		if st.Name != name {
			continue
		}
		require.Len(t, g.Edges, len(st.Edges), "an edge per call")
		for k, e := range st.Edges {
			assert.Equal(t, [3]string{e.From, e.To, e.Policy}, [3]string{g.Edges[k].From, g.Edges[k].To, g.Edges[k].Policy}, "edge %d", k)
			assert.True(t, strings.HasSuffix(g.Edges[k].Label, " "+e.Policy), "edge %d is labelled with its policy: %q", k, g.Edges[k].Label)
		}
		return
	}
	t.Fatalf("no strategy %s", name)
}

// checkFigures checks that g, drawn after the run of summary, colours
// each service by its peak load ratio and labels each edge with its
// amplification.
func checkFigures(t *testing.T, g graphState, summary string) {
	t.Helper()
	s, err := results.ReadJSON(strings.NewReader(summary))
	require.NoError(t, err)
	for _, st := range s.Strategies {
		if st.Name != g.Strategy {
			continue
		}
		for _, f := range st.Services {
			want := "unlimited"
			switch r := f.PeakLoadRatio; {
			case r == nil:
			case *r > 1:
				want = "over"
			case *r >= 0.8:
				want = "near"
			default:
				want = "light"
			}
			assert.Equal(t, want, g.Loads[f.Name], "%s: its load class", f.Name)
			if f.PeakLoadRatio != nil {
				assert.Contains(t, g.Titles[f.Name], "peak load after the outage", f.Name)
			}
			assert.Contains(t, g.Titles[f.Name], "attempts per fleet request", f.Name)
		}
		require.Len(t, g.Edges, len(st.Edges))
		for k, e := range st.Edges {
			assert.Equal(t, fmt.Sprint(e.Amplification), g.Edges[k].Amplification, "edge %d: %s->%s", k, e.From, e.To)
			assert.False(t, strings.HasPrefix(g.Edges[k].Label, "–"), "edge %d's label has its amplification: %q", k, g.Edges[k].Label)
		}
		return
	}
	t.Fatalf("no strategy %s in the summary", g.Strategy)
}
