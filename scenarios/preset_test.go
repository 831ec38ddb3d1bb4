package scenarios

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// presetFile is a scenario whose strategies are given by extra.
func presetFile(extra string) []byte {
	return []byte(`name: presets
server: {concurrency: 10, service_time: 100ms}
workload: {requests: 10, arrival: {kind: burst, at: 0s}}
strategies:
` + extra)
}

// TestPresetsAreTheLibrariesDefaults: a preset gives the library's
// backoff (its waits, step by step), attempt and elapsed limits and
// Retry-After handling; what the strategy writes beside it wins.
func TestPresetsAreTheLibrariesDefaults(t *testing.T) {
	s := time.Second
	tests := []struct {
		preset      string
		waits       []time.Duration // with jitter: the middle of the range
		jitter      float64
		maxAttempts int
		maxElapsed  time.Duration
		retryAfter  string
	}{
		// DefaultBackoff: 1 s x 2^n capped at 30 s; RetryMax 4.
		{"go-retryablehttp", []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}, 0, 5, 0, "honor"},
		// ExponentialBackOff: 500 ms x 1.5^n capped at 60 s, +-50%.
		{"cenkalti-backoff", []time.Duration{500 * time.Millisecond, 750 * time.Millisecond, 1125 * time.Millisecond}, 0.5, 0, 15 * time.Minute, "ignore"},
		// failsafehttp: two retries at once.
		{"failsafe-go", []time.Duration{0, 0}, 0, 3, 0, "honor"},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			sc, err := Parse("presets.yaml", presetFile("  - name: lib\n    backoff: {preset: "+tt.preset+"}\n"))
			require.NoError(t, err)
			st := sc.Strategies[0]
			assert.Equal(t, tt.preset, st.Backoff.Preset)
			assert.Equal(t, tt.maxAttempts, st.MaxAttempts)
			assert.Equal(t, tt.maxElapsed, st.MaxElapsed)
			assert.Equal(t, tt.retryAfter, st.RetryAfter.Mode)
			b, r := st.Backoff.Policy(), rand.New(rand.NewPCG(1, 2))
			var state strategies.BackoffState
			for i, mid := range tt.waits {
				got := b.Next(&state, r)
				lo, hi := time.Duration(float64(mid)*(1-tt.jitter)), time.Duration(float64(mid)*(1+tt.jitter))
				assert.True(t, got >= lo && got <= hi, "wait %d: %s, want within [%s, %s]", i+1, got, lo, hi)
			}
		})
	}

	// The strategy's own limits win over the preset's.
	sc, err := Parse("presets.yaml", presetFile("  - name: lib\n    backoff: {preset: go-retryablehttp}\n    max_attempts: 10\n    retry_after: {mode: ignore}\n"))
	require.NoError(t, err)
	assert.Equal(t, 10, sc.Strategies[0].MaxAttempts)
	assert.Equal(t, "ignore", sc.Strategies[0].RetryAfter.Mode)
}

// TestPresetMistakesArePlaced: an unknown preset, and a preset with a
// kind or a parameter beside it, are refused at their line and field.
func TestPresetMistakesArePlaced(t *testing.T) {
	tests := []struct{ strategy, want string }{
		{"    backoff: {preset: retryablehttp}\n", `presets.yaml:6:23: strategies[0].backoff.preset: unknown preset "retryablehttp" (want one of cenkalti-backoff, failsafe-go, go-retryablehttp)`},
		{"    backoff: {preset: go-retryablehttp, kind: full-jitter}\n", "strategies[0].backoff.kind: a preset is the library's whole backoff: leave kind out"},
		{"    backoff: {preset: go-retryablehttp, cap: 10s}\n", "strategies[0].backoff.cap: a preset is the library's whole backoff: leave cap out"},
	}
	for _, tt := range tests {
		_, err := Parse("presets.yaml", presetFile("  - name: lib\n"+tt.strategy))
		require.Error(t, err, tt.strategy)
		assert.Contains(t, err.Error(), tt.want)
		assert.False(t, strings.Contains(err.Error(), "kind: missing"), err.Error())
	}
}
