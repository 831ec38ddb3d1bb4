package herdtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGRPCWireFormat sends gRPC calls as a gRPC client frames them
// (HTTP/2 without TLS, application/grpc, a length-prefixed message)
// and reads the answers as grpc-go would: a success is one empty message
// with grpc-status 0 in the trailers; a 503 (the error outage, its first
// 4 calls) is trailers-only UNAVAILABLE (14), a 429 (a rate limit of 1 a
// second against 2 calls a second after it) RESOURCE_EXHAUSTED (8) with
// the server's pushback hint.
func TestGRPCWireFormat(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	client := func(n Net) (Send, error) {
		tr := &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return n.Dial(ctx, n.Addr) },
			Protocols:   new(http.Protocols),
		}
		tr.Protocols.SetUnencryptedHTTP2(true)
		n.Cleanup(tr.CloseIdleConnections)
		return func(ctx context.Context, r Request) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.Addr+"/herdlab.Work/Do", bytes.NewReader([]byte{0, 0, 0, 0, 0}))
			req.Header.Set("Content-Type", "application/grpc")
			req.Header.Set("Te", "trailers")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			status := resp.Trailer.Get("Grpc-Status")
			if status == "" {
				status = resp.Header.Get("Grpc-Status") // trailers-only
			}
			key := fmt.Sprintf("http %d, %s, grpc-status %s, body %x, pushback %q", resp.StatusCode, resp.Header.Get("Content-Type"), status, body, resp.Header.Get("Grpc-Retry-Pushback-Ms"))
			mu.Lock()
			seen[key]++
			mu.Unlock()
			if status != "0" {
				return fmt.Errorf("grpc-status %s", status)
			}
			return nil
		}, nil
	}
	res := Run(t, "testdata/grpc.yaml", Clients{"grpc": client}, Options{Only: true, NoRepeat: true, NoChecks: true})
	require.NotEmpty(t, res.Runs)
	assert.Equal(t, map[string]int{
		`http 200, application/grpc, grpc-status 0, body 0000000000, pushback ""`: 3,
		`http 200, application/grpc, grpc-status 14, body , pushback ""`:          4,
		`http 200, application/grpc, grpc-status 8, body , pushback "300"`:        3,
	}, seen)
}
