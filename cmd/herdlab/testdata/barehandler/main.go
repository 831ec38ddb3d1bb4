// Command barehandler is the floor BenchmarkServeUnderWrk compares herdlab
// serve with: a bare net/http handler (read the body, answer 200 "ok"),
// in a process of its own, built by the benchmark with the same
// toolchain. It listens on the address it is given (default
// 127.0.0.1:0) and prints "listening at HOST:PORT" once it does.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := "127.0.0.1:0"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "barehandler:", err)
		os.Exit(2)
	}
	fmt.Println("listening at", ln.Addr())
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", "3")
		_, _ = w.Write([]byte("ok\n"))
	}), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, "barehandler:", hs.Serve(ln))
	os.Exit(1)
}
