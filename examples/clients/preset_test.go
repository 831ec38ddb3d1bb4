package clients

import (
	"testing"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeontools/herdlab/herdtest"
	"github.com/zeontools/herdlab/results"
)

// TestPresetsAreTheLibraries checks each of herdlab's presets
// (backoff: {preset: NAME}) against the library it models, with the
// library's defaults, run through herdtest on the same scenario: their
// peak load and their share delivered agree within 5% (means over the
// file's runs). cenkalti/backoff draws its jitter from math/rand's
// global source, which herdlab cannot seed: the scenarios are sized so
// that 5% is about four standard deviations of the mean of their runs
// (4,000 clients, 5 runs: the first bucket after the outage gets about
// 1,040 retries, 2.6% apart from run to run). The scenarios are ones where the defaults matter: a 10 s
// outage that go-retryablehttp's retries (1, 3, 7, 15 s) outlast only
// in part, and a server failing half its requests, which failsafe-go's
// immediate retries meet.
func TestPresetsAreTheLibraries(t *testing.T) {
	tests := []struct {
		file, preset, real string
		client             herdtest.Client
	}{
		{"testdata/presets.yaml", "go-retryablehttp-preset", "go-retryablehttp-real", retryablehttpDefaults},
		{"testdata/presets.yaml", "cenkalti-backoff-preset", "cenkalti-backoff-real", cenkaltiDefaults},
		{"testdata/flaky.yaml", "failsafe-go-preset", "failsafe-go-real", failsafeDefaults},
	}
	byFile := map[string]herdtest.Clients{}
	for _, tt := range tests {
		if byFile[tt.file] == nil {
			byFile[tt.file] = herdtest.Clients{}
		}
		byFile[tt.file][tt.real] = tt.client
	}
	summaries := map[string]results.StrategySummary{}
	for file, clients := range byFile {
		res := herdtest.Run(t, file, clients, herdtest.Options{NoRepeat: true})
		for _, st := range res.Summary.Strategies {
			summaries[st.Name] = st
			t.Log(figures(st, res.Deterministic))
		}
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			preset, real := summaries[tt.preset], summaries[tt.real]
			require.Equal(t, preset.Requests, real.Requests)
			require.Positive(t, real.PeakLoadOverall)
			assert.InEpsilon(t, preset.PeakLoadOverall, real.PeakLoadOverall, 0.05, "peak load, overall")
			if real.PeakLoad > 0 || preset.PeakLoad > 0 {
				assert.InEpsilon(t, preset.PeakLoad, real.PeakLoad, 0.05, "peak load after the outage")
			}
			assert.InDelta(t, preset.DeliveredRatio, real.DeliveredRatio, 0.05, "delivered")
		})
	}
}

// cenkaltiDefaults is backoff.Retry with its defaults: the
// ExponentialBackOff as it comes and 15 minutes in all.
var cenkaltiDefaults = cenkalti()

// failsafeDefaults is failsafe-go's HTTP retry policy as it comes: two
// retries, at once unless a Retry-After says when.
var failsafeDefaults = failsafe(failsafehttp.NewRetryPolicyBuilder().Build())
