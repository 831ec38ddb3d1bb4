// The chart component: HerdlabCharts.render(element, summary, charts)
// draws a run's panels with uPlot from summary.json (parsed) and the
// chart data of web/README.md. The page uses it, and report.html on its
// own (dist/charts.js, which exposes the global HerdlabCharts).
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
  const add = (name, title, note, parent = element) => {
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
  };

  const bucket = `${num(summary.bucket_s, 3)} s`;
  const t = charts?.t ?? [];
  const outages = summary.outages ?? [];
  const outageNote = outages.length ? `Shaded: ${outages.length > 1 ? "the outages" : "the outage"} (${outages.map(outageText).join("; ")}).` : "";

  if (t.length) {
    // Load on the server.
    const capacity = summary.capacity_per_s == null ? null : summary.capacity_per_s * summary.bucket_s;
    const load = strategies.filter((s) => s.data?.attempts);
    if (load.length) {
      const refs = capacity == null ? [] : [{ label: `server capacity (per ${bucket})`, value: capacity }];
      let note = "";
      if (capacity != null) {
        // (timePlot's y range leaves out a line far above the data.)
        const above = capacity > 3 * maxOf(load.map((s) => s.data.attempts));
        note = above ? `The server's capacity, ${count(capacity)} per ${bucket}, is far above the load.` : "Dashed: the server's capacity.";
      }
      const p = add("load", `Load on the server (attempts per ${bucket})`, joinNotes(outageNote, note));
      plots.load = timePlot(p, { t, series: load.map((s) => ({ ...s, values: s.data.attempts })), refs, outages, yLabel: `attempts per ${bucket}`, height: 300 });
    }

    // The server's queue: only the strategies whose queue was measured.
    const queued = strategies.filter((s) => s.data?.queue?.some((v) => v != null));
    if (queued.length) {
      const limit = summary.queue_limit;
      const refs = limit == null ? [] : [{ label: "queue limit", value: limit }];
      const p = add("queue", `The server's queue (longest in each ${bucket})`, joinNotes(outageNote, limit == null ? "" : "Dashed: the queue's limit."));
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
  barChart(add("recovery", "Recovery time after the outage", "", bars), strategies.map((s) => ({ name: s.name, color: s.color, ...recoveryBar(summary, s.summary) })));
  barChart(add("amplification", "Retry amplification (attempts per request)", "", bars), strategies.map((s) => ({ name: s.name, color: s.color, value: s.summary.amplification, text: times(s.summary.amplification) })));

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
    p.width = opts.width;
    p.resize = (w) => {
      p.width = w;
      u.setSize({ width: w, height: opts.height });
    };
    p.canvas = () => u.ctx.canvas;
    return u;
  }

  // barChart draws horizontal bars on a canvas, one row per strategy:
  // rows are {name, color, value, text, tone} (no bar where value is
  // null; tone colours the text: "never" or "vacant").
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
        ctx.globalAlpha = hidden.has(r.name) ? 0.25 : 1;
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

  // Keep each panel's chart as wide as the panel (which the layout
  // sizes, not its content): the observer reports each panel once laid
  // out and then on every change of size; the charts are resized on the
  // next frame, so that resizing them never re-enters the callback.
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

  return {
    plots,
    destroy() {
      ro.disconnect();
      cancelAnimationFrame(frame);
      for (const u of Object.values(plots)) u.destroy();
      element.replaceChildren();
    },
  };
}

// colors returns the strategies' chart colours, in the order of
// summary.strategies (for the page's summary table).
export function colors(summary) {
  return strategyStyles(summary).map((s) => s.color);
}

// strategyStyles returns the strategies of summary with their colour,
// dash and chart data: the colour of a strategy is that of its index in
// the scenario file, or of its place when the indexes are not distinct
// (as plots/style.go's colorIndexes does).
function strategyStyles(summary, charts) {
  const idx = summary.strategies.map((st) => st.index);
  const distinct = idx.every((i, k) => Number.isInteger(i) && i >= 0 && idx.indexOf(i) === k);
  return summary.strategies.map((st, k) => {
    const c = distinct ? st.index : k;
    return {
      name: st.name,
      color: palette[c % palette.length],
      dash: dashes[Math.floor(c / palette.length) % dashes.length],
      summary: st,
      data: charts?.strategies?.find((s) => s.name === st.name),
    };
  });
}

// recoveryBar is a strategy's row of the recovery chart.
function recoveryBar(summary, st) {
  const t = st.recovery_time_s;
  switch (st.recovery) {
    case "never":
      return { value: null, text: "never recovered", tone: "never" };
    case "nothing_left":
      return { value: null, text: "nothing left to recover", tone: "vacant" };
    case "mixed":
      if (t == null) return { value: null, text: `never (${st.recovered_runs - st.nothing_left_runs} of ${summary.runs} runs)`, tone: "never" };
      return { value: t, text: `${seconds(t)} (${st.recovered_runs - st.nothing_left_runs} of ${summary.runs} runs)` };
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
