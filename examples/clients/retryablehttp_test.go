package clients

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/zeontools/herdlab/herdtest"
)

// retryablehttpDefaults is go-retryablehttp as it comes: DefaultBackoff
// waits 1 s, then doubles, capped at 30 s, no jitter, and RetryMax 4
// gives up after the fifth attempt. Every client that failed at t = 0
// retries at the same instants (1, 3, 7 and 15 s), all within the 30 s
// outage.
func retryablehttpDefaults(n herdtest.Net) (herdtest.Send, error) {
	return retryablehttpSend(n, retryablehttp.NewClient())
}

// retryablehttpSend sends with c, a go-retryablehttp client, through the
// sender's transport.
func retryablehttpSend(n herdtest.Net, c *retryablehttp.Client) (herdtest.Send, error) {
	c.HTTPClient.Transport = n.Transport // the sender's way to the scenario's server
	c.Logger = nil                       // one line per attempt of 1,000 clients is noise
	return func(ctx context.Context, r herdtest.Request) error {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
		if err != nil {
			return err
		}
		return herdtest.Response(c.Do(req))
	}, nil
}

// retryablehttpJitter is go-retryablehttp configured to outlast the
// outage: up to 15 retries, each after a full-jitter wait (uniform over
// [0, min(30 s, 1 s * 2^attempt)), see fullJitter). The jitter draws from
// the sender's seed, so a run is reproducible; retryablehttp's own
// LinearJitterBackoff seeds a new generator from the clock at each call.
func retryablehttpJitter(n herdtest.Net) (herdtest.Send, error) {
	c := retryablehttp.NewClient()
	c.RetryMax = 15
	c.RetryWaitMin = time.Second
	c.RetryWaitMax = 30 * time.Second
	c.Backoff = fullJitter(rand.New(rand.NewPCG(n.Seed, 0)))
	return retryablehttpSend(n, c)
}

// fullJitter is a retryablehttp.Backoff waiting U(0, min(max, min *
// 2^attempt)), attempt counted from 0, with draws from r (one sender's:
// r is not safe for concurrent use, and a sender here sends one request
// at a time). It ignores Retry-After.
func fullJitter(r *rand.Rand) retryablehttp.Backoff {
	return func(lo, hi time.Duration, attempt int, _ *http.Response) time.Duration {
		ceiling := hi
		if attempt < 31 && lo<<attempt < hi {
			ceiling = lo << attempt
		}
		return time.Duration(r.Int64N(int64(ceiling)))
	}
}
