package scenarios

import (
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
	// 0 (the default) means unlimited.
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

// Backoff is a strategy's backoff: the kind and its parameters.
//
// Kinds: none; fixed (delay); exponential, full-jitter, equal-jitter
// (base, cap, multiplier); proportional-jitter (base, cap, multiplier,
// jitter); decorrelated-jitter and decorrelated-jitter-v2 (base, cap).
// Defaults: base 1s, cap 60s, multiplier 2, jitter 0.2 (gRPC's).
type Backoff struct {
	Kind       string        `yaml:"kind"`
	Delay      time.Duration `yaml:"delay"`
	Base       time.Duration `yaml:"base"`
	Cap        time.Duration `yaml:"cap"`
	Multiplier float64       `yaml:"multiplier"`
	Jitter     float64       `yaml:"jitter"`
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
)

var backoffKeys = map[string][]string{
	BackoffNone:                 {},
	BackoffFixed:                {"delay"},
	BackoffExponential:          {"base", "cap", "multiplier"},
	BackoffFullJitter:           {"base", "cap", "multiplier"},
	BackoffEqualJitter:          {"base", "cap", "multiplier"},
	BackoffProportionalJitter:   {"base", "cap", "multiplier", "jitter"},
	BackoffDecorrelatedJitter:   {"base", "cap"},
	BackoffDecorrelatedJitterV2: {"base", "cap"},
}

func (b *Backoff) setDefaults() {
	b.Base = time.Second
	b.Cap = time.Minute
	b.Multiplier = strategies.DefaultMultiplier
	b.Jitter = 0.2
}

func (b *Backoff) checkKeys(written map[string]*yaml.Node, fail func(key, msg string)) {
	checkKindKeys(b.Kind, backoffKeys, written, fail)
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

// Budget is a retry budget per sender: kind tokens (gRPC retry
// throttling: max_tokens 10, token_ratio 0.1 by default), quota (the AWS
// SDK's retry quota: capacity 500, retry_cost 5, timeout_cost 10,
// no_retry_increment 1 by default) or bucket (Brooker's 2022 token
// bucket: capacity 5, deposit 0.1, cost 1, threshold 1 by default).
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
}

var budgetKeys = map[string][]string{
	"tokens": {"max_tokens", "token_ratio"},
	"quota":  {"capacity", "retry_cost", "timeout_cost", "no_retry_increment"},
	"bucket": {"capacity", "deposit", "cost", "threshold"},
}

// bucketCapacity is the default capacity of a bucket budget (the
// quota's is Budget.setDefaults').
const bucketCapacity = 5

func (b *Budget) setDefaults() {
	*b = Budget{MaxTokens: 10, TokenRatio: 0.1, Capacity: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1,
		Deposit: 0.1, Cost: 1, Threshold: 1}
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

// Policy returns the strategies.Policy that s describes. s must be valid
// (see Scenario.Validate).
func (s Strategy) Policy() *strategies.Policy {
	p := &strategies.Policy{
		Backoff:     s.Backoff.Policy(),
		MaxAttempts: s.MaxAttempts,
		MaxElapsed:  s.MaxElapsed,
		Timeout:     s.Timeout,
		RetryOn:     outcomeSet(s.RetryOn),
	}
	p.RetryAfter.Mode, _ = strategies.ParseRetryAfterMode(s.RetryAfter.Mode)
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
			Failures:     outcomeSet(b.On),
			RetriesOnly:  b.RetriesOnly,
		}
		p.ShortCircuitIsAttempt = b.CountsAsAttempt
	}
	if b := s.Budget; b != nil {
		kind, _ := strategies.ParseBudgetKind(b.Kind)
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
		}
	}
	return p
}

// outcomeSet converts validated outcome names to a set; none gives the
// empty set, which policies read as their default.
func outcomeSet(names []string) strategies.OutcomeSet {
	var set strategies.OutcomeSet
	for _, name := range names {
		o, err := strategies.ParseOutcome(name)
		if err == nil {
			set |= strategies.Outcomes(o)
		}
	}
	return set
}
