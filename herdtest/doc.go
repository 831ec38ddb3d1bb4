// Package herdtest runs the user's own Go client code, unmodified,
// through a herdlab scenario in virtual time, from the user's go test:
// each run in a testing/synctest bubble, against the scenario's server
// (herdlab serve's model), or its graph of services (every replica a
// server, their calls made by the strategy's edge policies), over
// in-memory connections with the scenario's network latency. A run writes the same files as herdlab
// run and applies the scenario's checks; the file's other strategies
// run simulated beside the clients under test.
//
// The rules of the bubble: a client's transport, pool and timers are
// made in the Client constructor, on Net.Transport or Net.Dial (an
// object made outside the bubble and used inside it is a fatal error of
// the Go runtime, and a real socket would freeze the bubble's clock);
// Send returns when its context ends; response bodies are closed; user
// code does not call synctest.Wait, which herdtest's arbiter calls to
// admit the attempts of one instant in a set order. See docs/herdtest.md
// in the repository for the guide.
package herdtest
