//go:build !js

package configs

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meshValues renders values as "field value", with " (default)" for a
// default the reader filled in.
func meshValues(vs []Value) []string {
	out := []string{}
	for _, v := range vs {
		s := v.Field + " " + FormatValue(v.Value)
		if v.Pos.Default != "" {
			s += " (default)"
		}
		out = append(out, s)
	}
	return out
}

// meshPositions renders values as "field LINE:COL".
func meshPositions(vs []Value) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s %d:%d", v.Field, v.Pos.Line, v.Pos.Col))
	}
	return out
}

// meshErrors renders the problems of err as "LINE:COL MSG".
func meshErrors(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := []string{}
	for _, e := range list {
		var ce *Error
		require.True(t, errors.As(e, &ce), "not an *Error: %v", e)
		out = append(out, fmt.Sprintf("%d:%d %s", ce.Pos.Line, ce.Pos.Col, ce.Msg))
	}
	return out
}

// istioFileOf is a VirtualService "orders" whose one http route has the
// fields route (YAML at the route's level, written flush left) besides
// its destination, and then the documents more. The route's fields start
// at line 9, column 5.
func istioFileOf(route string, more ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: orders\nspec:\n  hosts: [orders]\n  http:\n  - name: main\n")
	for _, line := range strings.Split(route, "\n") {
		if line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	b.WriteString("    route:\n    - destination:\n        host: orders.shop.svc.cluster.local\n")
	for _, m := range more {
		b.WriteString("---\n" + m)
	}
	return b.String()
}

// istioRule is a DestinationRule for orders with trafficPolicy tp
// (written flush left).
func istioRule(tp string) string {
	var b strings.Builder
	b.WriteString("apiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\nmetadata:\n  name: orders\nspec:\n  host: orders\n  trafficPolicy:\n")
	for _, line := range strings.Split(strings.TrimRight(tp, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

var istioDefaultRetrying = []string{
	"retry_on [refused, 5xx] (default)",
	"backoff.kind envoy-jitter (default)",
	"backoff.base 25ms (default)",
	"backoff.cap 250ms (default)",
	"retry_after.mode ignore (default)",
	"ignore_pushback true (default)",
}

func istioJoin(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestIstioDefaults is the step table of what the reader fills in: each
// row a route (and rule) and the exact values read, defaults marked.
func TestIstioDefaults(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    []string
		service []string
	}{
		{
			name: "no retries: Istio's default policy, Envoy's back-off",
			file: istioFileOf(""),
			want: istioJoin([]string{"max_attempts 3 (default)"}, istioDefaultRetrying),
		},
		{
			name: "a route timeout bounds the attempts and the retries",
			file: istioFileOf("timeout: 3s"),
			want: istioJoin([]string{"max_attempts 3 (default)", "timeout 3s (default)", "max_elapsed 3s"}, istioDefaultRetrying),
		},
		{
			name: "attempts 0 disables retries",
			file: istioFileOf("timeout: 3s\nretries:\n  attempts: 0"),
			want: []string{"max_attempts 1", "timeout 3s (default)", "max_elapsed 3s"},
		},
		{
			name: "retries without attempts is attempts 0",
			file: istioFileOf("retries: {}"),
			want: []string{"max_attempts 1 (default)"},
		},
		{
			name: "attempts counts the retries; retryOn defaults to the default policy's",
			file: istioFileOf("retries:\n  attempts: 4\n  perTryTimeout: 250ms"),
			want: istioJoin([]string{"max_attempts 5", "timeout 250ms"}, istioDefaultRetrying),
		},
		{
			name: "retryOn conditions and codes",
			file: istioFileOf("retries:\n  attempts: 2\n  retryOn: reset,429,409,504"),
			want: istioJoin([]string{"max_attempts 3", "retry_on [refused, timeout, reset, \"429\", 4xx]"}, istioDefaultRetrying[1:]),
		},
		{
			name: "gateway-error and the gRPC codes",
			file: istioFileOf("retries:\n  attempts: 2\n  retryOn: gateway-error,resource-exhausted,cancelled"),
			want: istioJoin([]string{"max_attempts 3", "retry_on [refused, timeout, reset, 5xx, \"429\"]"}, istioDefaultRetrying[1:]),
		},
		{
			name: "only conditions herdlab never produces: no retry",
			file: istioFileOf("retries:\n  attempts: 2\n  retryOn: refused-stream,retriable-4xx"),
			want: []string{"max_attempts 1"},
		},
		{
			name: "backoff is Envoy's base, the cap 10 times it",
			file: istioFileOf("retries:\n  attempts: 1\n  retryOn: connect-failure\n  backoff: 100ms"),
			want: []string{"max_attempts 2", "retry_on [refused]", "backoff.kind envoy-jitter (default)", "backoff.base 100ms", "backoff.cap 1s (default)", "retry_after.mode ignore (default)", "ignore_pushback true (default)"},
		},
		{
			name: "a retry budget, its defaults",
			file: istioFileOf("retries:\n  attempts: 1\n  retryOn: \"503\"", istioRule("retryBudget: {}")),
			want: istioJoin([]string{"max_attempts 2", "retry_on [5xx]"}, istioDefaultRetrying[1:],
				[]string{"budget.kind envoy", "budget.percent 20 (default)", "budget.min_concurrency 3 (default)", "budget.scope sender (default)"}),
		},
		{
			name: "maxRetries: the floor alone; 0 is Istio's default, no limit",
			file: istioFileOf("", istioRule("connectionPool:\n  http:\n    maxRetries: 0")),
			want: istioJoin([]string{"max_attempts 3 (default)"}, istioDefaultRetrying),
		},
		{
			name: "maxRetries caps the retries in flight; a retry budget overrides it",
			file: istioFileOf("", istioRule("connectionPool:\n  http:\n    maxRetries: 7")),
			want: istioJoin([]string{"max_attempts 3 (default)"}, istioDefaultRetrying,
				[]string{"budget.kind envoy", "budget.percent 0", "budget.min_concurrency 7", "budget.scope sender (default)"}),
		},
		{
			name: "retry budget over maxRetries",
			file: istioFileOf("", istioRule("connectionPool:\n  http:\n    maxRetries: 7\nretryBudget:\n  percent: 12.5\n  minRetryConcurrency: 0")),
			want: istioJoin([]string{"max_attempts 3 (default)"}, istioDefaultRetrying,
				[]string{"budget.kind envoy", "budget.percent 12.5", "budget.min_concurrency 3 (default)", "budget.scope sender (default)"}),
		},
		{
			name:    "outlier detection, its defaults",
			file:    istioFileOf("retries:\n  attempts: 0", istioRule("outlierDetection: {}")),
			want:    []string{"max_attempts 1"},
			service: []string{"health.consecutive 5 (default)", "health.eject_for 30s (default)"},
		},
		{
			name:    "outlier detection by gateway errors alone",
			file:    istioFileOf("retries:\n  attempts: 0", istioRule("outlierDetection:\n  consecutive5xxErrors: 0\n  consecutiveGatewayErrors: 2\n  baseEjectionTime: 1m")),
			want:    []string{"max_attempts 1"},
			service: []string{"health.consecutive 2", "health.eject_for 1m0s"},
		},
		{
			name: "a subset's traffic policy replaces the rule's, field by field",
			file: strings.Replace(istioFileOf("retries:\n  attempts: 1\n  retryOn: connect-failure",
				istioRule("connectionPool:\n  http:\n    maxRetries: 7\noutlierDetection:\n  consecutive5xxErrors: 9")+
					"  subsets:\n  - name: v2\n    trafficPolicy:\n      connectionPool:\n        http:\n          maxRetries: 2\n"),
				"        host: orders.shop.svc.cluster.local\n", "        host: orders.shop.svc.cluster.local\n        subset: v2\n", 1),
			want: istioJoin([]string{"max_attempts 2", "retry_on [refused]"}, istioDefaultRetrying[1:],
				[]string{"budget.kind envoy", "budget.percent 0", "budget.min_concurrency 2", "budget.scope sender (default)"}),
			service: []string{"health.consecutive 9", "health.eject_for 30s (default)"},
		},
		{
			name: "outlier detection disabled",
			file: istioFileOf("retries:\n  attempts: 0", istioRule("outlierDetection:\n  consecutive5xxErrors: 0")),
			want: []string{"max_attempts 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Read(Ref{Format: Istio, File: "vs.yaml", Name: "orders"}, []byte(tt.file))
			require.NoError(t, err, tt.file)
			assert.Equal(t, tt.want, meshValues(p.Values))
			want := tt.service
			if want == nil {
				want = []string{}
			}
			assert.Equal(t, want, meshValues(p.ServiceValues))
			assert.Equal(t, "orders", p.Service)
		})
	}
}

// TestIstioRefuses is the table of what Istio refuses: each row a file,
// and the problems with their line:col.
func TestIstioRefuses(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"negative attempts", istioFileOf("retries:\n  attempts: -1"),
			[]string{"10:7 attempts cannot be negative"}},
		{"a policy with attempts 0", istioFileOf("retries:\n  attempts: 0\n  perTryTimeout: 1s"),
			[]string{"9:5 http retry policy configured when attempts are set to 0 (disabled)"}},
		{"a duration under 1ms", istioFileOf("retries:\n  attempts: 1\n  perTryTimeout: 500us"),
			[]string{"11:7 duration must be greater than 1ms"}},
		{"a duration finer than 1ms", istioFileOf("timeout: 1.5ms"),
			[]string{"9:5 only durations to ms precision are supported"}},
		{"a route timeout of 0", istioFileOf("timeout: 0s"),
			[]string{"9:5 duration must be greater than 1ms"}},
		{"not a duration", istioFileOf("timeout: soon"),
			[]string{`9:5 invalid duration "soon"`}},
		{"retryOn with a space", istioFileOf("retries:\n  attempts: 1\n  retryOn: 5xx, reset"),
			[]string{`11:7 " reset" is not a valid retryOn policy`}},
		{"an unknown retryOn policy", istioFileOf("retries:\n  attempts: 1\n  retryOn: 5xx,timeout,600"),
			[]string{`11:7 "timeout" is not a valid retryOn policy`, `11:7 "600" is not a valid retryOn policy`}},
		{"an unknown field", istioFileOf("retries:\n  attemps: 3"),
			[]string{`10:7 unknown field "attemps"`}},
		{"a string for an integer", istioFileOf("retries:\n  attempts: \"3\""),
			[]string{`10:7 must be an integer, got "3"`}},
		{"negative maxRetries", istioFileOf("", istioRule("connectionPool:\n  http:\n    maxRetries: -1")),
			[]string{"22:9 max retries must be non-negative"}},
		{"a budget over 100%", istioFileOf("", istioRule("retryBudget:\n  percent: 150")),
			[]string{"21:7 should be between 0 and 100, got 150"}},
		{"a rule without host", istioFileOf("", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: x\nspec:\n  trafficPolicy: {}\n"),
			[]string{"18:3 spec.host: Required value"}},
		{"a route without destination", "apiVersion: networking.istio.io/v1alpha3\nkind: VirtualService\nmetadata:\n  name: orders\nspec:\n  http:\n  - route:\n    - weight: 100\n",
			[]string{"8:7 destination is required"}},
		{"an unknown version", "apiVersion: networking.istio.io/v2\nkind: VirtualService\nmetadata:\n  name: orders\nspec: {}\n",
			[]string{`1:1 no VirtualService in version "networking.istio.io/v2" (want networking.istio.io/v1, networking.istio.io/v1beta1, networking.istio.io/v1alpha3)`}},
		{"every problem, in order", istioFileOf("timeout: 0.5ms\nretries:\n  attempts: -2\n  retryOn: nope"),
			[]string{"9:5 duration must be greater than 1ms", "11:7 attempts cannot be negative", `12:7 "nope" is not a valid retryOn policy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(Ref{Format: Istio, File: "vs.yaml", Name: "orders"}, []byte(tt.file))
			assert.Equal(t, tt.want, meshErrors(t, err), tt.file)
			var ce *Error
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, "vs.yaml", ce.Pos.File)
		})
	}
}

// TestIstioSelects: the virtual service by name, a route by name, the
// first by default; what is missing is said.
func TestIstioSelects(t *testing.T) {
	data, err := os.ReadFile("testdata/istio/deploy-mesh-budgeted.yaml")
	require.NoError(t, err)
	read := func(name, route string) (*Policy, error) {
		return Read(Ref{Format: Istio, File: "mesh.yaml", Name: name, Route: route}, data)
	}
	reads, err := read("orders", "")
	require.NoError(t, err)
	assert.Equal(t, "max_attempts 2", meshValues(reads.Values)[0])
	writes, err := read("orders", "writes")
	require.NoError(t, err)
	assert.Equal(t, []string{"max_attempts 1", "timeout 5s (default)", "max_elapsed 5s"}, meshValues(writes.Values))
	byIndex, err := read("orders", "http[1]")
	require.NoError(t, err)
	assert.Equal(t, writes.Values, byIndex.Values)
	slashed, err := read("orders/writes", "")
	require.NoError(t, err)
	assert.Equal(t, writes.Values, slashed.Values)

	_, err = read("payments", "")
	assert.EqualError(t, err, "mesh.yaml:1:1: no VirtualService \"payments\" in the file (it has: frontend, orders, db)")
	_, err = read("orders", "deletes")
	assert.EqualError(t, err, "mesh.yaml:1:1: VirtualService \"orders\" has no http route \"deletes\"")
}

// TestIstioPositions: every value of the deploy file is placed at its
// key (or, for a default, at the object it is missing from).
func TestIstioPositions(t *testing.T) {
	data, err := os.ReadFile("testdata/istio/deploy-mesh-budgeted.yaml")
	require.NoError(t, err)
	f, err := Import(Istio, "testdata/istio/deploy-mesh-budgeted.yaml", data)
	require.NoError(t, err)
	got := map[string][]string{}
	for _, p := range f.Policies {
		got[p.Name] = append(meshPositions(p.Values), meshPositions(p.ServiceValues)...)
		for _, v := range append(p.Values, p.ServiceValues...) {
			assert.Equal(t, "testdata/istio/deploy-mesh-budgeted.yaml", v.Pos.File)
		}
	}
	retrying := func(line int) []string { // the defaults at retries:
		return []string{
			fmt.Sprintf("backoff.kind %d:5", line),
		}
	}
	tail := func(line int) []string {
		return []string{fmt.Sprintf("retry_after.mode %d:5", line), fmt.Sprintf("ignore_pushback %d:5", line)}
	}
	want := map[string][]string{
		"frontend": istioJoin(
			[]string{"max_attempts 19:7", "timeout 20:7", "max_elapsed 17:5", "retry_on 21:7"},
			retrying(18), []string{"backoff.base 18:5", "backoff.cap 18:5"}, tail(18),
			[]string{"budget.kind 88:5", "budget.percent 89:7", "budget.min_concurrency 90:7", "budget.scope 88:5"}),
		"orders": istioJoin(
			[]string{"max_attempts 43:7", "timeout 44:7", "max_elapsed 41:5", "retry_on 45:7"},
			retrying(42), []string{"backoff.base 42:5", "backoff.cap 42:5"}, tail(42),
			[]string{"budget.kind 104:9", "budget.percent 104:9", "budget.min_concurrency 104:9", "budget.scope 104:9"},
			[]string{"health.consecutive 106:7", "health.eject_for 108:7"}),
		"orders/writes": {"max_attempts 53:7", "timeout 51:5", "max_elapsed 51:5", "health.consecutive 106:7", "health.eject_for 108:7"},
		"db": istioJoin(
			[]string{"max_attempts 71:7", "timeout 72:7", "max_elapsed 69:5", "retry_on 73:7"},
			retrying(70), []string{"backoff.base 74:7", "backoff.cap 74:7"}, tail(70),
			[]string{"budget.kind 124:5", "budget.percent 125:7", "budget.min_concurrency 126:7", "budget.scope 124:5"},
			[]string{"health.consecutive 128:7", "health.eject_for 127:5"}),
	}
	assert.Equal(t, want, got)

	// The paths are the file's own, prefixed by the object.
	db := f.Policies[3]
	v, ok := db.Get("backoff.base")
	require.True(t, ok)
	assert.Equal(t, "VirtualService/db spec.http[0].retries.backoff", v.Pos.Path)
	assert.Equal(t, "DestinationRule/db spec.trafficPolicy.outlierDetection.baseEjectionTime", db.ServiceValues[1].Pos.Path)
	assert.Contains(t, db.ServiceValues[1].Pos.Default, "OutlierDetection")

	// The services of the file, once each, with their health.
	var names []string
	for _, s := range f.Services {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"frontend", "orders", "db"}, names)
	assert.Equal(t, []string{"health.consecutive 3", "health.eject_for 30s (default)"}, meshValues(f.Services[2].Values))
}

// TestIstioReadIsImport: reading each policy by the name Import gives it
// gives the same policy.
func TestIstioReadIsImport(t *testing.T) {
	for _, file := range []string{"testdata/istio/deploy-mesh-default.yaml", "testdata/istio/deploy-mesh-budgeted.yaml"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		f, err := Import(Istio, file, data)
		require.NoError(t, err)
		require.NotEmpty(t, f.Policies)
		for _, want := range f.Policies {
			got, err := Read(Ref{Format: Istio, File: file, Name: want.Name}, data)
			require.NoError(t, err, want.Name)
			assert.Equal(t, want, got, "%s: %s", file, want.Name)
		}
	}
}

// TestIstioHazards: the default policy and retries without a budget
// multiply; a per-try timeout not under the route's leaves no retry.
func TestIstioHazards(t *testing.T) {
	data, err := os.ReadFile("testdata/istio/deploy-mesh-default.yaml")
	require.NoError(t, err)
	f, err := Import(Istio, "mesh.yaml", data)
	require.NoError(t, err)
	for i, p := range f.Policies {
		require.Len(t, p.Hazards, 1, p.Name)
		h := p.Hazards[0]
		assert.Equal(t, HazardNoBudget, h.Rule)
		assert.Equal(t, []int{19 + 15*i, 5}, []int{h.Pos.Line, h.Pos.Col}, p.Name)
		assert.Contains(t, h.Msg, "Istio's default policy")
		assert.Contains(t, h.Msg, "3^L")
	}

	budgeted, err := os.ReadFile("testdata/istio/deploy-mesh-budgeted.yaml")
	require.NoError(t, err)
	f, err = Import(Istio, "mesh.yaml", budgeted)
	require.NoError(t, err)
	for _, p := range f.Policies {
		assert.Empty(t, p.Hazards, p.Name)
	}

	p, err := Read(Ref{Format: Istio, File: "vs.yaml", Name: "orders"}, []byte(istioFileOf("timeout: 2s\nretries:\n  attempts: 2\n  perTryTimeout: 2s")))
	require.NoError(t, err)
	require.Len(t, p.Hazards, 2)
	assert.Equal(t, HazardNoBudget, p.Hazards[0].Rule)
	assert.Equal(t, []int{10, 5}, []int{p.Hazards[0].Pos.Line, p.Hazards[0].Pos.Col})
	assert.Contains(t, p.Hazards[0].Msg, "no DestinationRule for \"orders\"")
	assert.Equal(t, HazardPerTryTimeout, p.Hazards[1].Rule)
	assert.Equal(t, []int{12, 7}, []int{p.Hazards[1].Pos.Line, p.Hazards[1].Pos.Col})

	p, err = Read(Ref{Format: Istio, File: "vs.yaml", Name: "orders"}, []byte(istioFileOf("timeout: 2s\nretries:\n  attempts: 2\n  perTryTimeout: 1999ms", istioRule("retryBudget: {}"))))
	require.NoError(t, err)
	assert.Empty(t, p.Hazards)
}

// TestIstioOtherKinds: other kinds, and a VirtualService of another API
// group, are passed over.
func TestIstioOtherKinds(t *testing.T) {
	file := "apiVersion: v1\nkind: Service\nmetadata:\n  name: orders\nspec:\n  ports: [{port: 80}]\n---\n" +
		"apiVersion: example.com/v1\nkind: VirtualService\nmetadata:\n  name: orders\nspec:\n  whatever: 1\n---\n" +
		istioFileOf("retries:\n  attempts: 1\n  retryOn: connect-failure")
	p, err := Read(Ref{Format: Istio, File: "f.yaml", Name: "orders"}, []byte(file))
	require.NoError(t, err)
	assert.Equal(t, "max_attempts 2", meshValues(p.Values)[0])
	assert.Equal(t, 24, p.Values[0].Pos.Line)
}

// TestIstioStatusCodes: the codes Istio takes in a retryOn are those
// net/http names, which istio.go writes out.
func TestIstioStatusCodes(t *testing.T) {
	var want []int
	for code := 0; code < 1000; code++ {
		if http.StatusText(code) != "" {
			want = append(want, code)
		}
	}
	assert.Equal(t, want, istioStatusCodes)
}
