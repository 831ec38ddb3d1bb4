// Runs one scenario through herdlab.wasm under Node.js, as the browser
// app's worker does: node run.cjs WASM_EXEC_JS HERDLAB_WASM SCENARIO.yaml
// prints herdlabRun's result as JSON, with the run's time in ms, the
// progress reports it made, herdlabValidate's answer, and with "parts"
// the result of the same runs made in two parts and summarised
// (herdlabRunUnits, herdlabSummarize), with "sweep" the scenario's sweep
// made in two parts (herdlabSweepUnits, herdlabSweepSummarize).
const fs = require("fs");
require(process.argv[2]); // Go's wasm_exec.js: defines globalThis.Go
const go = new Go();
WebAssembly.instantiate(fs.readFileSync(process.argv[3]), go.importObject)
  .then(({ instance }) => {
    go.run(instance); // main registers the functions, then waits
    const file = process.argv[4];
    const src = fs.readFileSync(file, "utf8");
    const progress = [];
    const t0 = performance.now();
    const out = JSON.parse(herdlabRun(src, file, (f) => progress.push(f)));
    out.ms = performance.now() - t0;
    out.progress = progress;
    out.validation = JSON.parse(herdlabValidate(src, file));
    // As the static site's workers do: the units in two parts (odd and
    // even), then one summary of both.
    if (process.argv[5] === "sweep") {
      // A sweep in two parts, summarised.
      const part = (r) => {
        const units = [];
        for (let k = r; k < out.validation.sweep_units; k += 2) units.push(k);
        return JSON.parse(herdlabSweepUnits(src, file, JSON.stringify(units)));
      };
      const parts = [part(0), part(1)];
      const failed = parts.find((p) => p.error);
      out.sweep = failed || JSON.parse(herdlabSweepSummarize(src, file, JSON.stringify(parts.map((p) => p.records || ""))));
    }
    if (process.argv[5] === "parts" && out.validation.units) {
      const part = (r) => {
        const units = [];
        for (let k = r; k < out.validation.units; k += 2) units.push(k);
        return JSON.parse(herdlabRunUnits(src, file, JSON.stringify(units)));
      };
      const parts = [part(1), part(0)];
      const failed = parts.find((p) => p.error);
      out.parts = failed || JSON.parse(herdlabSummarize(src, file, JSON.stringify(parts.map((p) => p.runs || ""))));
    }
    // Exit once the pipe has taken it all: a large answer is written
    // asynchronously.
    process.stdout.write(JSON.stringify(out), () => process.exit(0));
  })
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
