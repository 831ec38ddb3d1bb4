package memnet

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTP2Cleartext(t *testing.T) {
	// HTTP/2 without TLS, as gRPC speaks it: many requests share one
	// connection, its frames small writes from both ends.
	const delay, work = 10 * time.Millisecond, 5 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		stop := server(t, n, echoTag(work), func(srv *http.Server) { srv.Protocols = &protocols })
		tr := &http.Transport{
			Protocols: &protocols,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return n.Dial(ctx, DialOptions{Delay: constant(delay), Tag: "h2"})
			},
		}
		c := &http.Client{Transport: tr}
		start := time.Now()
		resp, err := c.Get("http://" + addr + "/")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, resp.ProtoMajor)
		assert.Equal(t, 4*delay+work, time.Since(start), "connect, then the request and its answer")

		start = time.Now()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				body, err := get(c)
				assert.NoError(t, err)
				assert.Equal(t, "h2", body)
			})
		}
		wg.Wait()
		assert.Equal(t, 2*delay+work, time.Since(start), "50 requests at once on one connection")
		assert.Equal(t, 1, n.Open())
		tr.CloseIdleConnections()
		stop()
		time.Sleep(delay)
		assert.Equal(t, 0, n.Open())
	})
}
