package strategies_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// budgetStep is one row of a budget step table: a Record of an attempt's
// outcome and cost, or an Acquire after a failure, then the budget left.
type budgetStep struct {
	acquire bool
	o       strategies.Outcome
	// cost is, for a record, what the attempt acquired; for an acquire,
	// the cost Acquire must return.
	cost float64
	// ok is what Acquire must return (acquire steps only).
	ok bool
	// avail is what Available must return after the step.
	avail float64
}

func budgetRecord(o strategies.Outcome, cost, avail float64) budgetStep {
	return budgetStep{o: o, cost: cost, avail: avail}
}

func budgetAcquire(o strategies.Outcome, ok bool, cost, avail float64) budgetStep {
	return budgetStep{acquire: true, o: o, ok: ok, cost: cost, avail: avail}
}

// budgetRepeat returns n copies of step, with avail stepping by delta
// from the first copy's avail.
func budgetRepeat(n int, step budgetStep, delta float64) []budgetStep {
	steps := make([]budgetStep, n)
	for i := range steps {
		steps[i] = step
		steps[i].avail = step.avail + float64(i)*delta
	}
	return steps
}

// budgetSteps concatenates rows and groups of rows into one table.
func budgetSteps(parts ...any) []budgetStep {
	var steps []budgetStep
	for _, p := range parts {
		switch p := p.(type) {
		case budgetStep:
			steps = append(steps, p)
		case []budgetStep:
			steps = append(steps, p...)
		default:
			panic(fmt.Sprintf("budgetSteps: %T", p))
		}
	}
	return steps
}

// runBudgetSteps plays steps on a zero (full) BudgetState and stops at the
// first step that goes wrong.
func runBudgetSteps(t *testing.T, b *strategies.Budget, full float64, steps []budgetStep) {
	t.Helper()
	var s strategies.BudgetState
	require.Equal(t, full, b.Available(&s), "a zero BudgetState is full")
	for i, st := range steps {
		if st.acquire {
			cost, ok := b.Acquire(&s, st.o)
			if !assert.Equalf(t, st.ok, ok, "step %d: acquire(%v)", i, st.o) ||
				!assert.Equalf(t, st.cost, cost, "step %d: acquire(%v) cost", i, st.o) {
				return
			}
		} else {
			b.Record(&s, st.o, st.cost)
		}
		if !assert.InDeltaf(t, st.avail, b.Available(&s), 1e-9, "step %d: available after %+v", i, st) {
			return
		}
	}
}

type budgetTest struct {
	name  string
	b     *strategies.Budget
	full  float64
	steps []budgetStep
}

func runBudgetTests(t *testing.T, tests []budgetTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runBudgetSteps(t, tt.b, tt.full, tt.steps)
		})
	}
}

func TestBudgetTokens(t *testing.T) {
	const (
		success   = strategies.Success
		timeout   = strategies.Timeout
		serverErr = strategies.ServerError
		refused   = strategies.Refused
		reset     = strategies.Reset
		tooMany   = strategies.TooManyRequests
		clientErr = strategies.ClientError
		denied    = false
		allowed   = true
		noCost    = 0.0
		full      = 10.0
		ratio     = 0.1
	)
	grpc := &strategies.Budget{} // the zero Budget: gRPC tokens, 10 and 0.1
	runBudgetTests(t, []budgetTest{
		{"failures drain one token each; retries stop at half", grpc, full, budgetSteps(
			budgetRecord(success, noCost, 10), // ceiling
			budgetRecord(timeout, noCost, 9),
			budgetAcquire(timeout, allowed, noCost, 9), // takes nothing
			budgetRecord(serverErr, noCost, 8),
			budgetRecord(refused, noCost, 7),
			budgetRecord(reset, noCost, 6),
			budgetAcquire(reset, allowed, noCost, 6), // 6 > 10/2
			budgetRecord(tooMany, noCost, 5),
			budgetAcquire(tooMany, denied, noCost, 5), // 5 <= 10/2
			budgetAcquire(timeout, denied, noCost, 5),
			budgetRecord(clientErr, noCost, 5), // not a retryable failure
			budgetRecord(success, noCost, 5.1),
			budgetAcquire(timeout, allowed, noCost, 5.1),
		)},
		{"tokens floor at 0 and refill by TokenRatio up to MaxTokens", grpc, full, budgetSteps(
			budgetRepeat(10, budgetRecord(timeout, noCost, 9), -1),
			budgetRecord(timeout, noCost, 0), // floor
			budgetRecord(serverErr, noCost, 0),
			budgetAcquire(serverErr, denied, noCost, 0),
			budgetRepeat(50, budgetRecord(success, noCost, ratio), ratio), // up to 5, exactly
			budgetAcquire(serverErr, denied, noCost, 5),
			budgetRecord(success, noCost, 5.1),
			budgetAcquire(serverErr, allowed, noCost, 5.1),
			budgetRepeat(49, budgetRecord(success, noCost, 5.2), ratio), // up to 10
			budgetRecord(success, noCost, 10),                           // ceiling
			budgetRecord(timeout, noCost, 9),
		)},
		{"MaxTokens and TokenRatio", &strategies.Budget{Kind: strategies.BudgetTokens, MaxTokens: 100, TokenRatio: 1}, 100, budgetSteps(
			budgetRepeat(49, budgetRecord(timeout, noCost, 99), -1),
			budgetAcquire(timeout, allowed, noCost, 51),
			budgetRecord(timeout, noCost, 50),
			budgetAcquire(timeout, denied, noCost, 50),
			budgetRecord(success, noCost, 51),
			budgetAcquire(timeout, allowed, noCost, 51),
		)},
	})
}

func TestBudgetQuota(t *testing.T) {
	const (
		success   = strategies.Success
		timeout   = strategies.Timeout
		serverErr = strategies.ServerError
		denied    = false
		allowed   = true
	)
	aws := &strategies.Budget{Kind: strategies.BudgetQuota} // 500, 5, 10, 1
	runBudgetTests(t, []budgetTest{
		{"exactly 100 retries from full", aws, 500, budgetSteps(
			budgetRepeat(100, budgetAcquire(serverErr, allowed, 5, 495), -5),
			budgetAcquire(serverErr, denied, 0, 0),
			budgetAcquire(timeout, denied, 0, 0),
		)},
		{"exactly 50 retries after timeouts", aws, 500, budgetSteps(
			budgetRepeat(50, budgetAcquire(timeout, allowed, 10, 490), -10),
			budgetAcquire(timeout, denied, 0, 0),
		)},
		{"failures take nothing; a success refunds the last retry's cost", aws, 500, budgetSteps(
			budgetRecord(serverErr, 0, 500),
			budgetAcquire(serverErr, allowed, 5, 495),
			budgetRecord(timeout, 5, 495), // the retry timed out: no refund
			budgetAcquire(timeout, allowed, 10, 485),
			budgetRecord(success, 10, 495), // refunds 10, not 15
			budgetAcquire(serverErr, allowed, 5, 490),
			budgetRecord(strategies.ClientError, 5, 490),
		)},
		{"a first-attempt success adds NoRetryIncrement, never above Capacity", aws, 500, budgetSteps(
			budgetRecord(success, 0, 500),
			budgetAcquire(serverErr, allowed, 5, 495),
			budgetRepeat(5, budgetRecord(success, 0, 496), 1),
			budgetRecord(success, 0, 500),
			budgetAcquire(serverErr, allowed, 5, 495),
			budgetAcquire(serverErr, allowed, 5, 490),
			budgetRecord(success, 5, 495),
			budgetRecord(success, 5, 500),
			budgetRecord(success, 5, 500), // a refund cannot overfill
		)},
		{"a denial takes nothing; a cheaper retry may still pass", aws, 500, budgetSteps(
			budgetRepeat(97, budgetAcquire(serverErr, allowed, 5, 495), -5), // 15 left
			budgetAcquire(timeout, allowed, 10, 5),
			budgetAcquire(timeout, denied, 0, 5),
			budgetAcquire(serverErr, allowed, 5, 0),
			budgetAcquire(serverErr, denied, 0, 0),
			budgetRecord(success, 0, 1),
			budgetAcquire(serverErr, denied, 0, 1),
			budgetRepeat(4, budgetRecord(success, 0, 2), 1),
			budgetAcquire(serverErr, allowed, 5, 0),
		)},
		{"custom costs", &strategies.Budget{Kind: strategies.BudgetQuota, Capacity: 2, RetryCost: 0.3, TimeoutCost: 0.7, NoRetryIncrement: 0.1}, 2, budgetSteps(
			budgetAcquire(serverErr, allowed, 0.3, 1.7),
			budgetAcquire(timeout, allowed, 0.7, 1.0),
			// Policy keeps the cost as a float32: the refund is still
			// exact to the thousandth.
			budgetRecord(success, float64(float32(0.7)), 1.7),
			budgetAcquire(serverErr, allowed, 0.3, 1.4),
			budgetAcquire(serverErr, allowed, 0.3, 1.1),
			budgetAcquire(serverErr, allowed, 0.3, 0.8),
			budgetAcquire(timeout, allowed, 0.7, 0.1),
			budgetAcquire(serverErr, denied, 0, 0.1),
			budgetRecord(success, 0, 0.2),
		)},
	})
}

func TestBudgetUnknownKind(t *testing.T) {
	b := &strategies.Budget{Kind: strategies.BudgetKind(9)}
	var s strategies.BudgetState
	for range 1000 {
		b.Record(&s, strategies.Timeout, 0)
		cost, ok := b.Acquire(&s, strategies.Timeout)
		require.True(t, ok)
		require.Zero(t, cost)
	}
	assert.Zero(t, b.Available(&s))
}

func TestBudgetKind(t *testing.T) {
	for _, k := range []strategies.BudgetKind{strategies.BudgetTokens, strategies.BudgetQuota, strategies.BudgetBucket} {
		got, err := strategies.ParseBudgetKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	assert.Equal(t, "tokens", strategies.BudgetTokens.String())
	assert.Equal(t, "quota", strategies.BudgetQuota.String())
	assert.Equal(t, "bucket", strategies.BudgetBucket.String())
	assert.Equal(t, "BudgetKind(9)", strategies.BudgetKind(9).String())
	_, err := strategies.ParseBudgetKind("leaky")
	assert.EqualError(t, err, `strategies: unknown budget kind "leaky" (want one of tokens, quota, bucket, envoy, finagle)`)
}

func TestBudgetErrExhausted(t *testing.T) {
	err := fmt.Errorf("retry webhook 42: %w", strategies.ErrBudgetExhausted)
	assert.ErrorIs(t, err, strategies.ErrBudgetExhausted)
	assert.Equal(t, "strategies: retry budget exhausted", strategies.ErrBudgetExhausted.Error())
}

func TestBudgetStateSize(t *testing.T) {
	size := unsafe.Sizeof(strategies.BudgetState{})
	t.Logf("BudgetState: %d bytes", size)
	assert.LessOrEqual(t, size, uintptr(16))
}

func TestBudgetBucket(t *testing.T) {
	const (
		success   = strategies.Success
		serverErr = strategies.ServerError
		denied    = false
		allowed   = true
	)
	brooker := &strategies.Budget{Kind: strategies.BudgetBucket} // 5, 0.1, 1, 1
	runBudgetTests(t, []budgetTest{
		{"from full, 4 retries: a retry needs more than 1 token", brooker, 5, budgetSteps(
			budgetRepeat(4, budgetAcquire(serverErr, allowed, 1, 4), -1),
			budgetAcquire(serverErr, denied, 0, 1),
			budgetAcquire(strategies.Timeout, denied, 0, 1),
		)},
		{"every first try deposits 0.1, whatever its outcome; a retry does not", brooker, 5, budgetSteps(
			budgetRepeat(4, budgetAcquire(serverErr, allowed, 1, 4), -1),
			budgetRecord(serverErr, 0, 1.1),
			budgetAcquire(serverErr, allowed, 1, 0.1),
			budgetRecord(success, 1, 0.1), // the retry succeeded: nothing back
			budgetAcquire(serverErr, denied, 0, 0.1),
			budgetRepeat(10, budgetRecord(success, 0, 0.2), 0.1),
			budgetAcquire(serverErr, allowed, 1, 0.1),
		)},
		{"deposits stop at the capacity", brooker, 5, budgetSteps(
			budgetRecord(success, 0, 5),
			budgetAcquire(serverErr, allowed, 1, 4),
			budgetRepeat(10, budgetRecord(serverErr, 0, 4.1), 0.1),
			budgetRecord(success, 0, 5),
		)},
		{"custom settings", &strategies.Budget{Kind: strategies.BudgetBucket, Capacity: 2, Deposit: 0.5, Cost: 0.75, Threshold: 0.5}, 2, budgetSteps(
			budgetAcquire(serverErr, allowed, 0.75, 1.25),
			budgetAcquire(serverErr, allowed, 0.75, 0.5),
			budgetAcquire(serverErr, denied, 0, 0.5),
			budgetRecord(serverErr, 0, 1),
			budgetAcquire(serverErr, allowed, 0.75, 0.25),
		)},
	})
}
