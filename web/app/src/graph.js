// The picture of a service graph: the fleet at the left, then the
// services in the layers the engine's validation gives (web/lab's
// Graph: a service's layer is its longest path from the fleet), each a
// box with its name, replicas (stacked boxes and "×3") and capacity;
// an arrow per call edge labelled with its retry policy in short. A
// run's figures (summary.json) fill the boxes by peak load over
// capacity, with the scale of graph.png (plots/graph.go): green below
// 0.8×, amber to 1×, red above, grey without a capacity limit; and
// write each edge's amplification (attempts along it per fleet
// request). Every node and edge has a <title> with its figures.
//
// createGraphView(element) returns {show(graph, summary, state),
// stale()}: see them. It draws with SVG built here, in plain DOM calls.
// For screen readers, the picture is a group of images, a service or a
// call each, named by its title (the labels on the calls say the same,
// and are hidden from them).
import { el } from "./dom.js";
import { count, num, times } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";

// The sizes of the layout, in CSS pixels.
const NODE_W = 132;
const FLEET_W = 112;
const NODE_H = 54;
const GAP_X = 128; // between columns: room for an edge's label
const ROW_H = 130;
const PAD = 14;
const STACK = 5; // the offset of each replica's box behind the first
const LABEL_CHARS = 20; // a policy label's line, at most (where it can break)
const LINE_H = 12;
const BEND = 20; // half the width of a fan's bend
const LANE_H = 6 * LINE_H; // a lane above the rows, with its label
const MIN_SCALE = 0.75; // the picture shrinks to fit its card down to this, then scrolls

// nearRatio is where a service is drawn as near its capacity (as
// plots/graph.go).
const nearRatio = 0.8;

// The load classes, as graph.png colours them (ColorBrewer RdYlGn).
const classes = {
  light: { fill: "#91CF60", label: `peak load below ${nearRatio}× capacity` },
  near: { fill: "#FDBF4F", label: `${nearRatio}× to 1× capacity` },
  over: { fill: "#E8563A", label: "above capacity" },
  unlimited: { fill: "#D4D4D4", label: "no capacity limit (no ratio)" },
};
const pendingFill = "#FFFFFF";

// loadClass is the class of a peak load ratio (null: unlimited).
export function loadClass(ratio) {
  if (ratio == null || Number.isNaN(ratio)) return "unlimited";
  if (ratio > 1) return "over";
  if (ratio >= nearRatio) return "near";
  return "light";
}

const style = `
.graph-head { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; margin-bottom: 6px; }
.graph-head select { font: inherit; font-size: 12.5px; }
.graph-note { margin: 0 0 6px; color: #59636e; font-size: 12.5px; }
.graph-wrap { overflow-x: auto; }
.graph-wrap svg { display: block; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.graph-wrap text { fill: #1f2328; }
.graph-wrap .node-name { font-weight: 600; font-size: 13px; }
.graph-wrap .node-line { font-size: 11.5px; }
.graph-wrap .edge-amp { font-weight: 600; font-size: 12px; }
.graph-wrap .edge-policy { font-size: 11px; fill: #444; }
.graph-wrap .edge-label text { paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
.graph-wrap .edge path { fill: none; stroke: #404040; }
.graph-wrap[data-figures="stale"] .node rect, .graph-wrap[data-figures="stale"] .edge-amp,
.graph-wrap.outdated svg { opacity: 0.45; filter: grayscale(1); }
.graph-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0 0; padding: 0; list-style: none; font-size: 12px; color: #59636e; }
.graph-legend .swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -2px; border: 1px solid #555; border-radius: 2px; }
`;

let styled = false;

// createGraphView makes the view in element (a card's body).
export function createGraphView(element) {
  if (!styled) {
    document.head.append(el("style", {}, style));
    styled = true;
  }
  let selected = null; // the strategy shown, by name
  let last = null; // the last show's arguments, for the strategy select

  // show draws graph (web/lab's Graph; null for none: the view empties
  // and show returns false) for the strategy selected, with the run's
  // figures from summary (summary.json parsed; null before a run of
  // this graph's text). state.outdated says the graph is of an earlier
  // text than the editor's (which has problems); state.stale that the
  // editor's text changed since the figures' run.
  function show(graph, summary, state = {}) {
    last = { graph, summary, state };
    if (!graph) {
      element.replaceChildren();
      return false;
    }
    const names = graph.strategies.map((s) => s.name);
    if (!names.includes(selected)) selected = names[0];
    const st = graph.strategies.find((s) => s.name === selected);
    const figures = summary?.strategies?.find((s) => s.name === selected && s.services?.length) ?? null;

    const select = el("select", { class: "graph-strategy", "aria-label": "strategy" }, ...names.map((n) => el("option", { value: n }, n)));
    select.value = selected;
    select.addEventListener("change", () => {
      selected = select.value;
      show(last.graph, last.summary, last.state);
    });
    const head = el("div", { class: "graph-head" }, el("label", {}, "strategy ", select));
    const note = el("p", { class: "graph-note" }, noteText(figures, state));
    const wrap = el("div", { class: "graph-wrap" }, draw(graph, st, figures, summary?.bucket_s ?? 0));
    wrap.classList.toggle("outdated", !!state.outdated);
    if (figures) wrap.dataset.figures = state.stale ? "stale" : "current";
    else wrap.dataset.figures = "none";
    element.replaceChildren(head, note, wrap, legend());
    return true;
  }

  // stale greys the figures out at once (the text changed since the
  // run), until the next show.
  function stale() {
    const wrap = element.querySelector(".graph-wrap");
    if (wrap?.dataset.figures !== "current") return;
    wrap.dataset.figures = "stale";
    element.querySelector(".graph-note").textContent = noteText(true, { stale: true });
  }

  return { show, stale };
}

function noteText(figures, state) {
  if (state.outdated) return "The scenario has problems: this is the graph of its last valid version.";
  if (!figures) return "Boxes are filled by peak load over capacity, and calls labelled with their amplification, when the scenario has run.";
  if (state.stale) return "The loads and amplifications are of an earlier version of the scenario.";
  return "Boxes are filled by peak load after the outage over capacity; each call is labelled with its attempts per fleet request (amplification) and its retry policy.";
}

function legend() {
  const item = (fill, label, dashed = false) =>
    el("li", {}, el("span", { class: "swatch", style: `background: ${fill}${dashed ? "; border-style: dashed" : ""}` }), label);
  return el(
    "ul",
    { class: "graph-legend" },
    ...["light", "near", "over", "unlimited"].map((k) => item(classes[k].fill, classes[k].label)),
    item(pendingFill, "not run yet", true),
  );
}

// svg makes an SVG element with attributes and children.
function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

function title(text) {
  return svg("title", {}, text);
}

// named are the attributes of an element that screen readers take as
// one image, named text (which its <title> shows as a tooltip).
function named(text) {
  return { role: "img", "aria-label": text };
}

// shorten cuts a name to fit a box, with an ellipsis (the box's title
// has it whole).
function shorten(name, n = 17) {
  return [...name].length > n ? [...name].slice(0, n - 1).join("") + "…" : name;
}

// draw returns the <svg> of strategy st's graph, with figures (the
// strategy's summary, of a run in buckets of bucket seconds) or without
// (null).
function draw(graph, st, figures, bucket) {
  // Columns: the fleet, then the layers.
  const columns = [[""], ...graph.layers];
  const rows = Math.max(...columns.map((c) => c.length));
  const colOf = new Map(columns.flatMap((names, c) => names.map((n) => [n, c])));
  // Lanes: a call that skips a layer, or a second call between the same
  // two services, runs above the rows, in a lane of its own, where its
  // label has room.
  const lane = new Map(); // edge index -> lane, 0 the lowest
  const pairs = new Set();
  st.edges.forEach((e, k) => {
    const pair = `${e.from}->${e.to}`;
    if (colOf.get(e.to) - colOf.get(e.from) > 1 || pairs.has(pair)) lane.set(k, lane.size);
    pairs.add(pair);
  });
  const lanesH = lane.size * LANE_H;
  const height = rows * ROW_H + 2 * PAD + lanesH;
  const pos = new Map(); // name -> {x, y, w, col}: the box's top left and width ("" the fleet)
  columns.forEach((names, c) => {
    const x = c === 0 ? PAD : PAD + FLEET_W + GAP_X + (c - 1) * (NODE_W + GAP_X);
    const top = PAD + lanesH + ((rows - names.length) * ROW_H) / 2 + (ROW_H - NODE_H) / 2;
    names.forEach((name, r) => pos.set(name, { x, y: top + r * ROW_H, w: c === 0 ? FLEET_W : NODE_W, col: c }));
  });
  const width = 2 * PAD + FLEET_W + (columns.length - 1) * (NODE_W + GAP_X) + 2 * STACK;
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    // As wide as the card, up to its natural size, and no narrower than
    // MIN_SCALE of it (the card scrolls).
    style: `width: 100%; max-width: ${width}px; min-width: ${Math.round(width * MIN_SCALE)}px; height: auto`,
    role: "group",
    "aria-label": `the service graph as strategy ${st.name} deploys it: ${st.services.length} services, ${st.edges.length} calls`,
    "data-strategy": st.name,
  });
  root.append(
    svg(
      "defs",
      {},
      svg(
        "marker",
        { id: "graph-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" },
        svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#404040" }),
      ),
    ),
  );

  const services = new Map(st.services.map((s) => [s.name, s]));
  const serviceFigures = new Map((figures?.services ?? []).map((f) => [f.name, f]));
  const edgeFigures = figures?.edges ?? [];
  const topAmp = Math.max(1, ...edgeFigures.map((e) => e.amplification));

  // Ports: the edges leaving and entering each box, spread along its
  // side in the order of the other end's height.
  const outs = new Map();
  const ins = new Map();
  st.edges.forEach((e, k) => {
    if (!outs.has(e.from)) outs.set(e.from, []);
    if (!ins.has(e.to)) ins.set(e.to, []);
    outs.get(e.from).push(k);
    ins.get(e.to).push(k);
  });
  // (A call in a lane leaves and enters at the top.)
  const y = (name, k) => (lane.has(k) ? -1 - lane.get(k) : pos.get(name)?.y ?? 0);
  for (const list of outs.values()) list.sort((a, b) => y(st.edges[a].to, a) - y(st.edges[b].to, b) || a - b);
  for (const list of ins.values()) list.sort((a, b) => y(st.edges[a].from, a) - y(st.edges[b].from, b) || a - b);
  const port = (list, k) => {
    const i = list.indexOf(k);
    return NODE_H / 2 + (i - (list.length - 1) / 2) * Math.min(12, (NODE_H - 12) / Math.max(1, list.length - 1));
  };

  const edgeGroup = svg("g", { class: "edges" });
  const labelGroup = svg("g", { class: "edge-labels", "aria-hidden": "true" });
  st.edges.forEach((e, k) => {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) return;
    const f = edgeFigures[k] && edgeFigures[k].from === e.from && edgeFigures[k].to === e.to ? edgeFigures[k] : null;
    const x0 = a.x + a.w;
    const y0 = a.y + port(outs.get(e.from), k);
    const x1 = b.x - 1;
    const y1 = b.y + port(ins.get(e.to), k);
    // The path: an S-curve between the ports; where one end has several
    // calls and the other one, the curve bends near the end with several
    // and runs level to the other, where its label goes (a fan-out's
    // labels at their callees' heights, a fan-in's at their callers').
    const dx = Math.max(40, (x1 - x0) / 2);
    const fanOut = outs.get(e.from).length > 1;
    const fanIn = ins.get(e.to).length > 1;
    let bend = "middle";
    if (b.col - a.col === 1 && Math.abs(y1 - y0) >= 1 && fanOut !== fanIn) bend = fanOut ? "start" : "end";
    let d = `M${x0},${y0} C${x0 + dx},${y0} ${x1 - dx},${y1} ${x1},${y1}`;
    if (bend === "start") d = `M${x0},${y0} C${x0 + BEND},${y0} ${x0 + BEND},${y1} ${x0 + 2 * BEND},${y1} L${x1},${y1}`;
    if (bend === "end") d = `M${x0},${y0} L${x1 - 2 * BEND},${y0} C${x1 - BEND},${y0} ${x1 - BEND},${y1} ${x1},${y1}`;
    const laneY = PAD + lanesH - (lane.get(k) ?? 0) * LANE_H - 6;
    if (lane.has(k)) {
      d = `M${x0},${y0} C${x0 + BEND},${y0} ${x0 + BEND},${laneY} ${x0 + 2 * BEND},${laneY} L${x1 - 2 * BEND},${laneY} C${x1 - BEND},${laneY} ${x1 - BEND},${y1} ${x1},${y1}`;
    }
    const caller = e.from === "" ? "the fleet" : e.from;
    const about = `${caller} → ${e.to}: ${e.policy}; ${f ? `amplification ${times(f.amplification)} (${count(f.attempts)} attempts)` : "not run yet"}`;
    const g = svg(
      "g",
      { class: "edge", "data-from": e.from, "data-to": e.to, "data-policy": e.policy, "data-amplification": f ? String(f.amplification) : null, ...named(about) },
      title(about),
      svg("path", { d, "stroke-width": f ? 1.2 + 3.5 * Math.sqrt(f.amplification / topAmp) : 1.5, "marker-end": "url(#graph-arrow)" }),
    );
    edgeGroup.append(g);

    // The label, on the curve in the middle of the gap: the
    // amplification above it, the policy below; or in a lane, above it.
    const lx = (x0 + x1) / 2;
    const lines = wrap(e.policy, LABEL_CHARS);
    let ly = { start: y1, end: y0, middle: curveY(x0, y0, x1, y1, dx, lx) }[bend];
    if (lane.has(k)) ly = laneY - 4 - lines.length * LINE_H;
    labelGroup.append(
      svg(
        "g",
        { class: "edge-label", "data-from": e.from, "data-to": e.to },
        title(about),
        svg("text", { class: "edge-amp", x: lx, y: ly - 5, "text-anchor": "middle" }, f ? times(f.amplification) : "–"),
        ...lines.map((line, i) => svg("text", { class: "edge-policy", x: lx, y: ly + (i + 1) * LINE_H, "text-anchor": "middle" }, line)),
      ),
    );
  });
  root.append(edgeGroup);

  const nodeGroup = svg("g", { class: "nodes" });
  for (const [name, p] of pos) {
    if (name === "") {
      const lines = ["fleet"];
      if (figures) lines.push(`${count(figures.requests)} requests`);
      const fleetAbout = figures ? `the fleet: ${count(figures.requests)} requests` : "the fleet: the senders of the workload";
      nodeGroup.append(
        svg(
          "g",
          { class: "node fleet", "data-service": "", ...named(fleetAbout) },
          title(fleetAbout),
          svg("rect", { x: p.x, y: p.y, width: p.w, height: NODE_H, rx: 18, fill: "#fff", stroke: "#555" }),
          ...textLines(p, lines),
        ),
      );
      continue;
    }
    const s = services.get(name) ?? { name, replicas: 1, capacity_per_s: null };
    const f = serviceFigures.get(name);
    const cls = f ? loadClass(f.peak_load_ratio) : "pending";
    const fill = f ? classes[cls].fill : pendingFill;
    const capacity = s.capacity_per_s == null ? "no limit" : `${count(s.capacity_per_s)} req/s`;
    const lines = [shorten(name), s.replicas > 1 ? `×${s.replicas} · ${capacity}` : capacity];
    if (f) lines.push(f.peak_load_ratio == null ? `${times(f.amplification)} per req.` : `peak ${times(f.peak_load_ratio)} cap.`);
    const about = [`${name}: ${s.replicas} ${s.replicas === 1 ? "replica" : "replicas"}, ${s.capacity_per_s == null ? "no capacity limit" : `capacity ${count(s.capacity_per_s)} requests/s`}`];
    if (name === graph.target) about.push("the fleet calls it");
    if (f) {
      about.push(f.peak_load_ratio == null ? "no load ratio (no capacity limit)" : `peak load after the outage ${times(f.peak_load_ratio)} capacity (${classes[cls].label})`);
      if (s.capacity_per_s != null && bucket > 0) about.push(`at its highest in the run ${times(f.peak_load_overall / bucket / s.capacity_per_s)} capacity`);
      about.push(`${num(f.amplification, 2)} attempts per fleet request`);
    } else {
      about.push("not run yet");
    }
    const box = (dx) => svg("rect", { x: p.x + dx, y: p.y + dx, width: p.w, height: NODE_H, rx: 5, fill, stroke: "#555", "stroke-dasharray": f ? null : "4 3" });
    const stack = [];
    for (let i = Math.min(s.replicas, 3) - 1; i >= 1; i--) stack.push(box(i * STACK));
    nodeGroup.append(
      svg(
        "g",
        { class: "node", "data-service": name, "data-load": cls, "data-replicas": s.replicas, ...named(about.join("; ")) },
        title(about.join("; ")),
        ...stack,
        box(0),
        ...textLines(p, lines),
      ),
    );
  }
  root.append(nodeGroup, labelGroup);
  return root;
}

// textLines centres lines in the box at p: the first as the name.
function textLines(p, lines) {
  const top = p.y + NODE_H / 2 - ((lines.length - 1) * 15) / 2 + 4;
  return lines.map((line, i) =>
    svg("text", { class: i === 0 ? "node-name" : "node-line", x: p.x + p.w / 2, y: top + i * 15, "text-anchor": "middle" }, line),
  );
}

// curveY is the height at x of the cubic from (x0, y0) to (x1, y1)
// whose control points are dx in from each end, level with it.
function curveY(x0, y0, x1, y1, dx, x) {
  const at = (t, a, b, c, d) => (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t ** 2 * c + t ** 3 * d;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 30; i++) {
    const t = (lo + hi) / 2;
    if (at(t, x0, x0 + dx, x1 - dx, x1) < x) lo = t;
    else hi = t;
  }
  return at(lo, y0, y0, y1, y1);
}

// wrap breaks a policy ("4 attempts, timeout 2s, ...") into lines of
// at most n characters, after its commas where it can.
function wrap(text, n) {
  const lines = [];
  let line = "";
  for (const part of text.split(", ")) {
    const next = line ? `${line}, ${part}` : part;
    if (line && next.length > n) {
      lines.push(line + ",");
      line = part;
    } else {
      line = next;
    }
  }
  if (line) lines.push(line);
  return lines;
}
