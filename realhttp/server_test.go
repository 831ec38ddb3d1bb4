package realhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// serverTestStrategies ends every test scenario: the server needs none,
// but a scenario does.
const serverTestStrategies = `
workload: {requests: 1}
strategies:
  - {name: s, backoff: {kind: fixed, delay: 1s}, max_attempts: 3, timeout: 1s}
`

// serverTestScenario parses a scenario whose server section is server
// (YAML, indented by two spaces).
func serverTestScenario(t testing.TB, server string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("test.yaml", []byte("name: t\nserver:\n"+server+serverTestStrategies))
	require.NoError(t, err)
	return sc
}

// serverTestLeaks checks, when the test ends (after every cleanup
// registered later), that it left no goroutine behind. goleak.VerifyNone
// per test rather than VerifyTestMain: the package's TestMain is not this
// file's to own.
func serverTestLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// serverTestStart starts a server for the scenario on loopback and shuts
// it down at the end of the test.
func serverTestStart(t *testing.T, sc *scenarios.Scenario, opts ServerOptions) *Server {
	t.Helper()
	s, err := NewServer(sc, opts)
	require.NoError(t, err)
	require.NoError(t, s.Start(""))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, s.Shutdown(ctx))
	})
	return s
}

// serverTestClient returns a client whose connections are closed at the
// end of the test.
func serverTestClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// serverTestPost sends an attempt as the driver does: a POST whose body
// cannot be rewound, so that net/http never resends it on its own.
func serverTestPost(ctx context.Context, c *http.Client, url string, headers ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(strings.NewReader("{}"))
	req.ContentLength = 2
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

// serverTestWait polls cond until it holds, for at most 5 s.
func serverTestWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// serverTestIdle waits until no request is in service, queued or held.
func serverTestIdle(t *testing.T, s *Server) {
	t.Helper()
	serverTestWait(t, "an idle server", func() bool {
		st := s.Stats()
		return st.InFlight == 0 && st.Queued == 0 && st.Held == 0
	})
}

// serverTestLog is a request log that tests may read while the server
// writes.
type serverTestLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *serverTestLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines parses every line, failing the test on a line that is not a
// JSON object with the log's fields.
func (l *serverTestLog) lines(t *testing.T) []ServerLogLine {
	t.Helper()
	l.mu.Lock()
	data := l.buf.String()
	l.mu.Unlock()
	var out []ServerLogLine
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		var raw map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &raw), "line %q", sc.Text())
		for _, f := range []string{"t", "at_ns", "id", "attempt", "outcome", "reason"} {
			require.Contains(t, raw, f, "line %q", sc.Text())
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var line ServerLogLine
		require.NoError(t, dec.Decode(&line))
		out = append(out, line)
	}
	return out
}

func TestServerOutageRefuse(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.05: the outage runs from 100 ms to 350 ms; a request
	// sent at 0 is served for 300 ms, through the start of the outage.
	// (100 ms leave a loaded machine time to send it before the outage.)
	sc := serverTestScenario(t, `
  service_time: 6s
  outages: [{start: 2s, duration: 5s, mode: refuse}]
`)
	log := &serverTestLog{}
	start := time.Now() // no later than the server's clock starts
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05, Log: log})
	c := serverTestClient(t)
	addr := s.Addr()

	inFlight := make(chan error, 1)
	go func() {
		resp, err := serverTestPost(context.Background(), c, s.URL())
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		inFlight <- err
	}()
	serverTestWait(t, "the first request in service", func() bool { return s.Stats().InFlight == 1 })

	// During the window, dials are refused. (A dial racing the close
	// may be reset by the kernel instead, from the accept backlog.)
	serverTestWait(t, "a refused dial", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})
	refusedAt := time.Since(start)
	assert.GreaterOrEqual(t, refusedAt, 100*time.Millisecond, "refused before the outage")
	_, err := serverTestPost(context.Background(), serverTestClient(t), s.URL())
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a request during the window")

	// The connection accepted before the window is not killed.
	require.NoError(t, <-inFlight)

	// After it, the same address serves again.
	serverTestWait(t, "the listener back up", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
	assert.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond, "up before the outage ended")
	resp, err := serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, addr, s.Addr())

	st := s.Stats()
	assert.Equal(t, int64(2), st.Attempts, "refused dials never reach the server")
	assert.Equal(t, int64(2), st.ByOutcome["success"])
}

func TestServerOutageTimeout(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.02 the outage lasts 200 ms; the client gives up after 30 ms.
	sc := serverTestScenario(t, `
  service_time: 10ms
  outages: [{start: 0s, duration: 10s, mode: timeout}]
`)
	log := &serverTestLog{}
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.02, Log: log})
	c := serverTestClient(t)

	// sent is taken before the deadline is set, so that a pause between
	// the two on a loaded machine cannot make the wait look short.
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err := serverTestPost(ctx, c, s.URL())
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "no answer before the client's deadline")
	assert.GreaterOrEqual(t, time.Since(sent), 30*time.Millisecond)
	serverTestWait(t, "the held request released", func() bool { return s.Stats().Attempts == 1 })
	assert.Equal(t, int64(1), s.Stats().ByReason["outage"])

	// A held request ends when its client gives up, not at the end of
	// the outage: the server holds nothing now.
	assert.Equal(t, 0, s.Stats().Held)

	// After the outage, answers come again.
	serverTestWait(t, "the end of the outage", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		resp, err := serverTestPost(ctx, c, s.URL())
		return err == nil && resp.StatusCode == http.StatusOK
	})
	lines := log.lines(t)
	require.NotEmpty(t, lines)
	assert.Equal(t, "timeout", lines[0].Outcome)
	assert.Equal(t, "outage", lines[0].Reason)
	assert.Equal(t, "success", lines[len(lines)-1].Outcome)
}

func TestServerOutageTimeoutHoldCap(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.02: the outage lasts 20 ms, and the scenario's longest
	// strategy timeout (1 s) 20 ms more; a client that never gives up
	// has its connection closed without an answer after about 40 ms.
	sc := serverTestScenario(t, "  outages: [{start: 0s, duration: 1s, mode: timeout}]\n")
	start := time.Now()
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.02})
	_, err := serverTestPost(context.Background(), serverTestClient(t), s.URL())
	require.Error(t, err, "no answer")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 40*time.Millisecond)
	assert.Less(t, took, time.Second)
	assert.Equal(t, int64(1), s.Stats().ByOutcome["timeout"])
}

func TestServerOutageError(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, `
  service_time: 10ms
  outages: [{start: 0s, duration: 20s, mode: error}]
`)
	// At scale 0.02 the outage lasts 400 ms: long enough that a loaded
	// machine's first answer still comes from it.
	start := time.Now() // no later than the server's clock starts
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.02})
	c := serverTestClient(t)
	resp, err := serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "outage", resp.Header.Get(ServerReasonHeader))
	assert.Less(t, time.Since(start), 400*time.Millisecond, "an error outage answers at once")

	serverTestWait(t, "the end of the outage", func() bool {
		resp, err = serverTestPost(context.Background(), c, s.URL())
		require.NoError(t, err)
		return resp.StatusCode == http.StatusOK
	})
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
	assert.Equal(t, "processed", resp.Header.Get(ServerReasonHeader))
}

func TestServerCapacity(t *testing.T) {
	serverTestLeaks(t)
	// Two slots, one place in the queue, 200 ms of service at scale 0.05.
	sc := serverTestScenario(t, `
  concurrency: 2
  queue: 1
  service_time: 4s
`)
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05})
	c := serverTestClient(t)

	type answer struct {
		status int
		reason string
		took   time.Duration
	}
	answers := make(chan answer, 5)
	send := func() {
		start := time.Now()
		resp, err := serverTestPost(context.Background(), c, s.URL())
		if !assert.NoError(t, err) {
			answers <- answer{}
			return
		}
		answers <- answer{resp.StatusCode, resp.Header.Get(ServerReasonHeader), time.Since(start)}
	}
	// The first three take the slots and the queue, in order; then two more.
	for i := range 3 {
		go send()
		serverTestWait(t, "admission", func() bool {
			st := s.Stats()
			return st.InFlight+st.Queued == i+1
		})
	}
	go send()
	go send()

	var ok, rejected int
	for range 5 {
		a := <-answers
		switch a.status {
		case http.StatusOK:
			ok++
			assert.GreaterOrEqual(t, a.took, 190*time.Millisecond)
		case http.StatusServiceUnavailable:
			rejected++
			assert.Equal(t, "overload", a.reason)
			assert.Less(t, a.took, 150*time.Millisecond, "overflow is answered at once")
		default:
			t.Errorf("unexpected status %d", a.status)
		}
	}
	assert.Equal(t, 3, ok)
	assert.Equal(t, 2, rejected)
	st := s.Stats()
	assert.Equal(t, int64(3), st.Processed)
	assert.Equal(t, int64(2), st.ByReason["overload"])
}

func TestServerServiceTime(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, `  service_time: 200ms`)
	log := &serverTestLog{}
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.1, Log: log})
	c := serverTestClient(t)
	_, err := serverTestPost(context.Background(), c, s.URL()) // warm the connection
	require.NoError(t, err)

	start := time.Now()
	resp, err := serverTestPost(context.Background(), c, s.URL())
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.GreaterOrEqual(t, took, 20*time.Millisecond)
	// Unscaled, the service would take 200 ms; the slack is for a loaded
	// machine.
	assert.Less(t, took, 180*time.Millisecond)
	lines := log.lines(t)
	require.Len(t, lines, 2)
	assert.InDelta(t, 0.2, lines[1].ServiceS, 1e-9, "the log states service in scenario seconds")
}

func TestServerSlowdownAndWarmup(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, `
  concurrency: 100
  service_time: 100ms
  slowdown: 10ms
  outages: [{start: 10s, duration: 10s, mode: error}]
  warmup: {duration: 10s, from: 0.25}
`)
	s, err := NewServer(sc, ServerOptions{})
	require.NoError(t, err)

	// Service time = base + slowdown x requests in service.
	s.mu.Lock()
	var got []time.Duration
	for range 3 {
		d, _ := s.startServiceLocked()
		got = append(got, d)
	}
	s.busy = 0
	s.mu.Unlock()
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 110 * time.Millisecond, 120 * time.Millisecond}, got)

	// Capacity ramps from 25 to 100 over 10 s after the outage, in 100 steps.
	tests := []struct {
		at   time.Duration
		want int
	}{
		{0, 100},
		{15 * time.Second, 100}, // during the outage
		{20 * time.Second, 25},
		{25 * time.Second, 62},
		{29*time.Second + 950*time.Millisecond, 99},
		{30 * time.Second, 100},
	}
	for _, tt := range tests {
		s.mu.Lock()
		assert.Equal(t, tt.want, s.capacityLocked(tt.at), "at %s", tt.at)
		s.mu.Unlock()
	}
	require.NoError(t, s.Shutdown(context.Background()))
}

func TestServerRateLimit(t *testing.T) {
	tests := []struct {
		name       string
		rateLimit  string
		scale      float64
		min, below time.Duration // the parsed hint is in [min, below)
	}{
		{"seconds-fixed", `{rate: 1, burst: 1, retry_after: 3s, format: seconds}`, 1, 3 * time.Second, 3*time.Second + 1},
		{"seconds-auto", `{rate: 0.5, burst: 1, format: seconds}`, 1, time.Second, 2*time.Second + 1},
		{"http-date-fixed", `{rate: 1, burst: 1, retry_after: 3s, format: http-date}`, 1, 3 * time.Second, 4 * time.Second},
		{"http-date-auto", `{rate: 0.5, burst: 1, format: http-date}`, 1, time.Second, 3 * time.Second},
		// Under compression, hints stay in scenario seconds.
		{"seconds-scaled", `{rate: 1, burst: 1, retry_after: 3s, format: seconds}`, 0.01, 3 * time.Second, 3*time.Second + 1},
		{"http-date-scaled", `{rate: 1, burst: 1, retry_after: 3s, format: http-date}`, 0.01, 3 * time.Second, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverTestLeaks(t)
			sc := serverTestScenario(t, "  service_time: 1ms\n  rate_limit: "+tt.rateLimit+"\n")
			s := serverTestStart(t, sc, ServerOptions{TimeScale: tt.scale})
			c := serverTestClient(t)
			resp, err := serverTestPost(context.Background(), c, s.URL())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "the burst's token")

			resp, err = serverTestPost(context.Background(), c, s.URL())
			require.NoError(t, err)
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			assert.Equal(t, "rate_limit", resp.Header.Get(ServerReasonHeader))
			value := resp.Header.Get("Retry-After")
			date, err := http.ParseTime(resp.Header.Get("Date"))
			require.NoError(t, err)
			wait, ok := strategies.ParseRetryAfter(value, date)
			require.True(t, ok, "Retry-After %q", value)
			assert.GreaterOrEqual(t, wait, tt.min, "Retry-After %q", value)
			assert.Less(t, wait, tt.below, "Retry-After %q", value)
			if strings.HasPrefix(tt.name, "seconds") {
				_, err := strconv.Atoi(value)
				assert.NoError(t, err, "delta-seconds")
			} else {
				_, err := http.ParseTime(value)
				assert.NoError(t, err, "an HTTP-date")
			}
		})
	}
}

func TestServerResponseLoss(t *testing.T) {
	tests := []struct {
		name        string
		idempotency bool
		want        []string // the outcome:reason of three attempts of one key
		processed   int64
		duplicates  int64
	}{
		{"without-idempotency", false, []string{"reset:processed", "reset:processed", "reset:processed"}, 3, 2},
		{"with-idempotency", true, []string{"reset:processed", "success:cached", "success:cached"}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverTestLeaks(t)
			sc := serverTestScenario(t, fmt.Sprintf("  service_time: 1ms\n  response_loss: 1\n  idempotency: %v\n", tt.idempotency))
			log := &serverTestLog{}
			s := serverTestStart(t, sc, ServerOptions{Log: log})
			c := serverTestClient(t)
			for i := range 3 {
				resp, err := serverTestPost(context.Background(), c, s.URL(),
					"Idempotency-Key", "k1", "Herdlab-Attempt", strconv.Itoa(i+1))
				if tt.want[i] == "success:cached" {
					require.NoError(t, err)
					assert.Equal(t, http.StatusOK, resp.StatusCode)
				} else {
					require.Error(t, err, "the answer is lost")
					assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
				}
			}
			serverTestIdle(t, s)
			st := s.Stats()
			assert.Equal(t, tt.processed, st.Processed)
			assert.Equal(t, tt.duplicates, st.Duplicates)
			assert.Equal(t, tt.processed, st.Lost)

			lines := log.lines(t)
			require.Len(t, lines, 3)
			var duplicates int64
			for i, l := range lines {
				assert.Equal(t, tt.want[i], l.Outcome+":"+l.Reason)
				assert.Equal(t, "k1", l.Key)
				assert.Equal(t, i+1, l.Attempt)
				if l.Duplicate {
					duplicates++
				}
			}
			assert.Equal(t, tt.duplicates, duplicates, "duplicates counted by the log")
		})
	}
}

func TestServerIdempotency(t *testing.T) {
	serverTestLeaks(t)
	// 100 ms of service at scale 0.5: a repeat during it is answered 503.
	sc := serverTestScenario(t, "  service_time: 200ms\n  idempotency: true\n")
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.5})
	c := serverTestClient(t)

	first := make(chan *http.Response, 1)
	go func() {
		resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
		assert.NoError(t, err)
		first <- resp
	}()
	serverTestWait(t, "the first attempt in service", func() bool { return s.Stats().InFlight == 1 })
	resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "in_progress", resp.Header.Get(ServerReasonHeader))

	resp = <-first
	require.NotNil(t, resp)
	assert.Equal(t, "processed", resp.Header.Get(ServerReasonHeader))
	resp, err = serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "cached", resp.Header.Get(ServerReasonHeader))

	// Without a key, every request is processed.
	for range 2 {
		resp, err = serverTestPost(context.Background(), c, s.URL())
		require.NoError(t, err)
		assert.Equal(t, "processed", resp.Header.Get(ServerReasonHeader))
	}
	st := s.Stats()
	assert.Equal(t, int64(3), st.Processed)
	assert.Equal(t, int64(0), st.Duplicates)
}

func TestServerDropExpired(t *testing.T) {
	tests := []struct {
		dropExpired                bool
		processed, wasted, dropped int64
	}{
		{false, 2, 1, 0},
		{true, 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("drop_expired=%v", tt.dropExpired), func(t *testing.T) {
			serverTestLeaks(t)
			// One slot, 100 ms of service at scale 0.05.
			sc := serverTestScenario(t, fmt.Sprintf("  concurrency: 1\n  service_time: 2s\n  drop_expired: %v\n", tt.dropExpired))
			log := &serverTestLog{}
			s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05, Log: log})
			c := serverTestClient(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, err := serverTestPost(context.Background(), c, s.URL())
				assert.NoError(t, err)
			}()
			serverTestWait(t, "the first in service", func() bool { return s.Stats().InFlight == 1 })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			_, err := serverTestPost(ctx, c, s.URL())
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "the second gives up in the queue")
			<-done
			serverTestIdle(t, s)
			serverTestWait(t, "both attempts logged", func() bool { return s.Stats().Attempts == 2 })
			st := s.Stats()
			assert.Equal(t, tt.processed, st.Processed)
			assert.Equal(t, tt.wasted, st.Wasted)
			assert.Equal(t, tt.dropped, st.Dropped)
			assert.Equal(t, int64(1), st.ByOutcome["timeout"], "the client gave up")
		})
	}
}

// TestServerCountsAnAbandonedAttempt: a client that closes its
// connection while its request is in service, as wrk does with the
// requests in flight at the end of a run, leaves an attempt processed
// for no one: a timeout (reason processed), wasted work, not a success.
// BenchmarkServerUnderWrk allows those, at most one a connection a run.
func TestServerCountsAnAbandonedAttempt(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  concurrency: unlimited\n  service_time: 2s\n")
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05}) // 100 ms of service
	conn, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	serverTestWait(t, "the attempt in service", func() bool { return s.Stats().InFlight == 1 })
	require.NoError(t, conn.Close())
	serverTestWait(t, "the attempt's outcome", func() bool { return s.Stats().Attempts == 1 })
	st := s.Stats()
	assert.Equal(t, map[string]int64{"timeout": 1}, st.ByOutcome)
	assert.Equal(t, map[string]int64{"processed": 1}, st.ByReason)
	assert.Equal(t, int64(1), st.Wasted)
}

func TestServerFailures(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  failure_probability: 1\n")
	s := serverTestStart(t, sc, ServerOptions{})
	resp, err := serverTestPost(context.Background(), serverTestClient(t), s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "failure", resp.Header.Get(ServerReasonHeader))
	assert.Equal(t, int64(0), s.Stats().Processed)
}

func TestServerLog(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	log := &serverTestLog{}
	s := serverTestStart(t, sc, ServerOptions{Log: log})
	c := serverTestClient(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := serverTestPost(context.Background(), c, s.URL(),
				"Idempotency-Key", fmt.Sprintf("key-%d", i),
				"Herdlab-Attempt", "2",
				"Herdlab-Request", strconv.Itoa(i),
				"Herdlab-Planned", "12345")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	_, err := serverTestPost(context.Background(), c, s.URL()) // no headers
	require.NoError(t, err)

	lines := log.lines(t)
	require.Len(t, lines, 21)
	seen := map[uint64]bool{}
	for _, l := range lines[:20] {
		assert.Equal(t, "success", l.Outcome)
		assert.Equal(t, "processed", l.Reason)
		assert.Equal(t, 2, l.Attempt)
		require.NotNil(t, l.Request)
		assert.Equal(t, fmt.Sprintf("key-%d", *l.Request), l.Key)
		require.NotNil(t, l.PlannedNS)
		assert.Equal(t, int64(12345), *l.PlannedNS)
		assert.GreaterOrEqual(t, l.T, 0.0)
		assert.Positive(t, l.AtNS)
		assert.False(t, seen[l.ID], "ids are unique")
		seen[l.ID] = true
	}
	last := lines[20]
	assert.Empty(t, last.Key)
	assert.Nil(t, last.Request)
	assert.Nil(t, last.PlannedNS)
	assert.Equal(t, uint64(21), last.ID)
}

func TestServerMetrics(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  response_loss: 1\n")
	s, err := NewServer(sc, ServerOptions{})
	require.NoError(t, err)
	// Served by httptest through Handler.
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(context.Background())) })
	c := serverTestClient(t)
	for range 2 {
		_, err := serverTestPost(context.Background(), c, ts.URL, "Idempotency-Key", "same")
		require.Error(t, err, "the answer is lost")
	}
	resp, err := c.Get(ts.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	for _, want := range []string{
		`herdlab_server_attempts_total{outcome="reset",reason="processed"} 2`,
		`herdlab_server_attempts_total{outcome="success",reason="processed"} 0`,
		`herdlab_server_attempts_total{outcome="429",reason="rate_limit"} 0`,
		"herdlab_server_processed_total 2",
		"herdlab_server_duplicates_total 1",
		"herdlab_server_lost_responses_total 2",
		"herdlab_server_in_flight 0",
		"herdlab_server_queue_depth 0",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "go_goroutines", "a private registry, not the global one")

	resp, err = c.Get(ts.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "work is POST only")
}

func TestServerShutdown(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		serverTestLeaks(t)
		// 100 ms of service at scale 0.05; one slot and one queued.
		sc := serverTestScenario(t, "  concurrency: 1\n  service_time: 2s\n")
		s, err := NewServer(sc, ServerOptions{TimeScale: 0.05})
		require.NoError(t, err)
		require.NoError(t, s.Start(""))
		c := serverTestClient(t)
		results := make(chan int, 2)
		for i := range 2 {
			go func() {
				resp, err := serverTestPost(context.Background(), c, s.URL())
				if assert.NoError(t, err) {
					results <- resp.StatusCode
				} else {
					results <- 0
				}
			}()
			serverTestWait(t, "admission", func() bool {
				st := s.Stats()
				return st.InFlight+st.Queued == i+1
			})
		}
		require.NoError(t, s.Shutdown(context.Background()))
		assert.Equal(t, http.StatusOK, <-results, "in service: finished")
		assert.Equal(t, http.StatusOK, <-results, "queued: finished")
		_, err = net.Dial("tcp", s.Addr())
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "no longer listening")
		assert.Error(t, s.Start(""), "a server starts once")
	})
	t.Run("releases-held", func(t *testing.T) {
		serverTestLeaks(t)
		sc := serverTestScenario(t, "  outages: [{start: 0s, duration: 1h, mode: timeout}]\n")
		s, err := NewServer(sc, ServerOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Start(""))
		c := serverTestClient(t)
		errs := make(chan error, 1)
		go func() {
			_, err := serverTestPost(context.Background(), c, s.URL())
			errs <- err
		}()
		serverTestWait(t, "the request held", func() bool { return s.Stats().Held == 1 })
		start := time.Now()
		require.NoError(t, s.Shutdown(context.Background()))
		assert.Less(t, time.Since(start), time.Second)
		assert.Error(t, <-errs, "closed without an answer")
	})
	t.Run("deadline", func(t *testing.T) {
		serverTestLeaks(t)
		sc := serverTestScenario(t, "  concurrency: 1\n  service_time: 1h\n")
		s, err := NewServer(sc, ServerOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Start(""))
		c := serverTestClient(t)
		errs := make(chan error, 2)
		for i := range 2 {
			go func() {
				_, err := serverTestPost(context.Background(), c, s.URL())
				errs <- err
			}()
			serverTestWait(t, "admission", func() bool {
				st := s.Stats()
				return st.InFlight+st.Queued == i+1
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
		assert.Less(t, time.Since(start), time.Second)
		assert.Error(t, <-errs)
		assert.Error(t, <-errs)
		st := s.Stats()
		assert.Equal(t, 0, st.InFlight)
		assert.Equal(t, 0, st.Queued)
		assert.Equal(t, int64(2), st.ByReason["shutdown"])
	})
}

func TestServerSafeDefaults(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	s, err := NewServer(sc, ServerOptions{MaxBody: 16})
	require.NoError(t, err)
	require.NoError(t, s.Start(":0"))
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(context.Background())) })
	host, _, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host, "loopback unless told otherwise")
	assert.Equal(t, "http://"+s.Addr()+"/", s.URL())

	hs := s.http
	assert.Positive(t, hs.ReadHeaderTimeout)
	assert.Positive(t, s.bodyTimeout)
	assert.Positive(t, hs.IdleTimeout)
	assert.Zero(t, hs.WriteTimeout, "each answer sets its own write deadline when ready: none from the request's start, which a hold could outlast")

	c := serverTestClient(t)
	resp, err := c.Post(s.URL(), "text/plain", strings.NewReader(strings.Repeat("x", 1000)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, int64(0), s.Stats().Attempts, "an oversized body is not an attempt")
}

func TestNewServerErrors(t *testing.T) {
	occ, err := scenarios.Parse("occ.yaml", []byte(`
name: occ
server: {model: occ}
network: {latency: 1ms}
workload: {requests: 1}
strategies: [{name: s, backoff: {kind: fixed, delay: 1s}}]
`))
	require.NoError(t, err)
	_, err = NewServer(occ, ServerOptions{})
	assert.ErrorIs(t, err, ErrServerModel)

	_, err = NewServer(nil, ServerOptions{})
	assert.Error(t, err)
	ok := serverTestScenario(t, "  service_time: 1ms\n")
	for _, scale := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err = NewServer(ok, ServerOptions{TimeScale: scale})
		assert.Error(t, err, "scale %v", scale)
	}
	bad := *ok
	bad.Server.Concurrency = 0
	_, err = NewServer(&bad, ServerOptions{})
	assert.Error(t, err, "an invalid scenario")
}

func TestMemoryStore(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore(MemoryLimits{})
	state, err := m.State(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "", state)
	fresh, err := m.Begin(ctx, "k")
	require.NoError(t, err)
	assert.True(t, fresh)
	fresh, err = m.Begin(ctx, "k")
	require.NoError(t, err)
	assert.False(t, fresh)
	state, _ = m.State(ctx, "k")
	assert.Equal(t, IdempotencyInProgress, state)
	require.NoError(t, m.Done(ctx, "k"))
	state, _ = m.State(ctx, "k")
	assert.Equal(t, IdempotencyProcessed, state)
}

func TestServerPushback(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  rate_limit: {rate: 1, burst: 1, pushback: 1500ms}\n")
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.01})
	c := serverTestClient(t)
	resp, err := serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get(PushbackHeader), "no hint on a success")
	resp, err = serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1500", resp.Header.Get(PushbackHeader), "in scenario milliseconds, whatever the scale")

	sc = serverTestScenario(t, "  service_time: 1ms\n  failure_probability: 1\n  failure_pushback: -1ms\n")
	s = serverTestStart(t, sc, ServerOptions{})
	resp, err = serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "-1", resp.Header.Get(PushbackHeader), "do not retry")
}

func TestServerAnswersARequestWithoutABody(t *testing.T) {
	// A request without a body (Content-Length 0, as the driver sends)
	// has no body to wait for, and is answered at once, BodyTimeout or
	// not. (TestServerBodyTimeout: one whose body stalls is not.)
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	s := serverTestStart(t, sc, ServerOptions{BodyTimeout: 100 * time.Millisecond})
	conn, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(1), s.Stats().Attempts)
}
