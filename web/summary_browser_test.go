package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
)

// TestSummaryTableInTheBrowser checks the app's summary table: for a
// graph, the front's columns name it and the service each strategy hurts
// most has its columns, with summary.json's figures (layered-retries:
// every-layer sends 8.95x to db while the front sees 1.43x); one server
// gets no such column; and the table fits its card, also where a row says
// "nothing left to recover" and in narrower windows (where only a graph's
// wider table may scroll sideways, within its card).
func TestSummaryTableInTheBrowser(t *testing.T) {
	if raceDetector {
		t.Skip("run without the race detector (make test's second step)")
	}
	chromium(t)
	layered := cliSummary(t, "layered-retries.yaml")
	srv := httptest.NewServer(Handler(ServerOptions{MaxMemory: 4 << 30}))
	t.Cleanup(srv.Close)
	ctx, _, console := browser(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), waitRun(0))
	headers := func() []string {
		return eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#summary th"), (th) => th.textContent)`)
	}
	assert.NotContains(t, headers(), "hurt most", "one server: no column of a service")
	assert.Equal(t, "Load on the server (attempts per 1 s)", eval[string](t, ctx, `document.querySelector('[data-chart="load"] h3').textContent`))
	fits(t, ctx, "the default example", false)

	set := func(name string) {
		t.Helper()
		n := runs(t, ctx)
		do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`herdlab.setScenario(%q, %q), undefined`, shipped(t, name), name)), waitRun(n))
	}

	// A graph: the worst service's columns, with summary.json's figures.
	set("layered-retries.yaml")
	got := eval[string](t, ctx, `herdlab.lastSummary`)
	assert.Equal(t, layered, normalize(got), "the CLI's summary.json")
	assert.Equal(t, []string{"strategy", "requests", "delivered", "dead-lettered", "amplif. (gateway)", "peak load (gateway)", "hurt most", "its peak load", "its amplif.",
		"recovery (gateway)", "p99 latency", "duplicates (gateway)"}, headers())
	s, err := results.ReadJSON(strings.NewReader(got))
	require.NoError(t, err)
	cellOf := func(st, figure string) string {
		return fmt.Sprintf(`document.querySelector('#summary tr[data-strategy=%q] [data-figure=%q]')`, st, figure)
	}
	for _, st := range s.Strategies {
		require.NotNil(t, st.Worst, st.Name)
		assert.Equal(t, st.Worst.Name, eval[string](t, ctx, cellOf(st.Name, "worst_service.name")+`.textContent`), st.Name)
		assert.Equal(t, fmt.Sprint(st.Worst.Amplification), eval[string](t, ctx, cellOf(st.Name, "worst_service.amplification")+`.dataset.value`), st.Name)
		assert.Equal(t, fmt.Sprint(st.Worst.PeakLoad), eval[string](t, ctx, cellOf(st.Name, "worst_service.peak_load")+`.dataset.value`), st.Name)
		assert.Equal(t, fmt.Sprint(*st.Worst.PeakLoadRatio), eval[string](t, ctx, cellOf(st.Name, "worst_service.peak_load_ratio")+`.dataset.value`), st.Name)
		assert.Equal(t, fmt.Sprint(st.Amplification), eval[string](t, ctx, cellOf(st.Name, "amplification")+`.dataset.value`), st.Name, "the front's beside it")
	}
	assert.Equal(t, "db", eval[string](t, ctx, cellOf("every-layer", "worst_service.name")+`.textContent`))
	assert.Equal(t, "8.95×", eval[string](t, ctx, cellOf("every-layer", "worst_service.amplification")+`.textContent`))
	assert.Equal(t, "1.43×", eval[string](t, ctx, cellOf("every-layer", "amplification")+`.textContent`))
	// The amplification chart has the front's row and the hurt service's.
	assert.Equal(t, "Retry amplification at the front and at the service hurt most (attempts per fleet request)",
		eval[string](t, ctx, `document.querySelector('[data-chart="amplification"] h3').textContent`))
	// The panels of the front's figures name it.
	assert.Equal(t, "Load on gateway (the front) (attempts per 1 s)", eval[string](t, ctx, `document.querySelector('[data-chart="load"] h3').textContent`))
	assert.Equal(t, "Recovery of gateway (the front) after the outage", eval[string](t, ctx, `document.querySelector('[data-chart="recovery"] h3').textContent`))
	fits(t, ctx, "layered-retries", false)
	screenshot(t, ctx, "summary-layered-retries")

	// A row that says "nothing left to recover".
	set("capped-exponential.yaml")
	assert.Positive(t, eval[int](t, ctx, `document.querySelectorAll('#summary td[data-recovery="nothing_left"]').length`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#summary td[data-recovery="nothing_left"]').textContent`), "nothing left")
	fits(t, ctx, "capped-exponential", false)
	screenshot(t, ctx, "summary-nothing-left")

	// Narrower windows, each layout: the card beside the editor, and below.
	for _, width := range []int64{1100, 800} {
		do(t, ctx, chromedp.EmulateViewport(width, 900))
		fits(t, ctx, fmt.Sprintf("capped-exponential at %d px", width), false)
		set("layered-retries.yaml")
		fits(t, ctx, fmt.Sprintf("layered-retries at %d px", width), true)
		set("capped-exponential.yaml")
	}
	assert.Empty(t, console.messages(), "nothing on the console")
}

// fits checks that the summary table is no wider than its card's content:
// nothing over the card's edge and, unless mayScroll, nothing to scroll
// sideways either (a graph's table, three columns wider, scrolls in a
// narrow window, within its card).
func fits(t *testing.T, ctx context.Context, what string, mayScroll bool) {
	t.Helper()
	got := eval[[]float64](t, ctx, `(() => {
		const card = document.querySelector("#summary-card"), wrap = document.querySelector("#summary .table-wrap"), table = wrap.querySelector("table");
		const style = getComputedStyle(card);
		const inner = card.getBoundingClientRect().right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
		return [table.getBoundingClientRect().right, wrap.getBoundingClientRect().right, inner, wrap.scrollWidth, wrap.clientWidth];
	})()`)
	require.Len(t, got, 5)
	table, wrap, inner, scroll, client := got[0], got[1], got[2], got[3], got[4]
	assert.LessOrEqual(t, wrap, inner+0.5, "%s: the table's box is within its card", what)
	if !mayScroll {
		assert.LessOrEqual(t, table, inner+0.5, "%s: the table's right edge is within its card's", what)
		assert.LessOrEqual(t, scroll, client, "%s: the table does not scroll sideways in its card", what)
	}
}
