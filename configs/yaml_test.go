package configs

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStrategyName(t *testing.T) {
	for in, want := range map[string]string{
		"shop.Orders/Get":  "shop.Orders-Get",
		"GET /orders/{id}": "GET-orders-id",
		"orders":           "orders",
		"":                 "policy",
		"/":                "policy",
		"_x_":              "x",
	} {
		assert.Equal(t, want, StrategyName(in), in)
	}
}

func TestFormatValue(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{
		{1500 * time.Millisecond, "1.5s"},
		{time.Duration(0), "0s"},
		{[]string{"5xx", "429"}, `[5xx, "429"]`},
		{"full-jitter", "full-jitter"},
		{"true", `"true"`},
		{"a: b", `"a: b"`},
		{0.1, "0.1"},
		{3, "3"},
		{true, "true"},
	} {
		assert.Equal(t, tt.want, FormatValue(tt.in))
	}
}

func TestWriteYAMLNestsAndPlacesEveryField(t *testing.T) {
	at := Pos{File: "f.json", Line: 3, Col: 5, Path: "a.b"}
	f := &Fragment{Format: GRPC, File: "f.json", Policies: []*Policy{{
		Name: "s.S/M",
		Values: []Value{
			{Field: "max_attempts", Value: 3, Pos: at},
			{Field: "backoff.kind", Value: "full-jitter", Pos: Pos{File: "f.json", Line: 2, Col: 1, Path: "a", Default: "doc"}},
			{Field: "retry_on", Value: []string{"5xx"}, Pos: at},
			{Field: "backoff.base", Value: 100 * time.Millisecond, Pos: at},
		},
		Hazards: []Hazard{{Rule: HazardClamped, Pos: at, Msg: "m"}},
	}}}
	var b bytes.Buffer
	require.NoError(t, f.WriteYAML(&b))
	assert.Equal(t, `# herdlab import grpc f.json
# Every field says where it was read (FILE:LINE:COL: PATH); "default" marks a value
# the file leaves out, filled in as its project documents it. Paste the strategies
# into a scenario, or keep the link with from: (it reads the file at every run).
strategies:
  - name: s.S-M  # from: {grpc_service_config: f.json, method: s.S/M}
    max_attempts: 3  # f.json:3:5: a.b
    backoff:
      kind: full-jitter  # f.json:2:1: a (default: doc)
      base: 100ms  # f.json:3:5: a.b
    retry_on: [5xx]  # f.json:3:5: a.b
    # hazard (clamped): f.json:3:5: a.b: m
`, b.String())
}

func TestFromYAMLReadsThePolicy(t *testing.T) {
	assert.Equal(t, "{istio: vs.yaml, virtual_service: orders, route: writes}", FromYAML(Istio, "vs.yaml", "orders/writes"))
	assert.Equal(t, "{istio: vs.yaml, virtual_service: orders}", FromYAML(Istio, "vs.yaml", "orders"))
	assert.Equal(t, `{linkerd: l.yaml, route: "GET /orders/{id}"}`, FromYAML(Linkerd, "l.yaml", "GET /orders/{id}"))
	assert.Equal(t, "{envoy: e.yaml, route: get-user}", FromYAML(Envoy, "e.yaml", "get-user"))
	assert.Equal(t, "{aws: config, profile: default}", FromYAML(AWS, "config", "default"))
}
