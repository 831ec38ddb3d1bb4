package configs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/configs"
	"github.com/zeontools/herdlab/scenarios"
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
