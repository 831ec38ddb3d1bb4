// Runs one scenario through herdlab.wasm under Node.js, as the browser
// app's worker does: node run.cjs WASM_EXEC_JS HERDLAB_WASM SCENARIO.yaml
// prints herdlabRun's result as JSON, with the run's time in ms, the
// progress reports it made and herdlabValidate's answer.
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
    // Exit once the pipe has taken it all: a large answer is written
    // asynchronously.
    process.stdout.write(JSON.stringify(out), () => process.exit(0));
  })
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
