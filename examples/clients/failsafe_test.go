package clients

import (
	"context"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/zeontools/herdlab/herdtest"
)

// failsafeGo is failsafe-go's HTTP retry policy (it retries connection
// errors, 429 and most 5xx, and honours Retry-After), with an
// exponential backoff of 1 s doubling to 30 s, each wait jittered by
// +-50%, and up to 10 retries, as a round tripper around the sender's
// transport. Its jitter draws from math/rand's global source.
var failsafeGo = failsafe(failsafehttp.NewRetryPolicyBuilder().
	WithBackoff(time.Second, 30*time.Second).
	WithJitterFactor(0.5).
	WithMaxRetries(10).
	Build())

// failsafe sends through failsafehttp's round tripper with policy (a
// policy is immutable: the senders share it, each with a client of its
// own around its transport).
func failsafe(policy retrypolicy.RetryPolicy[*http.Response]) herdtest.Client {
	return func(n herdtest.Net) (herdtest.Send, error) { return failsafeSend(n, policy) }
}

func failsafeSend(n herdtest.Net, policy retrypolicy.RetryPolicy[*http.Response]) (herdtest.Send, error) {
	// The base round tripper must be n.Transport. failsafehttp takes a
	// nil one for http.DefaultTransport, which was made outside the
	// synctest bubble and dials the real network: herdtest would fail the
	// run (it stands a guard in for http.DefaultTransport, which answers
	// every request with an error), and without that guard the Go runtime
	// would end the test binary for a bubble's goroutine blocking on
	// something from outside it.
	c := &http.Client{Transport: failsafehttp.NewRoundTripper(n.Transport, policy)}
	return func(ctx context.Context, r herdtest.Request) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
		if err != nil {
			return err
		}
		return herdtest.Response(c.Do(req))
	}, nil
}
