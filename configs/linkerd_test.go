//go:build !js

package configs

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkerdProfileOf is a ServiceProfile for orders whose one route "get"
// has the fields route (flush left; they start at line 10, column 5),
// and the spec fields spec after the routes (flush left, at column 3).
func linkerdProfileOf(route, spec string) string {
	var b strings.Builder
	b.WriteString("apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: orders.shop.svc.cluster.local\nspec:\n  routes:\n  - name: get\n    condition:\n      method: GET\n")
	for _, line := range strings.Split(route, "\n") {
		if line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	for _, line := range strings.Split(spec, "\n") {
		if line != "" {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}

// linkerdRouteOf is an HTTPRoute "reads" with the annotations ann (flush
// left; from line 5, column 5) whose parent is the Service inventory,
// followed by that Service with the annotations svc.
func linkerdRouteOf(ann, svc string) string {
	var b strings.Builder
	b.WriteString("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: reads\n")
	if ann != "" {
		b.WriteString("  annotations:\n")
		for _, line := range strings.Split(ann, "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	b.WriteString("spec:\n  parentRefs:\n  - name: inventory\n    kind: Service\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: inventory\n")
	if svc != "" {
		b.WriteString("  annotations:\n")
		for _, line := range strings.Split(svc, "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	b.WriteString("spec:\n  ports: [{port: 80}]\n")
	return b.String()
}

var linkerdProfileRetrying = []string{
	"backoff.kind none (default)",
	"retry_after.mode ignore (default)",
	"ignore_pushback true (default)",
}

var linkerdDefaultBudget = []string{
	"budget.kind finagle (default)",
	"budget.percent 20 (default)",
	"budget.min_per_second 10 (default)",
	"budget.ttl 10s (default)",
	"budget.scope sender (default)",
}

var linkerdAnnotationRetrying = []string{
	"backoff.kind equal-jitter (default)",
	"backoff.base 50ms (default)",
	"backoff.cap 500ms (default)",
	"retry_after.mode ignore (default)",
	"ignore_pushback true (default)",
}

// TestLinkerdDefaults is the step table of what the reader fills in, for
// profiles and for annotations.
func TestLinkerdDefaults(t *testing.T) {
	tests := []struct {
		name, route string
		file        string
		want        []string
	}{
		{
			name: "a profile route: not retried, 10s",
			file: linkerdProfileOf("", ""), route: "get",
			want: []string{"max_attempts 1 (default)", "timeout 10s (default)", "max_elapsed 10s (default)"},
		},
		{
			name: "retryable: no limit but the budget, Linkerd's default budget",
			file: linkerdProfileOf("isRetryable: true\ntimeout: 1500ms", ""), route: "get",
			want: istioJoin([]string{"max_attempts unlimited", "timeout 1.5s", "max_elapsed 1.5s", "retry_on [5xx] (default)"}, linkerdProfileRetrying, linkerdDefaultBudget),
		},
		{
			name: "a written budget is as written",
			file: linkerdProfileOf("isRetryable: true", "retryBudget:\n  retryRatio: 0.35\n  minRetriesPerSecond: 0\n  ttl: 1m"), route: "get",
			want: istioJoin([]string{"max_attempts unlimited", "timeout 10s (default)", "max_elapsed 10s (default)", "retry_on [5xx] (default)"}, linkerdProfileRetrying,
				[]string{"budget.kind finagle", "budget.percent 35", "budget.min_per_second 0", "budget.ttl 1m0s", "budget.scope sender (default)"}),
		},
		{
			name: "isRetryable false",
			file: linkerdProfileOf("isRetryable: false", ""), route: "get",
			want: []string{"max_attempts 1", "timeout 10s (default)", "max_elapsed 10s (default)"},
		},
		{
			name: "response classes: the first match decides, a 5xx is a failure unless a class says not",
			file: linkerdProfileOf("isRetryable: true\nresponseClasses:\n- condition: {status: {min: 500, max: 502}}\n  isFailure: false\n- condition: {any: [{status: {min: 400, max: 499}}]}\n  isFailure: true", ""), route: "get",
			want: istioJoin([]string{"max_attempts unlimited", "timeout 10s (default)", "max_elapsed 10s (default)", `retry_on [5xx, "429", 4xx]`}, linkerdProfileRetrying, linkerdDefaultBudget),
		},
		{
			name: "response classes that clear every failure: no retry",
			file: linkerdProfileOf("isRetryable: true\nresponseClasses:\n- condition: {not: {status: {min: 200, max: 299}}}\n  isFailure: false", ""), route: "get",
			want: []string{"max_attempts 1", "timeout 10s (default)", "max_elapsed 10s (default)"},
		},
		{
			name: "no retry annotations: no retries",
			file: linkerdRouteOf("timeout.linkerd.io/request: 4s", ""), route: "reads",
			want: []string{"max_attempts 1 (default)", "timeout 4s", "max_elapsed 4s"},
		},
		{
			name: "retry.linkerd.io/http alone: limit 1, Linkerd's back-off, no timeout",
			file: linkerdRouteOf("retry.linkerd.io/http: gateway-error", ""), route: "reads",
			want: istioJoin([]string{"max_attempts 2 (default)", "retry_on [5xx]"}, linkerdAnnotationRetrying),
		},
		{
			name: "a limit of 0 is the default, 1",
			file: linkerdRouteOf("retry.linkerd.io/http: 429,400-403\nretry.linkerd.io/limit: \"0\"", ""), route: "reads",
			want: istioJoin([]string{"max_attempts 2 (default)", `retry_on ["429", 4xx]`}, linkerdAnnotationRetrying),
		},
		{
			name: "a retry timeout is retried; the shortest timeout bounds an attempt",
			file: linkerdRouteOf("retry.linkerd.io/http: 5xx\nretry.linkerd.io/limit: \"4\"\nretry.linkerd.io/timeout: 250ms\ntimeout.linkerd.io/request: 2s", ""), route: "reads",
			want: istioJoin([]string{"max_attempts 5", "timeout 250ms", "max_elapsed 2s", "retry_on [timeout, 5xx]"}, linkerdAnnotationRetrying),
		},
		{
			name: "a response timeout shorter than the retry timeout is not retried",
			file: linkerdRouteOf("retry.linkerd.io/http: 5xx\nretry.linkerd.io/timeout: 1s\ntimeout.linkerd.io/response: 500ms", ""), route: "reads",
			want: istioJoin([]string{"max_attempts 2 (default)", "timeout 500ms", "retry_on [5xx]"}, linkerdAnnotationRetrying),
		},
		{
			name: "codes herdlab's server never answers: no retry",
			file: linkerdRouteOf("retry.linkerd.io/http: 500-502\nretry.linkerd.io/limit: \"3\"", ""), route: "reads",
			want: []string{"max_attempts 1"},
		},
		{
			name: "a route without retry annotations takes its Service's",
			file: linkerdRouteOf("timeout.linkerd.io/request: 4s", "retry.linkerd.io/http: 5xx\nretry.linkerd.io/limit: \"2\"\ntimeout.linkerd.io/request: 9s"), route: "reads",
			want: istioJoin([]string{"max_attempts 3", "timeout 4s", "max_elapsed 4s", "retry_on [5xx]"}, linkerdAnnotationRetrying),
		},
		{
			name: "a route's retry annotations replace all of its Service's",
			file: linkerdRouteOf("retry.linkerd.io/timeout: 1s", "retry.linkerd.io/http: 5xx\nretry.linkerd.io/limit: \"2\""), route: "reads",
			want: istioJoin([]string{"max_attempts 2 (default)", "timeout 1s", "retry_on [timeout]"}, linkerdAnnotationRetrying),
		},
		{
			name: "a GRPCRoute: UNAVAILABLE is herdlab's 503, RESOURCE_EXHAUSTED its 429",
			file: strings.Replace(linkerdRouteOf("retry.linkerd.io/grpc: unavailable,resource-exhausted,internal", ""), "kind: HTTPRoute", "kind: GRPCRoute", 1), route: "reads",
			want: istioJoin([]string{"max_attempts 2 (default)", `retry_on [5xx, "429"]`}, linkerdAnnotationRetrying),
		},
		{
			name: "the Service itself is a policy",
			file: linkerdRouteOf("", "retry.linkerd.io/http: \"503\""), route: "inventory",
			want: istioJoin([]string{"max_attempts 2 (default)", "retry_on [5xx]"}, linkerdAnnotationRetrying),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Read(Ref{Format: Linkerd, File: "l.yaml", Name: tt.route}, []byte(tt.file))
			require.NoError(t, err, tt.file)
			assert.Equal(t, tt.want, meshValues(p.Values), tt.file)
		})
	}
}

// TestLinkerdRefuses is the table of what Linkerd refuses, with
// line:col.
func TestLinkerdRefuses(t *testing.T) {
	sp := `ServiceProfile "orders.shop.svc.cluster.local"`
	tests := []struct {
		name, file string
		want       []string
	}{
		{"a bad timeout", linkerdProfileOf("timeout: 10", ""),
			[]string{`10:5 ` + sp + ` has a route with an invalid timeout: time: invalid duration "10"`}},
		{"an unknown field", linkerdProfileOf("isRetriable: true", ""),
			[]string{`10:5 failed to validate ServiceProfile: unknown field "isRetriable"`}},
		{"a string for a boolean", linkerdProfileOf("isRetryable: \"yes\"", ""),
			[]string{`10:5 failed to validate ServiceProfile: cannot unmarshal "yes" into a boolean`}},
		{"an empty condition", strings.Replace(linkerdProfileOf("", ""), "      method: GET\n", "      not: {}\n", 1),
			[]string{`8:5 ` + sp + ` has a route with an invalid condition: A request match must have a field set`}},
		{"a route with no name", strings.Replace(linkerdProfileOf("", ""), "  - name: get\n    condition:", "  - condition:", 1),
			[]string{`7:5 ` + sp + ` has a route with no name`}},
		{"a bad status range", linkerdProfileOf("responseClasses:\n- condition: {status: {min: 500, max: 404}}\n  isFailure: true", ""),
			[]string{`11:7 ` + sp + ` has a response class with an invalid condition: Range maximum cannot be smaller than minimum`}},
		{"a negative retry ratio", linkerdProfileOf("", "retryBudget:\n  retryRatio: -0.1\n  minRetriesPerSecond: 1\n  ttl: 10s"),
			[]string{`11:5 ` + sp + ` RetryBudget RetryRatio must be non-negative: -0.100000`}},
		{"a budget without ttl nor ratio", linkerdProfileOf("", "retryBudget:\n  minRetriesPerSecond: 1"),
			[]string{`10:3 spec.retryBudget.retryRatio: Required value`, `10:3 ` + sp + ` RetryBudget missing TTL field`}},
		{"a bad ttl", linkerdProfileOf("", "retryBudget:\n  retryRatio: 0.1\n  minRetriesPerSecond: 1\n  ttl: ten"),
			[]string{`13:5 ` + sp + ` RetryBudget: time: invalid duration "ten"`}},
		{"no routes", "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: orders\nspec:\n  routes: []\n",
			[]string{`6:3 ServiceProfile "orders" has no routes`}},
		{"an invalid name", strings.Replace(linkerdProfileOf("", ""), "orders.shop", "Orders_shop", 1),
			[]string{`1:1 ServiceProfile "Orders_shop.svc.cluster.local" has invalid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`}},
		{"an invalid http condition", linkerdRouteOf("retry.linkerd.io/http: 5xx,600", ""),
			[]string{`6:5 invalid retry condition: 5xx,600`}},
		{"a backwards range", linkerdRouteOf("retry.linkerd.io/http: 504-500", ""),
			[]string{`6:5 invalid retry condition: 504-500`}},
		{"a grpc condition on an HTTPRoute", linkerdRouteOf("retry.linkerd.io/grpc: unavailable", ""),
			[]string{`6:5 retry.linkerd.io/grpc is not valid on an HTTPRoute`}},
		{"an http condition on a GRPCRoute", strings.Replace(linkerdRouteOf("retry.linkerd.io/http: 5xx", ""), "kind: HTTPRoute", "kind: GRPCRoute", 1),
			[]string{`6:5 retry.linkerd.io/http is not valid on a GRPCRoute`}},
		{"an unknown grpc condition", strings.Replace(linkerdRouteOf("retry.linkerd.io/grpc: unavailable,aborted", ""), "kind: HTTPRoute", "kind: GRPCRoute", 1),
			[]string{`6:5 invalid retry condition: unavailable,aborted`}},
		{"a negative limit", linkerdRouteOf("retry.linkerd.io/limit: \"-1\"", ""),
			[]string{`6:5 invalid retry limit "-1": want an integer from 0 to 65535`}},
		{"a number for a string", linkerdRouteOf("retry.linkerd.io/limit: 2", ""),
			[]string{`6:5 annotation values must be strings, got "2" (quote it)`}},
		{"a timeout without unit", linkerdRouteOf("retry.linkerd.io/http: 5xx\ntimeout.linkerd.io/request: \"5\"", ""),
			[]string{`7:5 invalid duration "5": write a number and its unit (5s, 200ms)`}},
		{"on the Service too", linkerdRouteOf("", "retry.linkerd.io/http: 5xy"),
			[]string{`15:5 invalid retry condition: 5xy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "get"
			if strings.Contains(tt.file, "Route\n") {
				name = "reads"
			}
			_, err := Read(Ref{Format: Linkerd, File: "l.yaml", Name: name}, []byte(tt.file))
			assert.Equal(t, tt.want, meshErrors(t, err), tt.file)
		})
	}
}

// TestLinkerdPositions: every value of the deploy file at its key, or,
// for a default, at the object it is missing from.
func TestLinkerdPositions(t *testing.T) {
	data, err := os.ReadFile("testdata/linkerd/deploy-shop.yaml")
	require.NoError(t, err)
	f, err := Import(Linkerd, "deploy-shop.yaml", data)
	require.NoError(t, err)
	got := map[string][]string{}
	var services []string
	for _, p := range f.Policies {
		got[p.Name] = meshPositions(p.Values)
		services = append(services, p.Service)
	}
	budget := []string{"budget.kind 39:3", "budget.percent 40:5", "budget.min_per_second 41:5", "budget.ttl 42:5", "budget.scope 39:3"}
	want := map[string][]string{
		"GET /orders/{id}": istioJoin([]string{"max_attempts 20:5", "timeout 21:5", "max_elapsed 21:5", "retry_on 16:5", "backoff.kind 16:5", "retry_after.mode 16:5", "ignore_pushback 16:5"}, budget),
		"GET /orders":      istioJoin([]string{"max_attempts 33:5", "timeout 22:5", "max_elapsed 22:5", "retry_on 27:5", "backoff.kind 22:5", "retry_after.mode 22:5", "ignore_pushback 22:5"}, budget),
		"POST /orders":     {"max_attempts 34:5", "timeout 38:5", "max_elapsed 38:5"},
		"inventory":        {"max_attempts 53:5", "timeout 54:5", "max_elapsed 54:5", "retry_on 52:5", "backoff.kind 52:5", "backoff.base 52:5", "backoff.cap 52:5", "retry_after.mode 52:5", "ignore_pushback 52:5"},
		"inventory-reads":  {"max_attempts 72:5", "timeout 73:5", "max_elapsed 54:5", "retry_on 71:5", "backoff.kind 71:5", "backoff.base 71:5", "backoff.cap 71:5", "retry_after.mode 71:5", "ignore_pushback 71:5"},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"orders", "orders", "orders", "inventory", "inventory"}, services)
	reads := f.Policies[4]
	v, _ := reads.Get("max_elapsed")
	assert.Equal(t, "Service/inventory metadata.annotations.timeout.linkerd.io/request", v.Pos.Path, "the Service's timeout, read for its route")
	v, _ = f.Policies[0].Get("budget.percent")
	assert.Equal(t, "ServiceProfile/orders.shop.svc.cluster.local spec.retryBudget.retryRatio", v.Pos.Path)
}

// TestLinkerdReadIsImport: reading each policy by the name Import gives
// it gives the same policy.
func TestLinkerdReadIsImport(t *testing.T) {
	data, err := os.ReadFile("testdata/linkerd/deploy-shop.yaml")
	require.NoError(t, err)
	f, err := Import(Linkerd, "deploy-shop.yaml", data)
	require.NoError(t, err)
	require.Len(t, f.Policies, 5)
	for _, want := range f.Policies {
		got, err := Read(Ref{Format: Linkerd, File: "deploy-shop.yaml", Name: want.Name}, data)
		require.NoError(t, err, want.Name)
		assert.Equal(t, want, got, want.Name)
	}
	_, err = Read(Ref{Format: Linkerd, File: "deploy-shop.yaml", Name: "DELETE /orders"}, data)
	assert.EqualError(t, err, "deploy-shop.yaml:1:1: no Linkerd route \"DELETE /orders\" in the file (it has: GET /orders/{id}, GET /orders, POST /orders, inventory, inventory-reads)")
}

// TestLinkerdHazards: annotation retries have no budget; a profile's
// always has one.
func TestLinkerdHazards(t *testing.T) {
	data, err := os.ReadFile("testdata/linkerd/deploy-shop.yaml")
	require.NoError(t, err)
	f, err := Import(Linkerd, "deploy-shop.yaml", data)
	require.NoError(t, err)
	var got []string
	for _, p := range f.Policies {
		for _, h := range p.Hazards {
			got = append(got, p.Name+" "+h.Rule)
			assert.Contains(t, h.Msg, "no retry budget")
		}
	}
	assert.Equal(t, []string{"inventory no-budget", "inventory-reads no-budget"}, got)
	h := f.Policies[4].Hazards[0]
	assert.Equal(t, []int{72, 5}, []int{h.Pos.Line, h.Pos.Col})
	assert.Contains(t, h.Msg, "up to 3 times")

	p, err := Read(Ref{Format: Linkerd, File: "l.yaml", Name: "reads"}, []byte(linkerdRouteOf("timeout.linkerd.io/request: 4s", "")))
	require.NoError(t, err)
	assert.Empty(t, p.Hazards, "no retries, no hazard")
}
