// Package strategies holds retry policy as pure decisions: backoff and
// jitter, attempt limits, retryable outcomes, Retry-After, circuit breakers
// and retry budgets.
//
// Nothing here sleeps or reads a clock. Every decision takes now, the time
// since the start of the run as a time.Duration, and randomness as an
// injected *rand.Rand (math/rand/v2). The discrete-event simulator passes
// virtual time and the real-HTTP driver passes wall time, so both run
// exactly the same code.
//
// Shared policy and per-sender state are separate types: a Policy is
// immutable and shared by every sender of a strategy (a million of them in
// a large simulation); Sender and Request hold the small mutable state of
// one sender and one request. Policy values are safe for concurrent use;
// state values are not and belong to one goroutine.
package strategies
