// Package plots draws charts from results with gonum/plot. It imports
// results only.
//
// It is filled in with the charts issue.
package plots
