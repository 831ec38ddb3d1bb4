package strategies

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ErrBudgetExhausted is the error a driver reports for a retry that the
// retry budget denied (Acquire returned false). Check it with errors.Is.
var ErrBudgetExhausted = errors.New("strategies: retry budget exhausted")

// BudgetKind says which retry budget algorithm a Budget runs.
type BudgetKind uint8

// The retry budget algorithms.
const (
	// BudgetTokens is gRPC's retry throttling (gRFC A6): a retry is
	// allowed only while more than half the tokens are left.
	BudgetTokens BudgetKind = iota
	// BudgetQuota is the AWS SDK's standard-mode retry quota
	// (aws-sdk-go-v2 retry.NewStandard): each retry buys its way out of a
	// shared capacity.
	BudgetQuota
	// BudgetBucket is Marc Brooker's retry token bucket ("Fixing retries
	// with token buckets and circuit breakers", 2022): it starts full,
	// every first try deposits into it, and a retry goes only while it
	// holds more than a threshold, and costs a token. There is no
	// per-request limit on its own.
	BudgetBucket
	// BudgetEnvoy is Envoy's retry budget (a cluster's circuit breaker
	// retry_budget): the retries in flight are at most
	// max(MinConcurrency, Percent% of the attempts in flight). Its state
	// is a SharedBudget, which a group of senders may hold together.
	BudgetEnvoy
	// BudgetFinagle is Finagle's RetryBudget: every first try deposits,
	// and retries may withdraw at most Percent% of the requests of the
	// last TTL, plus MinPerSecond a second. Its state is a SharedBudget.
	BudgetFinagle
	numBudgetKinds
)

var budgetKindNames = [numBudgetKinds]string{"tokens", "quota", "bucket", "envoy", "finagle"}

// String returns the kind's name as written in scenario files: tokens,
// quota, bucket, envoy or finagle.
func (k BudgetKind) String() string {
	if k < numBudgetKinds {
		return budgetKindNames[k]
	}
	return fmt.Sprintf("BudgetKind(%d)", uint8(k))
}

// ParseBudgetKind returns the kind named s (see BudgetKind.String).
func ParseBudgetKind(s string) (BudgetKind, error) {
	for i, name := range budgetKindNames {
		if name == s {
			return BudgetKind(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown budget kind %q (want one of %s)", s, strings.Join(budgetKindNames[:], ", "))
}

// Budget is a retry budget policy: it denies retries once a sender's
// recent failures have used up its budget, so that retries cannot
// multiply the load on a destination that is down. Each sender keeps one
// BudgetState; a million senders share one Budget.
//
// Amounts (tokens, capacity, costs) are kept in thousandths, as grpc-java
// does: a value is rounded to the nearest 0.001, and sums are exact.
//
// The zero Budget is gRPC's token budget with its example settings
// (MaxTokens 10, TokenRatio 0.1). Every zero field means the default
// given below; the scenario layer does not need to fill them in. A Budget
// of an unknown Kind denies nothing. A Budget is not changed by its
// methods and is safe for concurrent use; a BudgetState is not.
type Budget struct {
	Kind BudgetKind

	// BudgetTokens (gRFC A6 retry throttling). The tokens start at
	// MaxTokens. Each attempt that fails with an outcome in
	// DefaultRetryOn (every failure but a 4xx other than 429: gRPC counts
	// only retryable status codes) takes 1 token, down to 0; each success
	// adds TokenRatio, up to MaxTokens; other outcomes change nothing. A
	// retry is allowed only while tokens > MaxTokens/2. Acquire takes
	// nothing: the failure has paid already.

	// MaxTokens is the size of the token bucket; 0 means 10.
	MaxTokens float64
	// TokenRatio is the number of tokens a success adds back; 0 means 0.1.
	TokenRatio float64

	// BudgetQuota (aws-sdk-go-v2 standard retryer). The capacity starts
	// at Capacity. A retry acquires RetryCost, or TimeoutCost when the
	// failure was a Timeout, and is denied when less than that is left. A
	// success refunds what the request's last retry acquired, or adds
	// NoRetryIncrement when the success came at the first attempt. The
	// capacity never exceeds Capacity; failures change nothing.

	// Capacity is the size of the retry quota; 0 means 500.
	Capacity float64
	// RetryCost is what a retry after a failure other than a timeout
	// costs; 0 means 5.
	RetryCost float64
	// TimeoutCost is what a retry after a Timeout costs; 0 means 10.
	TimeoutCost float64
	// ThrottlingCost is what a retry after a 429 costs; 0 means RetryCost
	// (the SDKs' newer standard profile, aws-sdk-go-v2 v1.48.0
	// aws/retry/standard.go, has RetryCost 14 for every transient error,
	// timeouts included, and DefaultThrottlingRetryCost 5).
	ThrottlingCost float64
	// NoRetryIncrement is what a success at the first attempt adds back;
	// 0 means 1.
	NoRetryIncrement float64

	// BudgetBucket (Brooker 2022). The bucket starts at Capacity tokens
	// (0 means 5). Every first try deposits Deposit (0 means 0.1), up to
	// Capacity, whatever its outcome. A retry is allowed only while the
	// bucket holds more than Threshold tokens (0 means 1), and takes Cost
	// (0 means 1). Failures and successes change nothing else.

	// Deposit is what a first try adds; 0 means 0.1.
	Deposit float64
	// Cost is what a retry takes; 0 means 1.
	Cost float64
	// Threshold is what the bucket must hold more than for a retry; 0
	// means 1.
	Threshold float64

	// BudgetEnvoy and BudgetFinagle (see SharedBudget).

	// Percent is, for BudgetEnvoy, the retries in flight allowed per 100
	// attempts in flight, and for BudgetFinagle the retries allowed per
	// 100 requests over TTL; 0 means 20 (both defaults). A negative
	// Percent leaves BudgetEnvoy its floor alone: MinConcurrency retries
	// in flight, as Envoy's circuit breaker max_retries caps them.
	Percent float64
	// MinConcurrency is BudgetEnvoy's floor on the retries in flight; 0
	// means 3 (Envoy's min_retry_concurrency default).
	MinConcurrency int
	// TTL is BudgetFinagle's window; 0 means 10s.
	TTL time.Duration
	// MinPerSecond is BudgetFinagle's reserve, in retries a second over
	// TTL; 0 means 10, a negative value none.
	MinPerSecond float64
	// Scope says which senders hold the budget together; GroupSize is
	// the size of a ScopeGroup group. Only BudgetEnvoy and BudgetFinagle
	// can be shared; the other kinds are always per sender.
	Scope     Scope
	GroupSize int
}

// BudgetState is one sender's retry budget. It holds what has been spent,
// so the zero value is a full budget. It is 8 bytes. A BudgetState is not
// safe for concurrent use. Use it with one Budget policy only.
type BudgetState struct {
	// spent is MaxTokens or Capacity minus what is left, in thousandths.
	spent int64
}

// budgetScale is the number of internal units in one token or one unit
// of capacity.
const budgetScale = 1000

// Record updates the budget after an attempt ended with outcome o. cost
// is what the attempt acquired from the budget: the cost Acquire returned
// before a retry, and 0 for a request's first attempt (which is how
// BudgetBucket tells a first try).
//
// The driver calls Record after every attempt, then Acquire when it wants
// to retry.
func (b *Budget) Record(s *BudgetState, o Outcome, cost float64) {
	switch b.Kind {
	case BudgetTokens:
		switch {
		case o == Success:
			s.spent = max(s.spent-units(b.TokenRatio, 0.1), 0)
		case DefaultRetryOn.Has(o):
			s.spent = min(s.spent+budgetScale, units(b.MaxTokens, 10))
		}
	case BudgetQuota:
		if o != Success {
			return
		}
		refund := units(cost, 0)
		if refund <= 0 {
			refund = units(b.NoRetryIncrement, 1)
		}
		s.spent = max(s.spent-refund, 0)
	case BudgetBucket:
		if cost == 0 { // a first try
			s.spent = max(s.spent-units(b.Deposit, 0.1), 0)
		}
	}
}

// Acquire asks for a retry after an attempt that failed with outcome o
// (already passed to Record). It returns false when the budget denies the
// retry (see ErrBudgetExhausted); a denial changes nothing. Otherwise it
// returns the cost taken from the budget, which the driver passes to
// Record with the outcome of the retry: always 0 for BudgetTokens,
// RetryCost or TimeoutCost for BudgetQuota, Cost for BudgetBucket.
func (b *Budget) Acquire(s *BudgetState, o Outcome) (cost float64, ok bool) {
	switch b.Kind {
	case BudgetTokens:
		maxTokens := units(b.MaxTokens, 10)
		return 0, 2*(maxTokens-s.spent) > maxTokens
	case BudgetQuota:
		c := units(b.RetryCost, 5)
		switch {
		case o == Timeout:
			c = units(b.TimeoutCost, 10)
		case o == TooManyRequests && b.ThrottlingCost != 0:
			c = units(b.ThrottlingCost, 0)
		}
		if units(b.Capacity, 500)-s.spent < c {
			return 0, false
		}
		s.spent += c
		return float64(c) / budgetScale, true
	case BudgetBucket:
		if units(b.Capacity, 5)-s.spent <= units(b.Threshold, 1) {
			return 0, false
		}
		c := units(b.Cost, 1)
		s.spent += c
		return float64(c) / budgetScale, true
	}
	return 0, true
}

// Available returns what is left of the budget: tokens for BudgetTokens
// and BudgetBucket, capacity for BudgetQuota, and 0 for an unknown Kind. It is meant for
// tests and metrics.
func (b *Budget) Available(s *BudgetState) float64 {
	switch b.Kind {
	case BudgetTokens:
		return float64(units(b.MaxTokens, 10)-s.spent) / budgetScale
	case BudgetQuota:
		return float64(units(b.Capacity, 500)-s.spent) / budgetScale
	case BudgetBucket:
		return float64(units(b.Capacity, 5)-s.spent) / budgetScale
	}
	return 0
}

// units converts x, or def when x is 0, to thousandths, rounding to the
// nearest.
func units(x, def float64) int64 {
	if x == 0 {
		x = def
	}
	return int64(math.Round(x * budgetScale))
}
