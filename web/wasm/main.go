//go:build js && wasm

// Command wasm is herdlab's simulator built to WebAssembly, for the
// browser app's Web Worker: it exposes web/lab to JavaScript as
//
//	herdlabValidate(yaml, file) -> JSON of lab.Validation
//	herdlabRun(yaml, file, onProgress) -> JSON of lab.Result
//
// herdlabRun's summary is what `herdlab run` writes to summary.json, byte
// for byte; onProgress, when given, is called with the share of the work
// done while the run goes. It holds no model logic.
//
//	GOOS=js GOARCH=wasm go build -o herdlab.wasm ./web/wasm
package main

import (
	"context"
	"encoding/json"
	"syscall/js"

	"github.com/zeontools/herdlab/web/lab"
)

// maxMemory is the memory a run may take, as the simulator estimates it:
// half of the 4 GiB a WebAssembly module can address, since the browser
// holds the results and the page beside it. A scenario over it is refused
// with a message that names the figure.
const maxMemory = 2 << 30

func main() {
	js.Global().Set("herdlabValidate", js.FuncOf(validate))
	js.Global().Set("herdlabRun", js.FuncOf(run))
	select {} // serve calls until the page goes away
}

func validate(_ js.Value, args []js.Value) any {
	if len(args) < 2 {
		return answer(lab.Validation{Error: "herdlabValidate(yaml, file): two arguments"})
	}
	return answer(lab.Validate(args[0].String(), args[1].String()))
}

func run(_ js.Value, args []js.Value) any {
	if len(args) < 2 {
		return answer(lab.Result{Error: "herdlabRun(yaml, file, onProgress): at least two arguments"})
	}
	o := lab.Options{MaxMemory: maxMemory}
	if len(args) > 2 && args[2].Type() == js.TypeFunction {
		onProgress := args[2]
		o.Progress = func(done float64) { onProgress.Invoke(done) }
	}
	return answer(lab.Run(context.Background(), args[0].String(), args[1].String(), o))
}

// answer is v as JSON text: JavaScript parses it, and a summary inside
// keeps its bytes.
func answer(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(lab.Result{Error: err.Error()})
	}
	return string(b)
}
