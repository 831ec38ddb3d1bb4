//go:build js && wasm

// Command wasm is herdlab's simulator built to WebAssembly, for the
// browser app: it exposes herdlabRun(yaml, file) to JavaScript, which
// validates and simulates a scenario with the same packages as the CLI
// and returns what `herdlab run` writes to summary.json, or the problems
// of the file, each at its line and column. It holds no model logic.
//
//	GOOS=js GOARCH=wasm go build -o herdlab.wasm ./web/wasm
package main

import (
	"bytes"
	"context"
	"errors"
	"syscall/js"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
)

func main() {
	js.Global().Set("herdlabRun", js.FuncOf(run))
	select {} // serve calls until the page goes away
}

// run is herdlabRun(yaml, file): {summary: "..."} on success, or
// {problems: [{line, col, path, message}], error: "..."}.
func run(_ js.Value, args []js.Value) any {
	if len(args) < 2 {
		return map[string]any{"error": "herdlabRun(yaml, file): two arguments"}
	}
	summary, err := Simulate(args[0].String(), args[1].String())
	if err != nil {
		return failure(err)
	}
	return map[string]any{"summary": summary}
}

// Simulate parses, validates and simulates the scenario src (named file
// in messages), and returns its summary.json.
func Simulate(src, file string) (string, error) {
	sc, err := scenarios.Parse(file, []byte(src))
	if err != nil {
		return "", err
	}
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := results.WriteJSON(&b, res.Summary); err != nil {
		return "", err
	}
	return b.String(), nil
}

// failure lists err's problems, each placed where scenarios placed it.
func failure(err error) map[string]any {
	var problems []any
	for _, e := range unjoin(err) {
		var se *scenarios.Error
		if errors.As(e, &se) {
			problems = append(problems, map[string]any{"line": se.Line, "col": se.Col, "path": se.Path, "message": se.Msg})
		}
	}
	return map[string]any{"error": err.Error(), "problems": problems}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
