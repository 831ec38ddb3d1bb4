// Package sim is herdlab's discrete-event simulator. Run simulates every
// strategy of a scenario, each over its runs, on a virtual clock: the
// engine (a timing wheel of events, calls kept compact, the calls and
// jobs of the events ahead prefetched), a fleet of senders with their
// retries, breakers, budgets and throttles (package strategies), and the
// graph of services they call, with replicas, balancers, queue
// disciplines, caches and retries on every call edge. A scenario's
// single server is a graph of one service (oneService): one engine runs
// both. Runs are
// deterministic: the same scenario and seed give the same figures,
// whatever the parallelism. It returns package results' runs and
// summaries; Estimate and Fit say what runs will take in memory before
// they start.
package sim
