// worker.js is the wasm engine's Web Worker: it loads herdlab.wasm with
// Go's wasm_exec.js (both beside it) and answers the page's messages
//
//	{id, op: "validate" | "run", yaml, file}
//	{id, op: "units" | "sweep-units", yaml, file, units: [k, ...]}
//	{id, op: "summarize", yaml, file, parts: ["<runs of a part>", ...]}
//	{id, op: "sweep-summarize", yaml, file, parts: ["<records of a part>", ...]}
//
// with {id, progress} while a run goes and then {id, result}, the parsed
// JSON that herdlabValidate, herdlabRun, herdlabRunUnits,
// herdlabSummarize, herdlabSweepUnits or herdlabSweepSummarize returned
// (a run's summary stays the text of summary.json). A herdlab.wasm built
// before sweeps lacks the last two: it still runs, and answers a sweep
// with {error}. When the worker cannot load herdlab.wasm it posts {error}
// once, and {id, error} when a call throws.

const ready = load();
// Keep the failure for the page, not as an unhandled rejection here.
ready.catch((e) => postMessage({ error: String(e?.message ?? e) }));

async function load() {
  importScripts("wasm_exec.js");
  const go = new Go();
  let instance;
  try {
    ({ instance } = await WebAssembly.instantiateStreaming(fetch("herdlab.wasm"), go.importObject));
  } catch {
    // A server that does not say application/wasm: compile from the bytes.
    const resp = await fetch("herdlab.wasm");
    if (!resp.ok) throw new Error(`herdlab.wasm: HTTP ${resp.status}`);
    ({ instance } = await WebAssembly.instantiate(await resp.arrayBuffer(), go.importObject));
  }
  // Go's main sets the globals and then waits for calls forever: the
  // promise run returns never settles.
  go.run(instance);
  for (const name of ["herdlabValidate", "herdlabRun", "herdlabRunUnits", "herdlabSummarize"]) {
    if (typeof self[name] !== "function") throw new Error(`herdlab.wasm does not define ${name}`);
  }
}

self.onmessage = async (e) => {
  const { id, op, yaml, file, units, parts } = e.data;
  try {
    await ready;
  } catch {
    return; // reported once above
  }
  try {
    postMessage({ id, result: answer(id, op, yaml, file, units, parts) });
  } catch (err) {
    postMessage({ id, error: String(err?.message ?? err) });
  }
};

// answer calls the function of op and parses its answer.
function answer(id, op, yaml, file, units, parts) {
  if (op.startsWith("sweep-") && !canSweep()) return { error: "this herdlab.wasm cannot sweep" };
  let text;
  switch (op) {
    case "run":
      text = self.herdlabRun(yaml, file, progress(id));
      break;
    case "units":
      text = self.herdlabRunUnits(yaml, file, JSON.stringify(units), progress(id));
      break;
    case "summarize":
      text = self.herdlabSummarize(yaml, file, JSON.stringify(parts));
      break;
    case "sweep-units":
      text = self.herdlabSweepUnits(yaml, file, JSON.stringify(units), progress(id));
      break;
    case "sweep-summarize":
      text = self.herdlabSweepSummarize(yaml, file, JSON.stringify(parts));
      break;
    default:
      text = self.herdlabValidate(yaml, file);
  }
  const result = JSON.parse(text);
  if (typeof result.charts === "string") result.charts = JSON.parse(result.charts);
  return result;
}

// canSweep reports whether herdlab.wasm has the sweep functions, which a
// module built before sweeps lacks.
function canSweep() {
  return typeof self.herdlabSweepUnits === "function" && typeof self.herdlabSweepSummarize === "function";
}

// progress returns the callback that posts a run's progress, by whole
// per cents (Go may report far more often than the page can show).
function progress(id) {
  let shown = -1;
  return (fraction) => {
    const pc = Math.floor(fraction * 100);
    if (pc !== shown) {
      shown = pc;
      postMessage({ id, progress: fraction });
    }
  };
}
