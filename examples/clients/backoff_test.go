package clients

import (
	"context"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/zeontools/herdlab/herdtest"
)

// cenkaltiBackoff is backoff.Retry with the library's ExponentialBackOff
// as it comes (0.5 s, times 1.5 each retry, up to 60 s, each wait drawn
// within +-50% of that) around a plain http.Client, allowed 2 min in all.
// The randomisation draws from math/rand's global source, which herdlab
// does not seed: two runs of one seed differ (see Result.Deterministic).
var cenkaltiBackoff = cenkalti(backoff.WithMaxElapsedTime(2 * time.Minute))

// cenkalti is backoff.Retry with the ExponentialBackOff as it comes and
// opts, around a plain http.Client.
func cenkalti(opts ...backoff.RetryOption) herdtest.Client {
	return func(n herdtest.Net) (herdtest.Send, error) {
		c := &http.Client{Transport: n.Transport}
		opts := append([]backoff.RetryOption{backoff.WithBackOff(backoff.NewExponentialBackOff())}, opts...)
		return func(ctx context.Context, r herdtest.Request) error {
			_, err := backoff.Retry(ctx, func() (struct{}, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
				if err != nil {
					return struct{}{}, backoff.Permanent(err)
				}
				return struct{}{}, herdtest.Response(c.Do(req))
			}, opts...)
			return err
		}, nil
	}
}
