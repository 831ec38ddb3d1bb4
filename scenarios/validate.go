package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// FieldError is a problem with one field of a scenario, found by Validate.
// Load and Parse turn it into an Error with the field's position.
type FieldError struct {
	Path string // such as strategies[2].backoff.cap
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// problems collects FieldErrors.
type problems []error

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// oneOf reports value unless it is one of valid.
func (p *problems) oneOf(path, value string, valid ...string) bool {
	for _, v := range valid {
		if value == v {
			return true
		}
	}
	if value == "" {
		p.add(path, "missing (want one of %s)", strings.Join(valid, ", "))
	} else {
		p.add(path, "unknown value %q (want one of %s)", value, strings.Join(valid, ", "))
	}
	return false
}

func (p *problems) positive(path string, d time.Duration) {
	if d <= 0 {
		p.add(path, "must be > 0, got %s", d)
	}
}

func (p *problems) nonNegative(path string, d time.Duration) {
	if d < 0 {
		p.add(path, "must be >= 0, got %s", d)
	}
}

func (p *problems) probability(path string, x float64) {
	if x < 0 || x > 1 {
		p.add(path, "must be a probability in [0,1], got %v", x)
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Bounds on the sizes a scenario may ask for, beyond which a number is a
// mistake (or an attack) rather than an experiment. What a run will need
// in memory is estimated separately, before it runs (sim.Estimate).
const (
	// MaxNameLen is the longest scenario or strategy name: a name is a
	// folder name, with room for what herdlab adds to it.
	MaxNameLen = 200
	// MaxCount bounds requests, senders, workers and max_attempts: the
	// simulator numbers them in 32 bits.
	MaxCount = math.MaxInt32
	// MaxRuns bounds replications.
	MaxRuns = 100_000
	// MaxBuckets bounds the buckets of one run.
	MaxBuckets = 1_000_000
	// MinRate and MaxRate bound every rate, in requests per second.
	MinRate, MaxRate = 1e-6, 1e9
)

// name checks a name.
func (p *problems) name(path, name, what string) {
	switch {
	case len(name) > MaxNameLen:
		p.add(path, "%d characters is too long (at most %d: it names %s)", len(name), MaxNameLen, what)
	case !nameRE.MatchString(name):
		p.add(path, "want letters, digits, '.', '_' or '-' (it names %s), got %q", what, name)
	}
}

// count checks a count that may be 0, with what 0 means.
func (p *problems) count(path string, n int, zero string) {
	switch {
	case n < 0:
		p.add(path, "must be >= 1, or 0 for %s, got %d", zero, n)
	case n > MaxCount:
		p.add(path, "%d is more than the most herdlab counts (%d)", n, MaxCount)
	}
}

// rate checks a rate in requests per second; zero tells whether 0 is
// allowed.
func (p *problems) rate(path string, r float64, zero bool) {
	switch {
	case r == 0 && zero:
	case r <= 0:
		p.add(path, "must be > 0 requests per second, got %v", r)
	case r < MinRate || r > MaxRate:
		p.add(path, "must be between %g and %g requests per second, got %v", MinRate, MaxRate, r)
	}
}

// Validate reports every problem in s, each a *FieldError, joined with
// errors.Join. It returns nil for a scenario that can be run, and makes
// then the policy of each strategy and of each of its edges, once (see
// Strategy.Policy): it writes them into s when a strategy has none yet,
// or has changed since, and else writes nothing, so that a scenario
// validated again (a sweep's point, a server's) may be read meanwhile.
func (s *Scenario) Validate() error {
	var p problems
	p.name("name", s.Name, "the output folder")
	if s.Runs < 1 {
		p.add("runs", "must be >= 1, got %d", s.Runs)
	} else if s.Runs > MaxRuns {
		p.add("runs", "%d replications is too many (at most %d)", s.Runs, MaxRuns)
	}
	p.positive("duration", s.Duration)
	p.positive("bucket", s.Bucket)
	switch {
	case s.Bucket <= 0 || s.Duration <= 0:
	case s.Bucket > s.Duration:
		p.add("bucket", "%s is longer than the horizon (duration %s): a run would be less than one bucket", s.Bucket, s.Duration)
	case (s.Duration+s.Bucket-1)/s.Bucket > MaxBuckets:
		p.add("bucket", "%s makes %d buckets over %s; at most %d: use a wider bucket", s.Bucket, (s.Duration+s.Bucket-1)/s.Bucket, s.Duration, MaxBuckets)
	}
	if s.Services == nil {
		s.Server.validate(&p, "server", 1, false)
		s.Server.validateHorizon(&p, "server", s.Duration)
	} else {
		s.validateGraph(&p)
	}
	if s.Network.Latency != nil {
		s.Network.Latency.validate(&p, "network.latency")
	}
	s.Workload.validate(&p, s.Duration)
	if c := s.Workload.Clients; c != nil {
		if c.ThinkTime == 0 && s.Workload.Requests == 0 && s.Network.Latency == nil {
			p.add("workload.clients.think_time", "0, with no network latency and no cap (workload.requests): a client whose request fails at once "+
				"sends its next at the same instant, forever; give a think time, a latency or a cap")
		}
		if s.DLQ.Replay != nil {
			p.add("dlq.replay", "a closed loop cannot replay its dead letters: a replayed request would give its client two at once")
		}
	}
	if s.Server.Model == ModelOCC && s.Network.Latency == nil {
		p.add("network.latency", "model occ needs a network latency: the time between read and write is what makes writes conflict")
	}
	if r := s.DLQ.Replay; r != nil {
		p.nonNegative("dlq.replay.at", r.At)
		p.rate("dlq.replay.rate", r.Rate, false)
	}
	if len(s.Strategies) == 0 {
		p.add("strategies", "at least one strategy is needed")
	}
	for i := range s.Checks {
		s.Checks[i].validate(&p, s, i)
	}
	silenced := map[string]bool{}
	for i, sl := range s.Lint.Silence {
		path := fmt.Sprintf("lint.silence[%d]", i)
		k := slices.IndexFunc(LintRules, func(r LintRule) bool { return r.ID == sl.Rule })
		if k < 0 {
			ids := make([]string, len(LintRules))
			for k, r := range LintRules {
				ids[k] = r.ID
			}
			p.add(path+".rule", "unknown rule %q (want one of %s)", sl.Rule, strings.Join(ids, ", "))
		} else if LintRules[k].Error {
			p.add(path+".rule", "%s %s finds errors, which cannot be silenced: change the setting", sl.Rule, LintRules[k].Name)
		} else if silenced[sl.Rule] {
			p.add(path+".rule", "%s is silenced twice", sl.Rule)
		}
		silenced[sl.Rule] = true
		if strings.TrimSpace(sl.Reason) == "" {
			p.add(path+".reason", "missing: say why the setting is wanted")
		}
	}
	if s.Sweep != nil {
		s.Sweep.validate(&p)
	}
	seen := map[string]int{}
	for i, st := range s.Strategies {
		path := fmt.Sprintf("strategies[%d]", i)
		if first, dup := seen[st.Name]; dup {
			p.add(path+".name", "duplicate strategy name %q (also strategies[%d])", st.Name, first)
		} else if st.Name != "" {
			seen[st.Name] = i
		}
		st.validate(&p, path)
		if st.Hedge != nil && s.Services == nil && s.Server.Model == ModelOCC {
			p.add(path+".hedge", "model occ has one write in flight a request: hedging is for the queue model")
		}
		if b := st.Budget; b.Shared() && b.Scope == ScopeGroup && b.GroupSize > 0 {
			if fleet := s.Workload.Senders; fleet > 0 && b.GroupSize > fleet {
				p.add(path+".budget.group_size", "%d senders a group, but the fleet has %d (workload.senders): use scope fleet, or a smaller group", b.GroupSize, fleet)
			} else if fleet == 0 && s.Workload.Requests > 0 && b.GroupSize > s.Workload.Requests {
				p.add(path+".budget.group_size", "%d senders a group, but the fleet has %d (one sender per request): use scope fleet, or a smaller group", b.GroupSize, s.Workload.Requests)
			}
		}
		if st.MaxAttempts == 0 && st.Backoff.Kind == BackoffNone && s.Network.Latency == nil {
			p.add(path+".max_attempts", "backoff none with unlimited attempts and no network latency retries forever at the same instant: set max_attempts")
		}
	}
	if len(p) == 0 {
		s.typeStrategies(&p)
	}
	return errors.Join(p...)
}

// validate checks a server, or a service's server model, at path (server
// or services[i]) with its replicas.
func (s *Server) validate(p *problems, path string, replicas int, cache bool) {
	if s.Model != "" && !p.oneOf(path+".model", s.Model, ModelQueue, ModelOCC) || s.Model == ModelOCC {
		return
	}
	if s.Concurrency == 0 {
		p.add(path+".concurrency", "must be >= 1 or unlimited, got 0")
	} else if s.Concurrency > MaxCount {
		p.add(path+".concurrency", "%d is more than the most herdlab counts (%d): write unlimited", s.Concurrency, MaxCount)
	}
	if s.Queue > MaxCount {
		p.add(path+".queue", "%d is more than the most herdlab counts (%d): write unlimited", s.Queue, MaxCount)
	}
	s.ServiceTime.validate(p, path+".service_time")
	for i, o := range s.Outages {
		path := fmt.Sprintf("%s.outages[%d]", path, i)
		p.nonNegative(path+".start", o.Start)
		p.positive(path+".duration", o.Duration)
		modes := []string{Refuse, TimeoutMode, ErrorMode}
		if !strings.HasPrefix(path, "server.") {
			modes = append(modes, FlushMode, SlowMode)
		}
		switch {
		case !p.oneOf(path+".mode", o.Mode, modes...):
		case o.Mode == FlushMode && !cache:
			p.add(path+".mode", "flush empties a cache, and this service has none: give it a cache, or use refuse, timeout, error or slow")
		case o.Mode == FlushMode && o.Replicas != nil:
			p.add(path+".replicas", "a flush empties the service's one cache, shared by its replicas: leave replicas out")
		case o.Mode == SlowMode && o.Factor <= 1:
			p.add(path+".factor", "a slow outage multiplies the service time by factor: must be > 1, got %v", o.Factor)
		}
		if o.Factor != 0 && o.Mode != SlowMode {
			p.add(path+".factor", "only a slow outage has a factor")
		}
		o.validateReplicas(p, path, replicas)
		if i > 0 && o.Start < s.Outages[i-1].End() && o.overlaps(s.Outages[i-1]) {
			p.add(path+".start", "%s is before the end of the previous outage (%s): list outages in order, without overlap", o.Start, s.Outages[i-1].End())
		}
	}
	p.probability(path+".failure_probability", s.FailureProbability)
	if s.FailurePushback != nil && s.FailureProbability == 0 {
		p.add(path+".failure_pushback", "no failure carries it: set failure_probability, or leave it out")
	}
	p.nonNegative(path+".slowdown", s.Slowdown)
	if s.Warmup != (Warmup{}) {
		p.positive(path+".warmup.duration", s.Warmup.Duration)
		if s.Warmup.From <= 0 || s.Warmup.From > 1 {
			p.add(path+".warmup.from", "must be a fraction of capacity in (0,1], got %v", s.Warmup.From)
		}
	}
	if r := s.RateLimit; r != nil {
		p.rate(path+".rate_limit.rate", r.Rate, false)
		if r.Burst < 1 {
			p.add(path+".rate_limit.burst", "must be >= 1, got %d", r.Burst)
		} else if r.Burst > MaxCount {
			p.add(path+".rate_limit.burst", "%d is more than the most herdlab counts (%d)", r.Burst, MaxCount)
		}
		p.nonNegative(path+".rate_limit.retry_after", time.Duration(r.RetryAfter))
		if _, err := strategies.ParseRetryAfterFormat(r.Format); err != nil {
			p.oneOf(path+".rate_limit.format", r.Format, "seconds", "http-date")
		}
	}
	p.probability(path+".response_loss", s.ResponseLoss)
}

// validateHorizon reports outages that start at or after the horizon.
func (s *Server) validateHorizon(p *problems, path string, horizon time.Duration) {
	for i, o := range s.Outages {
		if horizon > 0 && o.Start >= horizon {
			p.add(fmt.Sprintf("%s.outages[%d].start", path, i), "%s is not before the horizon (duration %s)", o.Start, horizon)
		}
	}
}

func (x *Dist) validate(p *problems, path string) {
	if !p.oneOf(path+".dist", x.Kind, Constant, Exponential, UniformDist, Lognormal, Normal) {
		return
	}
	switch x.Kind {
	case UniformDist:
		p.nonNegative(path+".min", x.Min)
		if x.Max <= x.Min {
			p.add(path+".max", "must be > min (%s), got %s", x.Min, x.Max)
		}
	case Lognormal:
		p.positive(path+".mean", x.Mean)
		p.positive(path+".stddev", x.StdDev)
	case Normal:
		p.nonNegative(path+".mean", x.Mean)
		p.positive(path+".stddev", x.StdDev)
	default:
		p.positive(path+".mean", x.Mean)
	}
}

func (w *Workload) validate(p *problems, horizon time.Duration) {
	a := w.Arrival
	if w.Requests < 0 {
		p.add("workload.requests", "must be >= 0, got %d", w.Requests)
	} else if w.Requests > MaxCount {
		p.add("workload.requests", "%d is more than the most herdlab counts (%d)", w.Requests, MaxCount)
	}
	if c := w.Clients; c != nil {
		if c.Count < 1 {
			p.add("workload.clients.count", "must be >= 1, got %d", c.Count)
		} else if c.Count > MaxCount {
			p.add("workload.clients.count", "%d is more than the most herdlab counts (%d)", c.Count, MaxCount)
		}
		p.nonNegative("workload.clients.think_time", c.ThinkTime)
	} else if p.oneOf("workload.arrival.kind", a.Kind, Burst, Poisson, Uniform) {
		switch a.Kind {
		case Burst:
			p.nonNegative("workload.arrival.at", a.At)
		case Poisson:
			if a.Rate < 0 || (a.Rate == 0 && len(a.Schedule) == 0) {
				p.add("workload.arrival.rate", "must be > 0 requests per second (or 0 with a schedule), got %v", a.Rate)
			} else {
				p.rate("workload.arrival.rate", a.Rate, true)
			}
			for i, st := range a.Schedule {
				if st.Until > st.From && (st.Rate == 0 || st.Rate >= MinRate && st.Rate <= MaxRate) {
					continue // valid: no path to build (a sweep checks thousands of steps at each point)
				}
				path := fmt.Sprintf("workload.arrival.schedule[%d]", i)
				if st.Until <= st.From {
					p.add(path+".until", "must be after from (%s), got %s", st.From, st.Until)
				}
				if st.Rate < 0 {
					p.add(path+".rate", "must be >= 0, got %v", st.Rate)
				} else {
					p.rate(path+".rate", st.Rate, true)
				}
			}
		}
		if a.Kind != Burst {
			p.nonNegative("workload.arrival.from", a.From)
			if (a.Until != 0 || a.Kind == Uniform) && a.Until <= a.From {
				p.add("workload.arrival.until", "must be after from (%s), got %s", a.From, a.Until)
			}
		}
		if a.PerSender && w.Senders < 1 {
			p.add("workload.arrival.per_sender", "needs workload.senders: each sender gets a stream of its own (0 senders means one per request)")
		}
		if a.Kind != Poisson && w.Requests < 1 {
			p.add("workload.requests", "must be >= 1 for %s arrivals, got %d", a.Kind, w.Requests)
		}
	}
	p.count("workload.senders", w.Senders, "one sender per request")
	p.count("workload.workers", w.Workers, "unlimited")
	if known := a.Kind != Poisson || w.Requests > 0; known && w.Requests >= 1 && w.Clients == nil {
		if w.Senders > w.Requests {
			p.add("workload.senders", "%d senders for %d requests: a sender without a request sends nothing (0 means one sender per request)", w.Senders, w.Requests)
		}
		if w.Workers > w.Requests {
			p.add("workload.workers", "%d workers a sender for %d requests: the pool can never fill (0 means unlimited)", w.Workers, w.Requests)
		}
	}
	if w.Dispatch != "" && p.oneOf("workload.dispatch", w.Dispatch, DispatchDelayQueue, DispatchBlocking) && w.Dispatch == DispatchBlocking && w.Workers == 0 {
		p.add("workload.dispatch", "blocking needs workers: without a pool there is nothing to block")
	}
	if horizon <= 0 || w.Clients != nil {
		return // reported already, or no arrivals
	}
	if a.Kind == Burst && a.At >= horizon {
		p.add("workload.arrival.at", "%s is not before the horizon (duration %s)", a.At, horizon)
	}
	if a.Kind != Burst && a.From >= horizon {
		p.add("workload.arrival.from", "%s is not before the horizon (duration %s)", a.From, horizon)
	}
}

func (s *Strategy) validate(p *problems, path string) {
	p.name(path+".name", s.Name, "the strategy in every output")
	s.Backoff.validate(p, path+".backoff")
	if s.MaxAttempts < 0 {
		p.add(path+".max_attempts", "must be >= 1, or unlimited, got %d", s.MaxAttempts)
	} else {
		p.count(path+".max_attempts", s.MaxAttempts, "unlimited")
	}
	p.nonNegative(path+".max_elapsed", s.MaxElapsed)
	p.positive(path+".timeout", s.Timeout)
	outcomes(p, path+".retry_on", s.RetryOn)
	if _, err := strategies.ParseRetryAfterMode(s.RetryAfter.Mode); err != nil {
		p.oneOf(path+".retry_after.mode", s.RetryAfter.Mode, "honor", "ignore", "max")
	}
	p.positive(path+".retry_after.cap", s.RetryAfter.Cap)
	if b := s.Breaker; b != nil {
		b.validate(p, path+".breaker")
	}
	if b := s.Budget; b != nil {
		b.validate(p, path+".budget")
	}
	if t := s.Throttle; t != nil {
		t.validate(p, path+".throttle")
	}
	if h := s.Hedge; h != nil {
		switch d := h.Delay; {
		case d.Percentile != 0 && (d.Percentile <= 0 || d.Percentile >= 100):
			p.add(path+".hedge.delay", "a percentile must be in (0,100), got p%v", d.Percentile)
		case d.Percentile == 0 && d.Duration <= 0:
			p.add(path+".hedge.delay", "missing: a hedge goes after a delay, such as 50ms or p95 (a percentile of the latencies seen)")
		}
		if h.Max < 1 || h.Max > strategies.MaxHedges {
			p.add(path+".hedge.max", "must be in [1,%d] (gRPC allows 5 attempts in all), got %d", strategies.MaxHedges, h.Max)
		}
	}
}

func (t *Throttle) validate(p *problems, path string) {
	if !p.oneOf(path+".kind", t.Kind, ThrottleSRE, ThrottleFailsafe, ThrottleAWSAdaptive) {
		return
	}
	switch t.Kind {
	case ThrottleSRE:
		if t.K < 1 {
			p.add(path+".k", "must be >= 1 (the SRE book's 2 rejects nothing until half the requests fail), got %v", t.K)
		}
	case ThrottleFailsafe:
		if t.SuccessThreshold <= 0 || t.SuccessThreshold > 1 {
			p.add(path+".success_threshold", "must be in (0,1] (failsafe-go's 0.9 rejects below 90%% successes), got %v", t.SuccessThreshold)
		}
	case ThrottleAWSAdaptive:
		outcomes(p, path+".on", t.On)
		if t.Beta <= 0 || t.Beta >= 1 {
			p.add(path+".beta", "must be in (0,1): the rate is cut to beta times the measured rate on a throttle, got %v", t.Beta)
		}
		return
	}
	p.positive(path+".window", t.Window)
	if t.MaxRejection <= 0 || t.MaxRejection > 1 {
		p.add(path+".max_rejection", "must be in (0,1], got %v", t.MaxRejection)
	}
}

func (b *Backoff) validate(p *problems, path string) {
	if _, ok := Presets[b.Preset]; b.Preset != "" && !ok {
		p.add(path+".preset", "unknown preset %q (want one of %s)", b.Preset, strings.Join(slices.Sorted(maps.Keys(Presets)), ", "))
		return
	}
	kinds := make([]string, 0, len(backoffKeys))
	for k := range backoffKeys {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if !p.oneOf(path+".kind", b.Kind, kinds...) {
		return
	}
	uses := backoffKeys[b.Kind]
	has := func(key string) bool { return slices.Contains(uses, key) }
	if b.Kind == BackoffFixed && b.Delay == 0 {
		p.add(path+".delay", "missing: fixed waits this long before every retry")
	} else if b.Kind == BackoffFixed {
		p.positive(path+".delay", b.Delay)
	}
	if has("base") {
		p.positive(path+".base", b.Base)
		if b.Cap < b.Base {
			p.add(path+".cap", "must be >= base (%s), got %s", b.Base, b.Cap)
		}
	}
	if has("throttle_base") && b.ThrottleBase != 0 {
		p.positive(path+".throttle_base", b.ThrottleBase)
		if b.ThrottleBase > b.Cap {
			p.add(path+".throttle_base", "must be <= cap (%s), got %s", b.Cap, b.ThrottleBase)
		}
	}
	if has("multiplier") && b.Multiplier < 1 {
		p.add(path+".multiplier", "must be >= 1, got %v", b.Multiplier)
	}
	if has("jitter") && (b.Jitter <= 0 || b.Jitter > 1) {
		p.add(path+".jitter", "must be a fraction in (0,1], got %v", b.Jitter)
	}
}

func (b *Breaker) validate(p *problems, path string) {
	// A breaker built in Go may leave the kind empty: standard.
	if b.Kind != "" && !p.oneOf(path+".kind", b.Kind, BreakerStandard, BreakerCumulative) {
		return
	}
	if b.Kind == BreakerCumulative {
		if b.FailureRatio <= 0 || b.FailureRatio > 1 {
			p.add(path+".failure_ratio", "must be in (0,1]: retries go while failures over first tries are at most it, got %v", b.FailureRatio)
		}
		outcomes(p, path+".on", b.On)
		return
	}
	if b.Consecutive == 0 && b.FailureRatio == 0 {
		p.add(path, "set consecutive, failure_ratio or both, or the breaker never trips")
	}
	if b.Consecutive < 0 {
		p.add(path+".consecutive", "must be >= 1, got %d", b.Consecutive)
	}
	if b.FailureRatio < 0 || b.FailureRatio > 1 {
		p.add(path+".failure_ratio", "must be in (0,1], got %v", b.FailureRatio)
	}
	p.nonNegative(path+".window", b.Window)
	if b.FailureRatio > 0 && b.Window <= 0 {
		p.add(path+".window", "must be > 0 with failure_ratio, got %s", b.Window)
	}
	if b.MinCalls < 1 {
		p.add(path+".min_calls", "must be >= 1, got %d", b.MinCalls)
	}
	p.positive(path+".open_for", b.OpenFor)
	if b.OpenJitter < 0 || b.OpenJitter >= 1 {
		p.add(path+".open_jitter", "must be a fraction in [0,1), got %v", b.OpenJitter)
	}
	if b.Canaries < 1 {
		p.add(path+".canaries", "must be >= 1, got %d", b.Canaries)
	}
	outcomes(p, path+".on", b.On)
}

func (b *Budget) validate(p *problems, path string) {
	if !p.oneOf(path+".kind", b.Kind, "tokens", "quota", "bucket", "envoy", "finagle") {
		return
	}
	positive := func(key string, x float64) {
		if x <= 0 {
			p.add(path+"."+key, "must be > 0, got %v", x)
		}
	}
	if b.Kind == "envoy" || b.Kind == "finagle" {
		if b.Kind == "envoy" && (b.Percent < 0 || b.Percent > 100) {
			p.add(path+".percent", "must be in [0,100] (0: min_concurrency retries in flight, no share), got %v", b.Percent)
		} else if b.Kind == "finagle" && (b.Percent <= 0 || b.Percent > 100) {
			p.add(path+".percent", "must be in (0,100], got %v", b.Percent)
		}
		if b.Kind == "envoy" && b.MinConcurrency < 1 {
			p.add(path+".min_concurrency", "must be >= 1, got %d", b.MinConcurrency)
		}
		if b.Kind == "finagle" {
			p.positive(path+".ttl", b.TTL)
			if b.MinPerSecond < 0 {
				p.add(path+".min_per_second", "must be >= 0, got %v", b.MinPerSecond)
			}
		}
		if p.oneOf(path+".scope", b.Scope, ScopeSender, ScopeFleet, ScopeGroup) {
			switch {
			case b.Scope == ScopeGroup && b.GroupSize < 1:
				p.add(path+".group_size", "scope group needs group_size >= 1: the senders that share one budget (a proxy's), got %d", b.GroupSize)
			case b.Scope != ScopeGroup && b.GroupSize != 0:
				p.add(path+".group_size", "only with scope: group (scope is %s)", b.Scope)
			}
		}
		return
	}
	if b.Kind == "bucket" {
		positive("capacity", b.Capacity)
		positive("deposit", b.Deposit)
		positive("cost", b.Cost)
		if b.Threshold < 0 {
			p.add(path+".threshold", "must be >= 0, got %v", b.Threshold)
		} else if b.Threshold >= b.Capacity {
			p.add(path+".threshold", "must be below the capacity (%v), or no retry ever goes, got %v", b.Capacity, b.Threshold)
		}
		return
	}
	if b.Kind == "tokens" {
		positive("max_tokens", b.MaxTokens)
		positive("token_ratio", b.TokenRatio)
		return
	}
	positive("capacity", b.Capacity)
	positive("retry_cost", b.RetryCost)
	positive("timeout_cost", b.TimeoutCost)
	if b.ThrottlingCost < 0 {
		p.add(path+".throttling_cost", "must be > 0, or 0 for the retry_cost, got %v", b.ThrottlingCost)
	}
	if b.NoRetryIncrement < 0 {
		p.add(path+".no_retry_increment", "must be >= 0, got %v", b.NoRetryIncrement)
	}
}

// outcomes checks a list of outcome names; nil means the default, but an
// empty list given on purpose is a mistake.
func outcomes(p *problems, path string, names []string) {
	if names != nil && len(names) == 0 {
		p.add(path, "empty list: leave it out for the default")
	}
	seen := map[string]bool{}
	for i, name := range names {
		if o, err := strategies.ParseOutcome(name); err != nil || o == strategies.Success {
			p.oneOf(fmt.Sprintf("%s[%d]", path, i), name, "refused", "timeout", "reset", "5xx", "429", "4xx")
		} else if seen[name] {
			p.add(fmt.Sprintf("%s[%d]", path, i), "%q is listed twice", name)
		}
		seen[name] = true
	}
}
