package clients

import (
	"context"
	"net/http"
	"time"

	"github.com/zeontools/herdlab/herdtest"
)

// handLoop is the retry loop many services write by hand: up to 60
// tries, a fixed 1 s apart, each with a 5 s timeout, no jitter.
func handLoop(n herdtest.Net) (herdtest.Send, error) {
	const (
		attempts = 60
		wait     = time.Second
		timeout  = 5 * time.Second
	)
	c := &http.Client{Transport: n.Transport, Timeout: timeout}
	return func(ctx context.Context, r herdtest.Request) error {
		var err error
		for range attempts {
			req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, nil)
			if rerr != nil {
				return rerr
			}
			if err = herdtest.Response(c.Do(req)); err == nil || ctx.Err() != nil {
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
