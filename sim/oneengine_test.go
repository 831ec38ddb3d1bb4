//go:build !race

package sim

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// TestOneServiceGraphAgreesWithTheServer runs every shipped single-server
// scenario on the single-server engine and, written as a graph of one
// service, on the graph engine, and compares their outputs byte for byte
// (summary.json without the engine's wall time, timeseries.csv, and the
// fleet's rates where it has them):
// with -short, two runs of each strategy at most.
func TestOneServiceGraphAgreesWithTheServer(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*.yaml")
	require.NoError(t, err)
	read, err := filepath.Glob("../scenarios/configs/*.yaml")
	require.NoError(t, err)
	for _, file := range append(files, read...) {
		sc, err := scenarios.Load(file)
		require.NoError(t, err)
		if sc.Graph() {
			continue
		}
		if testing.Short() {
			sc.Runs = min(sc.Runs, 2) // make test-long runs them all
		}
		t.Run(sc.Name, func(t *testing.T) {
			var wruns []*results.Run
			for s := range sc.Strategies {
				for r := range sc.Runs {
					w := newWorld(sc, &sc.Strategies[s], r, RunSeed(sc.Seed, r))
					w.setLimits(nil, expectedRequests(sc), 0)
					run, err := w.simulate(context.Background())
					require.NoError(t, err)
					wruns = append(wruns, run)
				}
			}
			want := &Result{Summary: Summary(sc, wruns), Runs: wruns}
			got, err := Run(context.Background(), sc, Options{})
			require.NoError(t, err)
			wj, wt := outputs(t, sc, want)
			gj, gt := outputs(t, sc, got)
			if line := firstDiff(wj, gj); line != "" {
				t.Errorf("summary.json differs: %s", line)
			}
			if why, ok := answeredIn[sc.Name]; ok {
				// Every figure the same but where answers are counted.
				require.NotEqual(t, wt, gt, "%s: the engines agree now: drop it from answeredIn (%s)", sc.Name, why)
				wt, gt = withoutAnswers(wt), withoutAnswers(gt)
			}
			if line := firstDiff(wt, gt); line != "" {
				t.Errorf("timeseries.csv differs: %s", line)
			}
			var wc, gc bytes.Buffer
			require.NoError(t, results.WriteClientRates(&wc, sc.Bucket, want.Runs))
			require.NoError(t, results.WriteClientRates(&gc, sc.Bucket, got.Runs))
			if line := firstDiff(wc.Bytes(), gc.Bytes()); line != "" {
				t.Errorf("the client rates differ: %s", line)
			}
		})
	}
}

// answeredIn names the scenarios whose time series differ in where an
// answer is counted (the ok and not_ok columns: the bucket its attempt
// reached the server in), and why.
var answeredIn = map[string]string{
	"hedging-latch": "the single-server engine counts a hedged attempt's answer in the bucket its latest copy reached the server in; the graph engine in the bucket of the copy answered",
}

// withoutAnswers blanks timeseries.csv's ok and not_ok columns.
func withoutAnswers(ts []byte) []byte {
	var out bytes.Buffer
	for line := range strings.Lines(string(ts)) {
		f := strings.Split(line, ",")
		f[10], f[11] = "", ""
		out.WriteString(strings.Join(f, ","))
	}
	return out.Bytes()
}

// firstDiff returns the first line where a and b differ, both ways; ""
// when they are the same.
func firstDiff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "server " + al[i] + " | graph " + bl[i] + " (line " + strconv.Itoa(i+1) + ")"
		}
	}
	return "lengths differ"
}
