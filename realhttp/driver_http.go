package realhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/zeontools/herdlab/strategies"
)

// The headers the driver sends with every attempt.
const (
	// DriverKeyHeader carries the request's idempotency key, a UUID v4
	// that stays the same on every retry and replay of the request.
	DriverKeyHeader = "Idempotency-Key"
	// DriverAttemptHeader is the attempt number, from 1: how many times
	// the request has been sent, this one included (it keeps counting
	// through a DLQ replay).
	DriverAttemptHeader = "Herdlab-Attempt"
	// DriverRequestHeader is the request's index in the workload, from 0.
	DriverRequestHeader = "Herdlab-Request"
	// DriverPlannedHeader is when the attempt was due: nanoseconds of
	// scenario time since the start of the run.
	DriverPlannedHeader = "Herdlab-Planned"
	// DriverReplayHeader is "1" on a send by ReplayDLQ.
	DriverReplayHeader = "Herdlab-Replay"
)

// driverMaxBody is how much of a response body the driver reads (and
// throws away) so that the connection goes back to the pool; a longer
// body closes the connection.
const driverMaxBody = 64 << 10

// driverNewClient returns the driver's default client: one transport
// shared by every sender of a run, at most maxConns connections per host
// (a request beyond waits for one, within its attempt's deadline), as
// many kept idle, HTTP/1.1, no proxy, no redirects followed and no
// overall timeout: each attempt's deadline comes from its context.
func driverNewClient(maxConns int) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     maxConns,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		// A non-nil empty map turns HTTP/2 off: the pool bound then
		// bounds connections, as it does for the webhook senders the
		// scenarios model.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return client, tr
}

// driverCall is one attempt to send.
type driverCall struct {
	request int
	key     uuid.UUID
	attempt int
	planned time.Duration // scenario time the attempt was due
	timeout time.Duration // wall-clock deadline of the attempt; 0 means none
	replay  bool
	// outer is, on a graph's downstream call, when the fleet's attempt
	// above it gives up (scenario time), if hasOuter.
	outer    time.Duration
	hasOuter bool
	// deadline is, with deadline propagation, when the caller gives the
	// attempt up (scenario time), if hasDeadline.
	deadline    time.Duration
	hasDeadline bool
	// cancellable marks a copy of an attempt hedged with cancel: the
	// sender hangs up on it when another copy wins, and the server
	// drops it from its queue then (serverCancelHeader).
	cancellable bool
	// turn is, on a graph's downstream call with a Turn hook, the
	// attempt's GraphTurn (GraphTurnHeader).
	turn string
}

// driverBody is the body of an attempt: {"request":N}.
func driverBody(request int) []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"request":`...)
	b = strconv.AppendInt(b, int64(request), 10)
	return append(b, '}')
}

// driverSend sends one attempt with client to target and returns what
// the sender saw, and when the request was handed to the client (wall
// clock). live is false when ctx ended first: the attempt was abandoned
// and has no outcome.
//
// The request is a POST whose body cannot be rewound (GetBody is nil), so
// that net/http never resends it on its own over a fresh connection: the
// Idempotency-Key header would otherwise make it "replayable", and a lost
// response would be retried out of sight of the policy.
func driverSend(ctx context.Context, client *http.Client, target string, c driverCall) (a driverAnswer, sent time.Time, live bool) {
	return driverSendResult(ctx, client, target, c)
}

// driverAnswer is what a sender saw of one attempt: the outcome for the
// policy, whether the 503 was the server's full queue (the herdlab test
// server says so in its Herdlab-Reason header), the HTTP status (0
// without an answer) and the client's error without an answer.
type driverAnswer struct {
	res      strategies.Result
	rejected bool
	status   int
	err      error
}

// driverRejectedReason is the Herdlab-Reason of a 503 for a full queue.
const driverRejectedReason = "overload"

func driverSendResult(ctx context.Context, client *http.Client, target string, c driverCall) (a driverAnswer, sent time.Time, live bool) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, target, nil)
	if err != nil { // the target was checked before the run
		return driverAnswer{res: strategies.Result{Outcome: strategies.ClientError}, err: err}, time.Now(), true
	}
	body := driverBody(c.request)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = nil
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h[DriverKeyHeader] = []string{c.key.String()}
	h[DriverAttemptHeader] = []string{strconv.Itoa(c.attempt)}
	h[DriverRequestHeader] = []string{strconv.Itoa(c.request)}
	h[DriverPlannedHeader] = []string{strconv.FormatInt(int64(c.planned), 10)}
	if c.replay {
		h[DriverReplayHeader] = []string{"1"}
	}
	if c.hasOuter {
		h[serverOuterHeader] = []string{strconv.FormatInt(int64(c.outer), 10)}
	}
	if c.hasDeadline {
		h[serverDeadlineHeader] = []string{strconv.FormatInt(int64(c.deadline), 10)}
	}
	if c.cancellable {
		h[serverCancelHeader] = []string{strconv.FormatInt(int64(c.timeout), 10)}
	}
	if c.turn != "" {
		h[GraphTurnHeader] = []string{c.turn}
	}
	sent = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return a, sent, false
		}
		return driverAnswer{res: strategies.Result{Outcome: driverClassify(actx, err)}, err: err}, sent, true
	}
	defer resp.Body.Close()
	a = answerOf(resp.StatusCode, resp.Header)
	res := &a.res
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, driverMaxBody))
	if err != nil {
		if ctx.Err() != nil {
			return a, sent, false
		}
		if res.Outcome == strategies.Success {
			// The answer was cut short: the sender cannot know that the
			// request succeeded.
			res.Outcome = driverClassify(actx, err)
			a.status, a.err = 0, err
		}
	}
	if v := resp.Header.Get("Retry-After"); v != "" &&
		(res.Outcome == strategies.TooManyRequests || res.Outcome == strategies.ServerError) {
		date, derr := http.ParseTime(resp.Header.Get("Date"))
		if derr != nil {
			date = time.Now()
		}
		res.RetryAfter, res.HasRetryAfter = strategies.ParseRetryAfter(v, date)
	}
	if v := resp.Header.Get(PushbackHeader); v != "" && res.Outcome != strategies.Success {
		res.Pushback, res.HasPushback = parsePushback(v)
	}
	return a, sent, true
}

// parsePushback reads a pushback hint: an integer of milliseconds. As in
// gRPC, a value that is not one means do not retry.
func parsePushback(v string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms < 0 {
		return -1, true
	}
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, true
}

// driverStatusOutcome maps an HTTP status to an outcome: 2xx success,
// 429, 5xx, and any other status (4xx, and the 1xx and 3xx a sender
// cannot act on, since it follows no redirects) a client error.
func driverStatusOutcome(code int) strategies.Outcome {
	switch {
	case code >= 200 && code < 300:
		return strategies.Success
	case code == http.StatusTooManyRequests:
		return strategies.TooManyRequests
	case code >= 500 && code < 600:
		return strategies.ServerError
	}
	return strategies.ClientError
}

// driverClassify maps the error of an attempt without an answer to an
// outcome: the attempt's deadline (or any network timeout) is a timeout;
// a refused connection, or any other failure to connect (no route, no
// such host), is refused; anything after the connection was made (a
// reset, EOF before the answer, a broken pipe) is a reset: the response
// was lost.
func driverClassify(actx context.Context, err error) strategies.Outcome {
	if errors.Is(actx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return strategies.Timeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return strategies.Timeout
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return strategies.Refused
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return strategies.Refused
	}
	return strategies.Reset
}
