// The page: a scenario's YAML in an editor, validated as it is typed
// and run on an engine (web/README.md), with controls that edit the
// YAML, the run's summary table and its charts; a scenario with a sweep:
// section is swept at the press of a button, into a card of its own.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { indentWithTab } from "@codemirror/commands";
import { yaml } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { colors, render, renderSweep } from "./charts.js";
import { showControls } from "./controls.js";
import { Cancelled, createEngine, loadConfig } from "./engine.js";
import { count } from "./format.js";
import { createGraphView } from "./graph.js";
import { readHash, shareHash } from "./share.js";
import { renderSummary } from "./summary.js";

const VALIDATE_DELAY = 300; // ms after the last keystroke
const RUN_DELAY = 300; // ms after a clean validation of changed text

const $ = (id) => document.getElementById(id);

const app = {
  engine: null,
  file: "scenario.yaml",
  examples: [], // examples/index.json
  version: 0, // the editor text's version: one more per change
  invalid: false, // the last validation found problems
  controls: [], // the last validation's controls, with their spans (from, to) kept up with later edits
  sweepUnits: 0, // the last validation's sweep_units: the runs of its sweep, 0 for none
  sweepPoints: 0, // and its sweep_points
  runText: null, // the text of the last run started
  shownText: null, // the text of the run whose results are shown
  sweptText: null, // the text of the sweep whose results are shown
  seq: 0, // the number of the last run or sweep started
  outcome: "loading", // the state when neither running nor invalid
  busy: false, // a run or a sweep is in flight
  sweeping: false, // it is a sweep
  finished: { run: 0, sweep: 0 }, // the runs and sweeps the engine answered
  lastSummary: null,
  lastCharts: null,
  charts: null,
  lastSweep: null,
  sweepCharts: null,
  graph: null, // the graph of the last valid text (validation's graph), null for none
  graphText: null, // that text
};
let validateTimer = 0;
let runTimer = 0;

const editor = new EditorView({
  parent: $("editor"),
  extensions: [
    basicSetup,
    keymap.of([indentWithTab]),
    yaml(),
    lintGutter(),
    EditorView.updateListener.of((update) => {
      if (!update.docChanged) return;
      app.version++;
      for (const c of app.controls) {
        c.from = update.changes.mapPos(c.from, -1);
        c.to = update.changes.mapPos(c.to, 1);
      }
      graphView.stale();
      clearTimeout(runTimer);
      clearTimeout(validateTimer);
      validateTimer = setTimeout(validate, VALIDATE_DELAY);
    }),
  ],
});

const text = () => editor.state.doc.toString();

const graphView = createGraphView($("graph"));

// The page's state for tests and styles: running (a run or a sweep),
// invalid, or how the last run or sweep ended (loading before any).
function refreshState() {
  document.body.dataset.state = app.busy ? "running" : app.invalid ? "invalid" : app.outcome;
  $("run").disabled = !app.engine || app.invalid;
  $("cancel").disabled = !app.busy;
  // Only a valid scenario with a sweep: section can be swept.
  const sweepable = !app.invalid && app.sweepUnits > 0;
  $("sweep").hidden = !sweepable;
  $("sweep").disabled = !app.engine || !sweepable || app.sweeping;
  $("sweep").title = `Sweep the scenario's sweep: section: ${count(app.sweepUnits)} runs, at ${count(app.sweepPoints)} ${app.sweepPoints === 1 ? "point" : "points"}`;
  // Results of another text than the editor's are greyed, and say so.
  const stale = app.charts != null && app.shownText !== text();
  for (const id of ["summary-card", "charts-card"]) $(id).classList.toggle("stale", stale);
  $("stale-note").hidden = !stale;
  $("stale-note").textContent = app.invalid
    ? "The scenario has problems: these results are from the last good run."
    : "These results are from an earlier version of the scenario: the last run of this one did not finish.";
  const staleSweep = app.sweepCharts != null && app.sweptText !== text();
  $("sweep-card").classList.toggle("stale", staleSweep);
  $("sweep-stale-note").hidden = !staleSweep;
}

function showError(message) {
  $("error-text").textContent = message;
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error-text").textContent = "";
}

// fail shows an engine's failure.
function fail(error) {
  showError(error.message);
  app.outcome = "error";
  refreshState();
}

function setStatus(message) {
  $("status").textContent = message;
}

// validate asks the engine about the editor's text and shows its
// answer, unless the text changed meanwhile (a newer validation comes);
// a clean answer for text not yet run starts a run shortly.
async function validate() {
  clearTimeout(validateTimer);
  if (!app.engine) return;
  const version = app.version;
  const yaml = text();
  let answer;
  try {
    answer = await app.engine.validate(yaml, app.file);
  } catch (e) {
    if (version === app.version && !(e instanceof Cancelled)) fail(e);
    return;
  }
  if (version !== app.version) return;
  showProblems(answer.problems ?? [], answer.error, answer.warnings ?? []);
  $("describe").textContent = answer.describe ?? "";
  if (!app.invalid) {
    app.graph = answer.graph ?? null;
    app.graphText = yaml;
  }
  drawGraph();
  // A file with problems still has controls where it is YAML: they may
  // be the way to fix it.
  app.controls = (answer.controls ?? []).map((c) => ({ ...c, from: offset(c.line, c.col), to: offset(c.line, c.col + c.len) }));
  showControls($("controls"), app.controls, setControl);
  app.sweepUnits = answer.sweep_units ?? 0;
  app.sweepPoints = answer.sweep_points ?? 0;
  // (A sweep is long: it starts at the button only.)
  if (!app.invalid && yaml !== app.runText) runTimer = setTimeout(run, RUN_DELAY);
  refreshState();
}

// showProblems puts a file's problems ({line, col, path, message}
// each, or an error with no place) and lint's warnings in the editor, as
// its diagnostics, and in #problems and #warnings. Validation's problems
// make the file invalid; a run's (ran set: a scenario too big to run
// here) are placed alike, but leave validity to validation.
function showProblems(problems, error, warnings = [], ran = false) {
  if (!ran) app.invalid = problems.length > 0 || !!error;
  const items = problems.map((p) => placed(p));
  const diagnostics = problems.map((p) => diagnostic(p, "error"));
  if (!problems.length && error) {
    const li = document.createElement("li");
    li.textContent = error;
    items.push(li);
    diagnostics.push({ from: 0, to: Math.min(1, editor.state.doc.length), severity: "error", message: error });
  }
  $("problems").replaceChildren(...items);
  $("warnings").replaceChildren(...warnings.map((w) => placed(w)));
  diagnostics.push(...warnings.map((w) => diagnostic(w, "warning")));
  const bad = app.invalid || (ran && items.length > 0);
  $("validity").textContent = bad ? `${items.length} ${items.length === 1 ? "problem" : "problems"}` : "valid";
  $("validity").className = bad ? "bad" : "good";
  editor.dispatch(setDiagnostics(editor.state, diagnostics));
}

// placed is a problem's item in a list, "file:line:col: path: message"
// as herdlab validate says it; a click puts the cursor there.
function placed(p) {
  const li = document.createElement("li");
  li.dataset.line = p.line;
  li.dataset.col = p.col;
  li.textContent = `${app.file}:${p.line}:${p.col}: ${message(p)}`;
  li.addEventListener("click", () => {
    editor.dispatch({ selection: { anchor: offset(p.line, p.col) }, scrollIntoView: true });
    editor.focus();
  });
  return li;
}

function message(p) {
  return `${p.path ? p.path + ": " : ""}${p.message}`;
}

// diagnostic marks a problem in the editor from its place to the end
// of the word there (at least one character, where the line has one).
function diagnostic(p, severity) {
  const from = offset(p.line, p.col);
  const rest = editor.state.doc.sliceString(from, editor.state.doc.lineAt(from).to);
  const word = rest.match(/^[^\s,{}[\]#]*/)[0].length || Math.min(1, rest.length);
  return { from, to: from + word, severity, message: message(p) };
}

// offset returns the editor position of line and col (from 1; col in
// characters, that is code points), within the text.
function offset(line, col) {
  const doc = editor.state.doc;
  const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
  let pos = l.from;
  let k = 1;
  for (const ch of l.text) {
    if (k++ >= col) break;
    pos += ch.length;
  }
  return pos;
}

// setControl writes a control's new value over its text in the editor,
// which validates and reruns as any edit does.
function setControl(path, value) {
  const c = app.controls.find((c) => c.path === path);
  if (!c || value === "" || editor.state.doc.sliceString(c.from, c.to) === value) return;
  editor.dispatch({ changes: { from: c.from, to: c.to, insert: value } });
}

// run runs the editor's text, cancelling the run or sweep in flight,
// and shows the result. It returns a promise of the engine's result
// ({summary, charts} or {error, problems}), of {cancelled: true} for a
// run cancelled or overtaken by a newer run or sweep, or of {error} when
// the engine failed.
async function run() {
  clearTimeout(runTimer);
  if (!app.engine) return { error: "no engine" };
  const yaml = text();
  app.runText = yaml;
  return perform("run", yaml, (onProgress) => app.engine.run(yaml, app.file, onProgress), (result) => {
    app.shownText = yaml;
    showResult(result);
  });
}

// sweep sweeps the editor's text, cancelling the run or sweep in
// flight, and shows the result in #sweep-card. It returns a promise as
// run does, of the engine's {sweep, heatmap} or {error, problems}.
async function sweep() {
  if (!app.engine) return { error: "no engine" };
  const yaml = text();
  return perform("sweep", yaml, (onProgress) => app.engine.sweep(yaml, app.file, onProgress), (result) => showSweep(result, yaml));
}

// perform does a run or a sweep (what) of yaml with call(onProgress),
// which asks the engine, with the progress bar, #status and #error, and
// shows a result with show(result). It returns what run returns.
async function perform(what, yaml, call, show) {
  const seq = ++app.seq;
  const verb = what === "sweep" ? "sweeping" : "running";
  app.busy = true;
  app.sweeping = what === "sweep";
  setProgress(0, verb);
  refreshState();
  const start = performance.now();
  try {
    const result = await call((p) => seq === app.seq && setProgress(p, verb));
    const wall = (performance.now() - start) / 1000;
    if (result.error) {
      // (Problems are placed in the text that ran: not if it changed.)
      if (result.problems?.length && yaml === text()) showProblems(result.problems, result.error, [], true);
      showError(result.error);
      app.outcome = "error";
      setStatus(`the ${what} failed`);
    } else {
      show(result);
      clearError();
      app.outcome = "done";
      setStatus(`${what === "sweep" ? "sweep " : ""}done in ${wall.toFixed(2)} s (engine: ${app.engine.kind})`);
    }
    app.finished[what]++;
    return result;
  } catch (e) {
    if (seq !== app.seq) return { cancelled: true }; // the newer run or sweep has the page
    if (e instanceof Cancelled) {
      app.outcome = "cancelled";
      setStatus("cancelled");
      return { cancelled: true };
    }
    showError(e.message);
    app.outcome = "error";
    setStatus(`the ${what} failed`);
    return { error: e.message };
  } finally {
    if (seq === app.seq) {
      app.busy = false;
      app.sweeping = false;
      $("progress").value = 0;
      refreshState();
    }
  }
}

function setProgress(p, verb) {
  $("progress").value = p;
  setStatus(`${verb}… ${Math.floor(p * 100)}%`);
}

// showResult shows a run's summary table and charts.
function showResult(result) {
  const summary = JSON.parse(result.summary);
  app.charts?.destroy();
  app.charts = null;
  renderSummary($("summary"), summary, colors(summary));
  app.charts = render($("charts"), summary, result.charts);
  app.lastSummary = result.summary;
  app.lastCharts = result.charts;
  $("download-summary").disabled = false;
  drawGraph();
}

// drawGraph draws the graph of the last valid text in #graph-card (and
// hides the card for a single server): its structure at once, and the
// figures of the run shown when that run was of the same text, greyed
// when the editor's text changed since.
function drawGraph() {
  const figures = app.lastSummary != null && app.shownText === app.graphText ? JSON.parse(app.lastSummary) : null;
  const current = text();
  const shown = graphView.show(app.graph, figures, { outdated: app.invalid, stale: app.shownText !== current });
  $("graph-card").hidden = !shown;
}

// showSweep shows a sweep of yaml in #sweep-card, and brings it into
// view.
function showSweep(result, yaml) {
  app.sweepCharts?.destroy();
  app.sweepCharts = null;
  // (Shown before it is drawn: the charts take the card's width.)
  $("sweep-card").hidden = false;
  app.sweepCharts = renderSweep($("sweep-charts"), result);
  app.sweptText = yaml;
  app.lastSweep = result.sweep;
  $("sweep-card").scrollIntoView({ block: "start" });
}

// setScenario puts a scenario in the editor, validates it and runs it.
function setScenario(yaml, file) {
  app.file = file;
  $("file-name").textContent = file;
  $("examples").value = app.examples.some((e) => e.file === file) ? file : "";
  editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: yaml } });
  validate();
  return run();
}

async function fetchText(url) {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`${url}: HTTP ${resp.status}`);
  return resp.text();
}

// loadExamples fills #examples from examples/index.json.
async function loadExamples() {
  app.examples = JSON.parse(await fetchText("examples/index.json"));
  const select = $("examples");
  const none = new Option("(your scenario)", "");
  none.disabled = true;
  select.replaceChildren(none, ...app.examples.map((e) => Object.assign(new Option(e.name, e.file), { title: e.description ?? "" })));
  select.disabled = false;
}

function download(file, content, type) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([content], { type }));
  a.download = file;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

async function share() {
  history.replaceState(null, "", "#" + (await shareHash(text(), app.file)));
  const input = $("share-url");
  input.value = location.href;
  input.hidden = false;
  try {
    await navigator.clipboard.writeText(location.href);
    $("share-note").textContent = "link copied";
  } catch {
    $("share-note").textContent = "copy the link:";
    input.select();
  }
}

// start loads the configuration, the examples and the first scenario:
// a shared link's, else config.json's initial one, else the default
// example (thundering-herd.yaml, or the first).
async function start() {
  let config;
  try {
    config = await loadConfig();
  } catch (e) {
    setStatus("no engine");
    fail(e);
    return;
  }
  app.engine = createEngine(config.engine, fail);
  refreshState();
  try {
    await loadExamples();
  } catch (e) {
    showError(`The scenario library could not be loaded: ${e.message}`);
  }
  for (const id of ["download-yaml", "share"]) $(id).disabled = false;

  let scenario = null;
  let hashError = "";
  try {
    scenario = await readHash(location.hash);
  } catch (e) {
    hashError = `The shared link could not be read (${e.message}): showing the default scenario instead.`;
    showError(hashError);
  }
  scenario ??= config.initial;
  if (!scenario && app.examples.length) {
    const ex = app.examples.find((e) => e.file === "thundering-herd.yaml") ?? app.examples[0];
    try {
      scenario = { yaml: await fetchText(`examples/${ex.file}`), file: ex.file };
    } catch (e) {
      fail(e);
      return;
    }
  }
  if (!scenario) {
    fail(new Error("No scenario to show: the scenario library is empty."));
    return;
  }
  await setScenario(scenario.yaml, scenario.file);
  // The default's run must not hide why it is shown.
  if (hashError) showError(hashError);
}

// The sticky editor's height leaves room for the header (see style.css).
new ResizeObserver(() => document.documentElement.style.setProperty("--top-h", `${$("top").offsetHeight}px`)).observe($("top"));

addEventListener("error", (e) => showError(e.message || String(e.error)));
addEventListener("unhandledrejection", (e) => showError(String(e.reason?.message ?? e.reason)));

$("run").addEventListener("click", run);
$("sweep").addEventListener("click", sweep);
$("cancel").addEventListener("click", () => app.engine.cancel());
$("error-close").addEventListener("click", clearError);
$("download-yaml").addEventListener("click", () => download(app.file, text(), "application/yaml"));
$("download-summary").addEventListener("click", () => download("summary.json", app.lastSummary, "application/json"));
$("share").addEventListener("click", share);
$("examples").addEventListener("change", async (e) => {
  const file = e.target.value;
  try {
    setScenario(await fetchText(`examples/${file}`), file);
  } catch (err) {
    showError(err.message);
  }
});

// For tests (and the curious): the page's parts and state.
window.herdlab = {
  get engine() {
    return app.engine?.kind ?? null;
  },
  editor,
  setScenario,
  getScenario: text,
  get file() {
    return app.file;
  },
  run,
  get lastSummary() {
    return app.lastSummary;
  },
  get lastCharts() {
    return app.lastCharts;
  },
  get charts() {
    return app.charts;
  },
  get runs() {
    return app.finished.run;
  },
  sweep,
  get lastSweep() {
    return app.lastSweep;
  },
  get sweepCharts() {
    return app.sweepCharts;
  },
  get sweeps() {
    return app.finished.sweep;
  },
  get busy() {
    return app.busy;
  },
  get graph() {
    return app.graph;
  },
};

start();
