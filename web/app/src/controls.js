// The controls: an input per number the scenario file sets (as the
// engine's validate lists them), which edit the file's text, not a copy.

// showControls puts an input per control in box. apply(path, text) is
// called with a control's new text. An input the user is in keeps its
// text: with the same controls as shown, the others are updated in
// place; with different ones, the inputs are made anew unless the user
// is in one.
export function showControls(box, controls, apply) {
  const inputs = [...box.querySelectorAll("input[data-path]")];
  const same = inputs.length > 0 && inputs.length === controls.length && inputs.every((inp, i) => inp.dataset.path === controls[i].path);
  if (same) {
    inputs.forEach((inp, i) => {
      if (inp !== document.activeElement) inp.value = controls[i].value;
    });
    return;
  }
  if (inputs.includes(document.activeElement)) return;
  if (!controls.length) {
    const note = document.createElement("p");
    note.className = "empty";
    note.textContent = "This scenario sets no plain numbers to vary here: edit the YAML.";
    box.replaceChildren(note);
    return;
  }
  box.replaceChildren(...controls.map((c, i) => field(c, i, apply)));
}

// field is one control: its label, its input between - and + buttons.
function field(c, i, apply) {
  const div = document.createElement("div");
  div.className = "control";
  const label = document.createElement("label");
  label.htmlFor = `control-${i}`;
  label.title = c.path;
  label.textContent = c.label;
  if (c.kind === "duration") {
    const unit = document.createElement("small");
    unit.textContent = "ms/s/m/h";
    unit.title = "a duration, such as 250ms, 2s or 1m30s";
    label.append(" ", unit);
  }
  const input = document.createElement("input");
  Object.assign(input, { id: `control-${i}`, type: "text", value: c.value, spellcheck: false, autocomplete: "off" });
  input.inputMode = c.kind === "int" ? "numeric" : "text";
  input.dataset.path = c.path;
  input.dataset.kind = c.kind;
  const stepBy = (dir) => {
    const next = step(c.kind, input.value.trim(), dir);
    if (next == null) return;
    input.value = next;
    apply(c.path, next);
  };
  input.addEventListener("change", () => apply(c.path, input.value.trim()));
  input.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
    e.preventDefault();
    stepBy(e.key === "ArrowUp" ? 1 : -1);
  });
  const button = (dir, text, name) => {
    const b = document.createElement("button");
    Object.assign(b, { type: "button", className: "step", textContent: text, title: name });
    b.setAttribute("aria-label", `${name} ${c.label}`);
    b.addEventListener("click", () => stepBy(dir));
    return b;
  };
  const stepper = document.createElement("div");
  stepper.className = "stepper";
  stepper.append(button(-1, "−", "decrease"), input, button(1, "+", "increase"));
  div.append(label, stepper);
  return div;
}

// step returns the text of a control's value one step up (dir 1) or
// down (dir -1), or null when the text is not a value of its kind.
// Integers below 10 move by one; other values move along 1, 2, 5, 10,
// 20, ...; durations along steps that read well (1s, 2s, 5s, 10s, 15s,
// 20s, 30s, 1m, ...).
export function step(kind, text, dir) {
  if (kind === "duration") {
    const s = parseDuration(text);
    if (s == null) return null;
    if (s === 0) return dir > 0 ? "1s" : null;
    return formatDuration(along(durationSteps, s, dir));
  }
  const v = Number(text);
  if (text === "" || !Number.isFinite(v)) return null;
  if (kind === "int" && (Math.abs(v) < 10 || (v === 10 && dir < 0))) return String(Math.round(v) + dir);
  if (v <= 0) return String(clean(v + dir));
  const next = along(niceSteps(v), v, dir);
  return String(kind === "int" ? Math.round(next) : next);
}

// along returns the first of the ascending steps above v (dir 1) or the
// last below it (dir -1), doubling or halving past their ends.
function along(steps, v, dir) {
  const eps = v * 1e-9;
  const next = dir > 0 ? steps.find((s) => s > v + eps) : steps.findLast((s) => s < v - eps);
  return next ?? clean(dir > 0 ? v * 2 : v / 2);
}

// niceSteps returns the 1-2-5 steps around v.
function niceSteps(v) {
  const e = Math.floor(Math.log10(v));
  const steps = [];
  for (let k = e - 1; k <= e + 1; k++) for (const m of [1, 2, 5]) steps.push(clean(m * 10 ** k));
  return steps;
}

// The durations' steps, in seconds.
const durationSteps = [
  0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
  1, 2, 5, 10, 15, 20, 30,
  60, 120, 300, 600, 900, 1200, 1800,
  3600, 7200, 10800, 21600, 43200, 86400,
];

const units = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, "µs": 1e-6, ns: 1e-9 };

// parseDuration reads a Go duration ("1m30s", "250ms", "0") in seconds,
// or returns null.
export function parseDuration(text) {
  if (text === "0") return 0;
  if (!/^((\d+(\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns))+$/.test(text)) return null;
  let s = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)/g)) s += Number(n) * units[unit];
  return clean(s);
}

// formatDuration writes seconds in the largest unit that holds them whole.
export function formatDuration(s) {
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600}h`;
  if (s >= 60 && s % 60 === 0) return `${s / 60}m`;
  if (s >= 1) return `${s}s`;
  return `${clean(s * 1000)}ms`;
}

// clean drops the float noise of arithmetic (0.30000000000000004).
function clean(x) {
  return Number(x.toPrecision(12));
}
