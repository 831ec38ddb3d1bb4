// The chart component: HerdlabCharts.render(element, summary, charts)
// draws a run's panels with uPlot from summary.json (parsed) and the
// chart data of web/README.md, and HerdlabCharts.renderSweep(element,
// result) a sweep's (see renderSweep). The page uses it, and report.html
// on its own (dist/charts.js, which exposes the global HerdlabCharts).
//
// Panels, each <div class="chart" data-chart="NAME">: load, queue,
// latency, services (time series and the latency CDF, with uPlot) and
// recovery, amplification (bars drawn on a canvas). The time panels share
// their x axis: drag to zoom, double-click to reset, wheel to zoom, and
// shift- or alt-drag or shift-wheel to pan; their cursors are linked.
// Clicking a strategy in a legend shows or hides it in every panel.
import uPlot from "uplot";
import { el } from "./dom.js";
import { compact, count, num, percent, seconds, times } from "./format.js";

// The strategies' colours by their index in the scenario file: the
// Okabe-Ito palette of the static report's charts (plots/style.go), then
// the same colours dashed.
const palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#7F7F7F"];
const dashes = [undefined, [6, 3], [1.5, 2.5]];
// The services' colours (Paul Tol's bright scheme).
const serviceColors = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB"];
const refColor = "#303030";
const font = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

let renders = 0; // makes each render's cursor sync key its own
// The strategies toggled off in each element's charts, kept across
// renders so that a rerun shows what the legend was left showing.
const hiddenIn = new WeakMap();

// render draws the panels into element (replacing what it held) and
// returns {plots: {load, queue, latency, services: uPlot}, destroy()}.
// charts may be absent: then only the bar charts are drawn.
export function render(element, summary, charts) {
  element.replaceChildren();
  element.classList.add("herdlab-charts");
  const syncKey = `herdlab-${++renders}`;
  const strategies = strategyStyles(summary, charts);
  if (!hiddenIn.has(element)) hiddenIn.set(element, new Set());
  const hidden = hiddenIn.get(element); // names of the strategies toggled off
  const panels = []; // {name, title, head, body, width, resize(width), canvas(), redraw() for bars}
  const plots = {};
  const timePlots = [];

  // applies a legend click to every panel, and keeps the time panels'
  // x ranges together.
  const linked = {
    setSeries(u, i, opts) {
      if (opts.show == null || !u.strategyPlot) return;
      const name = u.series[i].label;
      if (opts.show) hidden.delete(name);
      else hidden.add(name);
      for (const p of Object.values(plots)) {
        const j = p.series.findIndex((s) => s.label === name);
        if (p !== u && p.strategyPlot && j > 0 && p.series[j].show !== opts.show) p.setSeries(j, { show: opts.show });
      }
      for (const p of panels) p.redraw?.();
    },
    setScale(u, key) {
      if (key !== "x" || !timePlots.includes(u)) return;
      const { min, max } = u.scales.x;
      for (const p of timePlots) {
        if (p !== u && (p.scales.x.min !== min || p.scales.x.max !== max)) p.setScale("x", { min, max });
      }
    },
  };

  // add makes an empty panel in parent.
  const add = (name, title, note, parent = element) => addPanel(panels, parent, name, title, note);

  const bucket = `${num(summary.bucket_s, 3)} s`;
  const t = charts?.t ?? [];
  const outages = summary.outages ?? [];
  const outageNote = outages.length ? `Shaded: ${outages.length > 1 ? "the outages" : "the outage"} (${outages.map(outageText).join("; ")}).` : "";

  // In a graph of two or more services, the server's panels are the
  // front's (the service the fleet calls), and say so.
  const front = summary.strategies.some((st) => st.worst_service) ? summary.strategies[0].edges?.[0]?.to : null;

  if (t.length) {
    // Load on the server.
    const capacity = summary.capacity_per_s == null ? null : summary.capacity_per_s * summary.bucket_s;
    const load = strategies.filter((s) => s.data?.attempts);
    if (load.length) {
      const refs = capacity == null ? [] : [{ label: `${front ? `${front}'s` : "server"} capacity (per ${bucket})`, value: capacity }];
      let note = "";
      if (capacity != null) {
        // (timePlot's y range leaves out a line far above the data.)
        const above = capacity > 3 * maxOf(load.map((s) => s.data.attempts));
        note = above ? `The server's capacity, ${count(capacity)} per ${bucket}, is far above the load.` : "Dashed: the server's capacity.";
      }
      const p = add("load", `Load on ${front ? `${front} (the front)` : "the server"} (attempts per ${bucket})`, joinNotes(outageNote, note));
      plots.load = timePlot(p, { t, series: load.map((s) => ({ ...s, values: s.data.attempts })), refs, outages, yLabel: `attempts per ${bucket}`, height: 300 });
    }

    // The server's queue: only the strategies whose queue was measured.
    const queued = strategies.filter((s) => s.data?.queue?.some((v) => v != null));
    if (queued.length) {
      const limit = summary.queue_limit;
      const refs = limit == null ? [] : [{ label: "queue limit", value: limit }];
      const p = add("queue", `${front ? `${front}'s (the front's)` : "The server's"} queue (longest in each ${bucket})`, joinNotes(outageNote, limit == null ? "" : "Dashed: the queue's limit."));
      plots.queue = timePlot(p, { t, series: queued.map((s) => ({ ...s, values: s.data.queue })), refs, outages, yLabel: "requests queued", height: 240 });
    }
  }

  // Delivery latency, a CDF per strategy on a log scale of seconds.
  const cdfs = strategies.filter((s) => s.data?.latency?.s?.some((x) => x > 0));
  if (cdfs.length) {
    const p = add("latency", "Delivery latency (fraction delivered within)");
    plots.latency = latencyPlot(p, cdfs);
  }

  // Recovery and amplification, bars per strategy.
  const bars = el("div", { class: "chart-row" });
  element.append(bars);
  barChart(add("recovery", front ? `Recovery of ${front} (the front) after the outage` : "Recovery time after the outage", "", bars), strategies.map((s) => ({ name: s.name, color: s.color, ...recoveryBar(summary, s.summary) })));
  if (summary.strategies.some((st) => st.worst_service)) {
    // A graph: the front's amplification and, beside it, the service's
    // each strategy hurts most.
    barChart(add("amplification", "Retry amplification at the front and at the service hurt most (attempts per fleet request)", "", bars), strategies.flatMap((s) => amplificationRows(s)));
  } else {
    barChart(add("amplification", "Retry amplification (attempts per request)", "", bars), strategies.map((s) => ({ name: s.name, color: s.color, value: s.summary.amplification, text: times(s.summary.amplification) })));
  }

  // Attempts per service, in a graph of services, for one strategy.
  if (t.length && charts.services?.length) {
    const names = strategies.map((s) => s.name).filter((n) => charts.services.some((sv) => sv.attempts?.[n]));
    if (names.length) {
      const p = add("services", `Attempts per service (per ${bucket})`, outageNote);
      const select = el("select", { class: "chart-select", "aria-label": "strategy" }, ...names.map((n) => el("option", { value: n }, n)));
      p.head.querySelector("h3").after(select);
      const series = (name) => charts.services.map((sv, i) => ({ name: sv.name, color: serviceColors[i % serviceColors.length], values: sv.attempts?.[name] ?? t.map(() => null) }));
      plots.services = timePlot(p, { t, series: series(names[0]), refs: [], outages, yLabel: `attempts per ${bucket}`, height: 260, strategyPlot: false });
      select.addEventListener("change", () => {
        // New data resets the scales: keep the time range the panels show.
        const { min, max } = plots.services.scales.x;
        plots.services.setData([t, ...series(select.value).map((s) => s.values)]);
        plots.services.setScale("x", { min, max });
      });
    }
  }

  // timePlot makes a uPlot of series over time in panel p.
  function timePlot(p, { t, series, refs, outages, yLabel, height, strategyPlot = true }) {
    // The y range: from 0 to the highest of the shown series in the x
    // range shown (the reference lines are not "auto"), and to a
    // reference line too unless it is far above them.
    const yRange = (u, dataMin, dataMax) => {
      let hi = dataMax > 0 ? dataMax : 0;
      for (const r of refs) if (r.value <= 3 * hi || hi === 0) hi = Math.max(hi, r.value);
      return hi > 0 ? uPlot.rangeNum(0, hi, 0.05, true) : [0, 1];
    };
    const opts = {
      width: p.body.clientWidth,
      height,
      cursor: { sync: { key: syncKey }, drag: { x: true, y: false } },
      scales: { x: { time: false }, y: { range: yRange } },
      axes: [
        { label: "time (s)", values: (u, ticks) => ticks.map((v) => num(v, 3)) },
        { label: yLabel, size: 56, values: (u, ticks) => ticks.map(compact) },
      ],
      series: [
        { label: "t", value: (u, v) => (v == null ? "–" : `${num(v, 3)} s`) },
        ...series.map((s) => ({ label: s.name, stroke: s.color, dash: s.dash, width: 1.5, points: { show: false }, value: (u, v) => (v == null ? "–" : count(v)) })),
        ...refs.map((r) => ({ label: r.label, stroke: refColor, dash: [6, 4], width: 1.2, auto: false, points: { show: false }, value: () => count(r.value) })),
      ],
      hooks: { drawClear: [(u) => drawOutages(u, outages)], setSeries: [linked.setSeries], setScale: [linked.setScale] },
      plugins: [wheelAndPan(t)],
    };
    const data = [t, ...series.map((s) => s.values), ...refs.map((r) => t.map(() => r.value))];
    const u = plot(p, opts, data, strategyPlot);
    timePlots.push(u);
    return u;
  }

  // latencyPlot makes the CDF plot: x the latency in seconds (log), y the
  // fraction of deliveries at or below it.
  function latencyPlot(p, cdfs) {
    // The points at 0 s have no place on a log scale.
    const tables = cdfs.map(({ data: { latency: l } }) => {
      const keep = l.s.flatMap((x, i) => (x > 0 ? [i] : []));
      return [keep.map((i) => l.s[i]), keep.map((i) => l.p[i])];
    });
    const opts = {
      width: p.body.clientWidth,
      height: 260,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false, distr: 3, log: 10 }, y: { range: [0, 1] } },
      axes: [
        // Label the ticks at 1, 2 and 5 times a power of ten where
        // there is room, else at the powers alone (null: no label).
        { label: "latency", filter: logLabels, values: (u, ticks) => ticks.map((v) => (v == null ? "" : seconds(v))) },
        { label: "fraction delivered", size: 56, values: (u, ticks) => ticks.map(percent) },
      ],
      series: [
        { label: "latency", value: (u, v) => (v == null ? "–" : seconds(v)) },
        ...cdfs.map((s) => ({ label: s.name, stroke: s.color, dash: s.dash, width: 1.5, spanGaps: true, points: { show: false }, value: (u, v) => (v == null ? "–" : percent(v)) })),
      ],
      hooks: { setSeries: [linked.setSeries] },
    };
    return plot(p, opts, uPlot.join(tables), true);
  }

  // plot makes the uPlot of panel p. Its series are strategies (or
  // not: services), for linked.setSeries; those toggled off before are
  // hidden.
  function plot(p, opts, data, strategyPlot) {
    const u = new uPlot(opts, data, p.body);
    u.strategyPlot = strategyPlot;
    u.series.forEach((s, i) => {
      if (i > 0 && strategyPlot && hidden.has(s.label)) u.setSeries(i, { show: false }, false);
    });
    return attach(p, u, opts.height);
  }

  // barChart draws horizontal bars on a canvas, one row per strategy:
  // rows are {name, color, value, text, tone, strategy} (no bar where
  // value is null; tone colours the text: "never" or "vacant"; strategy,
  // when the row's name is not the strategy's, is whose it is).
  function barChart(p, rows) {
    const canvas = el("canvas", { class: "bars" });
    p.body.append(canvas);
    const draw = (w) => {
      const dpr = devicePixelRatio || 1;
      const rowH = 26;
      const h = rows.length * rowH + 12;
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.width = `${w}px`;
      canvas.style.height = `${h}px`;
      const ctx = canvas.getContext("2d");
      ctx.scale(dpr, dpr);
      ctx.font = `13px ${font}`;
      ctx.textBaseline = "middle";
      const labelW = Math.max(...rows.map((r) => ctx.measureText(r.name).width)) + 12;
      const textW = Math.max(...rows.map((r) => ctx.measureText(r.text).width)) + 12;
      const barW = Math.max(w - labelW - textW - 8, 40);
      const top = Math.max(...rows.map((r) => r.value ?? 0)) || 1;
      rows.forEach((r, i) => {
        const y = 6 + i * rowH + rowH / 2;
        ctx.globalAlpha = hidden.has(r.strategy ?? r.name) ? 0.25 : 1;
        ctx.fillStyle = "#222";
        ctx.textAlign = "right";
        ctx.fillText(r.name, labelW - 8, y);
        ctx.textAlign = "left";
        let x = labelW;
        if (r.value != null) {
          const len = Math.max((r.value / top) * barW, 1);
          ctx.fillStyle = r.color;
          ctx.fillRect(x, y - 8, len, 16);
          x += len;
        }
        ctx.fillStyle = r.tone === "never" ? "#CC0000" : r.tone === "vacant" ? "#707070" : "#222";
        ctx.fillText(r.text, x + 6, y);
      });
      ctx.globalAlpha = 1;
      ctx.strokeStyle = "#999";
      ctx.beginPath();
      ctx.moveTo(labelW + 0.5, 2);
      ctx.lineTo(labelW + 0.5, h - 2);
      ctx.stroke();
    };
    p.resize = (w) => {
      p.width = w;
      draw(w);
    };
    p.redraw = () => draw(p.width);
    p.canvas = () => canvas;
    p.resize(p.body.clientWidth);
  }

  const stop = fitPanels(panels);
  return {
    plots,
    destroy() {
      stop();
      for (const u of Object.values(plots)) u.destroy();
      element.replaceChildren();
    },
  };
}

// amplificationRows are a graph's rows of the amplification chart for
// strategy s: the front's (the service the fleet calls) and the service's
// it hurts most (summary.json's worst_service), one row when they are one.
function amplificationRows(s) {
  const st = s.summary;
  const w = st.worst_service;
  const front = st.edges?.[0]?.to ?? "front";
  const row = (name, value) => ({ name, strategy: s.name, color: s.color, value, text: times(value) });
  if (!w) return [row(s.name, st.amplification)];
  if (w.name === front) return [row(`${s.name}: ${front} (front, hurt most)`, st.amplification)];
  return [row(`${s.name}: ${front} (front)`, st.amplification), row(`${s.name}: ${w.name} (hurt most)`, w.amplification)];
}

// addPanel makes an empty panel in parent, with a button that downloads
// its canvas() as a PNG, and adds it to panels: it returns {name, title,
// head, body}, to which the chart adds width, resize(width), canvas()
// and, for some, redraw().
function addPanel(panels, parent, name, title, note) {
  const panel = el("div", { class: "chart", "data-chart": name });
  const head = el("div", { class: "chart-head" }, el("h3", {}, title));
  const png = el("button", { type: "button", class: "chart-png", title: `Download ${name}.png` }, "PNG");
  head.append(png);
  const body = el("div", { class: "chart-body" });
  panel.append(head);
  if (note) panel.append(el("p", { class: "chart-note" }, note));
  panel.append(body);
  parent.append(panel);
  const p = { name, title, head, body };
  png.addEventListener("click", () => downloadPNG(p.canvas(), title, `${name}.png`));
  panels.push(p);
  return p;
}

// fitPanels keeps each panel's chart as wide as the panel (which the
// layout sizes, not its content): the observer reports each panel once
// laid out and then on every change of size; the charts are resized on
// the next frame, so that resizing them never re-enters the callback.
// It returns the function that stops it.
function fitPanels(panels) {
  let frame = 0;
  const ro = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      for (const p of panels) {
        const w = p.body.clientWidth;
        if (w > 0 && w !== p.width) p.resize(w);
      }
    });
  });
  for (const p of panels) ro.observe(p.body);
  return () => {
    ro.disconnect();
    cancelAnimationFrame(frame);
  };
}

// renderSweep draws a sweep into element (replacing what it held): result
// is {sweep, heatmap}, as web/README.md describes them. With two axes it
// draws a heatmap per strategy on a canvas (panels "heatmap-NAME"), all
// on one colour scale; with one, a line chart, a line per strategy
// (panel "sweep", with uPlot); with none or more than two, a table
// (panel "sweep-table"). It returns {plots, destroy()}: plots.sweep is
// the line chart's uPlot; plots["heatmap-NAME"] is {canvas, cells}, the
// cells as drawn, in point order, each {x, y, left, top, width, height}
// (its column and row from the bottom, and its box in the canvas, in CSS
// pixels) with the cell's v, mark, text and recovered.
export function renderSweep(element, { sweep, heatmap }) {
  element.replaceChildren();
  element.classList.add("herdlab-charts");
  const panels = [];
  const plots = {};
  const { axes, strategies } = heatmap;
  const note = heatmap.note ?? "";
  if (axes.length === 2) {
    const scale = heatScale(strategies);
    for (const st of strategies) {
      const name = `heatmap-${st.name}`;
      plots[name] = heatmapChart(addPanel(panels, element, name, `${st.name}: ${heatmap.metric}${note}`), heatmap, st, scale, sweep.runs);
    }
  } else if (axes.length === 1) {
    plots.sweep = sweepLine(addPanel(panels, element, "sweep", `${heatmap.metric} by ${axisName(axes[0])}${note}`), heatmap);
  } else {
    sweepTable(element, heatmap, `${heatmap.metric}${note}`);
  }
  const stop = fitPanels(panels);
  return {
    plots,
    destroy() {
      stop();
      plots.sweep?.destroy();
      element.replaceChildren();
    },
  };
}

// The marks of cells without a plain value, in the order legends list
// them, and how they are drawn: missing and vacant cells hatched in
// their colour (on its tint), partial ones outlined in red.
const marks = ["missing", "vacant", "partial"];
const markColor = { missing: "#CC0000", vacant: "#707070", partial: "#CC0000" };
const markTint = { missing: "#FAE6E6", vacant: "#F1F1F1" };

function axisName(a) {
  return a.label || a.path;
}

// pointValues returns the axis values of point i: the first axis changes
// slowest.
function pointValues(axes, i) {
  const values = [];
  for (let k = axes.length - 1; k >= 0; k--) {
    const n = axes[k].values.length;
    values[k] = axes[k].values[i % n];
    i = Math.floor(i / n);
  }
  return values;
}

// heatmapChart draws strategy st's heatmap in panel p: a cell per point,
// x the first axis's values in order, y the second's from the bottom,
// each labelled with its text where it fits, with the colour bar of
// scale (none when no cell has a value) and a legend of the marks of its
// cells. Hovering a cell says what it is. It returns {canvas, cells}
// (see renderSweep).
function heatmapChart(p, heatmap, st, scale, runs) {
  const [ax, ay] = heatmap.axes;
  const nx = ax.values.length;
  const ny = ay.values.length;
  const canvas = el("canvas", { class: "heatmap" });
  const tip = el("div", { class: "chart-tip" });
  tip.hidden = true;
  p.body.classList.add("with-tip");
  p.body.append(canvas, tip);
  const legend = marks.filter((m) => st.cells.some((c) => c.mark === m)).map((m) => ({ mark: m, text: m === "partial" ? `* ${heatmap.labels.partial}` : heatmap.labels[m] }));
  const out = { canvas, cells: [] };
  let hover = -1; // the cell under the mouse

  const draw = (w) => {
    const dpr = devicePixelRatio || 1;
    const ctx = canvas.getContext("2d");
    ctx.font = `12px ${font}`;
    const width = (texts) => Math.max(0, ...texts.map((t) => ctx.measureText(t).width));
    const ticks = scale ? scale.ticks.map((v) => num(v, 3)) : [];
    // Left of the cells: the y axis's label (upright) and values; right
    // of them: the colour bar, its numbers and the metric's name.
    const left = 22 + width(ay.values) + 8;
    const right = scale ? 16 + 14 + 4 + width(ticks) + 8 + 16 : 8;
    const cellW = Math.max((w - left - right) / nx, 14);
    // Rows half as high as the columns are wide, within bounds, and high
    // enough together for the upright names beside them.
    ctx.font = `13px ${font}`;
    const names = width([axisName(ay), ...(scale ? [heatmap.metric] : [])]) + 12;
    ctx.font = `12px ${font}`;
    const cellH = Math.max(Math.min(Math.max(Math.round(cellW * 0.5), 26), 44), Math.ceil(names / ny));
    const top = 8;
    const gridW = cellW * nx;
    const gridH = cellH * ny;
    // The x values slant when they do not fit their columns.
    const slant = width(ax.values) > cellW * 0.9;
    const xValuesH = slant ? width(ax.values) * 0.5 + 16 : 18;
    const lines = legendLines(ctx, legend, w - 8);
    const h = top + gridH + 4 + xValuesH + 20 + lines.length * 18 + 4;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    ctx.scale(dpr, dpr);
    ctx.font = `12px ${font}`;
    ctx.textBaseline = "middle";

    out.cells = st.cells.map((c, i) => {
      const x = Math.floor(i / ny);
      const y = i % ny;
      const box = { x, y, left: left + x * cellW, top: top + (ny - 1 - y) * cellH, width: cellW, height: cellH };
      drawCell(ctx, { ...c, ...box }, scale, i === hover);
      return { ...c, ...box };
    });

    // The axes: values centred on their columns and rows, and names.
    ctx.font = `12px ${font}`;
    ctx.fillStyle = "#222";
    ctx.textAlign = "right";
    ay.values.forEach((v, y) => ctx.fillText(v, left - 6, top + (ny - 0.5 - y) * cellH));
    ax.values.forEach((v, x) => {
      const cx = left + (x + 0.5) * cellW;
      if (slant) {
        ctx.save();
        ctx.translate(cx, top + gridH + 8);
        ctx.rotate(-Math.PI / 6);
        ctx.fillText(v, 0, 0);
        ctx.restore();
      } else {
        ctx.textAlign = "center";
        ctx.fillText(v, cx, top + gridH + 12);
      }
    });
    ctx.font = `13px ${font}`;
    ctx.textAlign = "center";
    ctx.fillText(axisName(ax), left + gridW / 2, top + gridH + 4 + xValuesH + 8);
    ctx.save();
    ctx.translate(9, top + gridH / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(axisName(ay), 0, 0);
    ctx.restore();
    if (scale) colorBar(ctx, scale, ticks, heatmap.metric, left + gridW + 16, top, gridH);
    drawLegend(ctx, lines, top + gridH + 4 + xValuesH + 20 + 9);
  };

  // The tooltip: the point's values, the cell's text and its runs.
  const show = (e) => {
    const i = out.cells.findIndex((c) => e.offsetX >= c.left && e.offsetX < c.left + c.width && e.offsetY >= c.top && e.offsetY < c.top + c.height);
    if (i !== hover) {
      hover = i;
      draw(p.width);
    }
    tip.hidden = i < 0;
    if (i < 0) return;
    const c = out.cells[i];
    const values = pointValues(heatmap.axes, i).map((v, k) => `${axisName(heatmap.axes[k])} = ${v}`);
    const what = c.mark === "value" ? c.text : `${c.text} (${heatmap.labels[c.mark]})`;
    tip.replaceChildren(el("b", {}, values.join(", ")), el("div", {}, `${heatmap.metric}: ${what}`), el("div", {}, `recovered in ${c.recovered} of ${runs} ${runs === 1 ? "run" : "runs"}`));
    // Beside the pointer, within the panel.
    const x = e.offsetX + 14;
    tip.style.left = `${x + tip.offsetWidth > p.width ? Math.max(e.offsetX - 14 - tip.offsetWidth, 0) : x}px`;
    tip.style.top = `${e.offsetY + 14}px`;
  };
  canvas.addEventListener("mousemove", show);
  canvas.addEventListener("mouseleave", () => {
    tip.hidden = true;
    hover = -1;
    draw(p.width);
  });

  p.resize = (w) => {
    p.width = w;
    draw(w);
  };
  p.canvas = () => canvas;
  p.resize(p.body.clientWidth);
  return out;
}

// drawCell draws a heatmap cell in its box, with a white gap around it:
// filled in the colour of its value, or hatched without one; outlined
// in red when partial, in black when hovered; labelled with its text
// when that fits (white on dark cells; on a white box on hatching).
function drawCell(ctx, c, scale, hovered) {
  const x = c.left + 1;
  const y = c.top + 1;
  const w = c.width - 2;
  const h = c.height - 2;
  const hatched = c.mark === "missing" || c.mark === "vacant";
  let fg = "#222";
  if (hatched) {
    hatch(ctx, x, y, w, h, c.mark);
    fg = markColor[c.mark];
  } else {
    const bg = scale.color(c.v);
    ctx.fillStyle = bg;
    ctx.fillRect(x, y, w, h);
    if (isDark(bg)) fg = "#fff";
  }
  if (c.mark === "partial") {
    ctx.save();
    ctx.strokeStyle = markColor.partial;
    ctx.lineWidth = 2;
    ctx.setLineDash([6, 3]);
    ctx.strokeRect(x + 1, y + 1, w - 2, h - 2);
    ctx.restore();
  }
  if (hovered) {
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 2;
    ctx.strokeRect(x, y, w, h);
  }
  ctx.font = `${hatched ? "bold " : ""}12px ${font}`;
  const tw = ctx.measureText(c.text).width;
  if (tw > w - 8 || h < 18) return;
  const cx = x + w / 2;
  const cy = y + h / 2;
  if (hatched) {
    ctx.fillStyle = "rgba(255, 255, 255, 0.9)";
    ctx.fillRect(cx - tw / 2 - 3, cy - 8, tw + 6, 16);
  }
  ctx.fillStyle = fg;
  ctx.textAlign = "center";
  ctx.fillText(c.text, cx, cy);
}

// hatch fills a box with diagonal lines in the colour of mark, on its
// tint.
function hatch(ctx, x, y, w, h, mark) {
  ctx.save();
  ctx.fillStyle = markTint[mark];
  ctx.fillRect(x, y, w, h);
  ctx.beginPath();
  ctx.rect(x, y, w, h);
  ctx.clip();
  ctx.strokeStyle = markColor[mark];
  ctx.globalAlpha = 0.6;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let d = -h; d < w; d += 7) {
    ctx.moveTo(x + d, y + h);
    ctx.lineTo(x + d + h, y);
  }
  ctx.stroke();
  ctx.restore();
}

// colorBar draws scale upwards, from y + h to y, at x: the gradient in a
// frame, its ticks labelled, and the metric's name reading upwards.
function colorBar(ctx, scale, labels, metric, x, y, h) {
  const barW = 14;
  const g = ctx.createLinearGradient(0, y + h, 0, y);
  for (let k = 0; k <= 16; k++) g.addColorStop(k / 16, heatColor(k / 16));
  ctx.fillStyle = g;
  ctx.fillRect(x, y, barW, h);
  ctx.strokeStyle = "#222";
  ctx.lineWidth = 1;
  ctx.strokeRect(x + 0.5, y + 0.5, barW - 1, h - 1);
  ctx.fillStyle = "#222";
  ctx.textAlign = "left";
  ctx.font = `12px ${font}`;
  let widest = 0;
  scale.ticks.forEach((v, k) => {
    const ty = y + h - ((v - scale.lo) / (scale.hi - scale.lo)) * h;
    ctx.beginPath();
    ctx.moveTo(x + barW, ty);
    ctx.lineTo(x + barW + 4, ty);
    ctx.stroke();
    ctx.fillText(labels[k], x + barW + 6, ty);
    widest = Math.max(widest, ctx.measureText(labels[k]).width);
  });
  ctx.save();
  ctx.translate(x + barW + 6 + widest + 12, y + h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(metric, 0, 0);
  ctx.restore();
}

// legendLines lays a heatmap's legend items ({mark, text}) out in lines
// no wider than w: each item is a swatch and its text.
function legendLines(ctx, items, w) {
  const lines = [];
  let line = [];
  let x = 0;
  for (const it of items) {
    const iw = 24 + ctx.measureText(it.text).width;
    if (line.length && x + iw > w) {
      lines.push(line);
      line = [];
      x = 0;
    }
    line.push({ ...it, x });
    x += iw + 18;
  }
  if (line.length) lines.push(line);
  return lines;
}

// drawLegend draws the legend's lines from y (the first line's middle).
function drawLegend(ctx, lines, y) {
  ctx.font = `12px ${font}`;
  ctx.textAlign = "left";
  lines.forEach((line, k) => {
    const ly = y + k * 18;
    for (const it of line) {
      if (it.mark === "partial") {
        ctx.fillStyle = heatColor(0.5);
        ctx.fillRect(it.x, ly - 6, 18, 12);
        ctx.save();
        ctx.strokeStyle = markColor.partial;
        ctx.lineWidth = 2;
        ctx.setLineDash([4, 2]);
        ctx.strokeRect(it.x + 1, ly - 5, 16, 10);
        ctx.restore();
      } else {
        hatch(ctx, it.x, ly - 6, 18, 12, it.mark);
      }
      ctx.fillStyle = "#222";
      ctx.fillText(it.text, it.x + 24, ly);
    }
  });
}

// heatScale returns the colour scale of every strategy's heatmap, from
// the least to the greatest value of the cells with one (widened when
// they are equal, as plots/sweep.go's newColorScale does), with its
// ticks; null when no cell has a value.
function heatScale(strategies) {
  const vs = strategies.flatMap((st) => st.cells.map((c) => c.v)).filter(Number.isFinite);
  if (!vs.length) return null;
  let lo = Math.min(...vs);
  let hi = Math.max(...vs);
  if (hi <= lo) {
    const d = Math.max(Math.abs(lo) * 0.1, 0.5);
    [lo, hi] = lo >= 0 && lo - d < 0 ? [0, hi + d] : [lo - d, hi + d];
  }
  return { lo, hi, ticks: niceTicks(lo, hi), color: (v) => heatColor((v - lo) / (hi - lo)) };
}

// niceTicks returns about five round numbers from lo to hi, or lo and hi
// when fewer than two are round.
function niceTicks(lo, hi) {
  const raw = (hi - lo) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw);
  const ticks = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) ticks.push(k * step || 0); // (not -0)
  return ticks.length >= 2 ? ticks : [lo, hi];
}

// heatColors are the stops of the heatmaps' colours, from the least
// value to the greatest: ColorBrewer's YlGnBu, pale yellow to dark blue,
// as the static heatmaps (plots/sweep.go), far from the red of cells
// without a value.
const heatColors = [0xffffd9, 0xedf8b1, 0xc7e9b4, 0x7fcdbb, 0x41b6c4, 0x1d91c0, 0x225ea8, 0x253494, 0x081d58];

// heatColor returns the colour at t from 0 to 1 (clamped) of the
// heatmaps' scale, between its stops.
function heatColor(t) {
  const f = Math.min(Math.max(t, 0), 1) * (heatColors.length - 1);
  const k = Math.min(Math.floor(f), heatColors.length - 2);
  const mix = (shift) => {
    const a = (heatColors[k] >> shift) & 255;
    const b = (heatColors[k + 1] >> shift) & 255;
    return Math.round(a + (b - a) * (f - k));
  };
  return `rgb(${mix(16)}, ${mix(8)}, ${mix(0)})`;
}

// isDark reports whether a colour rgb(r, g, b) is dark enough for white
// text on it.
function isDark(color) {
  const [r, g, b] = color.match(/\d+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 < 0.4;
}

// sweepLine makes the line chart of a one-axis sweep in panel p: x the
// axis's values in order, a line per strategy broken where a cell has
// no value, which a cross (missing) or a dotted ring (vacant) marks
// above the plot; a partial cell's point is hollow. The legend shows the cells'
// texts at the cursor.
function sweepLine(p, heatmap) {
  const [ax] = heatmap.axes;
  const { strategies } = heatmap;
  const styles = colorIndexes(strategies).map(styleOf);
  const xs = ax.values.map((_, i) => i);
  const blank = (c) => c.mark === "missing" || c.mark === "vacant";
  const banded = strategies.filter((st) => st.cells.some(blank));
  const present = marks.filter((m) => strategies.some((st) => st.cells.some((c) => c.mark === m)));
  const notes = { missing: `×: ${heatmap.labels.missing}`, vacant: `dotted ○: ${heatmap.labels.vacant}`, partial: `hollow: ${heatmap.labels.partial}` };
  if (present.length) {
    const breaks = present.some((m) => m !== "partial") ? " The lines break at the points without a value." : "";
    p.body.after(el("p", { class: "chart-note" }, `${present.map((m) => notes[m]).join("; ")}.${breaks}`));
  }
  // The marks above the plot, a row per strategy with some, and the
  // hollow points.
  const overlay = (u) => {
    const { ctx } = u;
    const dpr = u.bbox.width / u.over.clientWidth || 1;
    ctx.save();
    ctx.lineWidth = 1.6 * dpr;
    banded.forEach((st, row) => {
      const j = strategies.indexOf(st);
      const y = u.bbox.top - (8 + 12 * row) * dpr;
      ctx.strokeStyle = styles[j].color;
      st.cells.forEach((c, i) => {
        if (!blank(c) || !u.series[j + 1].show) return;
        const x = u.valToPos(i, "x", true);
        const r = 3.5 * dpr;
        ctx.beginPath();
        if (c.mark === "vacant") {
          ctx.setLineDash([1.5 * dpr, 1.5 * dpr]);
          ctx.arc(x, y, r, 0, 2 * Math.PI);
        } else {
          ctx.setLineDash([]);
          ctx.moveTo(x - r, y - r);
          ctx.lineTo(x + r, y + r);
          ctx.moveTo(x - r, y + r);
          ctx.lineTo(x + r, y - r);
        }
        ctx.stroke();
      });
    });
    ctx.setLineDash([]);
    strategies.forEach((st, j) => {
      if (!u.series[j + 1].show) return;
      ctx.strokeStyle = styles[j].color;
      ctx.fillStyle = "#fff";
      st.cells.forEach((c, i) => {
        if (c.mark !== "partial") return;
        ctx.beginPath();
        ctx.arc(u.valToPos(i, "x", true), u.valToPos(c.v, "y", true), 4 * dpr, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      });
    });
    ctx.restore();
  };
  const yRange = (u, lo, hi) => (hi > 0 ? uPlot.rangeNum(Math.min(lo, 0), hi, 0.08, true) : [0, 1]);
  const opts = {
    width: p.body.clientWidth,
    height: 300,
    padding: [banded.length ? 14 + 12 * banded.length : null, null, null, null],
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: false, range: [-0.3, xs.length - 0.7] }, y: { range: yRange } },
    axes: [
      { label: axisName(ax), splits: () => xs, values: (u, ticks) => ticks.map((i) => ax.values[i] ?? "") },
      { label: heatmap.metric, size: 56, values: (u, ticks) => ticks.map(compact) },
    ],
    series: [
      { label: axisName(ax), value: (u, i) => (i == null ? "–" : ax.values[i]) },
      ...strategies.map((st, j) => ({
        label: st.name,
        stroke: styles[j].color,
        dash: styles[j].dash,
        width: 1.5,
        points: { show: true, size: 7, fill: styles[j].color },
        value: (u, v, si, i) => (i == null ? "–" : st.cells[i].text),
      })),
    ],
    hooks: { draw: [overlay] },
  };
  const data = [xs, ...strategies.map((st) => st.cells.map((c) => (blank(c) ? null : c.v)))];
  const u = new uPlot(opts, data, p.body);
  return attach(p, u, opts.height);
}

// attach makes uPlot u the plot of panel p: p resizes it to a width,
// keeping its height, and gives its canvas for the PNG download.
function attach(p, u, height) {
  p.width = u.width;
  p.resize = (w) => {
    p.width = w;
    u.setSize({ width: w, height });
  };
  p.canvas = () => u.ctx.canvas;
  return u;
}

// sweepTable shows a sweep of no axis or of more than two as a table: a
// row per point, its values and each strategy's text.
function sweepTable(element, heatmap, title) {
  const { axes, strategies } = heatmap;
  const panel = el("div", { class: "chart", "data-chart": "sweep-table" }, el("div", { class: "chart-head" }, el("h3", {}, title)));
  const why = axes.length ? `${axes.length} axes` : "no axis";
  panel.append(el("p", { class: "chart-note" }, `This sweep has ${why}: it is shown as a table, not a chart.`));
  const head = el("tr", {}, ...axes.map((a) => el("th", {}, axisName(a))), ...strategies.map((st) => el("th", {}, st.name)));
  const rows = (strategies[0]?.cells ?? []).map((_, i) =>
    el("tr", {}, ...pointValues(axes, i).map((v) => el("td", {}, v)), ...strategies.map((st) => el("td", { "data-mark": st.cells[i].mark }, st.cells[i].text))),
  );
  panel.append(el("div", { class: "table-wrap" }, el("table", { class: "sweep-table" }, el("thead", {}, head), el("tbody", {}, ...rows))));
  element.append(panel);
}

// colors returns the strategies' chart colours, in the order of
// summary.strategies (for the page's summary table).
export function colors(summary) {
  return strategyStyles(summary).map((s) => s.color);
}

// strategyStyles returns the strategies of summary with their colour,
// dash and chart data.
function strategyStyles(summary, charts) {
  const idx = colorIndexes(summary.strategies);
  return summary.strategies.map((st, k) => ({
    name: st.name,
    ...styleOf(idx[k]),
    summary: st,
    data: charts?.strategies?.find((s) => s.name === st.name),
  }));
}

// colorIndexes returns the colour index of each of strategies ({index}
// each): its index in the scenario file, or its place when the indexes
// are not distinct (as plots/style.go's colorIndexes does).
function colorIndexes(strategies) {
  const idx = strategies.map((st) => st.index);
  const distinct = idx.every((i, k) => Number.isInteger(i) && i >= 0 && idx.indexOf(i) === k);
  return strategies.map((st, k) => (distinct ? st.index : k));
}

// styleOf returns the colour and dash of colour index c.
function styleOf(c) {
  return { color: palette[c % palette.length], dash: dashes[Math.floor(c / palette.length) % dashes.length] };
}

// recoveryBar is a strategy's row of the recovery chart.
function recoveryBar(summary, st) {
  const t = st.recovery_time_s;
  switch (st.recovery) {
    case "never":
      return { value: null, text: "never recovered", tone: "never" };
    case "nothing_left":
      return { value: null, text: "nothing left to recover", tone: "vacant" };
    case "no_outage":
      return { value: null, text: "no outage", tone: "vacant" };
    case "mixed":
      if (t == null) return { value: null, text: `never (${st.recovered_runs} of ${summary.runs} runs)`, tone: "never" };
      return { value: t, text: `${seconds(t)} (${st.recovered_runs} of ${summary.runs} runs)` };
  }
  return t == null ? { value: null, text: "never recovered", tone: "never" } : { value: t, text: seconds(t) };
}

function outageText(o) {
  return `${o.service ? o.service + " " : ""}${num(o.start_s, 3)}–${num(o.end_s, 3)} s, ${o.mode}`;
}

// logLabels picks the labelled ticks of a log scale (see latencyPlot).
function logLabels(u, splits) {
  const { min, max } = u.scales.x;
  const perDecade = u.width / Math.log10(max / min);
  const keep = perDecade > 240 ? [1, 2, 5] : [1];
  return splits.map((v) => (keep.includes(Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9))) ? v : null));
}

// maxOf returns the highest value in arrays (0 for none).
function maxOf(arrays) {
  let hi = 0;
  for (const a of arrays) for (const v of a) if (v > hi) hi = v;
  return hi;
}

function joinNotes(...notes) {
  return notes.filter(Boolean).join(" ");
}

// drawOutages shades the outage windows under the series, each labelled
// with its mode (labels that would overlap go a line lower).
function drawOutages(u, outages) {
  if (!outages.length) return;
  const { ctx, bbox } = u;
  const dpr = bbox.width / u.over.clientWidth || 1;
  ctx.save();
  ctx.beginPath();
  ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
  ctx.clip();
  ctx.font = `${11 * dpr}px ${font}`;
  ctx.textBaseline = "top";
  let end = -Infinity;
  let line = 0;
  for (const o of outages) {
    const x0 = u.valToPos(o.start_s, "x", true);
    const x1 = u.valToPos(o.end_s, "x", true);
    ctx.fillStyle = "rgba(128, 128, 128, 0.22)";
    ctx.fillRect(x0, bbox.top, Math.max(x1 - x0, 1), bbox.height);
    const label = `outage: ${o.service ? o.service + ", " : ""}${o.mode}`;
    line = x0 < end ? line + 1 : 0;
    ctx.fillStyle = "#505050";
    ctx.fillText(label, x0 + 3 * dpr, bbox.top + (3 + 14 * line) * dpr);
    end = Math.max(end, x0 + ctx.measureText(label).width + 6 * dpr);
  }
  ctx.restore();
}

// wheelAndPan is a uPlot plugin for the time panels: the wheel zooms x
// about the cursor, shift-wheel pans, and shift- or alt-drag pans, all
// within the data's time range t.
function wheelAndPan(t) {
  const lo = t[0];
  const hi = t.at(-1);
  const set = (u, min, max) => {
    if (max - min >= hi - lo) [min, max] = [lo, hi];
    else if (min < lo) [min, max] = [lo, lo + (max - min)];
    else if (max > hi) [min, max] = [hi - (max - min), hi];
    u.setScale("x", { min, max });
  };
  return {
    hooks: {
      ready(u) {
        u.over.addEventListener(
          "wheel",
          (e) => {
            e.preventDefault();
            const { min, max } = u.scales.x;
            const delta = e.deltaY || e.deltaX;
            if (e.shiftKey) {
              const d = (max - min) * 0.1 * Math.sign(delta);
              set(u, min + d, max + d);
            } else {
              const x = u.posToVal(e.offsetX, "x");
              const f = delta < 0 ? 0.8 : 1.25;
              set(u, x - (x - min) * f, x + (max - x) * f);
            }
          },
          { passive: false },
        );
        // Capture on the plot's root, before uPlot's own drag-to-zoom.
        u.root.addEventListener(
          "mousedown",
          (e) => {
            if (!(e.shiftKey || e.altKey) || e.button !== 0 || !u.over.contains(e.target)) return;
            e.stopPropagation();
            e.preventDefault();
            const x0 = e.clientX;
            const { min, max } = u.scales.x;
            const perPx = (max - min) / u.over.clientWidth;
            const move = (m) => set(u, min - (m.clientX - x0) * perPx, max - (m.clientX - x0) * perPx);
            const up = () => {
              document.removeEventListener("mousemove", move);
              document.removeEventListener("mouseup", up);
            };
            document.addEventListener("mousemove", move);
            document.addEventListener("mouseup", up);
          },
          true,
        );
      },
    },
  };
}

// downloadPNG saves a panel's canvas as a PNG, on white under its title.
function downloadPNG(canvas, title, file) {
  const dpr = devicePixelRatio || 1;
  const head = Math.round(28 * dpr);
  const out = document.createElement("canvas");
  out.width = canvas.width;
  out.height = canvas.height + head;
  const ctx = out.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = "#222";
  ctx.font = `bold ${14 * dpr}px ${font}`;
  ctx.textBaseline = "middle";
  ctx.fillText(title, 8 * dpr, head / 2);
  ctx.drawImage(canvas, 0, head);
  out.toBlob((blob) => {
    const a = el("a", { href: URL.createObjectURL(blob), download: file });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }, "image/png");
}
