package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/scenarios"
)

func TestHelpScenario(t *testing.T) {
	code, out, errOut := herdlab("help", "scenario")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "Pitfalls")
	assert.Contains(t, out, "strategies[].backoff.cap  duration, default 1m, >= base\n")
	assert.Contains(t, out, "services[].calls[].retry  edge policy")

	for _, field := range []string{"strategies.backoff", "strategies[].backoff", "strategies[0].backoff"} {
		code, out, errOut = herdlab("help", "scenario", field)
		require.Equal(t, exitOK, code, errOut)
		assert.True(t, strings.HasPrefix(out, "strategies[].backoff  mapping\n"), out)
		assert.Contains(t, out, "strategies[].backoff.preset  string\n    one of cenkalti-backoff, failsafe-go, go-retryablehttp\n")
		assert.NotContains(t, out, "strategies[].max_attempts", "only the field and its children")
	}

	code, out, errOut = herdlab("help", "scenario", "strategies.bakoff")
	assert.Equal(t, exitBadInput, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `no field "strategies.bakoff"; nearest: strategies[].backoff`)

	// herdlab help is as it was.
	code, out, _ = herdlab("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Commands:")
	code, out, _ = herdlab("help", "run")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Usage: herdlab run")
}

func TestHelpScenarioWritesTheDocs(t *testing.T) {
	code, md, errOut := herdlab("help", "scenario", "--markdown")
	require.Equal(t, exitOK, code, errOut)
	want, err := os.ReadFile("../../docs/scenario-reference.md")
	require.NoError(t, err)
	assert.Equal(t, string(want), md, "docs/scenario-reference.md is stale: run go generate ./cmd/herdlab")
	code, schema, errOut := herdlab("help", "scenario", "--schema")
	require.Equal(t, exitOK, code, errOut)
	want, err = os.ReadFile("../../docs/scenario.schema.json")
	require.NoError(t, err)
	assert.Equal(t, string(want), schema, "docs/scenario.schema.json is stale: run go generate ./cmd/herdlab")
}

// TestEverythingFilesValidate holds the everything files to herdlab
// validate, as the reference's claim says.
func TestEverythingFilesValidate(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/testdata/valid/everything*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 4)
	code, out, errOut := herdlab(append([]string{"validate", "-q"}, files...)...)
	assert.Equal(t, exitOK, code, out+errOut)
}

func TestInit(t *testing.T) {
	skipUnderRace(t)
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("../../docs/scenario.schema.json")
	require.NoError(t, err)
	for _, graph := range []bool{false, true} {
		name := map[bool]string{false: "single", true: "graph"}[graph]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.yaml")
			args := []string{"init", file}
			if graph {
				args = append(args, "--graph")
			}
			code, out, errOut := herdlab(args...)
			require.Equal(t, exitOK, code, errOut)
			assert.Contains(t, out, "wrote "+file)

			// Without a file, the same text on stdout.
			code, stdout, _ := herdlab(append([]string{"init"}, args[2:]...)...)
			require.Equal(t, exitOK, code)
			written, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, string(written), stdout)
			assert.Greater(t, strings.Count(stdout, "# "), 20, "a commented file")

			// The schema takes it, as the decoder does.
			assert.NoError(t, schema.Validate(yamlAsJSON(t, written)), "the schema refuses init's scenario")

			// It validates and passes lint with no warning.
			sc, err := scenarios.Load(file)
			require.NoError(t, err)
			assert.Empty(t, scenarios.Lint(sc), "init's scenario has lint findings")
			require.GreaterOrEqual(t, len(sc.Strategies), 2)
			for _, st := range sc.Strategies[1:] {
				assert.Equal(t, sc.Strategies[0].Timeout, st.Timeout, "a fair comparison: the same timeout")
				assert.Equal(t, sc.Strategies[0].MaxAttempts, st.MaxAttempts, "a fair comparison: the same max_attempts")
			}
			if !graph {
				assert.False(t, sc.Server.Queue.Unlimited(), "an explicit queue")
			}

			// It runs.
			outDir := filepath.Join(dir, "out")
			code, _, errOut = herdlab("run", "--out", outDir, file)
			require.Equal(t, exitOK, code, errOut)
			assert.FileExists(t, filepath.Join(outDir, "summary.json"))

			// It refuses to overwrite without --force.
			code, _, errOut = herdlab(args...)
			assert.Equal(t, exitBadInput, code)
			assert.Contains(t, errOut, "exists")
			code, _, errOut = herdlab(append(args, "--force")...)
			assert.Equal(t, exitOK, code, errOut)
		})
	}
}

// yamlAsJSON reads YAML data as the values an editor checks against the
// schema.
func yamlAsJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return out
}
