//go:build js && wasm

// Command wasm is herdlab's simulator built to WebAssembly, for the
// browser app's Web Worker: it exposes web/lab to JavaScript as
//
//	herdlabValidate(yaml, file) -> JSON of lab.Validation
//	herdlabRun(yaml, file, onProgress) -> JSON of lab.Result
//	herdlabRunUnits(yaml, file, unitsJSON, onProgress) -> JSON of lab.Part
//	herdlabSummarize(yaml, file, partsJSON) -> JSON of lab.Result
//	herdlabSweepUnits(yaml, file, unitsJSON, onProgress) -> JSON of lab.SweepPart
//	herdlabSweepSummarize(yaml, file, partsJSON) -> JSON of lab.SweepResult
//
// herdlabRun's summary is what `herdlab run` writes to summary.json, byte
// for byte; onProgress, when given, is called with the share of the work
// done while the run goes. A page with several workers gives each some
// of the units (herdlabRunUnits, units as a JSON array of numbers) and
// one of them the parts' runs (herdlabSummarize, a JSON array of the
// parts' runs fields), which is herdlabRun's answer. It holds no model
// logic. A scenario with a sweep: section is swept likewise, in parts
// of the sweep's units (the parts' records fields).
//
//	GOOS=js GOARCH=wasm go build -o herdlab.wasm ./web/wasm
//
// The go command builds it with default.pgo, a CPU profile of the
// simulator's runs (BenchmarkProfile): a call costs more in WebAssembly
// than natively, and the profile has the compiler inline the hot ones.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall/js"

	"github.com/zeontools/herdlab/internal/gcfloor"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/web/lab"
)

// maxMemory is the memory a run may take, as the simulator estimates it:
// half of the 4 GiB a WebAssembly module can address, since the browser
// holds the results and the page beside it. A scenario over it is refused
// with a message that names the figure.
const maxMemory = 2 << 30

func main() {
	// As the herdlab command does: a heap floor spares small runs most of
	// their collections (aws-occ-10.yaml under Node.js: 863-1028 ms with
	// it, 885-1096 ms without, six of each in turn).
	gcfloor.Set(uint64(sim.HeapFloorUnder(maxMemory)))
	js.Global().Set("herdlabValidate", js.FuncOf(validate))
	js.Global().Set("herdlabRun", js.FuncOf(run))
	js.Global().Set("herdlabRunUnits", js.FuncOf(runUnits))
	js.Global().Set("herdlabSummarize", js.FuncOf(summarize))
	js.Global().Set("herdlabSweepUnits", js.FuncOf(sweepUnits))
	js.Global().Set("herdlabSweepSummarize", js.FuncOf(sweepSummarize))
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
	return answer(lab.Run(context.Background(), args[0].String(), args[1].String(), options(args, 2)))
}

func runUnits(_ js.Value, args []js.Value) any {
	units, err := decode[[]int]("herdlabRunUnits(yaml, file, units, onProgress)", args)
	if err != nil {
		return answer(lab.Part{Error: err.Error()})
	}
	return answer(lab.RunUnits(context.Background(), args[0].String(), args[1].String(), units, options(args, 3)))
}

func summarize(_ js.Value, args []js.Value) any {
	parts, err := decode[[][]byte]("herdlabSummarize(yaml, file, parts)", args)
	if err != nil {
		return answer(lab.Result{Error: err.Error()})
	}
	return answer(lab.Summarize(args[0].String(), args[1].String(), parts))
}

func sweepUnits(_ js.Value, args []js.Value) any {
	units, err := decode[[]int]("herdlabSweepUnits(yaml, file, units, onProgress)", args)
	if err != nil {
		return answer(lab.SweepPart{Error: err.Error()})
	}
	return answer(lab.SweepUnits(context.Background(), args[0].String(), args[1].String(), units, options(args, 3)))
}

func sweepSummarize(_ js.Value, args []js.Value) any {
	parts, err := decode[[][]byte]("herdlabSweepSummarize(yaml, file, parts)", args)
	if err != nil {
		return answer(lab.SweepResult{Error: err.Error()})
	}
	return answer(lab.SweepSummarize(args[0].String(), args[1].String(), parts))
}

// decode decodes the third argument of a call of call, JSON text.
func decode[T any](call string, args []js.Value) (T, error) {
	var v T
	if len(args) < 3 {
		return v, fmt.Errorf("%s: at least three arguments", call)
	}
	if err := json.Unmarshal([]byte(args[2].String()), &v); err != nil {
		return v, fmt.Errorf("%s: the third argument: %w", call, err)
	}
	return v, nil
}

// options bounds a run's memory, and reports its progress to the
// function args[i], if there is one.
func options(args []js.Value, i int) lab.Options {
	o := lab.Options{MaxMemory: maxMemory, MaxMemoryName: "what a WebAssembly worker may take in this page; herdlab ui or herdlab run take more"}
	if len(args) > i && args[i].Type() == js.TypeFunction {
		onProgress := args[i]
		o.Progress = func(done float64) { onProgress.Invoke(done) }
	}
	return o
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
