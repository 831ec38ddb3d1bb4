package realhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverTestEvents records a server's events.
type serverTestEvents struct {
	mu     sync.Mutex
	events []ServerEvent
}

func (e *serverTestEvents) add(ev ServerEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

// kinds returns the kinds told so far, in order.
func (e *serverTestEvents) kinds() []ServerEventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var kinds []ServerEventKind
	for _, ev := range e.events {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

func (e *serverTestEvents) has(kind ServerEventKind) bool {
	for _, k := range e.kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// serverTestDial reports how a dial of addr went: nil, or refused.
func serverTestRefused(addr string) bool {
	conn, err := net.Dial("tcp", addr)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func TestServerResetStartsTheScenarioOver(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.05 the refuse outage lasts 100 ms from each start.
	sc := serverTestScenario(t, `
  service_time: 1ms
  outages: [{start: 0s, duration: 2s, mode: refuse}]
`)
	events := &serverTestEvents{}
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05, Events: events.add})
	require.True(t, serverTestRefused(s.Addr()), "the outage at 0 refuses from the start")
	serverTestWait(t, "the end of the outage", func() bool { return !serverTestRefused(s.Addr()) })
	assert.GreaterOrEqual(t, s.State().T, 2.0, "scenario time past the outage")

	require.NoError(t, s.Reset(context.Background(), 7))
	st := s.State()
	assert.Less(t, st.T, 1.0, "the clock restarted at 0")
	assert.Equal(t, 1, st.Resets)
	require.NotNil(t, st.Outage, "the outage at 0 again")
	assert.Equal(t, "refuse", st.Outage.Mode)
	assert.True(t, serverTestRefused(s.Addr()), "refused again, at once")
	serverTestWait(t, "the end of the second outage", func() bool { return !serverTestRefused(s.Addr()) })
	assert.Equal(t, []ServerEventKind{EventOutageStart, EventOutageEnd, EventReset, EventOutageStart, EventOutageEnd}, events.kinds())
}

func TestServerResetWaitsForTheRunBefore(t *testing.T) {
	serverTestLeaks(t)
	// 200 ms of service at scale 0.1; a token every 1,000 s.
	sc := serverTestScenario(t, "  service_time: 2s\n  rate_limit: {rate: 0.001, burst: 1}\n")
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.1})
	c := serverTestClient(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := serverTestPost(context.Background(), c, s.URL())
		assert.NoError(t, err)
	}()
	serverTestWait(t, "the request in service", func() bool { return s.Stats().InFlight == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	err := s.Reset(ctx, 0)
	cancel()
	require.ErrorIs(t, err, ErrServerBusy)
	assert.Zero(t, s.State().Resets, "nothing changed")

	require.NoError(t, s.Reset(context.Background(), 0), "waits for the request to end")
	<-done
	assert.Equal(t, int64(1), s.Stats().Processed, "served to its end")
	resp, err := serverTestPost(context.Background(), c, s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the rate limit's bucket is full again after the reset")
}

func TestServerControlEndpoint(t *testing.T) {
	// A single server's admin listener is its Graph's (of one service).
	serverTestLeaks(t)
	sc := serverTestScenario(t, `
  service_time: 1ms
  outages: [{start: 0s, duration: 1h, mode: refuse}]
`)
	s, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{Server: ServerOptions{TimeScale: 0.5}})
	require.NoError(t, err)
	require.NoError(t, s.StartAdmin(""))
	require.NoError(t, s.Start(""))
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(context.Background())) })
	require.Error(t, s.StartAdmin(""), "one admin listener")
	assert.Contains(t, s.AdminURL(), "http://127.0.0.1:")

	// The work listener refuses; metrics and control answer on theirs.
	require.True(t, serverTestRefused(s.Addr()))
	c := serverTestClient(t)
	resp, err := c.Get(s.AdminURL() + "metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "herdlab_server_connections", "metrics during a refuse outage")

	ctl := Control{URL: s.AdminURL(), Client: c}
	st, err := ctl.State(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "t", st.Scenario)
	assert.Equal(t, serverFingerprint(sc), st.Fingerprint)
	assert.InDelta(t, 0.5, st.TimeScale, 0)
	require.NotNil(t, st.Outage)

	st, err = ctl.Reset(context.Background(), 3)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Resets)
	assert.Equal(t, "s", st.Strategy, "a reset without a strategy keeps the one served")
	st, err = ctl.Idle(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, st.Resets)

	resp, err = c.Post(s.AdminURL()+"control/reset", "application/json", strings.NewReader(`{"seed": "x"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// Another scenario's server section has another fingerprint.
	other := serverTestScenario(t, "  service_time: 2ms\n  outages: [{start: 0s, duration: 1h, mode: refuse}]\n")
	assert.NotEqual(t, serverFingerprint(sc), serverFingerprint(other))

	// A URL that is not a herdlab server's control endpoint.
	_, err = Control{URL: "http://" + s.Addr() + "/"}.State(context.Background())
	assert.Error(t, err)
	assert.Error(t, CheckControlURL("ftp://x/"))
}

func TestServerEvents(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.02 the error outages run 40-80 ms and 120-160 ms.
	sc := serverTestScenario(t, `
  service_time: 1ms
  outages: [{start: 2s, duration: 2s, mode: error}, {start: 6s, duration: 2s, mode: timeout}]
`)
	events := &serverTestEvents{}
	serverTestStart(t, sc, ServerOptions{TimeScale: 0.02, Events: events.add})
	serverTestWait(t, "four events", func() bool { return len(events.kinds()) == 4 })
	assert.Equal(t, []ServerEventKind{EventOutageStart, EventOutageEnd, EventOutageStart, EventOutageEnd}, events.kinds())
	events.mu.Lock()
	lines := []string{events.events[0].String(), events.events[1].String(), events.events[2].String()}
	events.mu.Unlock()
	assert.Equal(t, []string{"t=2s: error outage starts, until t=4s", "t=4s: error outage ends", "t=6s: timeout outage starts, until t=8s"}, lines)
}

func TestServerTellsWhenItsAddressIsTaken(t *testing.T) {
	serverTestLeaks(t)
	// At scale 0.05 the refuse outage lasts 100 ms; another socket takes
	// the address meanwhile.
	sc := serverTestScenario(t, "  service_time: 1ms\n  outages: [{start: 0s, duration: 2s, mode: refuse}]\n")
	events := &serverTestEvents{}
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.05, Events: events.add})
	thief, err := net.Listen("tcp", s.Addr())
	require.NoError(t, err, "the port is free during the outage")
	serverTestWait(t, "the failure told", func() bool { return events.has(EventListenFailed) })
	events.mu.Lock()
	for _, ev := range events.events {
		if ev.Kind == EventListenFailed {
			assert.Contains(t, ev.String(), "cannot re-open "+s.Addr())
		}
	}
	events.mu.Unlock()
	require.NoError(t, thief.Close())
	serverTestWait(t, "listening again", func() bool { return events.has(EventListenRestored) })
	assert.False(t, serverTestRefused(s.Addr()))
}

func TestServerBindsFirst(t *testing.T) {
	serverTestLeaks(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	// A refuse outage at 0 would close the socket at once: the bind
	// still fails first.
	sc := serverTestScenario(t, "  outages: [{start: 0s, duration: 1h, mode: refuse}]\n")
	s, err := NewServer(sc, ServerOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(context.Background())) })
	err = s.Start(taken.Addr().String())
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EADDRINUSE)
	g, err := NewGraph(sc, &sc.Strategies[0], GraphOptions{}) // a single server's admin listener
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Shutdown(context.Background())) })
	err = g.StartAdmin(taken.Addr().String())
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EADDRINUSE)
	for _, addr := range []string{"nohost", "127.0.0.1:99999", "127.0.0.1:port"} {
		assert.Error(t, CheckAddr(addr), addr)
	}
	for _, addr := range []string{"", ":8080", "0.0.0.0:0", "[::1]:80", "localhost:http"} {
		assert.NoError(t, CheckAddr(addr), addr)
	}
}
