// Runs one scenario through herdlab.wasm under Node.js, as the browser
// app does: node run.cjs WASM_EXEC_JS HERDLAB_WASM SCENARIO.yaml
// prints herdlabRun's result as JSON, with the run's time in ms.
const fs = require("fs");
require(process.argv[2]); // Go's wasm_exec.js: defines globalThis.Go
const go = new Go();
WebAssembly.instantiate(fs.readFileSync(process.argv[3]), go.importObject)
  .then(({ instance }) => {
    go.run(instance); // main registers herdlabRun, then waits
    const file = process.argv[4];
    const t0 = performance.now();
    const out = herdlabRun(fs.readFileSync(file, "utf8"), file);
    out.ms = performance.now() - t0;
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
  })
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
