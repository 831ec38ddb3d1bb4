// Package memnet is an in-memory network for a testing/synctest bubble:
// one listener's worth of connections whose messages take a one-way
// delay, on the bubble's clock.
//
// A real socket cannot serve in a bubble: a goroutine blocked on one is
// not durably blocked, so the bubble's clock stops while it waits, and
// a 30-second outage takes 30 seconds. net.Pipe is in memory but its
// writes wait for the reader and it has no latency. Here a Write never
// blocks: it copies its bytes and queues them for the peer, readable
// from now + Delay(), and a Read waits on a channel (and a timer, for
// a message still in flight or a deadline), which a bubble counts as
// durably blocked. So an http.Server on Network.Listener and an
// http.Transport dialing with Network.Dial run on virtual time: a
// request's round trip takes exactly two delays, in no wall time.
//
// Messages keep their order: a message is readable at
// max(now + Delay(), the previous message's time), as a TCP stream's
// bytes are. A Close travels as a message, after the data written
// before it; the peer reads io.EOF when it arrives. What one end writes
// after its peer closed is lost (a real peer would answer with a reset);
// a Write after the peer's close arrived fails with EPIPE.
//
// An idle connection costs under 1 KB, both ends: no goroutine, no
// buffer kept once read, a timer made only when a Read has to wait for
// a time. Writes that arrive at the same instant share one record, so
// that many small writes (gRPC's frames) are cheap. Locks are held only for short critical sections; everything
// that waits, waits on a channel or a timer.
//
// A Network, and its connections, should be made and used inside one
// bubble (its channels belong to the bubble where New was called). It
// also works outside any bubble, on the wall clock.
package memnet
