// Runs one scenario through herdlab.wasm under Node.js as the browser
// app's one worker does (herdlabRun with a progress callback that keeps
// whole per cents, its answer parsed), RUNS times, for
// BenchmarkAgainstNative: node bench.cjs WASM_EXEC_JS HERDLAB_WASM
// SCENARIO.yaml RUNS prints, as JSON, the process's CPU time (user and
// system, every thread) once the module is instantiated, its functions
// registered and V8's compilation of what its start ran has settled
// (start_cpu_s: a worker waits for the page's first run), and at the end
// of each run (ends_cpu_s); and the runs' first error, if any.
const fs = require("fs");
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
require(process.argv[2]); // Go's wasm_exec.js: defines globalThis.Go
const go = new Go();
WebAssembly.instantiate(fs.readFileSync(process.argv[3]), go.importObject)
  .then(async ({ instance }) => {
    go.run(instance); // main registers the functions, then waits
    // V8 compiles the functions that main's start made hot on other
    // threads, after it: wait until the process is idle (under 5 ms of
    // CPU in 100 ms, three times running; 10 s at most).
    let last = cpu();
    for (let quiet = 0, i = 0; quiet < 3 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const now = cpu();
      quiet = now - last < 0.005 ? quiet + 1 : 0;
      last = now;
    }
    const start = cpu();
    const file = process.argv[4];
    const runs = Number(process.argv[5]);
    const src = fs.readFileSync(file, "utf8");
    const run = () => {
      let shown = -1;
      const out = JSON.parse(
        herdlabRun(src, file, (f) => {
          const pc = Math.floor(f * 100);
          if (pc !== shown) shown = pc;
        }),
      );
      if (typeof out.charts === "string") out.charts = JSON.parse(out.charts);
      return out.error || (out.summary ? "" : "no summary");
    };
    const ends = [];
    let error = "";
    for (let i = 0; i < runs && !error; i++) {
      error = run();
      ends.push(cpu());
    }
    const answer = { start_cpu_s: start, ends_cpu_s: ends, error };
    process.stdout.write(JSON.stringify(answer) + "\n", () => process.exit(0));
  })
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
