package web

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkThunderingHerd times scenarios/thundering-herd.yaml (50,000
// requests, 5 strategies) run three ways on this machine: by the CLI
// (herdlab run, charts and files included, a process each time), and in
// the browser app's page, from the run's start to its figures and charts
// drawn, with herdlab ui's engine (the simulation runs natively in the
// server) and the static site's (in WebAssembly, in the page's workers).
//
//	go test ./web -run '^$' -bench ThunderingHerd -benchtime 5x
func BenchmarkThunderingHerd(b *testing.B) {
	b.Run("cli", func(b *testing.B) {
		bin := filepath.Join(b.TempDir(), "herdlab")
		build := exec.Command("go", "build", "-o", bin, "../cmd/herdlab")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v: %s", err, out)
		}
		out := filepath.Join(b.TempDir(), "out")
		for b.Loop() {
			if msg, err := exec.Command(bin, "run", "../scenarios/thundering-herd.yaml", "-o", out, "-q").CombinedOutput(); err != nil {
				b.Fatalf("herdlab run: %v: %s", err, msg)
			}
		}
	})
	for _, engine := range []string{"server", "wasm"} {
		b.Run(engine, func(b *testing.B) {
			var url string
			if engine == "server" {
				srv := httptest.NewServer(Handler(ServerOptions{}))
				b.Cleanup(srv.Close)
				url = srv.URL + "/"
			} else {
				url = site(b)
			}
			ctx, _, _ := browser(b)
			ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.Navigate(url), waitRun(0)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				// A run that failed or was cancelled is no time of a run.
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`herdlab.run().then((r) => r.summary ? undefined : Promise.reject(new Error(r.error || "cancelled")))`, chromedp.EvalAwaitPromise)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.state`)); err != nil || state != "done" {
				b.Fatalf("the page is %q (%v), not done", state, err)
			}
		})
	}
}
