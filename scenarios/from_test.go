package scenarios

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeScenario writes a scenario beside a copy of the gRPC service
// config of testdata/from, and returns its path.
func writeScenario(t *testing.T, strategies string) string {
	t.Helper()
	dir := t.TempDir()
	sc, err := os.ReadFile("testdata/from/service-config.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "service-config.json"), sc, 0o644))
	head := "server: {concurrency: 10, outages: [{start: 10s, duration: 10s, mode: refuse}]}\n" +
		"duration: 1m\nworkload: {requests: 200, arrival: {kind: poisson, rate: 10}}\nstrategies:\n"
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(head+strategies), 0o644))
	return path
}

func TestFromReadsTheFile(t *testing.T) {
	s, err := Load("testdata/from/grpc.yaml")
	require.NoError(t, err)
	st := s.Strategies[0]
	assert.Equal(t, 4, st.MaxAttempts)
	assert.Equal(t, Backoff{Kind: BackoffFullJitter, Base: 100 * time.Millisecond, Cap: time.Second, Multiplier: 2, Jitter: 0.2}, st.Backoff)
	assert.Equal(t, 2*time.Second, st.Timeout)
	require.NotNil(t, st.Budget)
	assert.Equal(t, "tokens", st.Budget.Kind)
	assert.Equal(t, 10.0, st.Budget.MaxTokens)
	assert.Equal(t, 0.1, st.Budget.TokenRatio)
	require.NotNil(t, st.From)
	assert.Equal(t, "shop.Orders/Get", st.From.Method)

	// Each value is placed at its key in the file; the scenario's own
	// position of the field is where from: was written.
	at, ok := s.Origin("strategies[0].max_attempts")
	require.True(t, ok)
	assert.Equal(t, "testdata/from/service-config.json:7:9: methodConfig[0].retryPolicy.maxAttempts", at.String())
	line, col := s.Position("strategies[0].max_attempts")
	assert.Equal(t, [2]int{11, 5}, [2]int{line, col})
	at, ok = s.Origin("strategies[0].budget.max_tokens")
	require.True(t, ok)
	assert.Equal(t, "testdata/from/service-config.json:25:23", strings.Join(strings.SplitN(at.String(), ":", 4)[:3], ":"))
	assert.Contains(t, s.Describe(), "strategies: deployed (grpc shop.Orders/Get of service-config.json)")
	_, ok = s.Origin("workload.requests")
	assert.False(t, ok, "a field written in the scenario has no origin")

	// The report lists them.
	var fields []string
	for _, f := range s.ReadFrom() {
		fields = append(fields, f.Field)
	}
	assert.Contains(t, fields, "strategies[0].max_attempts")
	assert.Contains(t, fields, "strategies[0].backoff.base")
	assert.NotContains(t, fields, "strategies[0].backoff", "a mapping is listed by its fields")
	assert.Contains(t, fields, "strategies[0].retry_on", "a list is listed whole")
	assert.NotContains(t, fields, "strategies[0].retry_on[0]")
}

func TestFieldsBesideFromOverride(t *testing.T) {
	from := "    from: {grpc_service_config: service-config.json, method: shop.Orders/Get}\n"
	for _, tt := range []struct {
		name, beside string
		check        func(t *testing.T, st Strategy)
	}{
		{"a field", "    max_attempts: 2\n", func(t *testing.T, st Strategy) {
			assert.Equal(t, 2, st.MaxAttempts)
			assert.Equal(t, 100*time.Millisecond, st.Backoff.Base, "the others are the file's")
		}},
		{"a field of a mapping, the rest kept", "    backoff: {cap: 5s}\n", func(t *testing.T, st Strategy) {
			assert.Equal(t, Backoff{Kind: BackoffFullJitter, Base: 100 * time.Millisecond, Cap: 5 * time.Second, Multiplier: 2, Jitter: 0.2}, st.Backoff)
		}},
		{"a kind of its own replaces the mapping", "    backoff: {kind: fixed, delay: 1s}\n", func(t *testing.T, st Strategy) {
			assert.Equal(t, BackoffFixed, st.Backoff.Kind)
			assert.Equal(t, time.Second, st.Backoff.Delay)
		}},
		{"written before from", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := "  - name: s\n" + from + tt.beside
			if tt.check == nil {
				text = "  - name: s\n    max_attempts: 2\n" + from
			}
			s, err := Load(writeScenario(t, text))
			require.NoError(t, err)
			if tt.check == nil {
				assert.Equal(t, 2, s.Strategies[0].MaxAttempts, "the order of the fields does not matter")
				_, ok := s.Origin("strategies[0].max_attempts")
				assert.False(t, ok, "an overriding field is the scenario's")
				return
			}
			tt.check(t, s.Strategies[0])
		})
	}
}

func TestFromProblemsArePlacedInTheFile(t *testing.T) {
	for _, tt := range []struct{ name, strategy, want string }{
		// A base written beside from: above the file's maxBackoff: the
		// cap is refused where the file sets it.
		{"a value read, refused", "  - name: s\n    from: {grpc_service_config: service-config.json, method: shop.Orders/Get}\n    backoff: {base: 5s}\n",
			"service-config.json:9:9: methodConfig[0].retryPolicy.maxBackoff (strategies[0].backoff.cap): must be >= base (5s), got 1s"},
		{"no such method", "  - name: s\n    from: {grpc_service_config: service-config.json, method: shop.Orders/Put}\n",
			"strategies[0].from"},
		{"no such file", "  - name: s\n    from: {grpc_service_config: nothere.json, method: shop.Orders/Get}\n",
			"s.yaml:6:12: strategies[0].from.grpc_service_config: cannot read nothere.json: no such file or directory"},
		{"two files", "  - name: s\n    from: {grpc_service_config: a.json, envoy: b.yaml, method: x.Y}\n",
			"s.yaml:6:11: strategies[0].from: want exactly one file, named by one of grpc_service_config, envoy, istio, linkerd, aws; got 2"},
		{"a selector missing", "  - name: s\n    from: {envoy: b.yaml}\n",
			"s.yaml:6:11: strategies[0].from: envoy needs route: the route in the file to read"},
		{"an unknown key", "  - name: s\n    from: {grpc: a.json}\n",
			"s.yaml:6:12: strategies[0].from.grpc: unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeScenario(t, tt.strategy))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFromNeedsTheScenarioOnDisk(t *testing.T) {
	data, err := os.ReadFile("testdata/from/grpc.yaml")
	require.NoError(t, err)
	_, err = Parse("grpc.yaml", data)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "grpc.yaml:11:5: strategies[0].from: from: reads a configuration file, so the scenario must be read from disk")
}

func TestASweepVariesAFieldBesideFrom(t *testing.T) {
	path := writeScenario(t, "  - name: s\n    from: {grpc_service_config: service-config.json, method: shop.Orders/Get}\n"+
		"sweep:\n  metric: peak_load_ratio\n  vary: [{path: \"strategies[0].max_attempts\", values: [2, 3]}]\n")
	s, err := Load(path)
	require.NoError(t, err)
	for _, n := range []int{2, 3} {
		p, err := s.With(Setting{Path: "strategies[0].max_attempts", Value: strconv.Itoa(n)})
		require.NoError(t, err)
		assert.Equal(t, n, p.Strategies[0].MaxAttempts)
		assert.Equal(t, 100*time.Millisecond, p.Strategies[0].Backoff.Base, "the point keeps what the file says")
	}
	// from: itself is read once: a sweep cannot change it.
	_, err = s.With(Setting{Path: "strategies[0].from.method", Value: "shop.Orders/Slow"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "strategies[0].from names the configuration file read when the scenario loads: a sweep cannot vary it")
}

// TestFromInAGraph: an edge's policy and a call's deployed policy read
// from files, and the upstream's outlier detection given to the service
// of the graph named as the Envoy cluster.
func TestFromInAGraph(t *testing.T) {
	dir := t.TempDir()
	envoy, err := os.ReadFile("../configs/testdata/envoy/deploy-front-proxy.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "envoy.yaml"), envoy, 0o644))
	sc, err := os.ReadFile("testdata/from/service-config.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sc.json"), sc, 0o644))
	text := `services:
  - name: gateway
    concurrency: 100
    calls:
      - {service: users, retry: {from: {grpc_service_config: sc.json, method: shop.Orders/Get}}}
  - name: users
    concurrency: 100
    replicas: 3
workload: {target: gateway, requests: 100}
strategies:
  - name: s
    backoff: {kind: none}
    max_attempts: 1
    edges:
      gateway->users: {from: {envoy: envoy.yaml, route: get-user}, max_attempts: 2}
`
	path := filepath.Join(dir, "g.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	s, err := Load(path)
	require.NoError(t, err)

	call := s.Services[0].Calls[0].Retry
	require.NotNil(t, call)
	assert.Equal(t, 4, call.MaxAttempts, "the call's deployed policy is the gRPC config's")
	assert.True(t, call.Wrote("max_attempts"))

	edge := s.Strategies[0].Edges.ByEdge["gateway->users"]
	require.NotNil(t, edge)
	assert.Equal(t, 2, edge.MaxAttempts, "written beside from:")
	assert.Equal(t, BackoffEnvoyJitter, edge.Backoff.Kind)
	assert.Equal(t, 50*time.Millisecond, edge.Backoff.Base)
	require.NotNil(t, edge.Budget)
	assert.Equal(t, 25.0, edge.Budget.Percent)

	// The cluster's outlier detection, for the strategy's users service.
	o := s.Strategies[0].Services.ByName["users"]
	require.NotNil(t, o, "the strategy overrides users with its cluster's fields")
	at, ok := s.Origin("strategies[0].services.users.health.consecutive")
	require.True(t, ok)
	assert.Contains(t, at.String(), "envoy.yaml:76:7: clusters[0].outlier_detection.consecutive_5xx")
	at, ok = s.Origin("strategies[0].edges.gateway->users.budget.percent")
	require.True(t, ok)
	assert.Contains(t, at.String(), "envoy.yaml:73:11: clusters[0].circuit_breakers.thresholds[0].retry_budget.budget_percent")
}

// TestLintSaysWhereAMeshRetries: HL010 names, for each layer read from a
// file, where its attempts were read: Istio's default policy, written
// nowhere in the mesh's files, is placed at the route that leaves it out.
func TestLintSaysWhereAMeshRetries(t *testing.T) {
	s, err := Load("configs/istio-mesh.yaml")
	require.NoError(t, err)
	var msg string
	for _, f := range Lint(s) {
		if f.Rule.ID == "HL010" && f.Path == "strategies[0].edges.gateway->frontend" {
			msg = f.Msg
		}
	}
	assert.Contains(t, msg, "orders->db (3 attempts: configs/deploy/istio-mesh-default.yaml:49:5: VirtualService/db spec.http[0].retries (default: Istio: ")
}

// TestProblemsListTheScenarioFirst: a scenario's problems come first,
// then those placed in the files its from: reads, each file in line
// order.
func TestProblemsListTheScenarioFirst(t *testing.T) {
	// The scenario's problem is on line 11, the file's on line 9.
	path := writeScenario(t, "  - name: s\n    from: {grpc_service_config: service-config.json, method: shop.Orders/Get}\n    backoff: {base: 5s}\n    # a\n    # b\n    # c\n    timeout: -1s\n")
	_, err := Load(path)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	assert.Contains(t, lines[0], "s.yaml:11:14: strategies[0].timeout:")
	assert.Contains(t, lines[1], "service-config.json:9:9: methodConfig[0].retryPolicy.maxBackoff (strategies[0].backoff.cap)")
}
