//go:build !js

package configs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envoyBootstrap writes a bootstrap with one listener whose inline
// route_config has one virtual host (vhost: extra lines of it, flow
// style) holding routes, and the clusters; each route and cluster is
// one flow-style line.
func envoyBootstrap(vhost string, routes []string, clusters []string) string {
	var b strings.Builder
	b.WriteString(`static_resources:
  listeners:
  - name: ingress
    address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
    filter_chains:
    - filters:
      - name: hcm
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: in
          route_config:
            virtual_hosts:
            - name: vh
              domains: ["*"]
`)
	if vhost != "" {
		b.WriteString("              " + vhost + "\n")
	}
	b.WriteString("              routes:\n")
	for _, r := range routes {
		b.WriteString("              - " + r + "\n")
	}
	b.WriteString("  clusters:\n")
	for _, c := range clusters {
		b.WriteString("  - " + c + "\n")
	}
	return b.String()
}

// v is an expected value: field, value, and whether it is a default.
type v struct {
	field string
	value any
	dflt  bool
}

func values(vs []Value) []v {
	out := make([]v, len(vs))
	for i, x := range vs {
		out[i] = v{x.Field, x.Value, x.Pos.Default != ""}
	}
	return out
}

// The defaults every retrying route gets from Envoy when it writes
// nothing but retry_on, on a cluster with no circuit breakers.
func retryDefaults(retryOn ...string) []v {
	return []v{
		{"max_attempts", 2, true},
		{"timeout", 15 * time.Second, true},
		{"max_elapsed", 15 * time.Second, true},
		{"retry_on", retryOn, false},
		{"backoff.kind", "envoy-jitter", true},
		{"backoff.base", 25 * time.Millisecond, true},
		{"backoff.cap", 250 * time.Millisecond, true},
		{"retry_after.mode", "ignore", true},
		{"budget.kind", "envoy", true},
		{"budget.percent", 0.0, true},
		{"budget.min_concurrency", 3, true},
		{"budget.scope", "fleet", true},
	}
}

// with returns vs with the fields of changes replaced in place (or
// appended), and the fields named in drop removed.
func with(vs []v, changes []v, drop ...string) []v {
	out := []v{}
	for _, x := range vs {
		if !contains(drop, x.field) {
			out = append(out, x)
		}
	}
next:
	for _, c := range changes {
		for i := range out {
			if out[i].field == c.field {
				out[i] = c
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

const plainCluster = "{name: c}"

// TestEnvoyDefaults is the step table of what the reader fills in: each
// snippet gives exactly these values, and says which are defaults.
func TestEnvoyDefaults(t *testing.T) {
	tests := []struct {
		name     string
		vhost    string
		route    string
		cluster  string
		want     []v
		service  []v
		hazards  []string
		services []v // of the cluster, as Import reads it
	}{
		{name: "no retry policy: Envoy sends once, the attempt bounded by the route timeout",
			route: "{name: r, match: {prefix: /}, route: {cluster: c}}",
			want:  []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}}},
		{name: "no retry policy and the route timeout off: no timeout herdlab could write",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, timeout: 0s}}",
			want:  []v{{"max_attempts", 1, true}}},
		{name: "retry_on alone: one retry, Envoy's back-off, max_retries 3",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			want:    retryDefaults("refused", "timeout", "reset", "5xx"),
			hazards: []string{HazardNoBudget}},
		{name: "a retry policy without retry_on: Envoy does not retry",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {num_retries: 3}}}",
			want:  []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}}},
		{name: "only conditions Envoy does not know: it does not retry",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 'bogus,5xxx'}}}",
			want:  []v{{"max_attempts", 1, false}, {"timeout", 15 * time.Second, true}}},
		{name: "only conditions herdlab never meets: nothing is retried",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 'refused-stream,retriable-4xx,envoy-ratelimited'}}}",
			want:  []v{{"max_attempts", 1, false}, {"timeout", 15 * time.Second, true}}},
		{name: "the conditions' outcomes, in herdlab's order",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 'resource-exhausted, connect-failure'}}}",
			want:    with(retryDefaults("refused", "429"), nil),
			hazards: []string{HazardNoBudget}},
		{name: "reset covers connect failures and per-try timeouts",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: reset}}}",
			want:    retryDefaults("refused", "timeout", "reset"),
			hazards: []string{HazardNoBudget}},
		{name: "reset-before-request: the connect failure only",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: reset-before-request}}}",
			want:    retryDefaults("refused"),
			hazards: []string{HazardNoBudget}},
		{name: "gRPC unavailable is herdlab's 503",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 'unavailable,cancelled'}}}",
			want:    retryDefaults("5xx"),
			hazards: []string{HazardNoBudget}},
		{name: "retriable status codes: 503 is 5xx, 409 a 4xx, 500 never answered",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: retriable-status-codes, retriable_status_codes: [500, 503, 409]}}}",
			want:    retryDefaults("5xx", "4xx"),
			hazards: []string{HazardNoBudget}},
		{name: "num_retries, a base interval: the cap is ten times the base",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, num_retries: 4, retry_back_off: {base_interval: 0.1s}}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"max_attempts", 5, false}, {"backoff.kind", "envoy-jitter", false},
				{"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, true}}),
			hazards: []string{HazardNoBudget}},
		{name: "a base interval under 1ms is 1ms",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, retry_back_off: {base_interval: 0.0002s}}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"backoff.kind", "envoy-jitter", false}, {"backoff.base", time.Millisecond, false}, {"backoff.cap", 10 * time.Millisecond, true}}),
			hazards: []string{HazardNoBudget}},
		{name: "a per-try timeout is the attempt's; the route's bounds the retries",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, timeout: 2s, retry_policy: {retry_on: 5xx, per_try_timeout: 0.25s}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"timeout", 250 * time.Millisecond, false}, {"max_elapsed", 2 * time.Second, false}}),
			hazards: []string{HazardNoBudget}},
		{name: "a per-try timeout not under the route's is ignored, as Envoy ignores it",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, timeout: 1s, retry_policy: {retry_on: 5xx, per_try_timeout: 1s}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"timeout", time.Second, false}, {"max_elapsed", time.Second, false}}),
			hazards: []string{HazardPerTryTimeout, HazardNoBudget}},
		{name: "the route timeout off: a per-try timeout, no max_elapsed",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, timeout: 0s, retry_policy: {retry_on: 5xx, per_try_timeout: 3s}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"timeout", 3 * time.Second, false}}, "max_elapsed"),
			hazards: []string{HazardNoBudget}},
		{name: "Retry-After honored up to Envoy's 300s",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, rate_limited_retry_back_off: {reset_headers: [{name: retry-after}]}}}}",
			want: []v{
				{"max_attempts", 2, true},
				{"timeout", 15 * time.Second, true},
				{"max_elapsed", 15 * time.Second, true},
				{"retry_on", []string{"refused", "timeout", "reset", "5xx"}, false},
				{"backoff.kind", "envoy-jitter", true},
				{"backoff.base", 25 * time.Millisecond, true},
				{"backoff.cap", 250 * time.Millisecond, true},
				{"retry_after.mode", "honor", false},
				{"retry_after.cap", 300 * time.Second, true},
				{"budget.kind", "envoy", true},
				{"budget.percent", 0.0, true},
				{"budget.min_concurrency", 3, true},
				{"budget.scope", "fleet", true},
			},
			hazards: []string{HazardNoBudget}},
		{name: "reset headers without Retry-After: herdlab's hints are never read",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, rate_limited_retry_back_off: {reset_headers: [{name: X-RateLimit-Reset, format: UNIX_TIMESTAMP}], max_interval: 5s}}}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"retry_after.mode", "ignore", false}}),
			hazards: []string{HazardNoBudget}},
		{name: "hedging on the per-try timeout: a hedge per retry, the route timeout per attempt",
			route: "{name: r, match: {prefix: /}, route: {cluster: c, timeout: 2s, retry_policy: {retry_on: 5xx, num_retries: 6, per_try_timeout: 0.2s}, hedge_policy: {hedge_on_per_try_timeout: true}}}",
			want: []v{
				{"max_attempts", 7, false},
				{"timeout", 2 * time.Second, false}, // the route's: the per-try timeout is the hedge delay
				{"max_elapsed", 2 * time.Second, false},
				{"retry_on", []string{"refused", "timeout", "reset", "5xx"}, false},
				{"backoff.kind", "envoy-jitter", true},
				{"backoff.base", 25 * time.Millisecond, true},
				{"backoff.cap", 250 * time.Millisecond, true},
				{"retry_after.mode", "ignore", true},
				{"hedge.delay", 200 * time.Millisecond, false},
				{"hedge.max", 4, false}, // herdlab's most hedges, under num_retries 6
				{"hedge.cancel", true, false},
				{"budget.kind", "envoy", true},
				{"budget.percent", 0.0, true},
				{"budget.min_concurrency", 3, true},
				{"budget.scope", "fleet", true},
			},
			hazards: []string{HazardNoBudget}},
		{name: "hedging without a per-try timeout never fires",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}, hedge_policy: {hedge_on_per_try_timeout: true}}}",
			want:    retryDefaults("refused", "timeout", "reset", "5xx"),
			hazards: []string{HazardNoBudget}},
		{name: "the virtual host's retry policy, when the route has none",
			vhost:   "retry_policy: {retry_on: connect-failure, num_retries: 2}",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c}}",
			want:    with(retryDefaults("refused"), []v{{"max_attempts", 3, false}}),
			hazards: []string{HazardNoBudget}},
		{name: "the route's retry policy replaces the virtual host's entirely",
			vhost:   "retry_policy: {retry_on: connect-failure, num_retries: 2}",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			want:    retryDefaults("refused", "timeout", "reset", "5xx"),
			hazards: []string{HazardNoBudget}},
		{name: "a retry policy written once, by a YAML anchor",
			vhost:   "retry_policy: &rp {retry_on: connect-failure, num_retries: 2}",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: *rp}}",
			want:    with(retryDefaults("refused"), []v{{"max_attempts", 3, false}}),
			hazards: []string{HazardNoBudget}},
		{name: "JSON field names",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retryPolicy: {retryOn: 5xx, numRetries: 2, perTryTimeout: 1s}}}",
			want:    with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{{"max_attempts", 3, false}, {"timeout", time.Second, false}}),
			hazards: []string{HazardNoBudget}},
		{name: "max_retries written",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{max_retries: 10}]}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"budget.kind", "envoy", false}, {"budget.percent", 0.0, false}, {"budget.min_concurrency", 10, false}})},
		{name: "max_retries 0: Envoy lets no retry go",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, num_retries: 5}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{max_retries: 0}]}}",
			want:    []v{{"max_attempts", 1, false}, {"timeout", 15 * time.Second, true}}},
		{name: "a retry budget's defaults",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{retry_budget: {}}]}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"budget.kind", "envoy", false}, {"budget.percent", 20.0, true}, {"budget.min_concurrency", 3, true}})},
		{name: "the thresholds of the route's priority",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, priority: HIGH, retry_policy: {retry_on: 5xx}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{max_retries: 10}, {priority: HIGH, retry_budget: {budget_percent: {value: 50}, min_retry_concurrency: 1}}]}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"budget.kind", "envoy", false}, {"budget.percent", 50.0, false}, {"budget.min_concurrency", 1, false}})},
		{name: "a floor the cluster's max_requests never reaches",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{max_requests: 100, retry_budget: {min_retry_concurrency: 100}}]}}",
			want: with(retryDefaults("refused", "timeout", "reset", "5xx"), []v{
				{"budget.kind", "envoy", false}, {"budget.percent", 20.0, true}, {"budget.min_concurrency", 100, false}}),
			hazards: []string{HazardUnreachableBudget}},
		{name: "a floor of 0 has no herdlab counterpart: the budget is left out",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			cluster: "{name: c, circuit_breakers: {thresholds: [{retry_budget: {min_retry_concurrency: 0}}]}}",
			want:    with(retryDefaults("refused", "timeout", "reset", "5xx"), nil, "budget.kind", "budget.percent", "budget.min_concurrency", "budget.scope")},
		{name: "a POST retried on 5xx",
			route:   "{name: r, match: {prefix: /, headers: [{name: ':method', string_match: {exact: POST}}]}, route: {cluster: c, retry_policy: {retry_on: 5xx}}}",
			want:    retryDefaults("refused", "timeout", "reset", "5xx"),
			hazards: []string{HazardNoBudget, HazardNonIdempotent}},
		{name: "a POST retried on connect failure only is safe",
			route:   "{name: r, match: {prefix: /, headers: [{name: ':method', exact_match: POST}]}, route: {cluster: c, retry_policy: {retry_on: connect-failure}}}",
			want:    retryDefaults("refused"),
			hazards: []string{HazardNoBudget}},
		{name: "outlier detection's defaults",
			route:    "{name: r, match: {prefix: /}, route: {cluster: c}}",
			cluster:  "{name: c, outlier_detection: {}}",
			want:     []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}},
			service:  []v{{"health.consecutive", 5, true}, {"health.eject_for", 30 * time.Second, true}},
			services: []v{{"health.consecutive", 5, true}, {"health.eject_for", 30 * time.Second, true}}},
		{name: "consecutive_5xx 0 disables the ejection",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c}}",
			cluster: "{name: c, outlier_detection: {consecutive_5xx: 0, base_ejection_time: 5s}}",
			want:    []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}}},
		{name: "replicas and balancers",
			route:    "{name: r, match: {prefix: /}, route: {cluster: c}}",
			cluster:  "{name: c, lb_policy: RANDOM, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}}]}, {lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.2, port_value: 80}}}}]}]}}",
			want:     []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}},
			services: []v{{"replicas", 2, false}, {"balancer", "random", false}}},
		{name: "least request with three choices has no herdlab balancer",
			route:   "{name: r, match: {prefix: /}, route: {cluster: c}}",
			cluster: "{name: c, lb_policy: LEAST_REQUEST, least_request_lb_config: {choice_count: 3}}",
			want:    []v{{"max_attempts", 1, true}, {"timeout", 15 * time.Second, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := tt.cluster
			if cluster == "" {
				cluster = plainCluster
			}
			data := []byte(envoyBootstrap(tt.vhost, []string{tt.route}, []string{cluster}))
			p, err := Read(Ref{Format: Envoy, File: "e.yaml", Name: "r"}, data)
			require.NoError(t, err)
			assert.Equal(t, tt.want, values(p.Values))
			assert.Equal(t, tt.service, nilIfEmpty(values(p.ServiceValues)), "service values")
			var rules []string
			for _, h := range p.Hazards {
				rules = append(rules, h.Rule)
			}
			assert.Equal(t, tt.hazards, rules, "hazards")
			f, err := Import(Envoy, "e.yaml", data)
			require.NoError(t, err)
			require.Len(t, f.Services, 1)
			assert.Equal(t, tt.services, nilIfEmpty(values(f.Services[0].Values)), "the cluster as a service")
		})
	}
}

func nilIfEmpty(vs []v) []v {
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// marked returns the line of the input marked "#!" and the column of the
// key on it (after any "- ").
func marked(t *testing.T, in string) string {
	t.Helper()
	for i, line := range strings.Split(in, "\n") {
		if strings.Contains(line, "#!") {
			col := len(line) - len(strings.TrimLeft(line, " -")) + 1
			return fmt.Sprintf("%d:%d", i+1, col)
		}
	}
	t.Fatal("no #! mark")
	return ""
}

// TestEnvoyRefuses: what Envoy refuses is refused, with its reason, at
// the key (the line marked #!).
func TestEnvoyRefuses(t *testing.T) {
	route := func(lines ...string) string {
		return envoyBootstrap("", []string{"name: r\n                match: {prefix: /}\n                route:\n" + strings.Join(lines, "\n")}, []string{plainCluster})
	}
	tests := []struct {
		name string
		in   string
		ref  string // the route read; default r
		want string
	}{
		{"an unknown field", route(
			"                  cluster: c",
			"                  retry_polcy: {retry_on: 5xx} #!"),
			"", `unknown field "retry_polcy"`},
		{"a duration Envoy's JSON does not take", route(
			"                  cluster: c",
			"                  retry_policy:",
			"                    retry_on: 5xx",
			"                    per_try_timeout: 500ms #!"),
			"", `invalid google.protobuf.Duration value "500ms"`},
		{"a negative count", route(
			"                  cluster: c",
			"                  retry_policy:",
			"                    num_retries: -1 #!"),
			"", `invalid value for uint32 field value: -1`},
		{"a base interval of 0 (validation)", route(
			"                  cluster: c",
			"                  retry_policy:",
			"                    retry_on: 5xx",
			"                    retry_back_off:",
			"                      base_interval: 0s #!"),
			"", "value must be greater than 0s"},
		{"a back-off without its base interval (validation)", route(
			"                  cluster: c",
			"                  retry_policy:",
			"                    retry_on: 5xx",
			"                    retry_back_off: #!",
			"                      max_interval: 1s"),
			"", "value is required"},
		{"a max interval under the base", route(
			"                  cluster: c",
			"                  retry_policy:",
			"                    retry_on: 5xx",
			"                    retry_back_off:",
			"                      base_interval: 1s",
			"                      max_interval: 0.5s #!"),
			"", "max_interval 500ms is shorter than base_interval 1s: Envoy refuses it"},
		{"a budget percent above 100 (validation, a nested message)",
			envoyBootstrap("", []string{"{name: r, match: {prefix: /}, route: {cluster: c}}"}, []string{
				"name: c\n    circuit_breakers:\n      thresholds:\n      - retry_budget:\n          budget_percent:\n            value: 150 #!"}),
			"", "value must be inside range [0, 100]"},
		{"an unknown cluster", route(
			"                  cluster: nowhere #!"),
			"", `route: unknown cluster 'nowhere': Envoy checks the clusters of a static route_config`},
		{"an unknown weighted cluster", route(
			"                  weighted_clusters:",
			"                    clusters:",
			"                    - {name: c, weight: 1}",
			"                    - name: gone #!",
			"                      weight: 1"),
			"", `route: unknown cluster 'gone'`},
		{"an unknown @type", strings.Replace(route("                  cluster: c"),
			`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`,
			`"@type": type.googleapis.com/envoy.extensions.filters.network.kafka_broker.v3.KafkaBroker #!`, 1),
			"", `unknown @type "type.googleapis.com/envoy.extensions.filters.network.kafka_broker.v3.KafkaBroker"`},
		{"a typed_config that fails its own validation", strings.Replace(route("                  cluster: c"),
			"          stat_prefix: in\n", "", 1),
			"", "value length must be at least 1 runes"},
		{"a route name written twice", envoyBootstrap("", []string{
			"{name: r, match: {prefix: /a}, route: {cluster: c}}",
			"name: r #!\n                match: {prefix: /b}\n                route: {cluster: c}"}, []string{plainCluster}),
			"", `route name "r" is also at line 16:18`},
		{"a route that does not forward", envoyBootstrap("", []string{
			"name: r #!\n                match: {prefix: /}\n                redirect: {path_redirect: /x}"}, []string{plainCluster}),
			"", `route "r" does not forward (it is a redirect)`},
		{"a cluster written twice", envoyBootstrap("", []string{"{name: r, match: {prefix: /}, route: {cluster: c}}"}, []string{
			plainCluster, "name: c #!"}),
			"", `cluster manager: duplicate cluster 'c' (also at line 18)`},
		{"a YAML merge key", route(
			"                  cluster: c",
			"                  <<: {timeout: 1s} #!"),
			"", "a YAML merge key has no counterpart in Envoy's JSON"},
		{"two documents", route("                  cluster: c") + "---\nstatic_resources: {} #!\n",
			"", "an Envoy bootstrap is one document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.ref
			if name == "" {
				name = "r"
			}
			_, err := Read(Ref{Format: Envoy, File: "e.yaml", Name: name}, []byte(tt.in))
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.Contains(t, e.Msg, tt.want)
			if tt.name == "a typed_config that fails its own validation" {
				// stat_prefix is missing: placed at the typed_config that
				// lacks it.
				assert.Equal(t, "8:9", fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Col), "%v", err)
				assert.Equal(t, "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.stat_prefix", e.Pos.Path)
				return
			}
			assert.Equal(t, marked(t, tt.in), fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Col), "%v", err)
		})
	}
}

// TestEnvoyRefusesEveryProblem: Envoy's validation reports every problem
// of a file, each at its key.
func TestEnvoyRefusesEveryProblem(t *testing.T) {
	in := envoyBootstrap("", []string{
		"{name: r, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, retry_back_off: {base_interval: 0s}}}}",
		"{name: s, match: {prefix: /}, route: {cluster: c, retry_policy: {retry_on: 5xx, retry_back_off: {base_interval: -1s}}}}",
	}, []string{plainCluster})
	_, err := Read(Ref{Format: Envoy, File: "e.yaml", Name: "r"}, []byte(in))
	require.Error(t, err)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *Error
		require.True(t, errors.As(e, &ce))
		got = append(got, fmt.Sprintf("%d:%d %s", ce.Pos.Line, ce.Pos.Col, ce.Msg))
	}
	assert.Equal(t, []string{
		"16:114 value must be greater than 0s",
		"17:114 value must be greater than 0s",
	}, got)
}

func TestEnvoyNoSuchRoute(t *testing.T) {
	data, err := os.ReadFile("testdata/envoy/deploy-front-proxy.yaml")
	require.NoError(t, err)
	_, err = Read(Ref{Format: Envoy, File: "deploy.yaml", Name: "delete-user"}, data)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no route named "delete-user" (the named routes: get-user, search, create-user)`)
}

// TestEnvoyPositions: every value of the deploy file is placed at the key
// it was read from (or, for a default, at the object it is missing from).
func TestEnvoyPositions(t *testing.T) {
	data, err := os.ReadFile("testdata/envoy/deploy-front-proxy.yaml")
	require.NoError(t, err)
	f, err := Import(Envoy, "deploy.yaml", data)
	require.NoError(t, err)
	got := map[string]string{}
	var names []string
	add := func(prefix string, vs []Value) {
		for _, v := range vs {
			got[prefix+v.Field] = fmt.Sprintf("%d:%d", v.Pos.Line, v.Pos.Col)
		}
	}
	for _, p := range f.Policies {
		names = append(names, p.Name)
		add(p.Name+" ", p.Values)
		add(p.Name+" service ", p.ServiceValues)
		for _, h := range p.Hazards {
			got[p.Name+" hazard "+h.Rule] = fmt.Sprintf("%d:%d", h.Pos.Line, h.Pos.Col)
		}
	}
	for _, s := range f.Services {
		add("cluster "+s.Name+" ", s.Values)
	}
	assert.Equal(t, []string{"get-user", "search", "create-user"}, names)
	assert.Equal(t, map[string]string{
		"get-user max_attempts":                  "36:21", // num_retries
		"get-user timeout":                       "37:21", // per_try_timeout
		"get-user max_elapsed":                   "32:19", // route timeout
		"get-user retry_on":                      "34:21",
		"get-user backoff.kind":                  "38:21", // retry_back_off
		"get-user backoff.base":                  "39:23",
		"get-user backoff.cap":                   "40:23",
		"get-user retry_after.mode":              "41:21", // rate_limited_retry_back_off
		"get-user retry_after.cap":               "45:23",
		"get-user budget.kind":                   "72:9", // retry_budget
		"get-user budget.percent":                "73:11",
		"get-user budget.min_concurrency":        "74:11",
		"get-user budget.scope":                  "72:9",
		"get-user service health.consecutive":    "76:7",
		"get-user service health.eject_for":      "77:7",
		"search max_attempts":                    "53:21",
		"search timeout":                         "50:19", // the route timeout, hedged
		"search max_elapsed":                     "50:19",
		"search retry_on":                        "52:21",
		"search backoff.kind":                    "51:19", // defaults: at retry_policy
		"search backoff.base":                    "51:19",
		"search backoff.cap":                     "51:19",
		"search retry_after.mode":                "51:19",
		"search hedge.delay":                     "54:21", // per_try_timeout
		"search hedge.max":                       "53:21", // num_retries
		"search hedge.cancel":                    "56:21",
		"search budget.kind":                     "85:5", // defaults: at the cluster
		"search budget.percent":                  "85:5",
		"search budget.min_concurrency":          "85:5",
		"search budget.scope":                    "85:5",
		"search service health.consecutive":      "88:5", // defaults: at outlier_detection
		"search service health.eject_for":        "88:5",
		"search hazard no-budget":                "51:19",
		"create-user max_attempts":               "61:19", // defaults: at retry_policy
		"create-user timeout":                    "61:19",
		"create-user max_elapsed":                "59:17", // default: at route
		"create-user retry_on":                   "62:21",
		"create-user backoff.kind":               "61:19",
		"create-user backoff.base":               "61:19",
		"create-user backoff.cap":                "61:19",
		"create-user retry_after.mode":           "61:19",
		"create-user budget.kind":                "72:9",
		"create-user budget.percent":             "73:11",
		"create-user budget.min_concurrency":     "74:11",
		"create-user budget.scope":               "72:9",
		"create-user service health.consecutive": "76:7",
		"create-user service health.eject_for":   "77:7",
		"create-user hazard non-idempotent":      "62:21",
		"cluster users replicas":                 "78:5",
		"cluster users balancer":                 "67:5",
		"cluster users health.consecutive":       "76:7",
		"cluster users health.eject_for":         "77:7",
		"cluster search replicas":                "89:5",
		"cluster search health.consecutive":      "88:5",
		"cluster search health.eject_for":        "88:5",
	}, got)

	// The file's own values, spot-checked beside their positions.
	p := f.Policies[0]
	for field, want := range map[string]any{
		"max_attempts": 4, "timeout": 500 * time.Millisecond, "max_elapsed": 3 * time.Second,
		"retry_on": []string{"refused", "timeout", "reset", "5xx", "429"}, "backoff.base": 50 * time.Millisecond,
		"backoff.cap": time.Second, "retry_after.cap": 10 * time.Second, "budget.percent": 25.0, "budget.min_concurrency": 5,
	} {
		v, ok := p.Get(field)
		require.True(t, ok, field)
		assert.Equal(t, want, v.Value, field)
	}
	assert.Equal(t, "users", p.Service)
	// Values are placed from their route (errors keep the whole path).
	assert.Equal(t, "routes[0].route.retry_policy.num_retries", p.Values[0].Pos.Path)
	v, _ := p.Get("budget.percent")
	assert.Equal(t, "clusters[0].circuit_breakers.thresholds[0].retry_budget.budget_percent", v.Pos.Path)
}

// TestEnvoyReadIsImport: reading a route by name gives the policy Import
// gives for it.
func TestEnvoyReadIsImport(t *testing.T) {
	data, err := os.ReadFile("testdata/envoy/deploy-front-proxy.yaml")
	require.NoError(t, err)
	f, err := Import(Envoy, "deploy.yaml", data)
	require.NoError(t, err)
	require.Len(t, f.Policies, 3)
	for _, want := range f.Policies {
		got, err := Read(Ref{Format: Envoy, File: "deploy.yaml", Name: want.Name}, data)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// TestEnvoyJSON: a bootstrap in JSON is read as in YAML, with its
// positions.
func TestEnvoyJSON(t *testing.T) {
	in := `{"static_resources": {"listeners": [{"name": "l", "filter_chains": [{"filters": [{"name": "h", "typed_config": {
  "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
  "statPrefix": "in",
  "routeConfig": {"virtualHosts": [{"name": "v", "domains": ["*"], "routes": [{"name": "r", "match": {"prefix": "/"},
    "route": {"cluster": "c", "retryPolicy": {"retryOn": "5xx", "numRetries": 2}}}]}]}}}]}]}],
  "clusters": [{"name": "c", "circuitBreakers": {"thresholds": [{"maxRetries": 5}]}}]}}`
	p, err := Read(Ref{Format: Envoy, File: "e.json", Name: "r"}, []byte(in))
	require.NoError(t, err)
	v, ok := p.Get("max_attempts")
	require.True(t, ok)
	assert.Equal(t, 3, v.Value)
	assert.Equal(t, "5:65", fmt.Sprintf("%d:%d", v.Pos.Line, v.Pos.Col))
	v, ok = p.Get("budget.min_concurrency")
	require.True(t, ok)
	assert.Equal(t, 5, v.Value)
	assert.Equal(t, "6:66", fmt.Sprintf("%d:%d", v.Pos.Line, v.Pos.Col))
}

// TestEnvoyTypedConfigs: the typed_configs of a usual bootstrap are
// known to the reader, and each is validated by its own type: the same
// file with one of them broken is refused at its key.
func TestEnvoyTypedConfigs(t *testing.T) {
	data, err := os.ReadFile("testdata/envoy/typed-configs.yaml")
	require.NoError(t, err)
	p, err := Read(Ref{Format: Envoy, File: "t.yaml", Name: "api"}, data)
	require.NoError(t, err)
	ma, ok := p.Get("max_attempts")
	require.True(t, ok)
	assert.Equal(t, 2, ma.Value)
	f, err := Import(Envoy, "t.yaml", data)
	require.NoError(t, err)
	// load_balancing_policy has no herdlab balancer: replicas alone.
	assert.Equal(t, []v{{"replicas", 1, false}}, values(f.Services[0].Values))

	tests := []struct{ old, new, want, at string }{
		{"stat_prefix: rl", "stat_prefix: ''", "value length must be at least 1 runes", "37:15"},
		{"path: /var/log/envoy/access.log", "path: ''", "value length must be at least 1 runes", "28:15"},
		{"sni: api.internal", "sni: api.internal\n        bogus: 1", `unknown field "bogus"`, "79:9"},
		{"pass_through_mode: false", "pass_through_mode: {}", "invalid value for bool field value", "33:15"},
	}
	for _, tt := range tests {
		t.Run(tt.new, func(t *testing.T) {
			in := strings.Replace(string(data), tt.old, tt.new, 1)
			require.NotEqual(t, string(data), in)
			_, err := Read(Ref{Format: Envoy, File: "t.yaml", Name: "api"}, []byte(in))
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.Contains(t, e.Msg, tt.want)
			assert.Equal(t, tt.at, fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Col), "%v", err)
		})
	}
}
