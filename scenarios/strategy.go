package scenarios

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/strategies"
)

// Strategy is one retry strategy of a scenario: the policy every sender
// follows in its run.
type Strategy struct {
	// Name identifies the strategy in outputs; unique in a scenario.
	Name    string  `yaml:"name"`
	Backoff Backoff `yaml:"backoff"`
	// MaxAttempts bounds the attempts of a request, counting the first;
	// 0 (the default) means unlimited, written `unlimited` in a file (a
	// file's 0 is refused: some libraries read it as no retry, others as
	// no limit).
	MaxAttempts int `yaml:"max_attempts"`
	// MaxElapsed bounds the time from the first attempt to the last; 0
	// (the default) means unlimited.
	MaxElapsed time.Duration `yaml:"max_elapsed"`
	// Timeout is the per-attempt timeout; default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// RetryOn lists the outcomes retried: refused, timeout, reset, 5xx,
	// 429, 4xx. Default all but 4xx.
	RetryOn    []string   `yaml:"retry_on"`
	RetryAfter RetryAfter `yaml:"retry_after"`
	Breaker    *Breaker   `yaml:"breaker"`
	Budget     *Budget    `yaml:"budget"`
	// Throttle is a client-side throttle in front of every attempt: kind
	// sre, failsafe or aws-adaptive; default none.
	Throttle *Throttle `yaml:"throttle"`
	// Hedge sends hedged copies of an attempt without an answer; default
	// none.
	Hedge *Hedge `yaml:"hedge"`
	// IgnorePushback makes the senders ignore the server's gRPC pushback
	// hints; default false: a hint is the wait before the next retry, and
	// a negative one means do not retry.
	IgnorePushback bool `yaml:"ignore_pushback"`
	// Edges are the strategy's policies on the call edges of a service
	// graph (see EdgeStrategy).
	Edges Edges `yaml:"edges"`
	// DeadlinePropagation makes a call's remaining deadline bound every
	// downstream attempt's timeout, and drops (counted) work whose
	// deadline has passed; default false.
	DeadlinePropagation bool `yaml:"deadline_propagation"`
	// Services changes, for this strategy only, fields of named services
	// of the graph: the strategy compares deployments (a queue
	// discipline, a balancer, more replicas) as well as retry policies.
	Services ServiceOverrides `yaml:"services"`
	// From, when set, names the configuration file the policy is read
	// from (see From); the fields written beside it override the file's.
	From *From `yaml:"from"`

	// typed are the policies Validate made of the strategy and its
	// edges (see Policy).
	typed typedPolicies
}

// NewStrategy returns a strategy with every default set.
func NewStrategy(name string) Strategy {
	s := Strategy{Name: name}
	s.setDefaults()
	return s
}

// DefaultTimeout is a strategy's per-attempt timeout when the file gives
// none.
const DefaultTimeout = 30 * time.Second

func (s *Strategy) setDefaults() {
	s.Timeout = DefaultTimeout
	s.Backoff.setDefaults()
	s.RetryAfter.setDefaults()
}

// decodeField reads max_attempts: a number >= 1, or unlimited (kept as
// 0). A written 0 is refused, for it says no limit only to those who
// know herdlab's convention: urllib3's total=0 and failsafe-go's
// WithMaxAttempts(0) mean no retry at all.
func (s *Strategy) decodeField(d *decoder, key string, n *yaml.Node, path string) bool {
	if key != "max_attempts" {
		return false
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.Style&yaml.TaggedStyle != 0 || n.ShortTag() == "!!null" {
		return false // the ordinary decoding reports it, or keeps the default
	}
	d.nodes++
	d.where[path] = d.posOf(n)
	if n.Value == "unlimited" {
		s.MaxAttempts = 0
		return true
	}
	i, ok := d.integer(n, path)
	switch {
	case !ok:
	case i == 0:
		d.failAt(n, path, "0 is not a limit: write unlimited for no limit on the attempts, or a number >= 1 (1: no retry)")
	default:
		s.MaxAttempts = int(i)
	}
	return true
}

// Backoff is a strategy's backoff: the kind and its parameters.
//
// Kinds: none; fixed (delay); exponential, full-jitter, equal-jitter
// (base, cap, multiplier); proportional-jitter (base, cap, multiplier,
// jitter); decorrelated-jitter and decorrelated-jitter-v2 (base, cap);
// envoy-jitter (base, cap: Envoy's retry back-off, U(0, min(cap,
// base*(2^(k+1)-1)))).
// Defaults: base 1s, cap 60s, multiplier 2, jitter 0.2 (gRPC's).
type Backoff struct {
	Kind       string        `yaml:"kind"`
	Delay      time.Duration `yaml:"delay"`
	Base       time.Duration `yaml:"base"`
	Cap        time.Duration `yaml:"cap"`
	Multiplier float64       `yaml:"multiplier"`
	Jitter     float64       `yaml:"jitter"`
	// ThrottleBase, for the kinds with a base, is the base of the waits
	// after a 429 (on the same sequence); 0, the default, means base.
	ThrottleBase time.Duration `yaml:"throttle_base"`
	// Preset, instead of a kind, is a retry library's defaults by name
	// (see Presets): its backoff, and, unless the strategy writes them,
	// its attempt limit, elapsed limit and handling of Retry-After.
	Preset string `yaml:"preset"`
}

// The backoff kinds.
const (
	BackoffNone                 = "none"
	BackoffFixed                = "fixed"
	BackoffExponential          = "exponential"
	BackoffFullJitter           = "full-jitter"
	BackoffEqualJitter          = "equal-jitter"
	BackoffDecorrelatedJitter   = "decorrelated-jitter"
	BackoffProportionalJitter   = "proportional-jitter"
	BackoffDecorrelatedJitterV2 = "decorrelated-jitter-v2"
	BackoffEnvoyJitter          = "envoy-jitter"
)

var backoffKeys = map[string][]string{
	BackoffNone:                 {},
	BackoffFixed:                {"delay"},
	BackoffExponential:          {"base", "cap", "multiplier", "throttle_base"},
	BackoffFullJitter:           {"base", "cap", "multiplier", "throttle_base"},
	BackoffEqualJitter:          {"base", "cap", "multiplier", "throttle_base"},
	BackoffProportionalJitter:   {"base", "cap", "multiplier", "jitter", "throttle_base"},
	BackoffDecorrelatedJitter:   {"base", "cap", "throttle_base"},
	BackoffDecorrelatedJitterV2: {"base", "cap", "throttle_base"},
	BackoffEnvoyJitter:          {"base", "cap", "throttle_base"},
}

func (b *Backoff) setDefaults() {
	b.Base = time.Second
	b.Cap = time.Minute
	b.Multiplier = strategies.DefaultMultiplier
	b.Jitter = 0.2
}

func (b *Backoff) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	if _, ok := written["preset"]; !ok {
		checkKindKeys(b.Kind, backoffKeys, written, fail)
		return
	}
	p, ok := Presets[b.Preset]
	if !ok {
		return // Validate says so
	}
	for key := range written {
		if key != "preset" {
			fail(key, fmt.Sprintf("a preset is the library's whole backoff: leave %s out, or write the backoff without the preset", key))
		}
	}
	name := b.Preset
	*b = p.Backoff
	b.Preset = name
}

// checkKeys gives a strategy whose backoff is a preset the library's
// limits and Retry-After handling, where the file does not write them.
func (s *Strategy) checkKeys(written map[string]*yaml.Node, _ func(key, msg string)) {
	p, ok := Presets[s.Backoff.Preset]
	if !ok {
		return
	}
	if _, ok := written["max_attempts"]; !ok {
		s.MaxAttempts = p.MaxAttempts
	}
	if _, ok := written["max_elapsed"]; !ok {
		s.MaxElapsed = p.MaxElapsed
	}
	if _, ok := written["retry_after"]; !ok {
		s.RetryAfter.Mode = p.RetryAfter
	}
}

// Preset is a retry library's defaults as a strategy: the backoff, the
// attempt and elapsed limits (0: none), the Retry-After mode, and where
// each is read from in the library.
type Preset struct {
	Backoff     Backoff
	MaxAttempts int
	MaxElapsed  time.Duration
	RetryAfter  string
	// Library names the library and version the preset was read from;
	// Source says where in it.
	Library, Source string
}

// Presets are the retry libraries whose defaults a strategy can name
// (backoff: {preset: NAME}). Each is checked against the library itself,
// run through herdtest on the same scenario (examples/clients).
var Presets = map[string]Preset{
	// retryablehttp.NewClient(): DefaultBackoff waits RetryWaitMin x
	// 2^n capped at RetryWaitMax (1 s, 30 s), without jitter, and
	// honours Retry-After on a 429 or 503; RetryMax 4 retries.
	"go-retryablehttp": {
		Backoff:     Backoff{Kind: BackoffExponential, Base: time.Second, Cap: 30 * time.Second, Multiplier: 2},
		MaxAttempts: 5,
		RetryAfter:  strategies.RetryAfterHonor.String(),
		Library:     "github.com/hashicorp/go-retryablehttp v0.7.8",
		Source:      "client.go: defaultRetryWaitMin, defaultRetryWaitMax, defaultRetryMax, DefaultBackoff",
	},
	// backoff.Retry with backoff.NewExponentialBackOff(): 500 ms x 1.5^n
	// capped at 60 s, each wait moved by up to half of itself at random;
	// retries for 15 minutes (DefaultMaxElapsedTime), as many times as
	// fit; a Retry-After is the operation's to return, not read.
	"cenkalti-backoff": {
		Backoff:    Backoff{Kind: BackoffProportionalJitter, Base: 500 * time.Millisecond, Cap: time.Minute, Multiplier: 1.5, Jitter: 0.5},
		MaxElapsed: 15 * time.Minute,
		RetryAfter: strategies.RetryAfterIgnore.String(),
		Library:    "github.com/cenkalti/backoff/v5 v5.0.3",
		Source:     "exponential.go: DefaultInitialInterval, DefaultRandomizationFactor, DefaultMultiplier, DefaultMaxInterval; retry.go: DefaultMaxElapsedTime",
	},
	// failsafehttp.NewRetryPolicyBuilder().Build(): 2 retries
	// (defaultMaxRetries) of failed requests and 429/5xx answers, at once
	// (no delay), or after the answer's Retry-After.
	"failsafe-go": {
		Backoff:     Backoff{Kind: BackoffNone},
		MaxAttempts: 3,
		RetryAfter:  strategies.RetryAfterHonor.String(),
		Library:     "github.com/failsafe-go/failsafe-go v0.9.8",
		Source:      "retrypolicy/retry.go: defaultMaxRetries; failsafehttp/policy.go: NewRetryPolicyBuilder, DelayFunc",
	},
}

// Policy returns the strategies.Backoff that b describes. b must be valid.
func (b Backoff) Policy() strategies.Backoff {
	switch b.Kind {
	case BackoffFixed:
		return strategies.Fixed{Delay: b.Delay}
	case BackoffExponential:
		return strategies.Exponential{Base: b.Base, Cap: b.Cap, Multiplier: b.Multiplier}
	case BackoffFullJitter:
		return strategies.FullJitter{Base: b.Base, Cap: b.Cap, Multiplier: b.Multiplier}
	case BackoffEqualJitter:
		return strategies.EqualJitter{Base: b.Base, Cap: b.Cap, Multiplier: b.Multiplier}
	case BackoffProportionalJitter:
		return strategies.ProportionalJitter{Base: b.Base, Cap: b.Cap, Multiplier: b.Multiplier, Factor: b.Jitter}
	case BackoffDecorrelatedJitter:
		return strategies.DecorrelatedJitter{Base: b.Base, Cap: b.Cap}
	case BackoffDecorrelatedJitterV2:
		return strategies.DecorrelatedJitterV2{Base: b.Base, Cap: b.Cap}
	case BackoffEnvoyJitter:
		return strategies.EnvoyJitter{Base: b.Base, Cap: b.Cap}
	}
	return strategies.None{}
}

// RetryAfter says how a strategy treats Retry-After hints: mode honor (the
// default: wait exactly the hint), ignore, or max (the larger of hint and
// backoff); every hint is capped at Cap, default 5m.
type RetryAfter struct {
	Mode string        `yaml:"mode"`
	Cap  time.Duration `yaml:"cap"`
}

func (r *RetryAfter) setDefaults() {
	r.Mode = strategies.RetryAfterHonor.String()
	r.Cap = strategies.DefaultRetryAfterCap
}

// Breaker is a circuit breaker per sender. Kind standard (the default)
// trips on Consecutive failures (within Window, when set) or on a
// FailureRatio over Window once MinCalls calls were made; it stays open
// OpenFor, jittered by OpenJitter, then lets Canaries attempts through.
// Defaults: open_for 15m, canaries 1, min_calls 10, failures on refused,
// timeout, reset and 5xx. Kind cumulative is Brooker's 2022 retry
// breaker: retries go only while the sender's failed attempts over its
// first tries since the start are at most FailureRatio (see
// strategies.Breaker.Cumulative).
type Breaker struct {
	Kind         string        `yaml:"kind"`
	Consecutive  int           `yaml:"consecutive"`
	FailureRatio float64       `yaml:"failure_ratio"`
	Window       time.Duration `yaml:"window"`
	MinCalls     int           `yaml:"min_calls"`
	OpenFor      time.Duration `yaml:"open_for"`
	OpenJitter   float64       `yaml:"open_jitter"`
	Canaries     int           `yaml:"canaries"`
	// On lists the outcomes counted as failures.
	On []string `yaml:"on"`
	// CountsAsAttempt makes a short-circuited request use up an attempt;
	// default false.
	CountsAsAttempt bool `yaml:"counts_as_attempt"`
	// RetriesOnly makes a retry circuit breaker: first attempts always
	// go, only retries wait for it; default false.
	RetriesOnly bool `yaml:"retries_only"`
}

func (b *Breaker) setDefaults() {
	b.Kind = BreakerStandard
	b.OpenFor = 15 * time.Minute
	b.Canaries = 1
	b.MinCalls = 10
}

// The kinds of breaker.
const (
	BreakerStandard   = "standard"
	BreakerCumulative = "cumulative"
)

var breakerKeys = map[string][]string{
	BreakerStandard:   {"consecutive", "failure_ratio", "window", "min_calls", "open_for", "open_jitter", "canaries", "on", "counts_as_attempt", "retries_only"},
	BreakerCumulative: {"failure_ratio", "on"},
}

func (b *Breaker) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(b.Kind, breakerKeys, written, fail)
}

// Budget is a retry budget: kind tokens (gRPC retry throttling:
// max_tokens 10, token_ratio 0.1 by default), quota (the AWS SDK's retry
// quota: capacity 500, retry_cost 5, timeout_cost 10, throttling_cost
// the retry_cost, no_retry_increment 1 by default) or bucket (Brooker's
// 2022 token bucket: capacity 5, deposit 0.1, cost 1, threshold 1 by
// default), each per sender; or envoy (Envoy's retry budget: percent 20,
// min_concurrency 3; percent 0 leaves the floor alone: min_concurrency
// retries in flight, Envoy's circuit breaker max_retries) or finagle (Finagle's RetryBudget: percent 20, ttl
// 10s, min_per_second 10), held per sender or, with scope fleet or group
// (group_size senders each), shared.
type Budget struct {
	Kind             string  `yaml:"kind"`
	MaxTokens        float64 `yaml:"max_tokens"`
	TokenRatio       float64 `yaml:"token_ratio"`
	Capacity         float64 `yaml:"capacity"`
	RetryCost        float64 `yaml:"retry_cost"`
	TimeoutCost      float64 `yaml:"timeout_cost"`
	NoRetryIncrement float64 `yaml:"no_retry_increment"`
	Deposit          float64 `yaml:"deposit"`
	Cost             float64 `yaml:"cost"`
	Threshold        float64 `yaml:"threshold"`
	// ThrottlingCost is the quota's cost of a retry after a 429; 0 (the
	// default) means the retry_cost.
	ThrottlingCost float64       `yaml:"throttling_cost"`
	Percent        float64       `yaml:"percent"`
	MinConcurrency int           `yaml:"min_concurrency"`
	TTL            time.Duration `yaml:"ttl"`
	MinPerSecond   float64       `yaml:"min_per_second"`
	// Scope is sender (the default), fleet or group; GroupSize is the
	// senders of a group.
	Scope     string `yaml:"scope"`
	GroupSize int    `yaml:"group_size"`
}

// The budget scopes.
const (
	ScopeSender = "sender"
	ScopeFleet  = "fleet"
	ScopeGroup  = "group"
)

var budgetKeys = map[string][]string{
	"tokens":  {"max_tokens", "token_ratio"},
	"quota":   {"capacity", "retry_cost", "timeout_cost", "throttling_cost", "no_retry_increment"},
	"bucket":  {"capacity", "deposit", "cost", "threshold"},
	"envoy":   {"percent", "min_concurrency", "scope", "group_size"},
	"finagle": {"percent", "ttl", "min_per_second", "scope", "group_size"},
}

// Shared reports whether the budget is held by more than one sender.
func (b *Budget) Shared() bool { return b != nil && b.Scope != "" && b.Scope != ScopeSender }

// bucketCapacity is the default capacity of a bucket budget (the
// quota's is Budget.setDefaults').
const bucketCapacity = 5

func (b *Budget) setDefaults() {
	*b = Budget{MaxTokens: 10, TokenRatio: 0.1, Capacity: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1,
		Deposit: 0.1, Cost: 1, Threshold: 1,
		Percent: 20, MinConcurrency: 3, TTL: 10 * time.Second, MinPerSecond: 10, Scope: ScopeSender}
}

// checkKeys checks the keys that b's kind uses; it also gives a bucket
// the capacity of its kind when the file wrote none (the one place that
// knows which keys the file wrote).
func (b *Budget) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(b.Kind, budgetKeys, written, fail)
	if _, ok := written["capacity"]; b.Kind == "bucket" && !ok {
		b.Capacity = bucketCapacity
	}
}

// newPolicy makes the strategies.Policy that s describes. s must be
// valid (see Scenario.Validate); a word it cannot read (which Validate
// reports) is left at its zero value, and the error, placed at its
// field, returned. An empty word, left so by a strategy made in Go, is
// the default.
func (s *Strategy) newPolicy() (*strategies.Policy, error) {
	var errs problems
	read := func(path string, err error) {
		if err != nil {
			errs.add(path, "%v", err)
		}
	}
	p := &strategies.Policy{
		Backoff:     s.Backoff.Policy(),
		MaxAttempts: s.MaxAttempts,
		MaxElapsed:  s.MaxElapsed,
		Timeout:     s.Timeout,
	}
	p.RetryOn = outcomeSet(s.RetryOn, "retry_on", read)
	if tb := s.Backoff; tb.ThrottleBase > 0 {
		tb.Base = tb.ThrottleBase
		p.ThrottleBackoff = tb.Policy()
	}
	if m := s.RetryAfter.Mode; m != "" {
		var err error
		p.RetryAfter.Mode, err = strategies.ParseRetryAfterMode(m)
		read("retry_after.mode", err)
	}
	p.RetryAfter.Cap = s.RetryAfter.Cap
	if b := s.Breaker; b != nil {
		p.Breaker = &strategies.Breaker{
			Cumulative:   b.Kind == BreakerCumulative,
			Consecutive:  b.Consecutive,
			FailureRatio: b.FailureRatio,
			Window:       b.Window,
			MinCalls:     b.MinCalls,
			OpenFor:      b.OpenFor,
			OpenJitter:   b.OpenJitter,
			Canaries:     b.Canaries,
			Failures:     outcomeSet(b.On, "breaker.on", read),
			RetriesOnly:  b.RetriesOnly,
		}
		p.ShortCircuitIsAttempt = b.CountsAsAttempt
	}
	if b := s.Budget; b != nil {
		kind, err := strategies.ParseBudgetKind(b.Kind)
		read("budget.kind", err)
		scope := strategies.ScopeSender
		if b.Scope != "" {
			scope, err = strategies.ParseScope(b.Scope)
			read("budget.scope", err)
		}
		minPerSecond := b.MinPerSecond
		if minPerSecond == 0 {
			minPerSecond = -1 // none: strategies reads 0 as its default
		}
		percent := b.Percent
		if percent == 0 {
			percent = -1 // envoy: the floor alone (strategies reads 0 as its default)
		}
		p.Budget = &strategies.Budget{
			Kind:             kind,
			MaxTokens:        b.MaxTokens,
			TokenRatio:       b.TokenRatio,
			Capacity:         b.Capacity,
			RetryCost:        b.RetryCost,
			TimeoutCost:      b.TimeoutCost,
			NoRetryIncrement: b.NoRetryIncrement,
			Deposit:          b.Deposit,
			Cost:             b.Cost,
			Threshold:        b.Threshold,
			ThrottlingCost:   b.ThrottlingCost,
			Percent:          percent,
			MinConcurrency:   b.MinConcurrency,
			TTL:              b.TTL,
			MinPerSecond:     minPerSecond,
			Scope:            scope,
			GroupSize:        b.GroupSize,
		}
	}
	if t := s.Throttle; t != nil {
		kind, err := strategies.ParseThrottleKind(t.Kind)
		read("throttle.kind", err)
		p.Throttle = &strategies.Throttle{
			Kind:             kind,
			K:                t.K,
			SuccessThreshold: t.SuccessThreshold,
			Window:           t.Window,
			MaxRejection:     t.MaxRejection,
			On:               outcomeSet(t.On, "throttle.on", read),
			Beta:             t.Beta,
		}
	}
	if h := s.Hedge; h != nil {
		p.Hedge = &strategies.Hedge{Delay: h.Delay.Duration, Percentile: h.Delay.Percentile, Max: h.Max, Cancel: h.Cancel}
	}
	p.IgnorePushback = s.IgnorePushback
	return p, errors.Join(errs...)
}

// Hedge is a hedging policy: after Delay (a duration, or a percentile of
// the latencies the sender has observed, written p95) without an answer,
// another copy of the attempt goes, up to Max (default 1); Cancel (default
// false) makes the winner cancel the others.
type Hedge struct {
	Delay  HedgeDelay `yaml:"delay"`
	Max    int        `yaml:"max"`
	Cancel bool       `yaml:"cancel"`
}

func (h *Hedge) setDefaults() { h.Max = 1 }

// HedgeDelay is a hedge's delay: a fixed Duration, or, when Percentile
// is set, that percentile of observed latencies (written p95, p99.9).
type HedgeDelay struct {
	Duration   time.Duration
	Percentile float64
}

func (h *HedgeDelay) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if !d.scalar(n, path, "a duration or a percentile such as p95") {
		return true
	}
	if rest, ok := strings.CutPrefix(n.Value, "p"); ok {
		x, err := strconv.ParseFloat(rest, 64)
		if err != nil || math.IsNaN(x) {
			d.failAt(n, path, "want a duration such as 50ms or a percentile such as p95, got %q", n.Value)
			return true
		}
		*h = HedgeDelay{Percentile: x}
		return true
	}
	dur, err := parseDuration(n.Value)
	if err != nil {
		d.failAt(n, path, "want a duration such as 50ms or a percentile such as p95, got %q", n.Value)
		return true
	}
	*h = HedgeDelay{Duration: dur}
	return true
}

// String returns the delay as written in a file.
func (h HedgeDelay) String() string {
	if h.Percentile > 0 {
		return "p" + strconv.FormatFloat(h.Percentile, 'f', -1, 64)
	}
	return h.Duration.String()
}

// Throttle is a client-side throttle per sender: kind sre (Google's SRE
// book: k 2, window 2m, max_rejection 1 by default), failsafe
// (failsafe-go's adaptive throttler: success_threshold 0.9, window 1m,
// max_rejection 0.9) or aws-adaptive (the AWS SDKs' CUBIC rate limiter;
// on lists the outcomes that count as throttles, default 429).
type Throttle struct {
	Kind             string        `yaml:"kind"`
	K                float64       `yaml:"k"`
	SuccessThreshold float64       `yaml:"success_threshold"`
	Window           time.Duration `yaml:"window"`
	MaxRejection     float64       `yaml:"max_rejection"`
	On               []string      `yaml:"on"`
	// Beta is aws-adaptive's cut on a throttle; default 0.7, the SDKs'.
	Beta float64 `yaml:"beta"`
}

// The throttle kinds.
const (
	ThrottleSRE         = "sre"
	ThrottleFailsafe    = "failsafe"
	ThrottleAWSAdaptive = "aws-adaptive"
)

var throttleKeys = map[string][]string{
	ThrottleSRE:         {"k", "window", "max_rejection"},
	ThrottleFailsafe:    {"success_threshold", "window", "max_rejection"},
	ThrottleAWSAdaptive: {"on", "beta"},
}

func (t *Throttle) setDefaults() {
	t.K = 2
	t.SuccessThreshold = 0.9
	t.Beta = strategies.CubicBeta
}

// checkKeys checks the keys that t's kind uses, and gives the window and
// the rejection cap their kind's defaults when the file wrote none.
func (t *Throttle) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(t.Kind, throttleKeys, written, fail)
	if _, ok := written["window"]; !ok {
		t.Window = 2 * time.Minute
		if t.Kind == ThrottleFailsafe {
			t.Window = time.Minute
		}
	}
	if _, ok := written["max_rejection"]; !ok {
		t.MaxRejection = 1
		if t.Kind == ThrottleFailsafe {
			t.MaxRejection = 0.9
		}
	}
}

// outcomeSet converts validated outcome names, listed at path, to a
// set; none gives the empty set, which policies read as their default. A
// name it cannot read goes to read with its error.
func outcomeSet(names []string, path string, read func(path string, err error)) strategies.OutcomeSet {
	var set strategies.OutcomeSet
	for i, name := range names {
		o, err := strategies.ParseOutcome(name)
		read(fmt.Sprintf("%s[%d]", path, i), err)
		if err == nil {
			set |= strategies.Outcomes(o)
		}
	}
	return set
}
