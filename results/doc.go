// Package results holds what a run produced: summary figures per
// strategy, time series per bucket and latency histograms, with their
// JSON, CSV and Markdown writers and readers. It imports only the standard
// library (and an HDR histogram).
//
// It is filled in with the simulator (see DESIGN.md, "Output directory").
package results
