// Package realhttp is the real-HTTP mode: a test server that enforces a
// scenario's capacity, outages and rate limits on the wall clock, and a
// driver of real clients that replays the same strategies against it.
//
// The server (Server) serves the scenario's server model on a listener
// that refuse outages close, with its metrics and a control endpoint
// (reset the scenario clock, report its state) on an admin listener of
// their own; it counts every second processing of an Idempotency-Key,
// whatever its store (in memory, bounded; or Redis, which must persist)
// keeps or loses. The driver (Replay) plays every sender from one
// process through a bounded pool of connections (see DriverOptions),
// says how many connections a scenario needs (DriverConnsNeeded), and
// whether a run sent its attempts when they were due (DriverStats.Check).
// ReplayDLQ sends dead letters again with their keys.
package realhttp
