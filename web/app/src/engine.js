// The engines: what validates, runs and sweeps a scenario for the page,
// either herdlab ui's server (api/validate, api/run, api/sweep) or
// herdlab.wasm in Web Workers. Both answer as web/README.md says:
//
//	validate(yaml, file) -> {problems, error?, controls, sweep_units?, sweep_points?, graph?}
//	run(yaml, file, onProgress) -> {summary: "<summary.json text>", charts: {...}}
//	                             or {error, problems}
//	sweep(yaml, file, onProgress) -> {sweep: {...}, heatmap: {...}}
//	                               or {error, problems}
//
// An engine does one run or sweep at a time: run and sweep reject with a
// Cancelled when cancel() or a newer run or sweep stops them, and with an
// Error when the engine itself fails (which the page shows).

// Cancelled is the rejection of a run or sweep that was cancelled.
export class Cancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "Cancelled";
  }
}

// loadConfig fetches config.json: {engine: "server"|"wasm", initial}.
export async function loadConfig() {
  let resp;
  try {
    resp = await fetch("config.json", { cache: "no-store" });
  } catch (e) {
    throw new Error(`config.json could not be fetched: ${e.message}`);
  }
  if (!resp.ok) throw new Error(`config.json could not be fetched: HTTP ${resp.status}`);
  const config = await resp.json();
  if (config.engine !== "server" && config.engine !== "wasm") {
    throw new Error(`config.json: unknown engine ${JSON.stringify(config.engine)}`);
  }
  return config;
}

// createEngine returns the engine config.json names. onFailure(error) is
// told when a worker fails outside any call (the wasm engine only).
export function createEngine(kind, onFailure) {
  return kind === "wasm" ? new WasmEngine(onFailure) : new ServerEngine();
}

// runResult puts a run's answer in the page's shape: charts as an object
// (a server may send it as JSON text), summary left as the text it is.
function runResult(result) {
  if (result && typeof result.charts === "string") result.charts = JSON.parse(result.charts);
  return result;
}

// client names this page to herdlab ui (the Herdlab-Client header),
// which runs one simulation at a time for each client: another tab's
// runs, from the same address, must not cancel this one's.
const client = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");

class ServerEngine {
  kind = "server";
  #abort = null; // the AbortController of the run or sweep in flight
  #validating = null; // the AbortController of the validation in flight

  // validate rejects with a Cancelled when a newer validation replaces
  // it: the server stops the work of the one abandoned.
  async validate(yaml, file) {
    this.#validating?.abort();
    const abort = new AbortController();
    this.#validating = abort;
    try {
      const resp = await post("api/validate", { yaml, file }, abort.signal);
      return await resp.json();
    } catch (e) {
      if (abort.signal.aborted) throw new Cancelled();
      throw e;
    } finally {
      if (this.#validating === abort) this.#validating = null;
    }
  }

  async run(yaml, file, onProgress) {
    return runResult(await this.#stream("api/run", yaml, file, onProgress));
  }

  sweep(yaml, file, onProgress) {
    return this.#stream("api/sweep", yaml, file, onProgress);
  }

  // stream posts the scenario to url, which answers as api/run does
  // (progress lines, then the result), cancelling the call in flight.
  async #stream(url, yaml, file, onProgress) {
    this.cancel();
    const abort = new AbortController();
    this.#abort = abort;
    try {
      const resp = await post(url, { yaml, file }, abort.signal);
      let result = null;
      await readLines(resp.body, (line) => {
        const msg = JSON.parse(line);
        if (msg.progress != null) onProgress(msg.progress);
        if (msg.result) result = msg.result;
      });
      if (!result) throw new Error(`${url}: the answer ended without a result`);
      return result;
    } catch (e) {
      if (abort.signal.aborted) throw new Cancelled();
      throw e;
    } finally {
      if (this.#abort === abort) this.#abort = null;
    }
  }

  cancel() {
    this.#abort?.abort();
    this.#abort = null;
  }
}

// post sends body as JSON to url and returns the response, or throws
// with the server's message when it is not 2xx: the reason of its
// {"error": ...} (herdlab ui busy, 429; a request refused, 403 or 415),
// or its text.
async function post(url, body, signal) {
  const resp = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Herdlab-Client": client },
    body: JSON.stringify(body),
    signal,
  });
  if (!resp.ok) {
    let text = (await resp.text()).trim();
    try {
      text = JSON.parse(text).error || text;
    } catch {
      // not JSON: the text as it is
    }
    throw new Error(`${url}: HTTP ${resp.status}${text ? ": " + text : ""}`);
  }
  return resp;
}

// readLines calls onLine with each non-empty line of a byte stream as it
// arrives.
async function readLines(body, onLine) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
    const lines = rest.split("\n");
    rest = lines.pop();
    for (const line of lines) if (line.trim()) onLine(line);
  }
  if (rest.trim()) onLine(rest);
}

// WasmEngine runs herdlab.wasm in Web Workers: one validating, so that
// typing is validated while a run goes on, and as many running as the
// machine has cores (at most MAX_RUNNERS). WebAssembly has one thread:
// a scenario's runs (its units: strategies x runs, or a sweep's points x
// strategies x runs) are shared out among the runners, and the first
// summarises them all, which gives the summary.json of one herdlabRun,
// byte for byte (web/lab's Summarize), or the sweep.json of herdlab sweep.
const MAX_RUNNERS = 4;

class WasmEngine {
  kind = "wasm";
  #seq = 0; // one more for each run, sweep and cancel

  constructor(onFailure) {
    this.validator = new WorkerClient(onFailure);
    const n = Math.max(1, Math.min(navigator.hardwareConcurrency || 1, MAX_RUNNERS));
    this.runners = Array.from({ length: n }, () => new WorkerClient(onFailure));
  }

  validate(yaml, file) {
    return this.validator.call({ op: "validate", yaml, file });
  }

  // (The worker parses a run's charts.)
  async run(yaml, file, onProgress) {
    const { seq, answer } = await this.#begin(yaml, file);
    if (answer.error) return { error: answer.error, problems: answer.problems };
    if (Math.min(answer.units, this.runners.length) < 2) return this.runners[0].call({ op: "run", yaml, file }, onProgress);
    return this.#share(seq, { yaml, file, units: answer.units, op: "units", field: "runs", summarize: "summarize" }, onProgress);
  }

  async sweep(yaml, file, onProgress) {
    const { seq, answer } = await this.#begin(yaml, file);
    if (answer.error) return { error: answer.error, problems: answer.problems };
    if (!(answer.sweep_units > 0)) return { error: "nothing to sweep: the scenario has no sweep: section, or this herdlab.wasm cannot sweep", problems: [] };
    return this.#share(seq, { yaml, file, units: answer.sweep_units, op: "sweep-units", field: "records", summarize: "sweep-summarize" }, onProgress);
  }

  // begin cancels the call in flight and validates the scenario of a
  // new one: it returns the call's number and the validation, or rejects
  // with a Cancelled when another call came meanwhile.
  async #begin(yaml, file) {
    this.cancel();
    const seq = this.#seq;
    const answer = await this.validate(yaml, file);
    if (seq !== this.#seq) throw new Cancelled();
    return { seq, answer };
  }

  // share shares units 0..units-1 out among the runners with op, unit k
  // to runner k % n, each reporting the share of its own; then the first
  // runner summarises the parts' field with op summarize.
  async #share(seq, { yaml, file, units, op, field, summarize }, onProgress) {
    const runners = this.runners.slice(0, Math.min(units, this.runners.length));
    const shares = runners.map((_, i) => Array.from({ length: units }, (_, k) => k).filter((k) => k % runners.length === i));
    const done = runners.map(() => 0);
    const parts = await Promise.all(
      runners.map((r, i) =>
        r.call({ op, yaml, file, units: shares[i] }, (p) => {
          done[i] = p * shares[i].length;
          onProgress(done.reduce((a, b) => a + b, 0) / units);
        }),
      ),
    );
    const failed = parts.find((p) => p.error);
    if (failed) return failed;
    if (seq !== this.#seq) throw new Cancelled(); // cancelled as the last part came in
    return runners[0].call({ op: summarize, yaml, file, parts: parts.map((p) => p[field]) });
  }

  // cancel stops the run or sweep in flight: a run cannot be interrupted
  // inside a worker, so its workers go and the next call starts fresh
  // ones.
  cancel() {
    this.#seq++;
    for (const r of this.runners) if (r.busy) r.stop(new Cancelled());
  }
}

// WorkerClient is one worker.js and the calls waiting for its answers.
// The worker starts on the first call, and again on the next call after
// it was stopped or failed.
class WorkerClient {
  #worker = null;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #nextId = 1;

  constructor(onFailure) {
    this.onFailure = onFailure;
  }

  get busy() {
    return this.#pending.size > 0;
  }

  call(msg, onProgress) {
    if (!this.#worker) this.#start();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, ...msg });
    });
  }

  // stop ends the worker and rejects every waiting call with reason.
  stop(reason) {
    this.#worker?.terminate();
    this.#worker = null;
    for (const p of this.#pending.values()) p.reject(reason);
    this.#pending.clear();
  }

  #start() {
    const worker = new Worker("worker.js");
    worker.onmessage = (e) => {
      const { id, progress, result, error } = e.data;
      if (id == null) {
        // The worker could not load herdlab.wasm: it is of no use.
        this.#fail(new Error(`the wasm engine failed: ${error}`));
        return;
      }
      const p = this.#pending.get(id);
      if (!p) return; // the answer of a call stopped meanwhile
      if (progress != null) {
        p.onProgress?.(progress);
      } else {
        this.#pending.delete(id);
        if (error != null) p.reject(new Error(`the wasm engine failed: ${error}`));
        else p.resolve(result);
      }
    };
    worker.onerror = (e) => {
      e.preventDefault();
      this.#fail(new Error(`the wasm engine failed: ${e.message || "the worker could not start, or crashed (out of memory?)"}`));
    };
    worker.onmessageerror = () => this.#fail(new Error("the wasm engine failed: a message could not be read"));
    this.#worker = worker;
  }

  // fail stops the worker for an error of its own: the calls waiting get
  // it, and so does onFailure when none was waiting to report it.
  #fail(error) {
    const waiting = this.busy;
    this.stop(error);
    if (!waiting) this.onFailure(error);
  }
}
