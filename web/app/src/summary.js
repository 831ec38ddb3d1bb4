// The summary table: a run's figures per strategy, from summary.json.
// Each row is <tr data-strategy="NAME">, each figure's element has
// data-figure (summary.json's key; latency_s.p99 for the nested one) and
// data-value (the number as JSON.parse read it, String(x)).
import { el } from "./dom.js";
import { count, num, percent, seconds, times } from "./format.js";

// The columns: a header, its tooltip, and the cell of a strategy st. In
// a graph of two or more services, the server's figures are the front's
// (the service the fleet calls): front names it in their headers, and
// the service each strategy hurts most (summary.json's worst_service)
// has three columns beside them.
function columnsOf(front) {
  const of = (head) => (front ? `${head} (${front})` : head);
  const cols = [
    ["strategy", "", (st, s, color) => {
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = color;
      return cell("name", st.name, swatch, st.name);
    }],
    ["requests", "requests the clients sent", (st) => cell("requests", st.requests, count(st.requests))],
    ["delivered", "requests delivered, and their share", (st) =>
      cell("delivered", st.delivered, count(st.delivered), " ", figure("span", "delivered_ratio", st.delivered_ratio, `(${percent(st.delivered_ratio)})`))],
    ["dead-lettered", "requests given up on", (st) => cell("dead_lettered", st.dead_lettered, count(st.dead_lettered))],
    [of("amplif."), "amplification: attempts per request", (st) => cell("amplification", st.amplification, times(st.amplification))],
    [of("peak load"), "the most attempts in a bucket after the outage, and how many times the capacity's that is", (st) =>
      peakCell("peak_load", st.peak_load, st.peak_load_ratio, st.peak_at_s)],
  ];
  if (front) {
    cols.push(
      ["hurt most", "the service with the highest peak load after the outage over its capacity (ties: the higher amplification)", (st) =>
        cell("worst_service.name", st.worst_service?.name, st.worst_service?.name ?? "–")],
      ["its peak load", "that service's most attempts in a bucket after the outage, and how many times its capacity's that is", (st) =>
        st.worst_service ? peakCell("worst_service.peak_load", st.worst_service.peak_load, st.worst_service.peak_load_ratio, st.worst_service.peak_at_s) : cell("worst_service.peak_load", null, "–")],
      ["its amplif.", "attempts that reached that service per fleet request", (st) =>
        cell("worst_service.amplification", st.worst_service?.amplification, st.worst_service ? times(st.worst_service.amplification) : "–")],
    );
  }
  cols.push(
    [of("recovery"), "time from the end of the outage until the server recovered", (st, s) => {
      const td = cell("recovery_time_s", st.recovery_time_s, recoveryText(s, st));
      td.dataset.recovery = st.recovery;
      return td;
    }],
    ["p99 latency", "99th percentile of the delivery latency", (st) =>
      cell("latency_s.p99", st.latency_s.p99, st.delivered > 0 ? seconds(st.latency_s.p99) : "–")],
    [of("duplicates"), "requests processed more than once", (st) => cell("duplicates", st.duplicates, count(st.duplicates))],
  );
  return cols;
}

// peakCell is a peak load's cell: the attempts, and their ratio to the
// capacity where it is limited; when, in its tooltip.
function peakCell(name, load, ratio, at) {
  const parts = [count(load)];
  if (ratio != null) parts.push(" ", figure("span", name + "_ratio", ratio, `(${times(ratio)})`));
  const td = cell(name, load, ...parts);
  td.title = `at ${seconds(at)}`;
  return td;
}

// frontOf returns the service the fleet calls in a graph of two or more
// services (whose strategies name the service they hurt most), "" else.
function frontOf(s) {
  const st = s.strategies.find((x) => x.worst_service);
  return st?.edges?.[0]?.to ?? "";
}

// renderSummary shows summary (parsed summary.json) in box; colors are
// the strategies' chart colours, in the order of summary.strategies.
export function renderSummary(box, s, colors) {
  const about = [`Seed ${s.seed}, ${s.runs} ${s.runs === 1 ? "run" : "runs"}${s.runs > 1 ? " (means)" : ""}`, `buckets of ${num(s.bucket_s, 3)} s`];
  about.push(s.capacity_per_s == null ? "unlimited server capacity" : `server capacity ${count(s.capacity_per_s)} requests/s`);
  if (s.queue_limit != null) about.push(`queue limit ${count(s.queue_limit)}`);
  const caption = el("p", { class: "about" }, el("strong", {}, s.scenario), ": ", about.join(", ") + ".");
  if (s.partial) caption.append(" ", el("strong", { class: "partial" }, "Partial results: the run was interrupted."));

  const columns = columnsOf(frontOf(s));
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
