// Package plots draws the charts of a run's results with gonum/plot, as
// PNG or SVG images held in memory: the caller decides where they go
// (the report directory, a test, a web page).
//
// Render draws every chart of a run, in a fixed order:
//
//   - load: attempts that reached the server per bucket, stacked by
//     outcome (succeeded, failed, rejected 503, throttled 429, timed
//     out, unresolved), one panel per strategy on a shared time axis and
//     a shared count axis, with the server's capacity per bucket and the
//     outage windows; with Options.Overlay, one line of total attempts
//     per strategy on a single axis instead. This is the picture of the
//     herd. Buckets during an outage far taller than any after it (cheap
//     refusals) are cut off at the top of the panels and marked, so that
//     the herd on the recovering server sets the scale; panels too flat
//     to read in one column go in several.
//   - recovery: the recovery time of each strategy, with 95% confidence
//     whiskers over runs; a strategy whose server never recovered is
//     drawn as a hatched red bar labelled "never recovered", never as 0.
//   - latency: the CDF of delivery latency (creation to delivery) of each
//     strategy, from the exact merge of its runs' HDR histograms, on a
//     log time axis.
//   - queue: the most requests waiting in the server's queue at any
//     instant of each bucket, and the queue's time-weighted mean over the
//     bucket, per strategy, with the queue limit and the outages. A
//     strategy whose runs did not measure the queue (real HTTP) is said
//     to have none, not drawn as an empty queue.
//   - amplification: attempts per request of each strategy, with 95%
//     confidence whiskers and a reference line at 1.
//
// For a graph of services (a summary whose strategies have Services),
// Render then draws three more:
//
//   - services-load: the load on every service, a grid of panels (a row
//     per strategy, a column per service in layer order), stacked by
//     outcome as the load chart, each column on its own count axis with
//     the service's capacity and outages, every panel on one time axis.
//     Left at its default size, the image grows with the grid.
//   - layers: each service's attempts per fleet request, grouped by
//     service in layer order, a bar per strategy, values on the bars.
//   - graph: the graph itself per strategy: services as boxes in layers
//     by their longest path from the fleet, filled by their peak load
//     over capacity (green, amber, red; grey when unlimited), and an
//     arrow per call labelled with its attempts per fleet request.
//     Left at its default size, the image grows until the boxes have
//     room for their text.
//
// SweepCharts draws the charts of a sweep (results.Sweep): with one
// varied field, a line chart of the sweep's metric per strategy
// ("sweep"); with two, a heatmap per strategy ("heatmap-NAME") on one
// colour scale, x the first field and y the second. Points where the
// metric does not exist (a server that never recovered) are drawn as
// such, crosses above the lines or hatched cells, never as a number.
//
// With several runs, a per-bucket figure is the mean over the runs of its
// strategy. A strategy has the same colour in every chart: the colour of
// its place in the scenario file (StrategySummary.Index), whichever
// strategies ran, in a fixed colour-blind-safe palette (Okabe and Ito);
// outcome classes have colours of their own.
//
// Output is deterministic: the same results and options give the same
// bytes. Text is set in Liberation Sans (which gonum/plot carries); an
// SVG names it, then fonts of the same metrics (Arimo, Arial, Helvetica),
// and does not embed it. The package keeps no state; its functions are
// safe for concurrent use. It imports the results package and gonum/plot
// only.
package plots
