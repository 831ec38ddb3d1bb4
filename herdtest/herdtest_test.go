package herdtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loop is a hand-written retry loop: up to attempts tries, wait apart,
// each with a timeout.
func loop(attempts int, wait, timeout time.Duration) Client {
	return func(n Net) (Send, error) {
		c := &http.Client{Transport: n.Transport}
		return func(ctx context.Context, r Request) error {
			var err error
			for range attempts {
				actx, cancel := context.WithTimeout(ctx, timeout)
				req, _ := http.NewRequestWithContext(actx, http.MethodPost, n.URL, nil)
				err = Response(c.Do(req))
				cancel()
				if err == nil || ctx.Err() != nil {
					return err
				}
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return err
		}, nil
	}
}

func TestAHandWrittenLoop(t *testing.T) {
	res := Run(t, "testdata/outage.yaml", Clients{"hand-loop": loop(30, time.Second, 5*time.Second)}, Options{NoChecks: true})
	require.Len(t, res.Summary.Strategies, 3)
	for _, st := range res.Summary.Strategies {
		t.Logf("%s: delivered %.3f peak %v attempts %v recovery %v latency %v client %+v", st.Name, st.DeliveredRatio, st.PeakLoad, st.Attempts, *st.RecoveryTimeS, st.LatencyS, st.Client)
	}
	assert.True(t, res.Deterministic["hand-loop"])
}
