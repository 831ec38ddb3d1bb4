// Package realhttp is the real-HTTP mode: a test server that enforces a
// scenario's capacity, outages and rate limits on the wall clock, and a
// driver of real clients that replays the same strategies against it.
//
// It is filled in with the real-HTTP issue.
package realhttp
