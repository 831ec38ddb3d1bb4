package realhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// serverAttempt is one attempt at the handler: what it carried and what
// came of it.
type serverAttempt struct {
	id          uint64        // the server's number for it, from 1
	arrived     time.Duration // scenario time it reached the handler
	wall        time.Time
	key         string
	attempt     int
	request     int64
	hasRequest  bool
	planned     int64
	hasPlanned  bool
	outer       time.Duration // when the fleet's attempt above it gives up, scenario time
	hasOuter    bool
	deadline    time.Duration // when its caller gives it up, with deadline propagation
	hasDeadline bool
	outcome     strategies.Outcome
	reason      serverReason
	duplicate   bool
	wasted      bool
	service     time.Duration // scenario time it held a slot
	lost        bool          // its answer is to be lost (response loss), drawn with its slot
}

// serveWork is the work handler: one attempt, through the scenario's
// server model, in the simulator's order: outage, rate limit,
// idempotency cache, random failure, slot or queue, service, response
// loss. A request whose body is too long (413), too slow (the connection
// is closed), or whose key is too long (400) is not an attempt.
func (s *Server) serveWork(w http.ResponseWriter, r *http.Request) {
	s.clockOnce.Do(func() { s.restartClock(false) }) // a handler served without Start
	if !s.enter() {
		w.Header().Set(ServerReasonHeader, serverReasonShutdown.String())
		writeError(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.leave()
	// A body is read within bodyTimeout. A request without one (the
	// driver's: Content-Length 0) has nothing to wait for, and spares
	// the two deadlines, each a runtime timer to move.
	if r.ContentLength != 0 {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, s.maxBody)); err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				writeError(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			closeConn(w) // too slow, or gone: no answer, which net/http would make a 200
			return
		}
		_ = rc.SetReadDeadline(time.Time{}) // the server notices a client that goes away meanwhile
	}
	a := &serverAttempt{wall: time.Now(), key: headerValue(r.Header, serverKeyHeader)}
	if len(a.key) > ServerMaxKeyLen {
		s.badKeys.Add(1)
		writeError(w, fmt.Sprintf("Idempotency-Key longer than %d bytes", ServerMaxKeyLen), http.StatusBadRequest)
		return
	}
	if n, ok := headerInt(r.Header, serverAttemptHeader); ok {
		a.attempt = int(n)
	}
	a.request, a.hasRequest = headerInt(r.Header, serverRequestHeader)
	a.planned, a.hasPlanned = headerInt(r.Header, serverPlannedHeader)
	if n, ok := headerInt(r.Header, serverOuterHeader); ok {
		a.outer, a.hasOuter = time.Duration(n), true
	}
	if n, ok := headerInt(r.Header, serverDeadlineHeader); ok {
		a.deadline, a.hasDeadline = time.Duration(n), true
	}
	cancelTimeout, cancellable := headerInt(r.Header, serverCancelHeader)

	// Outage and rate limit, at arrival.
	s.mu.Lock()
	now := s.nowLocked()
	s.lastID++
	a.id, a.arrived = s.lastID, now
	if t := time.Duration(s.fleetTimeout.Load()); !a.hasOuter && t > 0 {
		a.outer, a.hasOuter = now+t, true
		if !a.hasDeadline {
			a.deadline, a.hasDeadline = a.outer, true
		}
	}
	outage, down := s.outageAt(now)
	var hint time.Duration
	throttled := false
	if !down && s.srv.RateLimit != nil {
		var ok bool
		hint, ok = s.takeTokenLocked(now)
		throttled = !ok
	}
	s.mu.Unlock()
	switch {
	case down && outage.Mode == scenarios.Refuse:
		// Only a connection opened before the outage gets here (or
		// a handler served by another server): reset it.
		s.abort(w, a, strategies.Reset, serverReasonOutage)
		return
	case down && outage.Mode == scenarios.ErrorMode:
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonOutage)
		return
	case down:
		s.hold(w, r, a, outage)
		return
	case throttled:
		s.throttle(w, a, hint)
		return
	}

	// The idempotency cache answers a key it has seen.
	ctx := context.WithoutCancel(r.Context())
	if s.srv.Idempotency && a.key != "" {
		if s.pendingDone(a.key) { // processed here, not yet recorded
			s.answer(w, a, http.StatusServiceUnavailable, serverReasonInProgress)
			return
		}
		if s.cached(w, ctx, a) {
			return
		}
	}

	// A random failure, a slot, or the queue.
	s.mu.Lock()
	now = s.nowLocked()
	if p := s.srv.FailureProbability; p > 0 && s.rFault.Float64() < p {
		s.mu.Unlock()
		setPushback(w.Header(), s.srv.FailurePushback)
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonFailure)
		return
	}
	s.startQueuedLocked(now) // capacity may have grown since the last edge
	var waiter *serverWaiter
	switch {
	case s.qhead == nil && s.busy < s.capacityLocked(now):
		a.service, a.lost = s.startServiceLocked()
	case s.qlimit >= 0 && s.qlen >= s.qlimit:
		s.mu.Unlock()
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonOverload)
		return
	default:
		waiter = &serverWaiter{ctx: r.Context(), ready: make(chan struct{})}
		s.enqueueLocked(waiter, now)
	}
	s.mu.Unlock()
	if waiter != nil && cancellable {
		queued := waiter
		stop := context.AfterFunc(r.Context(), func() { s.cancelWaiter(queued, a, time.Duration(cancelTimeout)) })
		defer stop()
	}
	if waiter != nil {
		select {
		case <-waiter.ready:
		case <-s.quit:
			s.leaveQueue(waiter)
			s.abort(w, a, strategies.Reset, serverReasonShutdown)
			return
		}
		if waiter.shed {
			s.shed.Add(1)
			s.answer(w, a, http.StatusServiceUnavailable, serverReasonShed)
			return
		}
		if waiter.cancelled {
			s.abort(w, a, strategies.Timeout, serverReasonCancelled)
			return
		}
		if waiter.dropped {
			s.dropped.Add(1)
			s.metrics.dropped.Inc()
			s.abort(w, a, strategies.Timeout, serverReasonOverload)
			return
		}
		a.service, a.lost = waiter.service, waiter.lost
	}
	s.serve(w, r, ctx, a)
}

// headerValue returns the first value of header key in h, "" if none:
// Header.Get without canonicalizing key, which is canonical already.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// headerInt returns the integer value of header key in h, and false when
// it has none (absent, empty or not an integer).
func headerInt(h http.Header, key string) (int64, bool) {
	v := headerValue(h, key)
	if v == "" {
		return 0, false // parsing "" would make an error to throw away
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// serve processes attempt a, which holds a slot for its service time a.service.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, ctx context.Context, a *serverAttempt) {
	if s.srv.Idempotency && a.key != "" {
		if s.pendingDone(a.key) { // processed here, not yet recorded
			s.endService()
			s.answer(w, a, http.StatusServiceUnavailable, serverReasonInProgress)
			return
		}
		var fresh bool
		err := s.storeCall(ctx, func(ctx context.Context) (err error) {
			fresh, err = s.store.Begin(ctx, a.key)
			return err
		})
		if err != nil || !fresh {
			s.endService()
			if err != nil {
				s.storeErrs.Add(1)
				s.answer(w, a, http.StatusServiceUnavailable, serverReasonStoreError)
			} else if !s.cached(w, ctx, a) { // begun by another attempt since arrival
				s.answer(w, a, http.StatusServiceUnavailable, serverReasonInProgress)
			}
			return
		}
	}
	jobCtx, cancel := ctx, context.CancelFunc(func() {}) // ctx: r's, without its cancellation
	if s.propagate.Load() && a.hasDeadline {
		if s.now() >= a.deadline { // its caller has given up: drop it
			s.endService()
			s.expired.Add(1)
			s.abort(w, a, strategies.Timeout, serverReasonDeadline)
			return
		}
		jobCtx, cancel = context.WithDeadline(jobCtx, s.wallAt(a.deadline))
	}
	defer cancel()
	s.begun(a)
	// A single server frees its slot once the work is done; a graph's
	// replica once its calls after the work are done too.
	held := true
	release := func() {
		if held {
			s.endService()
			held = false
		}
	}
	expire := func() {
		release()
		s.expired.Add(1)
		s.abort(w, a, strategies.Timeout, serverReasonDeadline)
	}
	// A graph's service makes its downstream calls before and after its
	// own work, holding its slot, as a real service holds its thread.
	ok := s.calls == nil || s.calls.run(jobCtx, a, scenarios.Before)
	if !ok && jobCtx.Err() != nil {
		expire()
		return
	}
	if ok {
		switch s.work(jobCtx, a) {
		case workQuit:
			release()
			s.abort(w, a, strategies.Reset, serverReasonShutdown)
			return
		case workExpired:
			expire()
			return
		}
		if s.calls == nil {
			release()
		}
		s.processed.Add(1)
		s.metrics.processed.Inc()
		if a.hasOuter && s.now() > a.outer {
			s.late.Add(1)
		}
		if a.key != "" {
			a.duplicate = s.seen.processed(a.key)
			if a.duplicate {
				s.duplicates.Add(1)
				s.metrics.duplicates.Inc()
			}
			if s.srv.Idempotency {
				s.done(ctx, a.key)
			}
		}
		ok = s.calls == nil || s.calls.run(jobCtx, a, scenarios.After)
		if !ok && jobCtx.Err() != nil {
			expire()
			return
		}
	}
	release()
	if !ok {
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonDownstream)
		return
	}
	lost := a.lost
	if lost {
		s.lost.Add(1)
		s.metrics.lost.Inc()
	}
	switch {
	case r.Context().Err() != nil: // the client has gone: work for no one
		a.wasted = true
		s.wasted.Add(1)
		s.metrics.wasted.Inc()
		s.abort(w, a, strategies.Timeout, serverReasonProcessed)
	case lost:
		s.abort(w, a, strategies.Reset, serverReasonProcessed)
	default:
		s.answer(w, a, http.StatusOK, serverReasonProcessed)
	}
}

// begun counts attempt a's start of service and its wait in the queue.
func (s *Server) begun(a *serverAttempt) {
	s.mu.Lock()
	wait := s.nowLocked() - a.arrived
	s.mu.Unlock()
	s.begins.Add(1)
	s.queueWait.Add(int64(max(wait, 0)))
}

// How the work of an attempt ended.
const (
	workDone    = iota
	workExpired // its propagated deadline passed (ctx ended)
	workQuit    // Shutdown cut it short
)

// work sleeps attempt a's service time, holding its slot, unless ctx
// (its propagated deadline) or Shutdown ends it first.
func (s *Server) work(ctx context.Context, a *serverAttempt) int {
	d := s.real(a.service)
	if d <= 0 {
		return workDone
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return workDone
	case <-ctx.Done():
		return workExpired
	case <-s.quit:
		return workQuit
	}
}

// wallAt returns the wall-clock time of scenario time t.
func (s *Server) wallAt(t time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start.Add(s.real(t))
}

// endService frees the slot of a request leaving service and starts
// queued work.
func (s *Server) endService() {
	s.mu.Lock()
	s.busy--
	s.startQueuedLocked(s.nowLocked())
	s.mu.Unlock()
}

// cached answers attempt a from the idempotency cache if its key is
// known: 200 once processed, 503 while in progress. It reports whether
// it answered.
func (s *Server) cached(w http.ResponseWriter, ctx context.Context, a *serverAttempt) bool {
	var state string
	err := s.storeCall(ctx, func(ctx context.Context) (err error) {
		state, err = s.store.State(ctx, a.key)
		return err
	})
	switch {
	case err != nil:
		s.storeErrs.Add(1)
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonStoreError)
	case state == IdempotencyProcessed:
		s.answer(w, a, http.StatusOK, serverReasonCached)
	case state == IdempotencyInProgress:
		s.answer(w, a, http.StatusServiceUnavailable, serverReasonInProgress)
	default:
		return false
	}
	return true
}

// hold is a timeout outage: no answer until the client gives up, or
// until the outage's end plus the hold cap (or Shutdown), when the
// connection is closed without one.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, a *serverAttempt, o scenarios.Outage) {
	s.mu.Lock()
	s.held++
	until := s.start.Add(s.real(o.End() + s.holdCap))
	s.mu.Unlock()
	t := time.NewTimer(time.Until(until))
	select {
	case <-r.Context().Done():
	case <-t.C:
	case <-s.release:
	}
	t.Stop()
	s.mu.Lock()
	s.held--
	s.mu.Unlock()
	s.abort(w, a, strategies.Timeout, serverReasonOutage)
}

// throttle answers 429 with a Retry-After hint of wait, in scenario time
// (see ServerOptions.TimeScale).
func (s *Server) throttle(w http.ResponseWriter, a *serverAttempt, wait time.Duration) {
	date := time.Now().UTC().Truncate(time.Second)
	h := w.Header()
	h.Set("Date", date.Format(http.TimeFormat))
	h.Set("Retry-After", strategies.FormatRetryAfter(wait, s.format, date))
	setPushback(h, s.srv.RateLimit.Pushback)
	s.answer(w, a, http.StatusTooManyRequests, serverReasonRateLimit)
}

// PushbackHeader is gRPC's retry pushback hint (gRFC A6): milliseconds
// to wait before the retry, or a negative number for do not retry. The
// test servers write it in scenario time, as they do Retry-After.
const PushbackHeader = "Grpc-Retry-Pushback-Ms"

// setPushback sets the pushback hint hint, if any.
func setPushback(h http.Header, hint *time.Duration) {
	if hint != nil {
		h.Set(PushbackHeader, strconv.FormatInt(hint.Milliseconds(), 10))
	}
}

// serverBodies are the answers' bodies, by status.
// plainText is the Content-Type of every answer of the server's own.
var plainText = []string{"text/plain; charset=utf-8"}

// serverReasonValues are the values of ServerReasonHeader, by reason.
var serverReasonValues = func() (v [len(serverReasonNames)][]string) {
	for i, name := range serverReasonNames {
		v[i] = []string{name}
	}
	return v
}()

// serverBodyLengths are the Content-Lengths of serverBodies.
var serverBodyLengths = func() map[int][]string {
	m := map[int][]string{}
	for status, body := range serverBodies {
		m[status] = []string{strconv.Itoa(len(body))}
	}
	return m
}()

var serverBodies = map[int][]byte{
	http.StatusOK:                 []byte("ok\n"),
	http.StatusServiceUnavailable: []byte("unavailable\n"),
	http.StatusTooManyRequests:    []byte("too many requests\n"),
}

// answer writes the status as attempt a's answer and records it.
func (s *Server) answer(w http.ResponseWriter, a *serverAttempt, status int, reason serverReason) {
	body := serverBodies[status]
	h := w.Header()
	// Shared values, which net/http only reads: setting them allocates
	// nothing.
	h[ServerReasonHeader] = serverReasonValues[reason]
	h["Content-Type"] = plainText
	h["Content-Length"] = serverBodyLengths[status]
	writeDeadline(w) // time in the queue does not count against it
	w.WriteHeader(status)
	_, _ = w.Write(body)
	outcome := strategies.Success
	switch status {
	case http.StatusTooManyRequests:
		outcome = strategies.TooManyRequests
	case http.StatusServiceUnavailable:
		outcome = strategies.ServerError
	}
	s.finish(a, outcome, reason)
}

// writeDeadline gives the answer to be written on w serverWriteSlack to
// be written: a client that does not read it does not hold the handler.
func writeDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(serverWriteSlack))
}

// writeError answers with an error of the server's own, as http.Error
// does, within writeDeadline's time.
func writeError(w http.ResponseWriter, msg string, status int) {
	writeDeadline(w)
	http.Error(w, msg, status)
}

// abort records attempt a with outcome and reason, then closes its
// connection without an answer: with SO_LINGER 0, so the client sees a
// reset rather than a clean EOF.
func (s *Server) abort(w http.ResponseWriter, a *serverAttempt, outcome strategies.Outcome, reason serverReason) {
	s.finish(a, outcome, reason)
	closeConn(w)
}

// closeConn closes the connection of w without an answer: with
// SO_LINGER 0, so the client sees a reset rather than a clean EOF.
func closeConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		if errors.Is(err, http.ErrNotSupported) {
			panic(http.ErrAbortHandler) // net/http closes the stream quietly
		}
		return // the connection is gone already
	}
	raw := conn
	if sc, ok := conn.(*serverConn); ok {
		raw = sc.Conn
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// finish counts attempt a's outcome and logs it.
func (s *Server) finish(a *serverAttempt, outcome strategies.Outcome, reason serverReason) {
	a.outcome, a.reason = outcome, reason
	s.counts[outcome][reason].Add(1)
	s.metrics.attempt(outcome, reason).Inc()
	if s.log != nil {
		s.writeLog(a)
	}
	if s.observe != nil {
		s.observe(a.logLine())
	}
}

// enter counts a request into the handler; false once the server is
// stopping.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.active++
	return true
}

// leave counts a request out of the handler.
func (s *Server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 && s.idle != nil {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}
