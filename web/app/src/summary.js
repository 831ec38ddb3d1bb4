// The summary table: a run's figures per strategy, from summary.json.
// Each row is <tr data-strategy="NAME">, each figure's element has
// data-figure (summary.json's key; latency_s.p99 for the nested one) and
// data-value (the number as JSON.parse read it, String(x)).
import { el } from "./dom.js";
import { count, num, percent, seconds, times } from "./format.js";

// The columns: a header, its tooltip, and the cell of a strategy st.
const columns = [
  ["strategy", "", (st, s, color) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = color;
    return cell("name", st.name, swatch, st.name);
  }],
  ["requests", "requests the clients sent", (st) => cell("requests", st.requests, count(st.requests))],
  ["delivered", "requests delivered, and their share", (st) =>
    cell("delivered", st.delivered, count(st.delivered), " ", figure("span", "delivered_ratio", st.delivered_ratio, `(${percent(st.delivered_ratio)})`))],
  ["dead-lettered", "requests given up on", (st) => cell("dead_lettered", st.dead_lettered, count(st.dead_lettered))],
  ["amplif.", "amplification: attempts per request", (st) => cell("amplification", st.amplification, times(st.amplification))],
  ["peak load", "the most attempts in a bucket after the outage, and how many times the capacity's that is", (st) => {
    const parts = [count(st.peak_load)];
    if (st.peak_load_ratio != null) parts.push(" ", figure("span", "peak_load_ratio", st.peak_load_ratio, `(${times(st.peak_load_ratio)})`));
    const td = cell("peak_load", st.peak_load, ...parts);
    td.title = `at ${seconds(st.peak_at_s)}`;
    return td;
  }],
  ["recovery", "time from the end of the outage until the server recovered", (st, s) => {
    const td = cell("recovery_time_s", st.recovery_time_s, recoveryText(s, st));
    td.dataset.recovery = st.recovery;
    return td;
  }],
  ["p99 latency", "99th percentile of the delivery latency", (st) =>
    cell("latency_s.p99", st.latency_s.p99, st.delivered > 0 ? seconds(st.latency_s.p99) : "–")],
  ["duplicates", "requests processed more than once", (st) => cell("duplicates", st.duplicates, count(st.duplicates))],
];

// renderSummary shows summary (parsed summary.json) in box; colors are
// the strategies' chart colours, in the order of summary.strategies.
export function renderSummary(box, s, colors) {
  const about = [`Seed ${s.seed}, ${s.runs} ${s.runs === 1 ? "run" : "runs"}${s.runs > 1 ? " (means)" : ""}`, `buckets of ${num(s.bucket_s, 3)} s`];
  about.push(s.capacity_per_s == null ? "unlimited server capacity" : `server capacity ${count(s.capacity_per_s)} requests/s`);
  if (s.queue_limit != null) about.push(`queue limit ${count(s.queue_limit)}`);
  const caption = el("p", { class: "about" }, el("strong", {}, s.scenario), ": ", about.join(", ") + ".");
  if (s.partial) caption.append(" ", el("strong", { class: "partial" }, "Partial results: the run was interrupted."));

  const head = el("tr", {}, ...columns.map(([name, tip]) => el("th", tip ? { title: tip } : {}, name)));
  const rows = s.strategies.map((st, i) => el("tr", { "data-strategy": st.name }, ...columns.map(([, , make]) => make(st, s, colors[i]))));
  const table = el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows));
  box.replaceChildren(caption, el("div", { class: "table-wrap" }, table));
}

// recoveryText says a strategy's recovery as the report does: a time,
// never, or nothing left to recover (0 s there is no speed); when runs
// differ, how many recovered.
function recoveryText(s, st) {
  const t = st.recovery_time_s;
  switch (st.recovery) {
    case "never":
      return "never recovered";
    case "nothing_left":
      return "nothing left to recover";
    case "no_outage":
      return "no outage";
    case "mixed": {
      let runs = `${st.recovered_runs} of ${s.runs} runs`;
      if (st.nothing_left_runs > 0) runs += `; ${st.nothing_left_runs} left nothing`;
      return `${t == null ? "never" : seconds(t)} (${runs})`;
    }
  }
  return t == null ? "never recovered" : seconds(t);
}

function cell(name, value, ...children) {
  return figure("td", name, value, ...children);
}

function figure(tag, name, value, ...children) {
  return el(tag, { "data-figure": name, "data-value": String(value) }, ...children);
}
