// Command site writes herdlab's static site (make site): the browser app
// with the simulator in WebAssembly, for any static host.
//
//	GOOS=js GOARCH=wasm go build -o herdlab.wasm ./web/wasm
//	go run ./web/site -o site --wasm herdlab.wasm --goroot "$(go env GOROOT)"
package main

import (
	"fmt"
	"os"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/zeontools/herdlab/web"
)

func main() {
	out := flag.StringP("out", "o", "site", "the folder to write (replaced whole: a site, or a new or empty folder)")
	wasm := flag.String("wasm", "", "herdlab.wasm, built with GOOS=js GOARCH=wasm go build ./web/wasm (required)")
	goroot := flag.String("goroot", "", "the Go installation whose lib/wasm/wasm_exec.js runs it, the one that built it (required)")
	flag.Parse()
	if *wasm == "" || *goroot == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: site -o DIR --wasm herdlab.wasm --goroot GOROOT")
		os.Exit(2)
	}
	var rt web.Runtime
	for _, f := range []struct {
		dst  *[]byte
		path string
	}{
		{&rt.Wasm, *wasm},
		{&rt.WasmExec, filepath.Join(*goroot, "lib", "wasm", "wasm_exec.js")},
		{&rt.GoLicense, filepath.Join(*goroot, "LICENSE")},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "site: %v\n", err)
			os.Exit(2)
		}
		*f.dst = b
	}
	if err := web.WriteSite(*out, rt); err != nil {
		fmt.Fprintf(os.Stderr, "site: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote the static site to %s: serve the folder (for one, python3 -m http.server -d %s)\n", *out, *out)
}
