//go:build !js

package configs_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/configs"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// strategyYAML writes a policy's values as a scenario's strategy, the
// dotted fields nested (backoff.kind under backoff), as import prints
// them.
func strategyYAML(name string, p *configs.Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n", name)
	groups := map[string][]string{}
	var order []string
	for _, v := range p.Values {
		group, key, nested := strings.Cut(v.Field, ".")
		if !nested {
			fmt.Fprintf(&b, "    %s: %s\n", v.Field, configs.FormatValue(v.Value))
			continue
		}
		if _, ok := groups[group]; !ok {
			order = append(order, group)
		}
		groups[group] = append(groups[group], key+": "+configs.FormatValue(v.Value))
	}
	for _, g := range order {
		fmt.Fprintf(&b, "    %s: {%s}\n", g, strings.Join(groups[g], ", "))
	}
	return b.String()
}

// TestPoliciesAreStrategies checks that every policy of the deploy files
// is a strategy herdlab takes, as import prints it: the readers emit
// nothing a scenario refuses (a hedge delay of 0, a cap below the base,
// an empty retry_on ...).
func TestPoliciesAreStrategies(t *testing.T) {
	for _, tt := range []struct{ format, file, src string }{
		{configs.GRPC, "testdata/grpc/deploy-shop.json", ""},
		{configs.AWS, "testdata/aws/deploy-config.ini", ""},
		// The edges: every hedge at once, a clamped maxAttempts, a cap
		// below the base, codes herdlab never answers; legacy's
		// longest cap.
		{configs.GRPC, "edges.json", `{"methodConfig": [
			{"name": [{"service": "a"}], "hedgingPolicy": {"maxAttempts": 9}},
			{"name": [{"service": "b"}], "retryPolicy": {"maxAttempts": 9, "initialBackoff": "3s", "maxBackoff": "0.5s", "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}},
			{"name": [{"service": "c"}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["ABORTED"]}}]}`},
		{configs.AWS, "edges.ini", "[default]\nretry_mode = legacy\nmax_attempts = 1000\n"},
	} {
		data := []byte(tt.src)
		if tt.src == "" {
			var err error
			data, err = os.ReadFile(tt.file)
			require.NoError(t, err)
		}
		fr, err := configs.Import(tt.format, tt.file, data)
		require.NoError(t, err)
		var b strings.Builder
		b.WriteString("name: imported\nseed: 1\nruns: 1\nduration: 1m\nserver: {concurrency: 10, service_time: 10ms}\n")
		b.WriteString("workload: {requests: 100, arrival: {kind: burst, at: 0s}}\nstrategies:\n")
		for i, p := range fr.Policies {
			b.WriteString(strategyYAML(fmt.Sprintf("s%d", i), p))
		}
		sc, err := scenarios.Parse(tt.format+".yaml", []byte(b.String()))
		require.NoError(t, err, b.String())
		require.Len(t, sc.Strategies, len(fr.Policies))
		for i, p := range fr.Policies {
			st := sc.Strategies[i]
			v, _ := p.Get("max_attempts")
			assert.Equal(t, v.Value, st.MaxAttempts, p.Name)
			if v, ok := p.Get("budget.kind"); ok {
				require.NotNil(t, st.Budget, p.Name)
				assert.Equal(t, v.Value, st.Budget.Kind, p.Name)
			}
		}
	}
}

// strategiesOf reads a file's policies and loads them as a scenario's
// strategies, as import prints them.
func strategiesOf(t *testing.T, format, file string, data []byte) ([]*configs.Policy, []scenarios.Strategy) {
	t.Helper()
	fr, err := configs.Import(format, file, data)
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("name: imported\nseed: 1\nruns: 1\nduration: 1m\nserver: {concurrency: 10, service_time: 10ms}\n")
	b.WriteString("workload: {requests: 100, arrival: {kind: burst, at: 0s}}\nstrategies:\n")
	for i, p := range fr.Policies {
		b.WriteString(strategyYAML(fmt.Sprintf("s%d", i), p))
	}
	sc, err := scenarios.Parse(format+".yaml", []byte(b.String()))
	require.NoError(t, err, b.String())
	return fr.Policies, sc.Strategies
}

// samples are the uniform draws the formulas are compared at.
var samples = []float64{0, 0.001, 0.25, 0.5, 0.75, 0.999}

func seconds(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// near compares two waits to the nanosecond rounding the two
// computations may differ by.
func near(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	assert.InDelta(t, float64(want), float64(got), 2, msg)
}

// TestBackoffsAreTheSources pins the claim that each backoff read is the
// source's own law, exactly: the waits herdlab draws for the policies
// read, through a scenario, at fixed samples u, against the formula the
// source project writes, at the same u.
func TestBackoffsAreTheSources(t *testing.T) {
	// gRFC A6: the n-th retry waits random(0, min(initialBackoff *
	// backoffMultiplier^(n-1), maxBackoff)); herdlab's k is n-1. The second
	// policy has maxBackoff below initialBackoff.
	src := `{"methodConfig": [
		{"name": [{"service": "a"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.2s", "maxBackoff": "5s", "backoffMultiplier": 3, "retryableStatusCodes": [14]}},
		{"name": [{"service": "b"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "2s", "maxBackoff": "0.5s", "backoffMultiplier": 1.5, "retryableStatusCodes": [14]}}]}`
	_, sts := strategiesOf(t, configs.GRPC, "a6.json", []byte(src))
	for i, c := range []struct{ initial, max, mult float64 }{{0.2, 5, 3}, {2, 0.5, 1.5}} {
		j, ok := sts[i].Backoff.Policy().(strategies.FullJitter)
		require.True(t, ok)
		for n := 1; n <= 8; n++ {
			for _, u := range samples {
				want := seconds(u * math.Min(c.initial*math.Pow(c.mult, float64(n-1)), c.max))
				near(t, want, j.At(n-1, u), fmt.Sprintf("A6 policy %d, retry %d, u %v", i, n, u))
			}
		}
	}

	// aws-sdk-go-v2 v1.48.0 backoffDelay2026: t_i = b * min(x * 2^i,
	// 20s), x 50ms, or 1s after a throttle; i from 0 for the first retry.
	// botocore legacy: random() * 2^(attempts-1) s, attempts from 1 for
	// the first retry, uncapped.
	pol, sts := strategiesOf(t, configs.AWS, "config", []byte("[default]\n[profile old]\nretry_mode = legacy\nmax_attempts = 9\n"))
	require.Equal(t, "old", pol[1].Name)
	std := sts[0].Policy()
	j, ok := std.Backoff.(strategies.FullJitter)
	require.True(t, ok)
	jt, ok := std.ThrottleBackoff.(strategies.FullJitter)
	require.True(t, ok)
	legacy, ok := sts[1].Policy().Backoff.(strategies.FullJitter)
	require.True(t, ok)
	for i := 0; i <= 10; i++ {
		for _, u := range samples {
			near(t, seconds(u*math.Min(0.05*math.Pow(2, float64(i)), 20)), j.At(i, u), fmt.Sprintf("standard, retry %d, u %v", i, u))
			near(t, seconds(u*math.Min(1*math.Pow(2, float64(i)), 20)), jt.At(i, u), fmt.Sprintf("standard after a throttle, retry %d, u %v", i, u))
			if attempts := i + 1; attempts < 9 { // the retries 9 attempts make
				near(t, seconds(u*math.Pow(2, float64(attempts-1))), legacy.At(i, u), fmt.Sprintf("legacy, retry %d, u %v", i, u))
			}
		}
	}
}
