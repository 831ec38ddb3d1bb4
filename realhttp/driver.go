package realhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
	"github.com/zeontools/herdlab/strategies"
)

// DriverOptions says where and how Replay and ReplayDLQ send. The zero
// value (with a Target) runs at scale 1 with seed 0, no DLQ writer, 256
// connections and no progress.
//
// The connection model: one process stands in for every sender. An
// attempt in flight holds one connection for its round trip;
// connections are kept alive and pooled, shared by all senders, and at
// most MaxConns are in use at once (a sender's own concurrency is the
// scenario's workload.workers). An attempt that finds every connection
// in use waits for one, and the wait is not part of the attempt: its
// bucket, its timeout and its DriverStats lag count from the moment it
// has its connection. Such waits make the real herd go out later than
// the simulated one: DriverConnsNeeded says how many connections a
// scenario needs, and DriverStats.Check tells a replay that could not
// keep time.
type DriverOptions struct {
	// Target is the URL every attempt is POSTed to, such as
	// http://127.0.0.1:8080/.
	Target string
	// TimeScale multiplies every duration of the scenario on the wall
	// clock: arrival times, backoff waits, per-attempt timeouts, breaker
	// open periods, the horizon. 0 means 1; 0.1 runs a 30 s outage in
	// 3 s. Results are reported in scenario time. When TimeScale != 1 a
	// Retry-After hint is read as scenario seconds (the herdlab test
	// server writes its hints in scenario time) and scaled like a
	// backoff wait.
	TimeScale float64
	// Seed seeds the arrivals and the jitter, as the simulator derives
	// them: run r draws from sim.RunSeed(Seed, r), arrivals on PCG
	// stream 1 and jitter on stream 5, as sim/world.go does. 0 means the
	// scenario's seed, sc.Seed.
	Seed uint64
	// DLQ, when set, receives every dead letter as a JSON line (see
	// DriverDeadLetter), one Write a line, from one goroutine; a writer
	// shared by concurrent calls must be safe for concurrent use.
	DLQ io.Writer
	// MaxConns bounds the attempts in flight that hold a connection to
	// the target (and the default client's pool per host); 0 means
	// DriverDefaultMaxConns. The process's open-file limit must allow it
	// (see DriverCheckFileLimit).
	MaxConns int
	// Progress, when set, is called by Replay's loop with the buckets of
	// scenario time done so far, each time one ends (from 1 up to the
	// horizon's; a run that ends early, with nothing left to do, jumps
	// to the end).
	Progress func(buckets int)
	// Client, when set, sends every attempt; it should have no overall
	// Timeout (each attempt's deadline comes from its context) and should
	// not follow redirects. Nil means a client of the driver's own: one
	// transport per call with a pool of MaxConns connections, closed
	// when the call returns.
	Client *http.Client
	// ReplayTimeout is ReplayDLQ's per-attempt timeout, in scenario
	// time; 0 means 30s.
	ReplayTimeout time.Duration
}

// DriverDefaultMaxConns is the connection pool bound when
// DriverOptions.MaxConns is 0.
const DriverDefaultMaxConns = 256

// driverFileSlack is how many files the process needs beyond the
// driver's connections: listeners, logs, the DLQ file, stdio.
const driverFileSlack = 64

// DriverStats is what Replay saw beyond the results: the timing of every
// retry, the outcomes, the concurrency reached, and how well it kept
// time.
type DriverStats struct {
	// Start is the wall-clock time of scenario time 0.
	Start time.Time
	// TimeScale is the scale the run used (never 0).
	TimeScale float64
	// Retries holds every retry that was sent and answered (attempts
	// after a request's first), in the order of their answers.
	Retries []DriverSend
	// Outcomes counts answered attempts by outcome name (success,
	// refused, timeout, reset, 5xx, 429, 4xx).
	Outcomes map[string]int64
	// PeakInFlight is the most attempts in flight at once.
	PeakInFlight int
	// Sent counts the attempts handed to the HTTP client. Late counts
	// those handed to it more than LateBy (a quarter of a bucket on the
	// wall clock, at least 10 ms) after they were due, for whatever
	// reason: a wait for a connection, or a loop or machine too busy to
	// keep time; MaxLag is the latest one (or missed one), on the wall
	// clock.
	Sent, Late int64
	LateBy     time.Duration
	MaxLag     time.Duration
	// Missed counts the attempts never sent because the loop reached
	// them only after the horizon, more than LateBy after they were due:
	// first attempts, retries, hedges and dead-letter replays. The run
	// is over at the horizon: what was due before it sends nothing
	// after it, except what was due less than LateBy before now, which
	// is not late; such an attempt goes as usual and is in flight at the
	// end, where the run abandons it.
	Missed int64
	// ConnWaits counts the attempts that found every connection in use
	// and waited for one (see DriverOptions), ConnWaitMax the longest
	// wait, on the wall clock; MaxConns is the bound they waited for.
	ConnWaits   int64
	ConnWaitMax time.Duration
	MaxConns    int
	// Wall is the wall-clock time of the run.
	Wall time.Duration
	// Partial is true when the run was cut short by its context.
	Partial bool
}

// driverLateFloor is the least lateness that makes an attempt late, on
// the wall clock: below it, a busy machine's scheduling, not a replay
// that cannot keep up.
const driverLateFloor = 10 * time.Millisecond

// driverLateShare is the share of late attempts (DriverStats.Late /
// Sent) beyond which a run's figures are not those of the scenario.
const driverLateShare = 0.05

// ErrDriverLate is returned by DriverStats.Check for a run that could
// not send its attempts when they were due.
var ErrDriverLate = errors.New("realhttp: the replay could not send the attempts when they were due")

// Check returns an error wrapping ErrDriverLate when more than 5% of the
// attempts went out late or never (see Late and Missed): the herd then
// reached the server spread over more time than in the scenario, or not
// at all, and the run's load and recovery figures are not the
// scenario's. The error names the connection bound when attempts waited
// for connections.
func (s DriverStats) Check() error {
	late, due := s.Late+s.Missed, s.Sent+s.Missed
	if due == 0 || float64(late) <= driverLateShare*float64(due) {
		return nil
	}
	never := ""
	if s.Missed > 0 {
		never = fmt.Sprintf(" or not at all (%d, which the loop reached after the horizon)", s.Missed)
	}
	err := fmt.Errorf("%w: %d of %d attempts went out more than %s late (up to %s)%s",
		ErrDriverLate, late, due, s.LateBy, s.MaxLag.Round(time.Millisecond), never)
	if s.ConnWaits > 0 {
		err = fmt.Errorf("%w; %d waited for one of the %d connections (up to %s): raise the connection bound, or on a busy machine use a milder time scale or fewer requests",
			err, s.ConnWaits, s.MaxConns, s.ConnWaitMax.Round(time.Millisecond))
	} else {
		err = fmt.Errorf("%w: the machine could not keep up; use a milder time scale or fewer requests", err)
	}
	return err
}

// DriverSend is the timing of one attempt, in scenario time since the
// start: Planned is when it was due (the end of its backoff wait), Actual
// when it was handed to the HTTP client.
type DriverSend struct {
	Request int
	Attempt int // the Herdlab-Attempt header, from 1
	Planned time.Duration
	Actual  time.Duration
}

// Gap returns how late the send was on the wall clock:
// (Actual - Planned) * scale.
func (s DriverSend) Gap(scale float64) time.Duration {
	return driverToWall(s.Actual-s.Planned, scale)
}

// GapQuantile returns the q-quantile (q in [0,1], nearest rank) of the
// retries' wall-clock gaps between planned and actual send time, and
// false when there were no retries.
func (s DriverStats) GapQuantile(q float64) (time.Duration, bool) {
	if len(s.Retries) == 0 {
		return 0, false
	}
	gaps := make([]time.Duration, len(s.Retries))
	for i, r := range s.Retries {
		gaps[i] = r.Gap(s.TimeScale)
	}
	slices.Sort(gaps)
	k := int(math.Ceil(q*float64(len(gaps)))) - 1
	return gaps[min(max(k, 0), len(gaps)-1)], true
}

// DriverDeadLetter is one line of the dead-letter file: the request, its
// idempotency key, why it was given up, how many attempts were sent, and
// when (scenario seconds since the start).
type DriverDeadLetter struct {
	Request  int     `json:"request"`
	Key      string  `json:"key"`
	Reason   string  `json:"reason"`
	Attempts int     `json:"attempts"`
	T        float64 `json:"t"`
	Strategy string  `json:"strategy,omitempty"`
	// Outcome is what the last attempt got (success, refused, timeout,
	// reset, 5xx, 429, 4xx), Status its HTTP status when it had an
	// answer; both absent for a letter never sent. Error is the
	// client's error for a last attempt without an answer (ReplayDLQ
	// only).
	Outcome string `json:"outcome,omitempty"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
}

// OpenFileLimit returns the process's limit on open files (the soft
// RLIMIT_NOFILE), and false where it cannot be read.
func OpenFileLimit() (uint64, bool) { return driverOpenFileLimit() }

// DriverCheckFileLimit returns an error saying how to raise the limit
// when the process may not open need files (RLIMIT_NOFILE). Replay
// checks MaxConns plus a margin; a caller that runs the test server in
// the same process should check for both sides' connections.
func DriverCheckFileLimit(need int) error {
	limit, ok := driverOpenFileLimit()
	if !ok || limit >= uint64(need) {
		return nil
	}
	return fmt.Errorf("realhttp: the open-file limit is %d but the driver needs %d (its connections and %d more): "+
		"raise it with `ulimit -n %d` (or more) in the shell that runs herdlab, or lower the connection bound",
		limit, need, driverFileSlack, max(need, 4096))
}

// The states of a request in the driver, as in the simulator.
const (
	drvWaiting   uint8 = iota // created, or waiting for its backoff
	drvQueued                 // waiting for a worker of its sender's dispatcher
	drvInFlight               // an attempt is in flight
	drvDelivered              // final: the sender saw a success
	drvDead                   // final (unless replayed): in the dead-letter queue
)

// The kinds of driver event.
const (
	drvArrival   uint8 = iota // the workload creates its next request(s)
	drvTry                    // request a is ready for its next attempt; b = drvRetried at the end of a backoff wait
	drvReplay                 // the scenario's DLQ replay sends dead letter number a back (-1 starts it)
	drvOutageEnd              // the last outage ends: what is left to recover is counted
	drvHedge                  // a hedge of request a's attempt number b (mod 256) is due
)

// drvRetried marks a try that ends a backoff wait, as opposed to one that
// hands a request to a freed worker.
const drvRetried = 1

// drvHasWorker is set while a request holds a worker of its sender's
// dispatcher.
const drvHasWorker uint8 = 1

// driverRequest is one request's state, owned by the loop.
type driverRequest struct {
	retry   strategies.Request
	key     uuid.UUID
	permit  strategies.Permit
	created time.Duration // scenario time of its arrival
	planned time.Duration // scenario time its next attempt is due
	sender  int32
	tag     int32  // attempts sent: the number of the one in flight
	bucket  int32  // the bucket the attempt in flight was sent in
	status  uint16 // the HTTP status of the last answer, 0 for none
	state   uint8
	reason  strategies.Reason
	flags   uint8
	last    uint8 // the outcome of the last attempt + 1, 0 before any
}

// driverSender is one sender's state beyond the strategy's: its
// dispatcher.
type driverSender struct {
	retry strategies.Sender
	pool  sim.Pool
}

// driverDone is an attempt's goroutine reporting to the loop.
type driverDone struct {
	i, tag int32
	driverAnswer
	actual time.Duration // scenario time it was handed to the client
	waited time.Duration // wall time it waited for a connection, 0 for none
}

// driver is one Replay: the state of the simulator's world, on the wall
// clock. Everything but done, wg and the attempts' arguments belongs to
// the loop's goroutine.
type driver struct {
	sc       *scenarios.Scenario
	policy   *strategies.Policy
	client   *http.Client
	slots    chan struct{} // a token per attempt holding a connection
	target   string
	dlq      io.Writer
	dlqErr   error
	scale    float64
	start    time.Time
	now      time.Duration // scenario time of the loop, never decreasing
	horizon  time.Duration
	timeout  time.Duration // per-attempt timeout on the wall clock, 0 for none
	lateBy   time.Duration // on the wall clock: a send later than this is late
	progress func(int)
	// missedBy is how late an event is, on the wall clock, while
	// release hands on one it reached after the horizon over LateBy
	// late (0 otherwise): it sends nothing, and counts in
	// DriverStats.Missed (see miss).
	missedBy time.Duration

	rArrive, rRetry *rand.Rand

	q          driverQueue
	reqs       []driverRequest
	next       []int32 // per request, with a dispatcher: the next in its sender's queue, -1 for none
	senders    []driverSender
	groups     *strategies.Groups
	copies     []hedgeCopies // per request, with hedging
	perRequest bool
	workers    int32
	blocking   bool

	arrived       int               // requests created so far
	limit         int               // requests to create, -1: no limit
	stream        scenarios.Arrival // with a poisson stream per sender: one sender's
	dlqQueue      []int32           // dead letters, in the order they arrived
	replayed      int
	replayGap     time.Duration
	dlqDepth      int
	delayed       int
	inFlight      int
	lastOutageEnd time.Duration
	completion    time.Duration
	drain         time.Duration

	runCtx context.Context
	done   chan driverDone
	wg     sync.WaitGroup

	run        *results.Run
	bucket     time.Duration
	nextSample time.Duration
	sampled    int
	stats      DriverStats
}

// Replay runs strategy st of scenario sc once, as run number run, against
// opts.Target over real HTTP on the wall clock, and returns what it saw
// in scenario time: attempts per bucket when sent, their outcomes in the
// same buckets, delivered, dead-lettered by reason, unfinished, the
// latency histogram, short-circuits, timeouts and 429s. Server-side
// figures (processed, duplicates, wasted work, rejections, lost
// responses, the server queue) are left at zero: the server's log has
// them. A bucket's InFlight is the driver's attempts in flight at its
// end; Delayed and DLQ are as in the simulator. sc must be valid (see
// scenarios.Scenario.Validate).
//
// The workload is the simulator's: the same arrival times, drawn from
// the same seed (sim.RunSeed(sc.Seed, run), PCG stream 1), and the same
// jitter stream (stream 5), consumed in the order the answers come in.
// Senders keep their breaker, budget and dispatcher (workers, delay queue
// or blocking) as in the simulator, and so does the scenario's DLQ
// replay.
//
// Each attempt is a POST of {"request":N} to opts.Target with the
// headers Idempotency-Key (a UUID v4 made when the request is created
// and kept through its retries and replays), Herdlab-Attempt,
// Herdlab-Request and Herdlab-Planned (see DriverKeyHeader and the
// others). Its outcome: a 2xx is a success, a 429 is throttled, another
// 4xx (or a 1xx or 3xx) a client error, a 5xx a server error; without an
// answer, the attempt's deadline is a timeout, a failure to connect is
// refused, and anything after connecting (a reset, EOF) a reset. A
// Retry-After header on a 429 or 503 is parsed by
// strategies.ParseRetryAfter against the response's Date header (the
// local clock without one) and given to the policy. An attempt that
// waits for one of the opts.MaxConns connections is not sent yet: its
// deadline starts, and it is counted in a bucket, once it has one (see
// the connection model of DriverOptions, and DriverStats.Check for a
// run that could not send its attempts when they were due). A 503 whose
// Herdlab-Reason is overload (the herdlab test server's full queue)
// counts as rejected.
//
// Time scale: every scenario duration runs multiplied by
// opts.TimeScale on the wall clock, and a Retry-After hint is read as
// scenario seconds (the herdlab test server writes its hints in
// scenario time), so it is scaled like the backoff.
//
// One goroutine runs the loop: it owns every request's state, sleeps on
// one timer until the earliest due event (an arrival or the end of a
// backoff wait) and starts each attempt in a goroutine of its own that
// takes a connection slot, does the HTTP request with the policy's
// per-attempt timeout as its context deadline and reports back. No
// goroutine waits out a backoff. opts.Progress is told of each bucket's
// end.
//
// The run ends at the horizon or as soon as nothing more can happen
// before it (every request final, or waiting past the horizon); attempts
// then in flight are abandoned and their requests are unfinished. When
// ctx ends first, Replay returns the partial run so far and stats with
// Partial set, with an error wrapping ctx's error (context.Canceled on
// SIGINT). requests = delivered + dead-lettered + unfinished holds in
// every run returned.
func Replay(ctx context.Context, sc *scenarios.Scenario, st *scenarios.Strategy, run int, opts DriverOptions) (*results.Run, DriverStats, error) {
	d, closeIdle, err := newDriver(sc, st, run, opts)
	if err != nil {
		return nil, DriverStats{}, err
	}
	defer closeIdle()
	return d.replay(ctx)
}

// driverScale returns the time scale opts ask for.
func driverScale(opts DriverOptions) (float64, error) {
	s := opts.TimeScale
	if s == 0 {
		return 1, nil
	}
	if !(s > 0) || math.IsInf(s, 1) {
		return 0, fmt.Errorf("realhttp: time scale must be > 0, got %v", s)
	}
	return s, nil
}

// CheckTarget checks a target URL as Replay and ReplayDLQ take it: http://
// or https:// with a host.
func CheckTarget(target string) error { return driverTarget(target) }

// driverTarget checks a target URL.
func driverTarget(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("realhttp: target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("realhttp: target %q: want an http:// or https:// URL with a host", target)
	}
	return nil
}

// driverConns returns the connection bound opts ask for.
func driverConns(opts DriverOptions) (int, error) {
	switch conns := opts.MaxConns; {
	case conns < 0:
		return 0, fmt.Errorf("realhttp: MaxConns must be >= 0, got %d", conns)
	case conns == 0:
		return DriverDefaultMaxConns, nil
	default:
		return conns, nil
	}
}

// driverClient returns the client opts ask for and a function that
// closes what the driver opened, after checking the open-file limit.
func driverClient(opts DriverOptions) (*http.Client, func(), error) {
	conns, err := driverConns(opts)
	if err != nil {
		return nil, nil, err
	}
	if err := DriverCheckFileLimit(conns + driverFileSlack); err != nil {
		return nil, nil, err
	}
	if opts.Client != nil {
		return opts.Client, func() {}, nil
	}
	client, tr := driverNewClient(conns)
	return client, tr.CloseIdleConnections, nil
}

func newDriver(sc *scenarios.Scenario, st *scenarios.Strategy, run int, opts DriverOptions) (*driver, func(), error) {
	if sc == nil || st == nil {
		return nil, nil, errors.New("realhttp: Replay needs a scenario and a strategy")
	}
	if sc.Duration <= 0 || sc.Bucket <= 0 {
		return nil, nil, fmt.Errorf("realhttp: scenario %s: duration and bucket must be > 0 (is it validated?)", sc.Name)
	}
	scale, err := driverScale(opts)
	if err != nil {
		return nil, nil, err
	}
	if err := driverTarget(opts.Target); err != nil {
		return nil, nil, err
	}
	client, closeIdle, err := driverClient(opts)
	if err != nil {
		return nil, nil, err
	}
	conns, _ := driverConns(opts) // checked by driverClient
	seed := sc.Seed
	if opts.Seed != 0 {
		seed = opts.Seed
	}
	seed = sim.RunSeed(seed, run)
	d := &driver{
		sc:       sc,
		policy:   st.Policy(),
		client:   client,
		slots:    make(chan struct{}, conns),
		target:   opts.Target,
		lateBy:   max(driverToWall(sc.Bucket, scale)/4, driverLateFloor),
		progress: opts.Progress,
		dlq:      opts.DLQ,
		scale:    scale,
		horizon:  sc.Duration,
		rArrive:  rand.New(rand.NewPCG(seed, 1)),
		rRetry:   rand.New(rand.NewPCG(seed, 5)),
		workers:  int32(sc.Workload.Workers),
		blocking: sc.Workload.Dispatch == scenarios.DispatchBlocking,
		limit:    sc.Workload.Requests,
		bucket:   sc.Bucket,
		done:     make(chan driverDone, 4096),
	}
	if t := d.policy.Timeout; t > 0 {
		d.timeout = max(driverToWall(t, scale), 1)
	}
	if sc.Workload.Uncapped() {
		d.limit = -1
	}
	if all := sc.AllOutages(); len(all) > 0 {
		d.lastOutageEnd = all[len(all)-1].End()
	}
	if d.limit > 0 {
		d.reqs = make([]driverRequest, 0, d.limit)
	}
	d.groups = strategies.NewGroups(d.policy)
	if d.policy.Hedge != nil {
		d.copies = make([]hedgeCopies, 0, max(d.limit, 0))
	}
	if d.policy.PerSender() || d.workers > 0 {
		if n := sc.Workload.Senders; n > 0 {
			d.senders = make([]driverSender, n)
			for i := range d.senders {
				d.senders[i].pool = sim.NewPool()
				d.groups.Join(&d.senders[i].retry, i)
			}
		} else {
			d.perRequest = true
			d.senders = make([]driverSender, 0, max(d.limit, 0))
		}
	}
	if r := sc.DLQ.Replay; r != nil && r.Rate > 0 {
		d.replayGap = time.Duration(float64(time.Second) / r.Rate)
	}
	buckets := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	d.run = results.NewRun(st.Name, run, buckets)
	if t := d.policy.Throttle; t != nil && t.Kind == strategies.ThrottleAWSAdaptive {
		d.run.ClientRates = make([]results.ClientRate, buckets)
	}
	d.nextSample = sc.Bucket
	d.stats = DriverStats{TimeScale: scale, Outcomes: map[string]int64{}, MaxConns: conns, LateBy: d.lateBy}
	return d, closeIdle, nil
}

// driverToWall converts a scenario duration to the wall clock.
func driverToWall(d time.Duration, scale float64) time.Duration {
	if scale == 1 {
		return d
	}
	return time.Duration(float64(d) * scale)
}

// scenarioTime converts wall-clock time since the start to scenario time.
func (d *driver) scenarioTime(wall time.Duration) time.Duration {
	if d.scale == 1 {
		return wall
	}
	return time.Duration(float64(wall) / d.scale)
}

// replay runs the loop until the horizon, the end of all work, or ctx.
func (d *driver) replay(ctx context.Context) (*results.Run, DriverStats, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.runCtx = runCtx
	d.start = time.Now()
	d.stats.Start = d.start
	d.scheduleWorkload()
	if r := d.sc.DLQ.Replay; r != nil && d.replayGap > 0 {
		d.q.push(r.At, drvReplay, -1, 0)
	}
	if len(d.sc.AllOutages()) > 0 {
		d.q.push(d.lastOutageEnd, drvOutageEnd, 0, 0)
	}
	horizonWall := driverToWall(d.horizon, d.scale)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var err error
loop:
	for {
		elapsed := d.release(horizonWall)
		if elapsed >= horizonWall || d.idle() {
			break
		}
		wake := horizonWall
		if e, ok := d.q.peek(); ok {
			wake = min(wake, driverToWall(e.at, d.scale))
		}
		if d.sampled < len(d.run.Series) {
			wake = min(wake, driverToWall(d.nextSample, d.scale))
		}
		timer.Reset(max(wake-elapsed, 0))
		select {
		case c := <-d.done:
			if d.tick() >= horizonWall {
				// Answered after the run's end: the attempt was in
				// flight then. The release at the top ends the loop.
				continue
			}
			d.complete(c)
			// Take what else has come in, but not so much that due
			// retries wait.
			for range 63 {
				select {
				case c := <-d.done:
					d.complete(c)
					continue
				default:
				}
				break
			}
		case <-timer.C:
		case <-ctx.Done():
			err = fmt.Errorf("realhttp: replay of %s interrupted at t=%s: %w", d.run.Strategy, d.now.Round(time.Millisecond), ctx.Err())
			break loop
		}
	}
	cancel()
	d.wg.Wait()
	d.stats.Wall = time.Since(d.start)
	d.run.Wall = d.stats.Wall
	if err != nil {
		d.stats.Partial = true
		for d.sampled < len(d.run.Series) && d.nextSample <= d.now {
			d.sample()
		}
	} else {
		d.now = max(d.now, d.horizon)
		for d.sampled < len(d.run.Series) {
			d.sample()
		}
	}
	if ferr := d.finish(); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if d.dlqErr != nil {
		err = errors.Join(err, fmt.Errorf("realhttp: writing dead letters: %w", d.dlqErr))
	}
	return d.run, d.stats, err
}

// tick moves the loop's clock to the wall clock, sampling every bucket
// that ended but the horizon's, and returns the wall-clock time since the
// start. replay samples the horizon's bucket once the loop is over, after
// the events release hands on late.
func (d *driver) tick() time.Duration {
	elapsed := time.Since(d.start)
	d.advance(min(d.scenarioTime(elapsed), d.horizon-1))
	return elapsed
}

// release handles every event due by now (events at or after the horizon
// never happen), and returns the wall-clock time since the start. Once
// the horizon has passed on the wall clock (horizonWall), the run is
// over: an event due over LateBy before now is handed on with missedBy
// set, so that it sends nothing and counts in DriverStats.Missed, while
// one due less than LateBy before now, which is not late, is handled as
// usual, and its attempt is in flight at the end.
func (d *driver) release(horizonWall time.Duration) time.Duration {
	elapsed := d.tick()
	for {
		e, ok := d.q.peek()
		if !ok || e.at >= d.horizon || driverToWall(e.at, d.scale) > elapsed {
			return elapsed
		}
		d.q.pop()
		d.advance(e.at)
		if lag := elapsed - driverToWall(e.at, d.scale); elapsed >= horizonWall && lag > d.lateBy {
			d.missedBy = lag
		}
		d.handle(e)
		d.missedBy = 0
	}
}

// miss counts an attempt that the run was over before it could send.
func (d *driver) miss() {
	d.stats.Missed++
	d.stats.MaxLag = max(d.stats.MaxLag, d.missedBy)
}

// idle reports whether nothing more can happen before the horizon: no
// attempt in flight and no event due before it.
func (d *driver) idle() bool {
	if d.inFlight > 0 {
		return false
	}
	e, ok := d.q.peek()
	return !ok || e.at >= d.horizon
}

// advance moves the clock to t (never back), sampling every bucket end
// passed.
func (d *driver) advance(t time.Duration) {
	if t <= d.now {
		return
	}
	for d.nextSample <= t && d.sampled < len(d.run.Series) {
		d.sample()
	}
	d.now = t
}

// sample records the state at the end of the current bucket and moves to
// the next.
func (d *driver) sample() {
	b := &d.run.Series[d.sampled]
	b.InFlight = int64(d.inFlight)
	b.DLQ = int64(d.dlqDepth)
	b.Delayed = int64(d.delayed)
	if d.run.ClientRates != nil {
		d.run.ClientRates[d.sampled] = d.clientRates()
	}
	d.sampled++
	d.nextSample += d.bucket
	if d.progress != nil {
		d.progress(d.sampled)
	}
}

// current returns the bucket holding now.
func (d *driver) current() *results.Bucket {
	return &d.run.Series[min(d.sampled, len(d.run.Series)-1)]
}

func (d *driver) handle(e driverEvent) {
	d.run.Events++
	switch e.kind {
	case drvArrival:
		d.arrive(e.at, e.a)
	case drvTry:
		if d.missedBy > 0 {
			d.miss() // still waiting when the run ended
			return
		}
		r := &d.reqs[e.a]
		if e.b == drvRetried {
			d.delayed--
			r.planned = e.at
		}
		d.try(e.a)
	case drvHedge:
		d.hedgeDue(e.a, e.b)
	case drvReplay:
		d.replay1(e.a)
	case drvOutageEnd:
		// As the simulator counts it (results.Run.Backlog): created by
		// now, neither delivered nor in the dead-letter queue.
		backlog := int64(d.arrived) - d.run.Delivered - int64(d.dlqDepth)
		d.run.Backlog = &backlog
		d.run.GaveUpInOutage = int64(len(d.dlqQueue))
	}
}

// newRequest creates the next request of the workload, due at, and makes
// its first try.
func (d *driver) newRequest(at time.Duration) {
	i := int32(len(d.reqs))
	s := i
	if n := len(d.senders); n > 0 && !d.perRequest {
		s = i % int32(n)
	}
	d.newRequestFrom(at, s)
}

// newRequestFrom creates the next request of the workload, due at, from
// sender s, and makes its first try.
func (d *driver) newRequestFrom(at time.Duration, s int32) {
	i := int32(len(d.reqs))
	if d.perRequest {
		d.senders = append(d.senders, driverSender{pool: sim.NewPool()})
		d.groups.Join(&d.senders[len(d.senders)-1].retry, len(d.senders)-1)
	}
	d.reqs = append(d.reqs, driverRequest{key: uuid.New(), created: at, planned: at, sender: s, bucket: -1})
	if d.workers > 0 {
		d.next = append(d.next, -1)
	}
	if d.copies != nil {
		d.copies = append(d.copies, hedgeCopies{})
	}
	d.arrived++
	d.try(i)
}

// try makes request i's next attempt now, through its sender's dispatcher
// and breaker.
func (d *driver) try(i int32) {
	if d.missedBy > 0 {
		d.miss() // a request created after the run's end never tries
		return
	}
	r := &d.reqs[i]
	if d.workers > 0 && r.flags&drvHasWorker == 0 {
		if !d.senders[r.sender].pool.Acquire(i, d.workers, d.next) {
			r.state = drvQueued
			return
		}
		r.flags |= drvHasWorker
	}
	permit, dec, ok := callBegin(d.policy, d.senderOf(r), &r.retry, d.now, d.rRetry, d.run, d.current())
	if !ok {
		d.free(i, dec)
		d.decide(i, dec)
		return
	}
	r.permit = permit
	r.state = drvInFlight
	r.tag++
	r.bucket = int32(min(d.sampled, len(d.run.Series)-1))
	if d.copies != nil {
		d.firstCopy(i)
	}
	d.send(i)
}

// send sends request i's latest copy of its attempt in flight now.
func (d *driver) send(i int32) {
	r := &d.reqs[i]
	d.run.Attempts++
	d.current().Attempts++
	d.inFlight++
	d.stats.PeakInFlight = max(d.stats.PeakInFlight, d.inFlight)
	call := driverCall{request: int(i), key: r.key, attempt: int(r.tag), planned: r.planned, timeout: d.timeout,
		cancellable: d.copies != nil && d.policy.Hedge.Cancel}
	tag := r.tag
	ctx := d.copyContext(i, tag)
	d.wg.Go(func() { d.attempt(ctx, i, tag, call) })
}

// clientRates sums the senders' adaptive rate limiters (a few thousand
// senders at most in real HTTP: summed at each bucket's end).
func (d *driver) clientRates() results.ClientRate {
	var c results.ClientRate
	for i := range d.senders {
		if rate, on := d.policy.Throttle.Rate(d.senders[i].retry.Throttle()); on {
			c.Limited++
			c.Rate += rate
		}
	}
	return c
}

// senderOf returns request r's sender state, nil when the policy keeps
// none.
func (d *driver) senderOf(r *driverRequest) *strategies.Sender {
	if d.senders == nil {
		return nil
	}
	return &d.senders[r.sender].retry
}

// attempt is the goroutine of one attempt: it takes a connection slot
// (waiting for one when all are in use), sends the attempt and reports
// the outcome to the loop, unless the run has ended.
func (d *driver) attempt(ctx context.Context, i, tag int32, call driverCall) {
	var waited time.Duration
	select {
	case d.slots <- struct{}{}:
	default:
		from := time.Now()
		select {
		case d.slots <- struct{}{}:
		case <-d.runCtx.Done():
			return
		}
		waited = max(time.Since(from), 1)
	}
	a, sent, live := driverSend(ctx, d.client, d.target, call)
	<-d.slots
	if !live {
		return // the run ended, or the copy was cancelled
	}
	c := driverDone{i: i, tag: tag, driverAnswer: a, actual: d.scenarioTime(sent.Sub(d.start)), waited: waited}
	select {
	case d.done <- c:
	case <-d.runCtx.Done():
	}
}

// free ends request i's hold on its worker after decision dec, except in
// a blocking dispatcher, where the worker sleeps through the backoff.
func (d *driver) free(i int32, dec strategies.Decision) {
	r := &d.reqs[i]
	if r.flags&drvHasWorker == 0 || (d.blocking && dec.Action == strategies.Retry) {
		return
	}
	r.flags &^= drvHasWorker
	if d.workers == 0 {
		return
	}
	if j, ok := d.senders[r.sender].pool.Release(d.next); ok {
		d.reqs[j].state = drvWaiting
		d.q.push(d.now, drvTry, j, 0)
	}
}

// complete is the loop learning the outcome of an attempt.
func (d *driver) complete(c driverDone) {
	d.run.Events++
	r := &d.reqs[c.i]
	if d.copies != nil {
		if !d.copyAnswered(c) {
			return
		}
	} else if r.state != drvInFlight || r.tag != c.tag {
		return
	}
	d.inFlight--
	o := c.res.Outcome
	d.stats.Outcomes[o.String()]++
	if r.tag > 1 {
		d.stats.Retries = append(d.stats.Retries, DriverSend{Request: int(c.i), Attempt: int(c.tag), Planned: r.planned, Actual: c.actual})
	}
	d.stats.Sent++
	if lag := driverToWall(c.actual-r.planned, d.scale); lag > d.lateBy {
		d.stats.Late++
		d.stats.MaxLag = max(d.stats.MaxLag, lag)
	}
	if c.waited > 0 {
		// The attempt went when it had its connection: count it there.
		d.stats.ConnWaits++
		d.stats.ConnWaitMax = max(d.stats.ConnWaitMax, c.waited)
		if sent := int32(min(c.actual/d.bucket, time.Duration(len(d.run.Series)-1))); sent > r.bucket {
			d.run.Series[r.bucket].Attempts--
			d.run.Series[sent].Attempts++
			r.bucket = sent
		}
	}
	r.last, r.status = uint8(o)+1, uint16(c.status)
	switch classify(&d.run.Series[r.bucket], c.driverAnswer) {
	case answerTimeout:
		d.run.TimedOut++
		d.current().TimedOut++
	case answerThrottled:
		d.run.Throttled++
	case answerRejected:
		d.run.Rejected++
	}
	if o != strategies.Success {
		d.current().Failed++
	}
	dec := callDone(d.policy, d.senderOf(r), &r.retry, r.permit, d.now, c.res, d.rRetry, d.run)
	r.state = drvWaiting
	d.free(c.i, dec)
	d.decide(c.i, dec)
}

// decide carries out decision dec about request i.
func (d *driver) decide(i int32, dec strategies.Decision) {
	r := &d.reqs[i]
	switch dec.Action {
	case strategies.Deliver:
		r.state = drvDelivered
		d.final(r)
		d.run.Delivered++
		d.current().Delivered++
		d.run.RecordLatency(d.now - r.created)
	case strategies.Retry:
		r.state = drvWaiting
		d.delayed++
		d.q.push(d.now+dec.Wait, drvTry, i, drvRetried)
	case strategies.DeadLetter:
		r.state, r.reason = drvDead, dec.Reason
		d.final(r)
		d.dlqQueue = append(d.dlqQueue, i)
		d.dlqDepth++
		d.writeDeadLetter(i)
	}
}

// writeDeadLetter writes request i's line to the DLQ writer; the first
// error stops the writing and is returned by Replay.
func (d *driver) writeDeadLetter(i int32) {
	if d.dlq == nil || d.dlqErr != nil {
		return
	}
	r := &d.reqs[i]
	l := DriverDeadLetter{
		Request:  int(i),
		Key:      r.key.String(),
		Reason:   r.reason.String(),
		Attempts: int(r.tag),
		T:        d.now.Seconds(),
		Strategy: d.run.Strategy,
		Status:   int(r.status),
	}
	if r.last > 0 {
		l.Outcome = strategies.Outcome(r.last - 1).String()
	}
	d.dlqErr = driverWriteDeadLetter(d.dlq, l)
}

// final notes that request r reached a final state now.
func (d *driver) final(r *driverRequest) {
	d.completion = d.now
	if r.created <= d.lastOutageEnd {
		d.drain = d.now
	}
	if c := d.sc.Workload.Clients; c != nil && d.now+c.ThinkTime < d.horizon {
		d.q.push(d.now+c.ThinkTime, drvArrival, r.sender, 0)
	}
}

// replay1 sends dead letter number k back (k = -1 starts the replay):
// the replay takes the dead letters in the queue when it starts, at the
// scenario's rate, with fresh attempt counts and their keys.
func (d *driver) replay1(k int32) {
	if k < 0 {
		d.replayed = len(d.dlqQueue)
		k = 0
	}
	if int(k) >= d.replayed {
		return
	}
	if d.missedBy > 0 {
		d.miss() // the dead letter stays in the queue
		d.q.push(d.now+d.replayGap, drvReplay, k+1, 0)
		return
	}
	i := d.dlqQueue[k]
	d.dlqQueue[k] = -1
	d.dlqDepth--
	r := &d.reqs[i]
	r.retry = strategies.Request{}
	r.state = drvWaiting
	r.planned = d.now
	d.run.Replayed++
	d.try(i)
	d.q.push(d.now+d.replayGap, drvReplay, k+1, 0)
}

// finish counts the final state of every request and checks
// conservation.
func (d *driver) finish() error {
	run := d.run
	run.Requests = int64(len(d.reqs))
	drained := true
	for i := range d.reqs {
		r := &d.reqs[i]
		switch r.state {
		case drvDelivered:
		case drvDead:
			run.DeadLettered++
			run.DeadLetteredBy[r.reason.String()]++
		default:
			run.Unfinished++
			if r.created <= d.lastOutageEnd {
				drained = false
			}
		}
	}
	if run.Unfinished == 0 {
		c := d.completion
		run.Completion = &c
	}
	if drained {
		drain := max(d.drain-d.lastOutageEnd, 0)
		run.Drain = &drain
	}
	if got := run.Delivered + run.DeadLettered + run.Unfinished; got != run.Requests {
		return fmt.Errorf("realhttp: conservation broken: %d requests but %d delivered + %d dead-lettered + %d unfinished",
			run.Requests, run.Delivered, run.DeadLettered, run.Unfinished)
	}
	return nil
}
