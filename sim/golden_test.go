//go:build !race

package sim

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// goldenFile holds the SHA-256 of every shipped scenario's summary.json
// (engine wall time zeroed) and timeseries.csv, as they were before the
// service graphs came: a single-server scenario must keep its outputs
// byte for byte. go test -update rewrites it, which a change meant to
// alter a shipped scenario's outputs does on purpose.
const goldenFile = "testdata/shipped.sha256"

// TestShippedScenariosKeepTheirOutputs runs every shipped scenario and
// compares its outputs' digests with the goldens. (Not under the race
// detector: the million-request scenario takes minutes there.)
func TestShippedScenariosKeepTheirOutputs(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*.yaml")
	require.NoError(t, err)
	// And the scenarios that read their strategies from configuration
	// files (scenarios/configs).
	read, err := filepath.Glob("../scenarios/configs/*.yaml")
	require.NoError(t, err)
	files = append(files, read...)
	var got strings.Builder
	for _, file := range files {
		sc, err := scenarios.Load(file)
		require.NoError(t, err)
		res, err := Run(context.Background(), sc, Options{})
		require.NoError(t, err, file)
		js, ts := outputs(t, sc, res)
		fmt.Fprintf(&got, "%x  %s/summary.json\n", sha256.Sum256(js), sc.Name)
		fmt.Fprintf(&got, "%x  %s/timeseries.csv\n", sha256.Sum256(ts), sc.Name)
	}
	if *update {
		require.NoError(t, os.WriteFile(goldenFile, []byte(got.String()), 0o644))
	}
	want, err := os.ReadFile(goldenFile)
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String(), "a shipped scenario's outputs changed")
}

var update = flag.Bool("update", false, "rewrite the goldens in testdata")
