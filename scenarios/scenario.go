package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/configs"
)

// Scenario is one scenario file: a fleet of senders, a server with finite
// capacity, its outages, and the retry strategies to compare against them.
//
// Load and Parse apply the documented defaults to every field the file
// leaves out. A Scenario built in Go should start from Default() and
// NewStrategy so that it gets the same defaults.
type Scenario struct {
	// Name names the output folder; default: the file's name without its
	// extension. Letters, digits, '.', '_' and '-' only.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Seed seeds every random draw of the run; default 1.
	Seed uint64 `yaml:"seed"`
	// Runs is the number of independent replications, with seeds derived
	// from Seed; default 1.
	Runs int `yaml:"runs"`
	// Duration is the simulated horizon; default 15m.
	Duration time.Duration `yaml:"duration"`
	// Bucket is the width of a histogram bucket; default 1s.
	Bucket time.Duration `yaml:"bucket"`
	Server Server        `yaml:"server"`
	// Services, instead of Server, is a graph of services: the fleet
	// calls workload.target, which calls others (see Service). Nil for a
	// scenario of one server.
	Services   []Service  `yaml:"services"`
	Network    Network    `yaml:"network"`
	Workload   Workload   `yaml:"workload"`
	DLQ        DLQ        `yaml:"dlq"`
	Strategies []Strategy `yaml:"strategies"`
	// Checks are what `herdlab check` holds the results to.
	Checks []Check `yaml:"checks"`
	// Lint silences lint rules for this scenario.
	Lint LintSettings `yaml:"lint"`
	// Sweep is what `herdlab sweep` varies; nil when the file has none.
	// A scenario from With has none.
	Sweep *Sweep `yaml:"sweep"`

	src *source // where each field was written, for a loaded file
}

// LintSettings says which lint rules a scenario silences, and why.
type LintSettings struct {
	Silence []Silence `yaml:"silence"`
}

// Silence turns one lint rule off for a scenario, for a stated reason.
type Silence struct {
	Rule   string `yaml:"rule"`   // a rule's id, such as HL001
	Reason string `yaml:"reason"` // required: why the setting is wanted
}

// source is where a loaded scenario's fields were written.
type source struct {
	file  string
	where map[string]pos
	root  *yaml.Node // the top-level mapping, which With copies and changes; never changed itself
	from  *resolved  // what from: read, nil if nothing
}

// File returns the file the scenario was loaded from, or "" for one built
// in Go.
func (s *Scenario) File() string {
	if s.src == nil {
		return ""
	}
	return s.src.file
}

// Position returns the line and column where the field path (such as
// strategies[1].backoff) was written, or where the nearest enclosing
// field was; 0, 0 for a scenario built in Go.
func (s *Scenario) Position(path string) (line, col int) {
	if s.src == nil {
		return 0, 0
	}
	p := locate(s.src.where, path)
	return p.line, p.col
}

// Origin returns, for a field read from a configuration file (from:),
// or within one, where in that file it came from; false for a field
// written in the scenario.
func (s *Scenario) Origin(path string) (configs.Pos, bool) {
	if s.src == nil {
		return configs.Pos{}, false
	}
	if p := locate(s.src.where, path); p.o != nil {
		return *p.o, true
	}
	return configs.Pos{}, false
}

// ReadField is a field of a scenario read from a configuration file.
type ReadField struct {
	Field string // the scenario's field path
	At    configs.Pos
}

// ReadFrom returns the fields of s read from configuration files (see
// From), in the order of their field paths; none for a scenario that
// reads none.
func (s *Scenario) ReadFrom() []ReadField {
	if s.src == nil || s.src.from == nil {
		return nil
	}
	var out []ReadField
	for path, p := range s.src.where {
		if p.o == nil || hasLeaf(s.src.where, path) {
			continue // a mapping: its fields are listed
		}
		if i := strings.LastIndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
			if list, ok := s.src.where[path[:i]]; ok && list.o != nil {
				continue // an item of a list read whole: the list is listed
			}
		}
		out = append(out, ReadField{Field: path, At: *p.o})
	}
	slices.SortFunc(out, func(a, b ReadField) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// hasLeaf reports whether a field within path was recorded: path is a
// mapping, not a value (nor a list).
func hasLeaf(where map[string]pos, path string) bool {
	for p := range where {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// Default returns a scenario with every default set and no strategy.
func Default() Scenario {
	var s Scenario
	s.setDefaults()
	return s
}

func (s *Scenario) setDefaults() {
	s.Seed = 1
	s.Runs = 1
	s.Duration = 15 * time.Minute
	s.Bucket = time.Second
	s.Server.setDefaults()
	s.Workload.setDefaults()
}

// Server is the model of the dependency under load.
type Server struct {
	// Model is the kind of server: queue (the default, also when empty:
	// slots, a waiting
	// room, outages, rate limits and the rest below) or occ, a single
	// database row updated with optimistic concurrency control, as in
	// the AWS Architecture Blog's "Exponential Backoff And Jitter": an
	// attempt reads the row's version, then writes conditionally; the
	// write fails (a 5xx) when another write committed in between.
	// With occ, an attempt is a write call and the other server fields
	// do not apply.
	Model string `yaml:"model"`
	// Concurrency is how many requests are served at once; default
	// unlimited.
	Concurrency Limit `yaml:"concurrency"`
	// ServiceTime is the time to serve one request; default constant
	// 100ms.
	ServiceTime Dist `yaml:"service_time"`
	// Queue is the waiting room for requests when every slot is busy;
	// overflow is answered 503. Default unlimited.
	Queue   Limit    `yaml:"queue"`
	Outages []Outage `yaml:"outages"`
	// FailureProbability is the chance that an attempt fails with a 503
	// on its own, as a flaky dependency; default 0.
	FailureProbability float64 `yaml:"failure_probability"`
	// FailurePushback, when set, is gRPC's grpc-retry-pushback-ms hint
	// sent with every failure that FailureProbability makes (as
	// RateLimit.Pushback with a 429). Default none.
	FailurePushback *time.Duration `yaml:"failure_pushback"`
	// Slowdown is added to the service time for each request already in
	// service when one starts: base + Slowdown * in service. Default 0.
	Slowdown time.Duration `yaml:"slowdown"`
	// DropExpired skips work whose sender has already timed out, instead
	// of serving it to no one; default false.
	DropExpired bool `yaml:"drop_expired"`
	// Warmup ramps capacity up after each outage; default none.
	Warmup Warmup `yaml:"warmup"`
	// RateLimit answers 429 beyond a token-bucket rate; default none.
	RateLimit *RateLimit `yaml:"rate_limit"`
	// ResponseLoss is the chance that a processed request's answer is
	// lost, so the sender sees a reset; default 0.
	ResponseLoss float64 `yaml:"response_loss"`
	// Idempotency keeps the key of every request it begins to process
	// and never processes a request twice: a repeat is answered with the
	// stored success once processing is done, and with a 503 (come back)
	// while it is still going on. Default false: every repeat is
	// processed again and counted as a duplicate.
	Idempotency bool `yaml:"idempotency"`
}

// The server models.
const (
	ModelQueue = "queue"
	ModelOCC   = "occ"
)

func (s *Server) setDefaults() {
	s.Model = ModelQueue
	s.Concurrency = Unlimited
	s.Queue = Unlimited
	s.ServiceTime = Dist{Kind: Constant, Mean: 100 * time.Millisecond}
}

func (s *Server) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	if s.Model != ModelOCC {
		return
	}
	for key := range written {
		if key != "model" {
			fail(key, "not used by model occ (a single row: only the network and the workload shape it)")
		}
	}
}

// Capacity returns the server's capacity in requests per second:
// concurrency / mean service time. It is +Inf when concurrency is
// unlimited.
func (s *Server) Capacity() float64 {
	if s.Concurrency.Unlimited() {
		return math.Inf(1)
	}
	return float64(s.Concurrency) / s.ServiceTime.Mean.Seconds()
}

// Outage is a window in which the server does not serve.
type Outage struct {
	Start    time.Duration `yaml:"start"`
	Duration time.Duration `yaml:"duration"`
	// Mode is how the server fails: refuse (connections refused, the
	// attempt fails at once), timeout (no answer until the sender gives
	// up) or error (a fast 503). Default refuse.
	Mode string `yaml:"mode"`
	// Replicas lists the replicas of a service that the outage hits, by
	// number from 0; none means every replica.
	Replicas []int `yaml:"replicas"`
	// Factor, for mode slow, multiplies the service time.
	Factor float64 `yaml:"factor"`
}

// Hits reports whether the outage hits replica r.
func (o Outage) Hits(r int) bool { return o.Replicas == nil || slices.Contains(o.Replicas, r) }

// overlaps reports whether o and x hit a replica in common.
func (o Outage) overlaps(x Outage) bool {
	if o.Replicas == nil || x.Replicas == nil {
		return true
	}
	for _, r := range o.Replicas {
		if x.Hits(r) {
			return true
		}
	}
	return false
}

// validateReplicas checks the replicas an outage names.
func (o Outage) validateReplicas(p *problems, path string, replicas int) {
	if o.Replicas == nil {
		return
	}
	if replicas == 1 && len(o.Replicas) > 0 && strings.HasPrefix(path, "server.") {
		p.add(path+".replicas", "server has one replica: name replicas in a service of services")
		return
	}
	if len(o.Replicas) == 0 {
		p.add(path+".replicas", "empty list: leave it out for every replica")
	}
	seen := map[int]bool{}
	for i, r := range o.Replicas {
		switch {
		case r < 0 || r >= replicas:
			p.add(fmt.Sprintf("%s.replicas[%d]", path, i), "no replica %d: the service has %d (numbered from 0)", r, replicas)
		case seen[r]:
			p.add(fmt.Sprintf("%s.replicas[%d]", path, i), "replica %d is listed twice", r)
		}
		seen[r] = true
	}
}

func (o *Outage) setDefaults() { o.Mode = Refuse }

// End returns when the outage ends.
func (o Outage) End() time.Duration { return o.Start + o.Duration }

// The outage modes.
const (
	Refuse      = "refuse"
	TimeoutMode = "timeout"
	ErrorMode   = "error"
	// FlushMode, for a service with a cache, empties the cache: it
	// answers no lookup and takes no fill during the outage, and comes
	// back empty; the service itself keeps serving.
	FlushMode = "flush"
	// SlowMode, for a service, multiplies its service time by the
	// outage's factor: a slow replica, not a failed one.
	SlowMode = "slow"
)

// Warmup is a capacity ramp after each outage: capacity starts at From
// (a fraction of full) and grows linearly to full over Duration. The zero
// value is no warmup.
type Warmup struct {
	Duration time.Duration `yaml:"duration"`
	From     float64       `yaml:"from"`
}

// RateLimit is a token bucket in front of the server: Rate tokens per
// second, at most Burst saved up. A request without a token is answered
// 429 with a Retry-After hint.
type RateLimit struct {
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
	// RetryAfter is the hint sent with a 429: a fixed duration, or 0
	// (`auto` in the file, the default) for the time until a token is
	// free.
	RetryAfter AutoDuration `yaml:"retry_after"`
	// Format is how the hint is written: seconds (delta-seconds, the
	// default) or http-date.
	Format string `yaml:"format"`
	// Pushback, when set, is gRPC's grpc-retry-pushback-ms hint sent
	// with every 429: the wait before the retry, or, negative, do not
	// retry. Default none.
	Pushback *time.Duration `yaml:"pushback"`
}

func (r *RateLimit) setDefaults() {
	r.Format = "seconds"
}

// Network is the path between senders and server.
type Network struct {
	// Latency is the delay of each hop, request and response; nil means
	// none.
	Latency *Dist `yaml:"latency"`
}

// Workload is the requests the senders make.
type Workload struct {
	// Target is the service the fleet calls, in a graph of services;
	// default the first.
	Target string `yaml:"target"`
	// Requests is how many requests are made: required for burst and
	// uniform arrivals, an optional cap for poisson (0 = no cap).
	Requests int     `yaml:"requests"`
	Arrival  Arrival `yaml:"arrival"`
	// Senders is the number of independent senders, each with its own
	// breaker and budget, requests dealt to them in turn; 0 (the default)
	// means one sender per request.
	Senders int `yaml:"senders"`
	// Workers is each sender's dispatcher pool: at most Workers attempts
	// in flight per sender, the rest waiting in the sender's queue. 0
	// (the default) means unlimited.
	Workers int `yaml:"workers"`
	// Dispatch is how a worker waits out a failed request's backoff:
	// delay-queue (the default, the article's event-driven dispatcher:
	// the request goes to a delay queue with a visibility timeout and the
	// worker takes the next one) or blocking (the worker sleeps through
	// the backoff, holding its slot until the request is delivered or
	// given up). Empty means delay-queue. Blocking needs Workers.
	Dispatch string `yaml:"dispatch"`
	// Clients, instead of Arrival, makes a closed loop; default none (an
	// open loop: requests arrive whatever became of the earlier ones).
	Clients *Clients `yaml:"clients"`
}

// Clients is a closed-loop workload (Brooker, "What is Backoff For?"):
// Count clients, each sending its next request only after its previous
// one ended (delivered or dead-lettered), ThinkTime later. Each client is
// a sender, with its own breaker, budget and throttle. A client's first
// request goes at ThinkTime x U(0,1), so that the clients do not start in
// lockstep. Workload.Requests, when set, caps the requests of all of
// them; the horizon ends the loop otherwise.
type Clients struct {
	Count     int           `yaml:"count"`
	ThinkTime time.Duration `yaml:"think_time"`
}

// checkKeys refuses, with clients, the keys of an open loop, and makes
// each client a sender.
func (w *Workload) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	if w.Clients == nil {
		return
	}
	if _, ok := written["arrival"]; ok {
		fail("arrival", "a closed loop (clients) has no arrivals: each client sends its next request when its previous one ends; leave arrival out")
	}
	if _, ok := written["workers"]; ok {
		fail("workers", "a closed-loop client has one request at a time: leave workers out")
	}
	if _, ok := written["senders"]; ok && w.Senders != w.Clients.Count {
		fail("senders", fmt.Sprintf("each client is a sender: leave senders out, or make it clients.count (%d)", w.Clients.Count))
	}
	w.Senders = w.Clients.Count
}

// Uncapped reports whether the workload makes requests until the horizon
// (poisson arrivals or a closed loop, without Requests to cap them).
func (w Workload) Uncapped() bool {
	return w.Requests == 0 && (w.Clients != nil || w.Arrival.Kind == Poisson)
}

// The dispatch modes.
const (
	DispatchDelayQueue = "delay-queue"
	DispatchBlocking   = "blocking"
)

func (w *Workload) setDefaults() {
	w.Arrival.Kind = Burst
	w.Dispatch = DispatchDelayQueue
}

// Arrival says when requests are created.
type Arrival struct {
	// Kind is burst (all at At), poisson (at Rate per second from From to
	// Until, with Schedule overriding the rate in windows) or uniform
	// (Requests spread evenly from From to Until). Default burst.
	Kind string        `yaml:"kind"`
	At   time.Duration `yaml:"at"`
	Rate float64       `yaml:"rate"`
	From time.Duration `yaml:"from"`
	// Until ends poisson and uniform arrivals; 0 means the horizon for
	// poisson.
	Until    time.Duration `yaml:"until"`
	Schedule []RateStep    `yaml:"schedule"`
	// PerSender, for poisson, gives each of the workload's senders a
	// Poisson stream of its own at Rate/senders (and the schedule's
	// rates divided alike), as the clients of Brooker's retry simulator
	// have; without it the one stream's requests are dealt to the senders
	// in turn.
	PerSender bool `yaml:"per_sender"`
}

// SenderStream returns the arrival of one of n senders' own streams
// (see PerSender): a with every rate divided by n.
func (a Arrival) SenderStream(n int) Arrival {
	s := a
	s.Rate /= float64(n)
	s.Schedule = make([]RateStep, len(a.Schedule))
	for i, st := range a.Schedule {
		st.Rate /= float64(n)
		s.Schedule[i] = st
	}
	return s
}

// The arrival kinds.
const (
	Burst   = "burst"
	Poisson = "poisson"
	Uniform = "uniform"
)

// RateStep sets a poisson arrival rate from From to Until.
type RateStep struct {
	From  time.Duration `yaml:"from"`
	Until time.Duration `yaml:"until"`
	Rate  float64       `yaml:"rate"`
}

var arrivalKeys = map[string][]string{
	Burst:   {"at"},
	Poisson: {"rate", "from", "until", "schedule", "per_sender"},
	Uniform: {"from", "until"},
}

func (a *Arrival) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(a.Kind, arrivalKeys, written, fail)
}

// DLQ is the dead-letter queue.
type DLQ struct {
	// Replay, when set, sends every dead letter back at a time and rate,
	// with fresh attempt counts.
	Replay *Replay `yaml:"replay"`
}

// Replay is a bulk replay of the dead-letter queue at At, Rate requests
// per second.
type Replay struct {
	At   time.Duration `yaml:"at"`
	Rate float64       `yaml:"rate"`
}

// Limit is a count that may be unlimited, written as a number or as
// `unlimited` in a file.
type Limit int

// Unlimited is the Limit without a bound.
const Unlimited Limit = -1

// Unlimited reports whether l has no bound.
func (l Limit) Unlimited() bool { return l < 0 }

func (l Limit) String() string {
	if l.Unlimited() {
		return "unlimited"
	}
	return strconv.Itoa(int(l))
}

func (l *Limit) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind == yaml.ScalarNode && n.Value == "unlimited" {
		*l = Unlimited
		return true
	}
	i, ok := d.integer(n, path)
	if ok {
		if i < 0 {
			d.failAt(n, path, "must be a number >= 0 or unlimited, got %d", i)
			return true
		}
		*l = Limit(i)
	}
	return true
}

// AutoDuration is a duration where 0 means "work it out", written `auto`
// in a file.
type AutoDuration time.Duration

func (a *AutoDuration) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind == yaml.ScalarNode && n.Value == "auto" {
		*a = 0
		return true
	}
	if !d.scalar(n, path, "auto or a duration") {
		return true
	}
	dur, err := parseDuration(n.Value)
	if err != nil {
		d.failAt(n, path, "want auto or a duration such as 2s, got %q", n.Value)
		return true
	}
	*a = AutoDuration(dur)
	return true
}

func (a AutoDuration) String() string {
	if a == 0 {
		return "auto"
	}
	return time.Duration(a).String()
}

// Dist is a distribution of durations: {dist: constant, mean}, {dist:
// exponential, mean}, {dist: uniform, min, max}, {dist: lognormal, mean,
// stddev} or {dist: normal, mean, stddev}, whose negative draws are
// reflected (|x|, as the AWS backoff study's network). A bare duration
// such as `100ms` is a constant.
type Dist struct {
	Kind   string        `yaml:"dist"`
	Mean   time.Duration `yaml:"mean"`
	StdDev time.Duration `yaml:"stddev"`
	Min    time.Duration `yaml:"min"`
	Max    time.Duration `yaml:"max"`
}

// The distribution kinds.
const (
	Constant    = "constant"
	Exponential = "exponential"
	UniformDist = "uniform"
	Lognormal   = "lognormal"
	Normal      = "normal"
)

var distKeys = map[string][]string{
	Constant:    {"mean"},
	Exponential: {"mean"},
	UniformDist: {"min", "max"},
	Lognormal:   {"mean", "stddev"},
	Normal:      {"mean", "stddev"},
}

func (x *Dist) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.ScalarNode {
		// A mapping: decoded field by field, starting from nothing.
		*x = Dist{}
		return false
	}
	dur, err := parseDuration(n.Value)
	if err != nil {
		d.failAt(n, path, "want a duration or {dist: ..., mean: ...}, got %q", n.Value)
		return true
	}
	*x = Dist{Kind: Constant, Mean: dur}
	return true
}

func (x *Dist) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(x.Kind, distKeys, written, fail)
}

// MeanValue returns the distribution's mean.
func (x Dist) MeanValue() time.Duration {
	if x.Kind == UniformDist {
		return (x.Min + x.Max) / 2
	}
	return x.Mean
}

func (x Dist) String() string {
	switch x.Kind {
	case Constant:
		return x.Mean.String()
	case UniformDist:
		return fmt.Sprintf("uniform %s..%s", x.Min, x.Max)
	case Lognormal, Normal:
		return fmt.Sprintf("%s mean %s sd %s", x.Kind, x.Mean, x.StdDev)
	}
	return x.Kind + " mean " + x.Mean.String()
}

// checkKindKeys reports the written keys that the kind does not use.
// Keys not in any kind's list (such as "kind" itself) are always allowed.
func checkKindKeys(kind string, uses map[string][]string, written map[string]*yaml.Node, fail func(key, msg string)) {
	used, known := uses[kind]
	if !known {
		return // the kind itself is reported by Validate
	}
	all := map[string]bool{}
	for _, keys := range uses {
		for _, k := range keys {
			all[k] = true
		}
	}
	for key := range written {
		if all[key] && !slices.Contains(used, key) {
			fail(key, fmt.Sprintf("not used by %s (it uses %s)", kind, strings.Join(used, ", ")))
		}
	}
}
