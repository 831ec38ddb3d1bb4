package herdtest

import (
	"net/http"
	"strconv"
	"strings"
)

// gRPC over the scenario's server: a gRPC client (grpc-go, dialing
// through Net.Dial) speaks HTTP/2 to the same server as the HTTP
// clients, and grpcWriter turns the server's answers into gRPC's wire
// format (the gRPC over HTTP/2 protocol): a success is an empty message
// with grpc-status 0 (any response message type decodes from it), a 503
// is UNAVAILABLE and a 429 RESOURCE_EXHAUSTED, trailers-only, with the
// server's pushback hint (grpc-retry-pushback-ms) when it gives one, and
// a reset is the stream's reset. herdtest itself does not import grpc.

// gRPC status codes (google.golang.org/grpc/codes).
const (
	grpcOK                = 0
	grpcResourceExhausted = 8
	grpcInternal          = 13
	grpcUnavailable       = 14
)

// isGRPC reports whether r is a gRPC call.
func isGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// grpcWriter writes the server's HTTP answer to a gRPC call as gRPC's.
type grpcWriter struct {
	http.ResponseWriter
	wrote bool
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// and the reset, which HTTP/2 makes a stream reset).
func (g *grpcWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func (g *grpcWriter) WriteHeader(status int) {
	if g.wrote {
		return
	}
	g.wrote = true
	h := g.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/grpc")
	code := grpcInternal
	switch status {
	case http.StatusOK:
		g.ResponseWriter.WriteHeader(http.StatusOK)
		// One empty, uncompressed message, then the status as a
		// trailer.
		_, _ = g.ResponseWriter.Write([]byte{0, 0, 0, 0, 0})
		h.Set(http.TrailerPrefix+"Grpc-Status", strconv.Itoa(grpcOK))
		return
	case http.StatusServiceUnavailable:
		code = grpcUnavailable
	case http.StatusTooManyRequests:
		code = grpcResourceExhausted
	}
	// Trailers-only: the status (and the pushback hint the server may
	// have set) in the headers, no message.
	h.Set("Grpc-Status", strconv.Itoa(code))
	h.Set("Grpc-Message", h.Get("Herdlab-Reason"))
	g.ResponseWriter.WriteHeader(http.StatusOK)
}

// Write drops the server's plain-text body: the gRPC answer is made by
// WriteHeader.
func (g *grpcWriter) Write(b []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	return len(b), nil
}
