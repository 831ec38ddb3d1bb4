// Compiles herdlab.wasm and does nothing else, for BenchmarkFirstRunFloor:
// node [V8 FLAGS] compile.cjs HERDLAB_WASM prints, as JSON, the CPU time
// (user and system, every thread: V8 compiles on its worker threads too)
// that new WebAssembly.Module took. Under --no-liftoff
// --no-wasm-lazy-compilation that is every function compiled by V8's
// optimising compiler, which is what a function that runs hot costs to
// compile.
const fs = require("fs");
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const bytes = fs.readFileSync(process.argv[2]);
const before = cpu();
new WebAssembly.Module(bytes);
const answer = { compile_cpu_s: cpu() - before };
process.stdout.write(JSON.stringify(answer), () => process.exit(0));
