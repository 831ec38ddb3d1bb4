package memnet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tagKey keys the dialer's tag in a request's context.
type tagKey struct{}

// server serves h on n with net/http, set by configure before it
// serves; the handler finds the dialer's tag in its request's context.
// Call the returned stop to shut it down.
func server(t *testing.T, n *Network, h http.HandlerFunc, configure ...func(*http.Server)) (stop func()) {
	srv := &http.Server{
		Handler: h,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, tagKey{}, c.(*Conn).Tag())
		},
	}
	for _, f := range configure {
		f(srv)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(n.Listener()) }()
	return func() {
		t.Helper()
		require.NoError(t, srv.Shutdown(context.Background()))
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	}
}

// transport is an HTTP/1.1 client transport dialing n with o.
func transport(n *Network, o DialOptions) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return n.Dial(ctx, o) },
	}
}

// get sends a GET with c and returns the response's body.
func get(c *http.Client) (string, error) {
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// echoTag answers with the tag of the connection's dialer, after work.
func echoTag(work time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(work)
		fmt.Fprint(w, r.Context().Value(tagKey{}))
	}
}

func TestHTTPRoundTrip(t *testing.T) {
	const delay, work = 10 * time.Millisecond, 5 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		stop := server(t, n, echoTag(work))
		tr := transport(n, DialOptions{Delay: constant(delay), Tag: "sender 1"})
		c := &http.Client{Transport: tr}

		for i, want := range []time.Duration{
			2*delay + 2*delay + work, // connect, then the request and its answer
			2*delay + work,           // keep-alive
			2*delay + work,
		} {
			start := time.Now()
			body, err := get(c)
			require.NoError(t, err)
			assert.Equal(t, "sender 1", body)
			assert.Equal(t, want, time.Since(start), "request %d", i)
		}
		assert.Equal(t, 1, n.Open(), "one connection, kept alive")

		tr.CloseIdleConnections()
		stop()
		assert.Equal(t, 0, n.Open())
	})
}

func TestHTTPManyClients(t *testing.T) {
	const (
		clients, requests = 100, 10
		delay, work       = 10 * time.Millisecond, time.Millisecond
		// Each client's first request connects; the others reuse.
		want = 2*delay + requests*(2*delay+work)
	)
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		var conns atomic.Int64
		stop := server(t, n, echoTag(work), func(srv *http.Server) {
			srv.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
		})
		start := time.Now()
		transports := make([]*http.Transport, clients)
		var wg sync.WaitGroup
		for i := range clients {
			transports[i] = transport(n, DialOptions{Delay: constant(delay), Tag: i})
			wg.Go(func() {
				c := &http.Client{Transport: transports[i]}
				for range requests {
					body, err := get(c)
					if !assert.NoError(t, err) {
						return
					}
					assert.Equal(t, fmt.Sprint(i), body)
				}
				assert.Equal(t, want, time.Since(start), "client %d", i)
			})
		}
		wg.Wait()
		assert.Equal(t, want, time.Since(start))
		assert.Equal(t, int64(clients), conns.Load(), "one connection per client")
		assert.Equal(t, clients, n.Open())

		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		stop()
		assert.Equal(t, 0, n.Open())
	})
}

func TestHTTPServerClosesIdle(t *testing.T) {
	// The server closes a keep-alive connection idle for its
	// IdleTimeout; the transport sees the close arrive and dials anew.
	const delay = 10 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		stop := server(t, n, echoTag(0), func(srv *http.Server) { srv.IdleTimeout = time.Second })
		tr := transport(n, DialOptions{Delay: constant(delay), Tag: "a"})
		c := &http.Client{Transport: tr}
		_, err := get(c)
		require.NoError(t, err)
		time.Sleep(time.Second + delay)
		assert.Equal(t, 0, n.Open(), "closed by the server, then by the client on reading its close")

		start := time.Now()
		_, err = get(c)
		require.NoError(t, err)
		assert.Equal(t, 4*delay, time.Since(start), "a new connection")
		tr.CloseIdleConnections()
		stop()
		assert.Equal(t, 0, n.Open())
	})
}

func TestHTTPRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		stop := server(t, n, echoTag(0))
		n.SetRefusing(true)
		tr := transport(n, DialOptions{Delay: constant(time.Millisecond)})
		c := &http.Client{Transport: tr}
		_, err := get(c)
		assert.ErrorContains(t, err, "connection refused")

		n.SetRefusing(false)
		_, err = get(c)
		assert.NoError(t, err)
		tr.CloseIdleConnections()
		stop()
	})
}
