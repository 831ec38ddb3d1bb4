package memnet_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/zeontools/herdlab/herdtest/internal/memnet"
)

// dialerKey keys the dialer's tag in a request's context.
type dialerKey struct{}

// An http.Server and an http.Transport over a Network. Inside
// synctest.Test, the same code runs on the bubble's clock: the request
// takes four delays (two to connect) and no wall time.
func Example() {
	n := memnet.New("herdlab.test:80")
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello, %v", r.Context().Value(dialerKey{}))
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, dialerKey{}, c.(*memnet.Conn).Tag())
		},
	}
	go srv.Serve(n.Listener())

	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return n.Dial(ctx, memnet.DialOptions{
				Delay: func() time.Duration { return time.Millisecond },
				Tag:   "sender 1",
			})
		},
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://herdlab.test/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))

	tr.CloseIdleConnections()
	srv.Shutdown(context.Background())
	// Output: hello, sender 1
}
