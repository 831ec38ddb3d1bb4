package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/zeontools/herdlab/internal/localhost"
	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/web/lab"
)

// ServerOptions configure herdlab ui's handler.
type ServerOptions struct {
	// Initial is the scenario the page opens with; nil opens the
	// library's default.
	Initial *Initial
	// Addr is the address the server listens on (host:port): requests
	// must be addressed to it or to a loopback name or address (see
	// internal/localhost). "": loopback only.
	Addr string
	// MaxMemory is the memory every run in flight may take together,
	// each as the simulator estimates it (the estimate of herdlab run
	// --max-memory), summed: a scenario that does not fit alone is
	// refused with a message that names the figure; one that does not fit
	// beside the runs in flight is answered 429, with the figures. 0: no
	// bound.
	MaxMemory int64
	// MaxMemoryName is how messages name MaxMemory.
	MaxMemoryName string
	// MaxEvents is the event budget of one run; 0: the simulator's
	// default.
	MaxEvents int64
	// Parallel is how many runs of a simulation go at once; 0: one per
	// CPU.
	Parallel int
	// MaxRuns is how many simulations and sweeps may be in flight at
	// once, every client's together; beyond, a request is answered 429.
	// 0: DefaultMaxRuns.
	MaxRuns int
}

// DefaultMaxRuns is how many simulations and sweeps herdlab ui runs at
// once by default, every client's together: twice the CPUs, at least 2 (a
// run uses every CPU: more at once only share them).
func DefaultMaxRuns() int { return max(2, 2*runtime.GOMAXPROCS(0)) }

// maxBody is the most an API request may carry: a scenario file at its
// largest, quoted in JSON.
const maxBody = 2*scenarios.MaxFileSize + 4096

// contentSecurity is the page's Content-Security-Policy: nothing from
// elsewhere, no inline script; WebAssembly compiles in the static site's
// worker.
const contentSecurity = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:"

// Handler returns herdlab ui's handler: the page, config.json, the
// examples, and the API the page runs simulations and sweeps with
// (web/README.md).
// Each client (the Herdlab-Client header the page sends, or else its
// address) has one simulation at a time: a new run cancels its previous
// one, and a run ends when its request does (the page went away, or
// aborted it). Every client's runs together are bounded by o.MaxRuns and
// o.MaxMemory (429 beyond). It answers only requests addressed to
// o.Addr or loopback, and the API only JSON from its own page: 403 or
// 415 otherwise, with the reason (internal/localhost).
func Handler(o ServerOptions) http.Handler { return localhost.Guard(newHandler(o), o.Addr) }

func newHandler(o ServerOptions) *handler {
	mux := http.NewServeMux()
	if o.MaxRuns <= 0 {
		o.MaxRuns = DefaultMaxRuns()
	}
	h := &handler{Handler: mux, o: o, running: map[string]*running{}}
	mux.Handle("GET /", secured(http.FileServerFS(App())))
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, Config{Engine: "server", Initial: o.Initial})
	})
	mux.HandleFunc("GET /examples/index.json", func(w http.ResponseWriter, r *http.Request) {
		list, err := examples()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(list)
	})
	mux.HandleFunc("GET /examples/{file}", func(w http.ResponseWriter, r *http.Request) {
		src, ok := example(r.PathValue("file"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/yaml; charset=utf-8")
		w.Write(src)
	})
	mux.HandleFunc("POST /api/validate", h.validate)
	mux.HandleFunc("POST /api/run", h.run)
	mux.HandleFunc("POST /api/sweep", h.sweep)
	return h
}

// secured adds the page's security headers.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentSecurity)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

type handler struct {
	http.Handler
	o        ServerOptions
	mu       sync.Mutex
	running  map[string]*running // by client
	inFlight int                 // runs and sweeps, every client's
	reserved int64               // memory granted to the runs in flight
}

// running is a client's simulation in progress.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// request is the body of api/validate and api/run.
type request struct {
	YAML string `json:"yaml"`
	File string `json:"file"`
}

// read decodes an API request, answering a bad one itself (false).
func read(w http.ResponseWriter, r *http.Request) (request, bool) {
	var req request
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, lab.Result{Error: fmt.Sprintf("the scenario is larger than %d bytes: a scenario is a page of YAML", scenarios.MaxFileSize)})
		return req, false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, lab.Result{Error: "want {\"yaml\": ..., \"file\": ...}: " + err.Error()})
		return req, false
	}
	if req.File == "" {
		req.File = "scenario.yaml"
	}
	return req, true
}

// validate answers the validation of a scenario; it stops when its
// request ends (the page went away, or sent another).
func (h *handler) validate(w http.ResponseWriter, r *http.Request) {
	req, ok := read(w, r)
	if !ok {
		return
	}
	v := lab.ValidateContext(r.Context(), req.YAML, req.File)
	if r.Context().Err() != nil {
		return // nobody to answer
	}
	writeJSON(w, http.StatusOK, v)
}

// run runs a simulation, answering newline-delimited JSON: progress
// lines, then the result.
func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	h.stream(w, r, func(ctx context.Context, req request, o lab.Options) any {
		return lab.Run(ctx, req.YAML, req.File, o)
	})
}

// sweep sweeps a scenario, answering as run does.
func (h *handler) sweep(w http.ResponseWriter, r *http.Request) {
	h.stream(w, r, func(ctx context.Context, req request, o lab.Options) any {
		return lab.Sweep(ctx, req.YAML, req.File, o)
	})
}

// stream answers an API request with do's result, as newline-delimited
// JSON: progress lines (every 50 ms at most), then {"result": ...}. The
// client's run in progress, if any, is cancelled first. Beyond MaxRuns
// in flight, or MaxMemory, it answers 429 with {"error": reason}.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, do func(context.Context, request, lab.Options) any) {
	req, ok := read(w, r)
	if !ok {
		return
	}
	ctx, done := h.start(r)
	defer done()
	leave, err := h.enter()
	if err != nil {
		writeJSON(w, http.StatusTooManyRequests, lab.Result{Error: err.Error()})
		return
	}
	defer leave()
	var refused error
	admit := func(need func(int) int64, most int) (int, func(), error) {
		parallel, release, err := h.admit(need, most)
		refused = err
		return parallel, release, err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		if enc.Encode(v) == nil && flusher != nil {
			flusher.Flush()
		}
	}
	var last time.Time
	res := do(ctx, req, lab.Options{
		MaxMemory:     h.o.MaxMemory,
		MaxMemoryName: h.o.MaxMemoryName,
		MaxEvents:     h.o.MaxEvents,
		Parallel:      h.o.Parallel,
		Admit:         admit,
		Progress: func(f float64) {
			if now := time.Now(); now.Sub(last) >= 50*time.Millisecond {
				last = now
				send(map[string]float64{"progress": f})
			}
		},
	})
	if refused != nil { // before any progress: nothing was sent
		writeJSON(w, http.StatusTooManyRequests, lab.Result{Error: refused.Error()})
		return
	}
	send(map[string]any{"result": res})
}

// enter counts a run in flight, or says why not: MaxRuns are.
func (h *handler) enter() (leave func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight >= h.o.MaxRuns {
		what := "simulations"
		if h.o.MaxRuns == 1 {
			what = "simulation"
		}
		return nil, fmt.Errorf("busy: herdlab ui runs at most %d %s at once, every page's together (--max-runs), and that many are running; try again when one ends", h.o.MaxRuns, what)
	}
	h.inFlight++
	return func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}, nil
}

// admit grants a run the memory of as many runs at once, up to most, as
// fit beside the runs in flight (need(p) is what p at once take), or
// says why none fit.
func (h *handler) admit(need func(int) int64, most int) (int, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	parallel, bytes := max(most, 1), int64(0)
	if limit := h.o.MaxMemory; limit > 0 {
		free := limit - h.reserved
		for bytes = need(parallel); parallel > 1 && bytes > free; bytes = need(parallel) {
			parallel--
		}
		if bytes > free {
			return 0, nil, fmt.Errorf("busy: this simulation needs about %s of memory, and the runs in flight take %s of the %s herdlab ui shares among them (%s); try again when one ends",
				results.Bytes(bytes), results.Bytes(h.reserved), results.Bytes(limit), h.memoryName())
		}
	}
	h.reserved += bytes
	return parallel, sync.OnceFunc(func() {
		h.mu.Lock()
		h.reserved -= bytes
		h.mu.Unlock()
	}), nil
}

func (h *handler) memoryName() string {
	if h.o.MaxMemoryName != "" {
		return h.o.MaxMemoryName
	}
	return "--max-memory"
}

// start registers a run of r's client: it cancels the client's run in
// progress, waits for it to end, and returns the new run's context
// (ended with r's) and the function that ends it.
func (h *handler) start(r *http.Request) (context.Context, func()) {
	client := r.Header.Get("Herdlab-Client")
	if client == "" {
		client, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	ctx, cancel := context.WithCancel(r.Context())
	me := &running{cancel: cancel, done: make(chan struct{})}
	h.mu.Lock()
	prev := h.running[client]
	h.running[client] = me
	h.mu.Unlock()
	if prev != nil {
		prev.cancel()
		<-prev.done
	}
	return ctx, func() {
		cancel()
		h.mu.Lock()
		if h.running[client] == me {
			delete(h.running, client)
		}
		h.mu.Unlock()
		close(me.done)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
