package herdtest

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// The headers herdlab's transport adds to an attempt of a request it
// knows (by its context): realhttp's server reads the key and logs the
// others, and the arbiter orders attempts by them.
const (
	keyHeader     = "Idempotency-Key"
	requestHeader = "Herdlab-Request"
	attemptHeader = "Herdlab-Attempt"
)

// requestState is a request in flight, carried by the context Send gets.
type requestState struct {
	n        int64
	key      string
	attempts atomic.Int64
}

type requestKey struct{}

// transport is a sender's transport: its own connection pool over the
// in-memory network, adding the request's headers to each attempt.
type transport struct {
	inner *http.Transport
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rs, ok := req.Context().Value(requestKey{}).(*requestState)
	if !ok {
		return t.inner.RoundTrip(req)
	}
	n := rs.attempts.Add(1)
	r := *req // RoundTrip must not change req: change a copy's headers
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if r.Header.Get(keyHeader) == "" {
		r.Header.Set(keyHeader, rs.key)
	}
	r.Header.Set(requestHeader, strconv.FormatInt(rs.n, 10))
	r.Header.Set(attemptHeader, strconv.FormatInt(n, 10))
	return t.inner.RoundTrip(&r)
}

// CloseIdleConnections closes the pool's idle connections, as
// http.Client.CloseIdleConnections expects of a transport.
func (t *transport) CloseIdleConnections() { t.inner.CloseIdleConnections() }

// errDefaultTransport is what a request sent through http.DefaultTransport
// gets during a run.
var errDefaultTransport = errors.New("herdtest: a request went through http.DefaultTransport, which was made outside the synctest bubble " +
	"(and would dial the real network): build the client on Net.Transport (set it as the http.Client's Transport, or pass it to the library's round tripper as its base)")

// defaultTransportGuard stands in for http.DefaultTransport during a run,
// so that a client built on it fails with errDefaultTransport rather
// than ending the test binary with a fatal error, or freezing the
// bubble's clock on a real socket.
type defaultTransportGuard struct {
	used atomic.Int64
}

func (g *defaultTransportGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	g.used.Add(1)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, errDefaultTransport
}

// guardMu serialises the runs that swap http.DefaultTransport.
var guardMu sync.Mutex

// guardDefaultTransport replaces http.DefaultTransport with a guard until
// the returned function is called.
func guardDefaultTransport() (*defaultTransportGuard, func()) {
	guardMu.Lock()
	g := &defaultTransportGuard{}
	old := http.DefaultTransport
	http.DefaultTransport = g
	return g, func() {
		http.DefaultTransport = old
		guardMu.Unlock()
	}
}

// withRequest returns ctx carrying request rs for the transport.
func withRequest(ctx context.Context, rs *requestState) context.Context {
	return context.WithValue(ctx, requestKey{}, rs)
}
