//go:build !race

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/graphs.md quotes layered-retries' table and takeaways: they are
// what herdlab run prints and writes today.
func TestDocsGraphsQuoteTheRun(t *testing.T) {
	doc, err := os.ReadFile("../../docs/graphs.md")
	require.NoError(t, err)
	text := string(doc)
	require.Contains(t, text, "herdlab run scenarios/layered-retries.yaml --out out/layered-retries")
	blocks := strings.Split(text, "```text\n")
	require.Len(t, blocks, 3, "a table and the takeaways")
	table := strings.Split(strings.TrimSpace(strings.SplitN(blocks[1], "```", 2)[0]), "\n")
	takeaways := strings.Split(strings.TrimSpace(strings.SplitN(blocks[2], "```", 2)[0]), "\n")

	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := herdlab("run", "../../scenarios/layered-retries.yaml", "--out", out, "--no-charts")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(stdout, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "strategy ") {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, stdout)
	for i, want := range table {
		require.Less(t, start+i, len(lines))
		assert.True(t, strings.HasPrefix(lines[start+i], want), "the doc's row %d is the start of the run's:\n%s\n%s", i, want, lines[start+i])
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	for _, want := range takeaways {
		assert.Contains(t, string(report), "\n"+want+"\n", "a takeaway the doc quotes")
	}
}
