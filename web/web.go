// Package web is herdlab's browser app beside the CLI: the page's files
// (built from web/app by make assets, and embedded), the scenario library
// as its examples, herdlab ui's handler (Handler), which runs the
// simulations natively, and the static site (WriteSite), in which they run
// in the browser, in WebAssembly. Both answer through web/lab; the page
// and the engines' protocol are described in web/README.md.
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/zeontools/herdlab/scenarios"
)

//go:embed all:app/dist
var dist embed.FS

// App returns the page's files: index.html, app.js, app.css, worker.js,
// charts.js, charts.css and the third-party licences.
func App() fs.FS {
	sub, err := fs.Sub(dist, "app/dist")
	if err != nil {
		panic(err) // the embedded folder is there: the build put it there
	}
	return sub
}

// ChartScript and ChartStyle are the chart component alone (charts.js,
// charts.css), which report.html inlines with its data.
func ChartScript() string { return asset("charts.js") }

// ChartStyle is the chart component's style sheet (see ChartScript).
func ChartStyle() string { return asset("charts.css") }

func asset(name string) string {
	b, err := fs.ReadFile(App(), name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Example is a scenario of the library, as examples/index.json lists it.
type Example struct {
	File        string `json:"file"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// examples lists the scenario library, in file order, once: every
// shipped scenario is valid (make check runs them all).
var examples = sync.OnceValues(func() ([]byte, error) {
	files, err := fs.Glob(libraryFS(), "*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	list := make([]Example, 0, len(files))
	for _, file := range files {
		src, err := fs.ReadFile(libraryFS(), file)
		if err != nil {
			return nil, err
		}
		sc, err := scenarios.Parse(file, src)
		if err != nil {
			return nil, err
		}
		list = append(list, Example{File: file, Name: sc.Name, Description: strings.Join(strings.Fields(sc.Description), " ")})
	}
	return json.MarshalIndent(list, "", "  ")
})

// example returns the scenario file of the library named file.
func example(file string) ([]byte, bool) {
	if path.Base(file) != file || !strings.HasSuffix(file, ".yaml") {
		return nil, false
	}
	b, err := fs.ReadFile(libraryFS(), file)
	return b, err == nil
}

func libraryFS() fs.FS { return scenarios.Library }

// Config is config.json: which engine the page uses, and the scenario it
// opens with (herdlab ui FILE), if any.
type Config struct {
	Engine  string   `json:"engine"` // "server" or "wasm"
	Initial *Initial `json:"initial"`
}

// Initial is a scenario the page opens with.
type Initial struct {
	File string `json:"file"`
	YAML string `json:"yaml"`
}
