package clients

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeontools/herdlab/herdtest"
	"github.com/zeontools/herdlab/results"
)

// outage is one client of TestOutage and what it checks of its figures.
type outage struct {
	name   string
	client herdtest.Client
	// deterministic is whether two runs of one seed agree: false for a
	// library drawing its jitter from math/rand's global source.
	deterministic bool
	// check checks the client's figures, st, beside those of its model
	// (the zero value without one); capacity is how many attempts the
	// server serves in one bucket (1 s).
	check func(t *testing.T, st, model results.StrategySummary, capacity float64)
	// model is the file's simulated strategy of the same shape, if any.
	model string
}

// TestOutage runs every client through testdata/outage.yaml in one
// herdtest.Run (a run each, and a second of each to see whether it is
// reproducible), beside the file's simulated strategies, and checks each
// client's figures: where the fleet retries in lockstep, the whole of
// it lands in one second (10x what the server serves); where it
// jitters, the recovered server sees about its capacity and (nearly)
// every request is delivered. go test -v shows one line of figures per
// strategy.
func TestOutage(t *testing.T) {
	tests := []outage{
		{
			name:          "retryablehttp-defaults",
			client:        retryablehttpDefaults,
			deterministic: true,
			model:         "sim-exponential",
			check: func(t *testing.T, st, model results.StrategySummary, capacity float64) {
				// 5 attempts each (RetryMax 4), the last at 15 s: the
				// whole fleet gives up while the server is down.
				assert.Equal(t, 5*st.Requests, st.Attempts)
				assert.LessOrEqual(t, st.DeliveredRatio, 0.05)
				assert.GreaterOrEqual(t, st.DeadLetteredInOutage, 0.95*st.Requests)
				// In lockstep: each retry brings the whole fleet back
				// within one second, 10x capacity.
				assert.GreaterOrEqual(t, st.PeakLoadOverall, 0.95*st.Requests)
				assert.GreaterOrEqual(t, st.PeakLoadOverall/capacity, 9.0)
				// herdlab's model of DefaultBackoff agrees.
				assert.InEpsilon(t, model.Attempts, st.Attempts, 0.02)
				assert.InDelta(t, model.DeliveredRatio, st.DeliveredRatio, 0.02)
			},
		},
		{
			name:          "retryablehttp-jitter",
			client:        retryablehttpJitter,
			deterministic: true,
			model:         "sim-full-jitter",
			check: func(t *testing.T, st, model results.StrategySummary, capacity float64) {
				assert.GreaterOrEqual(t, st.DeliveredRatio, 0.99)
				require.NotNil(t, st.PeakLoadRatio)
				assert.LessOrEqual(t, *st.PeakLoadRatio, 1.5, "no herd on the recovered server")
				assert.Zero(t, st.DeadLetteredInOutage)
				assert.InEpsilon(t, model.Attempts, st.Attempts, 0.1)
				assert.InDelta(t, *model.PeakLoadRatio, *st.PeakLoadRatio, 0.3)
			},
		},
		{
			name:   "cenkalti-backoff",
			client: cenkaltiBackoff,
			check: func(t *testing.T, st, _ results.StrategySummary, capacity float64) {
				assert.GreaterOrEqual(t, st.DeliveredRatio, 0.99)
				require.NotNil(t, st.PeakLoadRatio)
				assert.LessOrEqual(t, *st.PeakLoadRatio, 1.5, "+-50% randomisation spreads the fleet")
				assert.Zero(t, st.DeadLetteredInOutage)
			},
		},
		{
			name:   "failsafe-go",
			client: failsafeGo,
			check: func(t *testing.T, st, _ results.StrategySummary, capacity float64) {
				assert.GreaterOrEqual(t, st.DeliveredRatio, 0.99)
				require.NotNil(t, st.PeakLoadRatio)
				assert.LessOrEqual(t, *st.PeakLoadRatio, 1.5, "+-50% jitter spreads the fleet")
				assert.Zero(t, st.DeadLetteredInOutage)
			},
		},
		{
			name:   "grpc-go",
			client: grpcRetry,
			check: func(t *testing.T, st, _ results.StrategySummary, capacity float64) {
				// gRPC caps maxAttempts at 5: with backoffs of at most
				// 1+2+4+8 s, no call outlasts a 30 s outage.
				assert.LessOrEqual(t, st.DeliveredRatio, 0.05)
				assert.GreaterOrEqual(t, st.DeadLetteredInOutage, 0.95*st.Requests)
				// Nothing reaches the recovered server: every call is
				// over, and a connection (the channel keeps
				// reconnecting) is not an attempt.
				assert.Zero(t, st.PeakLoad)
				// While the server is down, what it sees are the
				// channels' connection attempts: the first reconnect,
				// 1 s after the first refusal, has no jitter, and the
				// whole fleet dials again within one second.
				assert.GreaterOrEqual(t, st.PeakLoadOverall, 0.95*st.Requests)
				assert.Greater(t, st.Attempts, 5*st.Requests)
			},
		},
		{
			name:   "grpc-go-wait-for-ready",
			client: grpcWaitForReady,
			check: func(t *testing.T, st, _ results.StrategySummary, capacity float64) {
				// The calls wait out the outage...
				assert.GreaterOrEqual(t, st.DeliveredRatio, 0.99)
				assert.Zero(t, st.DeadLetteredInOutage)
				// ...and come back as the channels reconnect, 40 to 48 s
				// in: spread by the connection backoff's jitter, a herd
				// of about twice the capacity, not the whole fleet at
				// once.
				require.NotNil(t, st.PeakLoadRatio)
				assert.GreaterOrEqual(t, *st.PeakLoadRatio, 1.3)
				assert.LessOrEqual(t, *st.PeakLoadRatio, 4.0)
				assert.GreaterOrEqual(t, st.PeakAtS, 38.0)
			},
		},
		{
			name:          "hand-loop",
			client:        handLoop,
			deterministic: true,
			model:         "sim-fixed-1s",
			check: func(t *testing.T, st, model results.StrategySummary, capacity float64) {
				// It outlasts the outage, and everything is delivered...
				assert.GreaterOrEqual(t, st.DeliveredRatio, 0.99)
				// ...but the whole fleet comes back in the first second
				// of the recovered server (10x its capacity), and again
				// each second, 60 getting in each time: many attempts per
				// request.
				require.NotNil(t, st.PeakLoadRatio)
				assert.GreaterOrEqual(t, *st.PeakLoadRatio, 9.0)
				assert.Equal(t, 30.0, st.PeakAtS)
				assert.GreaterOrEqual(t, st.Amplification, 30.0)
				// herdlab's model of the loop agrees.
				assert.InEpsilon(t, model.Attempts, st.Attempts, 0.02)
				assert.InDelta(t, *model.PeakLoadRatio, *st.PeakLoadRatio, 0.2)
			},
		},
	}
	clients := herdtest.Clients{}
	for _, tt := range tests {
		clients[tt.name] = tt.client
	}
	res := herdtest.Run(t, "testdata/outage.yaml", clients, herdtest.Options{})
	sc := res.Scenario
	capacity := sc.Server.Capacity() * sc.Bucket.Seconds() // attempts a bucket the server serves
	byName := map[string]results.StrategySummary{}
	for _, st := range res.Summary.Strategies {
		byName[st.Name] = st
		t.Log(figures(st, res.Deterministic))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := byName[tt.name]
			require.True(t, ok)
			var model results.StrategySummary
			if tt.model != "" {
				model, ok = byName[tt.model]
				require.True(t, ok, "model %s", tt.model)
			}
			require.Equal(t, float64(sc.Workload.Requests), st.Requests)
			assert.Zero(t, st.Unfinished, "every request delivered or given up by the horizon")
			assert.Equal(t, tt.deterministic, res.Deterministic[tt.name], "two runs of one seed agree")
			tt.check(t, st, model, capacity)
		})
	}
}

// figures is one line of a strategy's figures.
func figures(st results.StrategySummary, det map[string]bool) string {
	ratio := 0.0
	if st.PeakLoadRatio != nil {
		ratio = *st.PeakLoadRatio
	}
	d := "simulated"
	if st.Client != nil {
		d = "client code"
	}
	if v, ok := det[st.Name]; ok {
		d = fmt.Sprintf("client code, deterministic %v", v)
	}
	return fmt.Sprintf("%-22s delivered %5.1f%%  attempts %5.0f (%5.2fx)  peak after outage %4.0f (%5.2fx capacity) at %2.0fs  peak overall %4.0f  given up in outage %4.0f  %s",
		st.Name, 100*st.DeliveredRatio, st.Attempts, st.Amplification, st.PeakLoad, ratio, st.PeakAtS, st.PeakLoadOverall, st.DeadLetteredInOutage, d)
}
