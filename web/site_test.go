package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteSite(t *testing.T) {
	// The site: the page's files, config.json for the wasm engine, the
	// runtime and the examples; a site is replaced whole, a folder of
	// other files is refused.
	rt := Runtime{Wasm: []byte("\x00asm"), WasmExec: []byte("// go"), GoLicense: []byte("BSD")}
	dir := filepath.Join(t.TempDir(), "site")
	require.NoError(t, WriteSite(dir, rt))
	for _, name := range []string{"index.html", "app.js", "worker.js", "charts.js", "THIRD_PARTY_LICENSES.txt", "herdlab.wasm", "wasm_exec.js", "wasm_exec.LICENSE.txt", "examples/index.json", "examples/thundering-herd.yaml"} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var c Config
	require.NoError(t, json.Unmarshal(b, &c))
	assert.Equal(t, Config{Engine: "wasm"}, c)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stale.txt"), nil, 0o644))
	require.NoError(t, WriteSite(dir, rt), "a site is replaced")
	assert.NoFileExists(t, filepath.Join(dir, "stale.txt"), "whole")

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	assert.ErrorContains(t, WriteSite(other, rt), "is not a site")
	assert.FileExists(t, filepath.Join(other, "notes.txt"), "left alone")
	assert.Error(t, WriteSite(filepath.Join(t.TempDir(), "x"), Runtime{}), "no runtime")
}
