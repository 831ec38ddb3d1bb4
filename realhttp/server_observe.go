package realhttp

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zeontools/herdlab/strategies"
)

// serverOutcomes is the number of strategies outcomes.
const serverOutcomes = int(strategies.ClientError) + 1

// serverReason is why the server answered an attempt as it did.
type serverReason uint8

// The reasons, as written in the log, the metrics and ServerReasonHeader.
const (
	serverReasonOutage     serverReason = iota // an outage window
	serverReasonOverload                       // the queue was full, or drop_expired skipped the request
	serverReasonFailure                        // a random failure
	serverReasonRateLimit                      // no token in the rate limit's bucket
	serverReasonProcessed                      // processed (the answer may still be lost)
	serverReasonCached                         // answered from the idempotency cache
	serverReasonInProgress                     // its key is being processed by another attempt
	serverReasonStoreError                     // the idempotency store failed
	serverReasonShutdown                       // cut short by Shutdown
	serverReasonDownstream                     // a downstream call of a graph's service failed
	serverReasonShed                           // taken from the queue and answered 503: waited past the shed bound, or CoDel
	serverReasonDeadline                       // dropped: its propagated deadline passed
	serverReasonCancelled                      // taken from the queue: its sender cancelled it (a hedge's loser)
	serverNumReasons
)

var serverReasonNames = [serverNumReasons]string{
	"outage", "overload", "failure", "rate_limit", "processed", "cached", "in_progress", "store_error", "shutdown", "downstream", "shed", "deadline", "cancelled",
}

func (r serverReason) String() string { return serverReasonNames[r] }

// ServerLogLine is one line of the request log (ServerOptions.Log): one
// attempt that reached the handler, written when its outcome is known
// (so lines are in order of outcome, not of arrival).
type ServerLogLine struct {
	// T is when the attempt reached the handler: scenario seconds since
	// Start (or NewServer, for a server used through Handler).
	T float64 `json:"t"`
	// AtNS is the same instant on the wall clock, in Unix nanoseconds.
	AtNS int64 `json:"at_ns"`
	// ID is the server's number for the attempt, from 1 in order of
	// arrival.
	ID uint64 `json:"id"`
	// Key is the Idempotency-Key header, if any: its first 64 bytes and
	// "..." when it is longer (see KeyLen).
	Key string `json:"key,omitempty"`
	// Attempt is the Herdlab-Attempt header (from 1), 0 without one.
	Attempt int `json:"attempt"`
	// Request is the Herdlab-Request header, the request's index in the
	// driver's workload; absent without one.
	Request *int64 `json:"request,omitempty"`
	// Outcome is what the client saw: success, timeout (no answer: the
	// client gave up first, or the connection was closed after a
	// timeout outage's hold), reset (the connection closed without an
	// answer), 5xx or 429.
	Outcome string `json:"outcome"`
	// Reason is why: outage, overload (queue full, or skipped by
	// drop_expired), failure, rate_limit, processed, cached,
	// in_progress, store_error or shutdown.
	Reason string `json:"reason"`
	// PlannedNS is the Herdlab-Planned header: when the driver meant to
	// send the attempt, in scenario nanoseconds since its start; absent
	// without one.
	PlannedNS *int64 `json:"planned_ns,omitempty"`
	// ServiceS is the service time the attempt was given, in scenario
	// seconds; 0 if it was never given a slot.
	ServiceS float64 `json:"service_s,omitempty"`
	// KeyLen is the length of the key in bytes when Key had to be
	// truncated (to serverLogKeyLen bytes and "..."); absent otherwise.
	KeyLen int `json:"key_len,omitempty"`
	// Duplicate is true when the attempt processed a key this server
	// had processed before, with or without idempotency.
	Duplicate bool `json:"duplicate,omitempty"`
	// Wasted is true when the attempt was processed after its client
	// had gone.
	Wasted bool `json:"wasted,omitempty"`
}

// serverLogKeyLen is the most bytes of a key the log writes.
const serverLogKeyLen = 64

// writeLog writes attempt a's log line with one Write, under logMu.
// Write errors are dropped: the log never fails a request.
func (s *Server) writeLog(a *serverAttempt) {
	line := a.logLine()
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.logBuf = appendLogLine(s.logBuf[:0], &line)
	_, _ = s.log.Write(s.logBuf)
}

// appendLogLine appends line as json.Marshal encodes it, and a newline,
// without json's reflection, which took a fifth of the log's cost a
// request (TestAppendLogLineIsJSONs holds the two to the same bytes).
func appendLogLine(b []byte, line *ServerLogLine) []byte {
	b = append(b, `{"t":`...)
	b = appendJSONFloat(b, line.T)
	b = append(b, `,"at_ns":`...)
	b = strconv.AppendInt(b, line.AtNS, 10)
	b = append(b, `,"id":`...)
	b = strconv.AppendUint(b, line.ID, 10)
	if line.Key != "" {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, line.Key)
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(line.Attempt), 10)
	if line.Request != nil {
		b = append(b, `,"request":`...)
		b = strconv.AppendInt(b, *line.Request, 10)
	}
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, line.Outcome)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, line.Reason)
	if line.PlannedNS != nil {
		b = append(b, `,"planned_ns":`...)
		b = strconv.AppendInt(b, *line.PlannedNS, 10)
	}
	if line.ServiceS != 0 {
		b = append(b, `,"service_s":`...)
		b = appendJSONFloat(b, line.ServiceS)
	}
	if line.KeyLen != 0 {
		b = append(b, `,"key_len":`...)
		b = strconv.AppendInt(b, int64(line.KeyLen), 10)
	}
	if line.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	if line.Wasted {
		b = append(b, `,"wasted":true`...)
	}
	return append(b, "}\n"...)
}

// appendJSONFloat appends f as encoding/json writes a float64 (f is
// finite): the shortest decimal that reads back as f, in exponent form
// below 1e-6 or from 1e21, with a one-digit exponent not padded.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 is written e-7
		b = b[:n-1]
	}
	return b
}

// appendJSONString appends s quoted as encoding/json quotes it: as it is
// when it is printable ASCII that needs no escape (the reasons, the
// outcomes, most keys), or else through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes
				return append(b, `""`...)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// logLine returns attempt a's line of the request log.
func (a *serverAttempt) logLine() ServerLogLine {
	line := ServerLogLine{
		T:         a.arrived.Seconds(),
		AtNS:      a.wall.UnixNano(),
		ID:        a.id,
		Key:       a.key,
		Attempt:   a.attempt,
		Outcome:   a.outcome.String(),
		Reason:    a.reason.String(),
		ServiceS:  a.service.Seconds(),
		Duplicate: a.duplicate,
		Wasted:    a.wasted,
	}
	if len(line.Key) > serverLogKeyLen {
		line.KeyLen = len(line.Key)
		line.Key = line.Key[:serverLogKeyLen] + "..."
	}
	if a.hasRequest {
		line.Request = &a.request
	}
	if a.hasPlanned {
		line.PlannedNS = &a.planned
	}
	return line
}

// serverMetrics are the server's Prometheus metrics, on a registry of
// their own: two servers in one process do not collide, and nothing
// global is touched.
type serverMetrics struct {
	reg                                          *prometheus.Registry
	attempts                                     *prometheus.CounterVec
	pairs                                        [serverOutcomes][serverNumReasons]prometheus.Counter
	processed, duplicates, wasted, lost, dropped prometheus.Counter
}

// serverPairs are the outcome and reason pairs that can occur, exported
// at 0 from the start.
var serverPairs = []struct {
	o strategies.Outcome
	r serverReason
}{
	{strategies.Success, serverReasonProcessed},
	{strategies.Success, serverReasonCached},
	{strategies.Timeout, serverReasonOutage},
	{strategies.Timeout, serverReasonOverload},
	{strategies.Timeout, serverReasonProcessed},
	{strategies.Reset, serverReasonOutage},
	{strategies.Reset, serverReasonProcessed},
	{strategies.Reset, serverReasonShutdown},
	{strategies.ServerError, serverReasonOutage},
	{strategies.ServerError, serverReasonOverload},
	{strategies.ServerError, serverReasonFailure},
	{strategies.ServerError, serverReasonInProgress},
	{strategies.ServerError, serverReasonStoreError},
	{strategies.ServerError, serverReasonDownstream},
	{strategies.ServerError, serverReasonShed},
	{strategies.Timeout, serverReasonDeadline},
	{strategies.TooManyRequests, serverReasonRateLimit},
}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "herdlab", Subsystem: "server", Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string, read func(st *Server) int) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(
			prometheus.GaugeOpts{Namespace: "herdlab", Subsystem: "server", Name: name, Help: help},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				return float64(read(s))
			}))
	}
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "herdlab", Subsystem: "server", Name: "attempts_total",
		Help: "Attempts that reached the server, by the outcome the client saw and the reason.",
	}, []string{"outcome", "reason"})
	m.reg.MustRegister(m.attempts)
	for _, p := range serverPairs {
		m.pairs[p.o][p.r] = m.attempts.WithLabelValues(p.o.String(), p.r.String())
	}
	m.processed = counter("processed_total", "Requests processed (service time served).")
	m.duplicates = counter("duplicates_total", "Requests processed again for an Idempotency-Key this server had processed, with or without idempotency.")
	m.wasted = counter("wasted_total", "Requests processed after their client had gone.")
	m.lost = counter("lost_responses_total", "Answers dropped on purpose (response loss): the connection was reset.")
	m.dropped = counter("dropped_expired_total", "Queued requests skipped because their client had gone (drop_expired).")
	counterFunc := func(name, help string, read func() int64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(
			prometheus.CounterOpts{Namespace: "herdlab", Subsystem: "server", Name: name, Help: help},
			func() float64 { return float64(read()) }))
	}
	counterFunc("keys_forgotten_total", "Processed keys the duplicate window forgot: a duplicate of one goes uncounted.",
		func() int64 { _, n := s.seen.stats(); return n })
	counterFunc("bad_keys_total", "Requests answered 400 for an Idempotency-Key too long (not attempts).", s.badKeys.Load)
	counterFunc("store_errors_total", "Failed calls to the idempotency store (each answered 503 store_error, or retried for a Done).", s.storeErrs.Load)
	counterFunc("store_data_lost_total", "Times the idempotency store was found to have lost its data (its epoch key gone).", s.dataLost.Load)
	counterFunc("store_done_lost_total", "Processed keys whose Done never reached the store: they stay in progress until their lease ends.", s.doneLost.Load)
	gauge("store_done_pending", "Processed keys whose Done failed and is being retried.", func(s *Server) int { return len(s.pending) })
	gauge("resets", "Resets of the scenario clock (the control endpoint).", func(s *Server) int { return s.resets })
	m.reg.MustRegister(prometheus.NewGaugeFunc(
		prometheus.GaugeOpts{Namespace: "herdlab", Subsystem: "server", Name: "connections", Help: "Connections open (the work listener's)."},
		func() float64 {
			s.mu.Lock()
			ln := s.ln
			s.mu.Unlock()
			if ln == nil {
				return 0
			}
			return float64(ln.Open())
		}))
	gauge("in_flight", "Requests in service.", func(s *Server) int { return s.busy })
	gauge("queue_depth", "Requests waiting for a slot.", func(s *Server) int { return s.qlen })
	gauge("held", "Requests held without an answer by a timeout outage.", func(s *Server) int { return s.held })
	return m
}

// attempt returns the attempts counter of outcome o and reason r.
func (m *serverMetrics) attempt(o strategies.Outcome, r serverReason) prometheus.Counter {
	if c := m.pairs[o][r]; c != nil {
		return c
	}
	return m.attempts.WithLabelValues(o.String(), r.String())
}

func (m *serverMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
