package clients

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeontools/herdlab/herdtest"
)

var docsDir = flag.String("docs", "", "write the README's herdtest chart (load.png of go-retryablehttp, with its defaults and jittered) into this folder")

// TestREADMEChart draws the README's herdtest picture: go-retryablehttp
// with its defaults and with full jitter through the outage of
// testdata/outage.yaml. make docs runs it with -docs (and make
// docs-check compares the chart with the committed one: both clients are
// deterministic).
func TestREADMEChart(t *testing.T) {
	if *docsDir == "" {
		t.Skip("draws the README's chart only when make docs asks (-docs DIR)")
	}
	out := filepath.Join(t.TempDir(), "out")
	res := herdtest.Run(t, "testdata/outage.yaml", herdtest.Clients{
		"retryablehttp-defaults": retryablehttpDefaults,
		"retryablehttp-jitter":   retryablehttpJitter,
	}, herdtest.Options{Out: out, Only: true, NoChecks: true})
	for name, ok := range res.Deterministic {
		require.True(t, ok, "%s must be deterministic for the chart to be checked", name)
	}
	chart, err := os.ReadFile(filepath.Join(out, "load.png"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(*docsDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(*docsDir, "herdtest-retryablehttp.png"), chart, 0o644))
}
