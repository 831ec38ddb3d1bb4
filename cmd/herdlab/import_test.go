package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/configs"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// TestImportThenRunIsFrom: for every library scenario that reads a
// configuration file, the scenario written with what `herdlab import`
// prints in place of each from: runs to the same outputs as the
// scenario itself.
func TestImportThenRunIsFrom(t *testing.T) {
	skipUnderRace(t)
	files, err := filepath.Glob("../../scenarios/configs/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal(data, &doc))
			replaced := 0
			for _, n := range policyNodes(doc.Content[0]) {
				replaced += importInto(t, filepath.Dir(file), n)
			}
			require.Positive(t, replaced, "the scenario reads a file")
			imported, err := yaml.Marshal(&doc)
			require.NoError(t, err)
			copied := filepath.Join(t.TempDir(), filepath.Base(file))
			require.NoError(t, os.WriteFile(copied, imported, 0o644))

			a, b := t.TempDir(), t.TempDir()
			code, _, errOut := herdlab("run", file, "--out", a, "-q")
			require.Equal(t, exitOK, code, errOut)
			code, _, errOut = herdlab("run", copied, "--out", b, "-q")
			require.Equal(t, exitOK, code, errOut)
			from, imp := summaryOf(t, a), summaryOf(t, b)
			assert.NotEmpty(t, from.ReadFrom, "from: lists what it read")
			assert.Empty(t, imp.ReadFrom)
			from.ReadFrom = nil
			assert.Equal(t, from, imp)
			for _, f := range []string{"timeseries.csv", "summary.csv"} {
				x, err := os.ReadFile(filepath.Join(a, f))
				require.NoError(t, err)
				y, err := os.ReadFile(filepath.Join(b, f))
				require.NoError(t, err)
				assert.True(t, bytes.Equal(x, y), "%s differs", f)
			}
		})
	}
}

// policyNodes returns the strategies and the edge policies of the
// scenario mapping doc.
func policyNodes(doc *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, st := range value(doc, "strategies").Content {
		out = append(out, st)
		if edges := value(st, "edges"); edges != nil {
			for i := 1; i < len(edges.Content); i += 2 {
				out = append(out, edges.Content[i])
			}
		}
	}
	return out
}

// importInto replaces the from: of the policy mapping n by the fields
// `herdlab import` prints for the same policy, and reports whether it
// had one (1) or not (0).
func importInto(t *testing.T, dir string, n *yaml.Node) int {
	fromNode := value(n, "from")
	if fromNode == nil {
		return 0
	}
	var f scenarios.From
	require.NoError(t, fromNode.Decode(&f))
	ref := map[string]configs.Ref{
		configs.GRPC:    {Format: configs.GRPC, File: f.GRPCServiceConfig, Name: f.Method},
		configs.Envoy:   {Format: configs.Envoy, File: f.Envoy, Name: f.Route},
		configs.Istio:   {Format: configs.Istio, File: f.Istio, Name: f.VirtualService, Route: f.Route},
		configs.Linkerd: {Format: configs.Linkerd, File: f.Linkerd, Name: f.Route},
		configs.AWS:     {Format: configs.AWS, File: f.AWS, Name: f.Profile},
	}
	var r configs.Ref
	for _, x := range ref {
		if x.File != "" {
			r = x
		}
	}
	path := filepath.Join(dir, r.File)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	r.File = path
	p, err := configs.Read(r, data)
	require.NoError(t, err)

	code, out, errOut := herdlab("import", r.Format, path)
	require.Equal(t, exitOK, code, errOut)
	var frag yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(out), &frag), out)
	var policy *yaml.Node
	for _, st := range value(frag.Content[0], "strategies").Content {
		if value(st, "name").Value == configs.StrategyName(p.Name) {
			policy = st
		}
	}
	require.NotNil(t, policy, "import prints %s", p.Name)
	var kept []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "from" {
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
	}
	var fields []*yaml.Node
	for i := 0; i+1 < len(policy.Content); i += 2 {
		if k := policy.Content[i].Value; k != "name" && value(n, k) == nil {
			fields = append(fields, policy.Content[i], policy.Content[i+1])
		}
	}
	n.Content = append(kept, fields...)
	n.Style = 0 // block style: the imported fields are nested
	return 1
}

// value returns the value of key in the mapping n, or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	for i := 0; n != nil && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// summaryOf reads a run's summary.json, without its wall-clock times.
func summaryOf(t *testing.T, dir string) results.Summary {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s results.Summary
	require.NoError(t, json.Unmarshal(data, &s))
	for i := range s.Strategies {
		s.Strategies[i].Engine.WallS = 0
	}
	return s
}

func TestImportPrintsWhereEachFieldCameFrom(t *testing.T) {
	code, out, errOut := herdlab("import", "grpc", "../../scenarios/configs/deploy/grpc-service-config.json")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "strategies:\n  - name: shop.Orders  # from: {grpc_service_config: ../../scenarios/configs/deploy/grpc-service-config.json, method: shop.Orders}\n")
	assert.Contains(t, out, "    max_attempts: 5  # ../../scenarios/configs/deploy/grpc-service-config.json:7:9: methodConfig[0].retryPolicy.maxAttempts\n")
	assert.Contains(t, out, "(default: gRFC A6")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, ": ") && !strings.HasPrefix(strings.TrimSpace(line), "#") && !strings.HasSuffix(line, ":") {
			assert.Contains(t, line, "  # ", "every field says where it came from: %q", line)
		}
	}
}

func TestImportRefusesWhatTheProjectRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "sc.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"methodConfig": [{"name": [{"service": "s.S"}],
  "retryPolicy": {"maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`), 0o644))
	code, out, errOut := herdlab("import", "grpc", bad)
	assert.Equal(t, exitBadInput, code)
	assert.Empty(t, out, "nothing half-written")
	assert.Contains(t, errOut, bad+":2:19: methodConfig[0].retryPolicy.maxAttempts: ")

	code, _, errOut = herdlab("import", "nginx", bad)
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, errOut, `unknown format "nginx" (want one of grpc, envoy, istio, linkerd, aws)`)
	code, _, errOut = herdlab("import", "grpc", filepath.Join(dir, "none.json"))
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, errOut, "none.json:1:1: cannot read: no such file or directory")
}
