package realhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// The control endpoint's paths, on the admin listener (see Graph.StartAdmin).
const (
	ControlStatePath = "/control/state"
	ControlResetPath = "/control/reset"
)

// serverResetWait is the longest a reset waits for the requests of the
// run before to leave the server.
const serverResetWait = 30 * time.Second

// ErrServerBusy is returned by Reset when requests stay at the server
// (in service, queued or held) until its context ends.
var ErrServerBusy = errors.New("realhttp: requests are still at the server")

// ErrServerStopped is returned by Reset after Shutdown has begun.
var ErrServerStopped = errors.New("realhttp: the server is shutting down")

// ServerEventKind is what a ServerEvent tells.
type ServerEventKind string

// The kinds of ServerEvent.
const (
	EventOutageStart    ServerEventKind = "outage_start"    // an outage window opens
	EventOutageEnd      ServerEventKind = "outage_end"      // it closes
	EventReset          ServerEventKind = "reset"           // the scenario clock restarted at 0 (Reset)
	EventListenFailed   ServerEventKind = "listen_failed"   // after a refuse outage, the address could not be re-opened (Err says why; retried)
	EventListenRestored ServerEventKind = "listen_restored" // it could, after failing
	EventStoreDown      ServerEventKind = "store_down"      // the idempotency store stopped answering (Err)
	EventStoreUp        ServerEventKind = "store_up"        // it answers again
	EventStoreDataLost  ServerEventKind = "store_data_lost" // it lost the keys it held (Err)
)

// ServerEvent is a change at the server, told to ServerOptions.Events.
type ServerEvent struct {
	Kind ServerEventKind
	// At is the scenario time of the change: the edge's time for an
	// outage, the time it was seen otherwise.
	At time.Duration
	// Outage is the outage that starts or ends.
	Outage scenarios.Outage
	// Err says what failed, for the listener and store kinds.
	Err error
}

// String describes the event on one line, as herdlab serve prints it:
// "t=15s: refuse outage ends".
func (e ServerEvent) String() string {
	t := "t=" + e.At.Round(time.Millisecond).String() + ": "
	switch e.Kind {
	case EventOutageStart:
		return fmt.Sprintf("%s%s outage starts, until t=%s", t, e.Outage.Mode, e.Outage.End())
	case EventOutageEnd:
		return fmt.Sprintf("%s%s outage ends", t, e.Outage.Mode)
	case EventReset:
		return t + "scenario clock reset to 0"
	case EventListenRestored:
		return t + "listening again"
	case EventStoreUp:
		return t + "the idempotency store answers again"
	case EventStoreDataLost:
		return fmt.Sprintf("%sthe idempotency store lost its data: %v; repeats of the keys processed before are processed again (counted as duplicates)", t, e.Err)
	}
	msg := strings.ReplaceAll(string(e.Kind), "_", " ")
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return t + msg
}

// emit tells ev to the Events callback, one call at a time.
func (s *Server) emit(ev ServerEvent) {
	if s.events == nil {
		return
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	s.events(ev)
}

// Reset starts the scenario over, as a fresh server would, for the next
// run of a driver: once no request is at the server (in service, queued
// or held: the requests of the run before, whose clients have gone, are
// served or let go first), it restarts the scenario clock at 0 now,
// refills the rate limit's bucket, reseeds the service and fault draws
// with seed (as ServerOptions.Seed), and puts the listener in the state
// of time 0 (down if a refuse outage starts at 0). The counts of Stats
// go on (a driver takes the difference over its run), and so do the
// keys of the idempotency store and the duplicate window. When ctx ends
// first, nothing changes and Reset returns an error wrapping
// ErrServerBusy; after Shutdown has begun, ErrServerStopped.
func (s *Server) Reset(ctx context.Context, seed uint64) error {
	if err := s.waitEmpty(ctx, func() {
		s.resetDrawsLocked(seed)
		s.resets++
	}); err != nil {
		return err
	}
	s.clockOnce.Do(func() {})
	s.emit(ServerEvent{Kind: EventReset}) // at 0, before an outage at 0
	s.restartClock(true)
	return nil
}

// waitEmpty waits until no request is at the server (in service, queued
// or held), then calls then with s.mu held; an error wrapping
// ErrServerBusy when ctx ends first, ErrServerStopped after Shutdown
// began.
func (s *Server) waitEmpty(ctx context.Context, then func()) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		stopped := s.stopped || s.stopping
		at := s.busy + s.qlen + s.held
		if !stopped && at == 0 {
			then()
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		if stopped {
			return ErrServerStopped
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: %d after waiting (%w)", ErrServerBusy, at, ctx.Err())
		}
	}
}

// ServerState is what the control endpoint reports (GET
// /control/state, and the answer to a reset).
type ServerState struct {
	// Scenario is the scenario's name, Fingerprint its Fingerprint,
	// TimeScale the server's scale.
	Scenario    string  `json:"scenario"`
	Fingerprint string  `json:"fingerprint"`
	TimeScale   float64 `json:"time_scale"`
	// T is the scenario time now, in seconds since the clock started
	// (Start, or the last reset); Resets counts the resets.
	T      float64 `json:"t"`
	Resets int     `json:"resets"`
	// Outage is the outage in force now, if any.
	Outage *ServerOutage `json:"outage"`
	// Stats are the counts since the server was made (a graph's: its
	// target replicas' attempts and work).
	Stats ServerStats `json:"stats"`
	// Strategy is, for a served graph, the strategy whose edge policies
	// it serves, and Graph its counts since the last reset (see
	// ServerState.Counts).
	Strategy string       `json:"strategy,omitempty"`
	Graph    *GraphCounts `json:"graph,omitempty"`
}

// ServerOutage is an outage window in scenario seconds.
type ServerOutage struct {
	Mode  string  `json:"mode"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// State returns the server's state now.
func (s *Server) State() ServerState {
	st := ServerState{Scenario: s.sc.Name, Fingerprint: s.fingerprint, TimeScale: s.scale, Stats: s.Stats()}
	s.mu.Lock()
	now := s.nowLocked()
	st.Resets = s.resets
	s.mu.Unlock()
	st.T = now.Seconds()
	if o, ok := s.outageAt(now); ok {
		st.Outage = &ServerOutage{Mode: o.Mode, Start: o.Start.Seconds(), End: o.End().Seconds()}
	}
	return st
}

// controlState answers GET /control/state with state(), after idle
// when asked (?idle=1), waiting up to serverResetWait.
func controlState(idle func(context.Context) error, state func() ServerState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("idle") == "1" {
			ctx, cancel := context.WithTimeout(r.Context(), serverResetWait)
			defer cancel()
			if err := idle(ctx); err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
		}
		writeJSONAnswer(w, http.StatusOK, state())
	}
}

// controlReset is the body of a reset.
type controlReset struct {
	Seed     uint64 `json:"seed"`
	Strategy string `json:"strategy,omitempty"` // the run's; the one served when empty
}

// controlResetHandler answers POST /control/reset: it decodes the body,
// calls reset (waiting up to serverResetWait) and answers state(), 409
// when requests stayed, 503 after Shutdown began.
func controlResetHandler(reset func(context.Context, controlReset) error, state func() ServerState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body controlReset
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			http.Error(w, "bad reset body: "+err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), serverResetWait)
		defer cancel()
		switch err := reset(ctx, body); {
		case errors.Is(err, ErrServerStopped):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case err != nil:
			http.Error(w, err.Error(), http.StatusConflict)
		default:
			writeJSONAnswer(w, http.StatusOK, state())
		}
	}
}

func writeJSONAnswer(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Control is a client of a test server's control endpoint: the admin
// listener of herdlab serve (--metrics-addr), as URL
// (http://127.0.0.1:9090/). The zero Client means http.DefaultClient.
type Control struct {
	URL    string
	Client *http.Client
}

// CheckControlURL checks that u is an http:// URL with a host.
func CheckControlURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("realhttp: control URL %q: %w", u, err)
	}
	if p.Scheme != "http" || p.Host == "" {
		return fmt.Errorf("realhttp: control URL %q: want http://HOST:PORT/, as herdlab serve prints it", u)
	}
	return nil
}

// State asks the server for its state.
func (c Control) State(ctx context.Context) (ServerState, error) {
	return c.call(ctx, http.MethodGet, ControlStatePath, nil)
}

// Idle asks the server for its state once no request is at it.
func (c Control) Idle(ctx context.Context) (ServerState, error) {
	return c.call(ctx, http.MethodGet, ControlStatePath+"?idle=1", nil)
}

// Reset asks the server to reset its scenario clock (see Server.Reset),
// and returns its state after.
func (c Control) Reset(ctx context.Context, seed uint64) (ServerState, error) {
	body, _ := json.Marshal(controlReset{Seed: seed})
	return c.call(ctx, http.MethodPost, ControlResetPath, body)
}

func (c Control) call(ctx context.Context, method, path string, body []byte) (ServerState, error) {
	var st ServerState
	if err := CheckControlURL(c.URL); err != nil {
		return st, err
	}
	target := strings.TrimSuffix(c.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return st, fmt.Errorf("realhttp: control %s: %w", target, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, fmt.Errorf("realhttp: control %s: %w", target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, controlMaxAnswer))
	if err != nil {
		return st, fmt.Errorf("realhttp: control %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("realhttp: control %s: %s: %s", target, resp.Status, strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Fingerprint == "" {
		return st, fmt.Errorf("realhttp: control %s: not a herdlab test server's answer", target)
	}
	return st, nil
}

// controlMaxAnswer bounds an answer of the control endpoint: a served
// graph's state carries every service's time series.
const controlMaxAnswer = 256 << 20

// storeChecker is a store that can tell whether it is reachable and
// whether it lost its data (RedisStore.Check).
type storeChecker interface {
	Check(ctx context.Context) error
}

var _ storeChecker = (*RedisStore)(nil)

// checkStore checks the store every storeCheck until Shutdown, and tells
// what changes: down, up again, data lost.
func (s *Server) checkStore(c storeChecker) {
	t := time.NewTicker(s.storeCheck)
	defer t.Stop()
	for {
		select {
		case <-s.bgStop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.storeTime)
		err := c.Check(ctx)
		cancel()
		lost := errors.Is(err, ErrStoreDataLost)
		s.mu.Lock()
		wasDown := s.storeDown
		s.storeDown = err != nil && !lost
		s.mu.Unlock()
		switch {
		case lost:
			s.dataLost.Add(1)
			if wasDown {
				s.emit(ServerEvent{Kind: EventStoreUp, At: s.now()})
			}
			s.emit(ServerEvent{Kind: EventStoreDataLost, At: s.now(), Err: err})
		case err != nil && !wasDown:
			s.emit(ServerEvent{Kind: EventStoreDown, At: s.now(), Err: err})
		case err == nil && wasDown:
			s.emit(ServerEvent{Kind: EventStoreUp, At: s.now()})
		}
	}
}

// now returns the scenario time now.
func (s *Server) now() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked()
}

// storeCall runs f with the store's deadline.
func (s *Server) storeCall(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.storeTime)
	defer cancel()
	return f(ctx)
}

// done marks key processed in the store; when that fails, the key is
// retried in the background (see retryDone), so that a processed key
// does not stay in progress for its lease; meanwhile this server answers
// the key as in progress (see pendingDone), even once the lease has
// ended in the store.
func (s *Server) done(ctx context.Context, key string) {
	err := s.storeCall(ctx, func(ctx context.Context) error { return s.store.Done(ctx, key) })
	if err == nil {
		return
	}
	s.storeErrs.Add(1)
	s.doneRetried.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= serverMaxPendingDone {
		s.doneLost.Add(1)
		return
	}
	if _, dup := s.pendingOf[key]; dup {
		return
	}
	s.pending = append(s.pending, key)
	s.pendingOf[key] = struct{}{}
	if !s.retrying {
		s.retrying = true
		s.bg.Go(s.retryDone)
	}
}

// pendingDone reports whether key was processed here and its Done has
// not reached the store yet.
func (s *Server) pendingDone(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pendingOf[key]
	return ok
}

// The backoff of retryDone: from serverDoneRetryMin, doubling up to
// serverDoneRetryMax while the store keeps failing.
const (
	serverDoneRetryMin = 20 * time.Millisecond
	serverDoneRetryMax = time.Second
)

// retryDone retries the pending Done calls, oldest first, until none is
// left; at Shutdown it makes one last pass, which stops at the first
// failure, and gives up the rest (counted in DoneLost).
func (s *Server) retryDone() {
	wait := serverDoneRetryMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		stopping := false
		select {
		case <-t.C:
		case <-s.bgStop:
			stopping = true
		}
		s.mu.Lock()
		keys := s.pending
		s.pending = nil
		s.mu.Unlock()
		var left []string
		for i, key := range keys {
			err := s.storeCall(context.Background(), func(ctx context.Context) error { return s.store.Done(ctx, key) })
			if err != nil {
				s.storeErrs.Add(1)
				left = keys[i:]
				break
			}
			s.mu.Lock()
			delete(s.pendingOf, key)
			s.mu.Unlock()
		}
		s.mu.Lock()
		if stopping {
			s.doneLost.Add(int64(len(left) + len(s.pending)))
			s.pending = nil
			clear(s.pendingOf)
		} else {
			s.pending = append(left, s.pending...)
		}
		if len(s.pending) == 0 {
			s.retrying = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if len(left) > 0 {
			wait = min(2*wait, serverDoneRetryMax)
		} else {
			wait = serverDoneRetryMin
		}
		t.Reset(wait)
	}
}
