package strategies_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// The article's capped exponential backoff: 1s, 2s, 4s, ... up to a 60 s cap.
func ExampleExponential() {
	b := strategies.Exponential{Base: time.Second, Cap: time.Minute}
	for k := range 8 {
		fmt.Print(b.At(k), " ")
	}
	fmt.Println()
	// Output: 1s 2s 4s 8s 16s 32s 1m0s 1m0s
}

// Full jitter draws the whole wait uniformly below the exponential delay;
// equal jitter keeps half of it fixed.
func ExampleFullJitter() {
	full := strategies.FullJitter{Base: time.Second, Cap: time.Minute}
	equal := strategies.EqualJitter{Base: time.Second, Cap: time.Minute}
	for _, u := range []float64{0, 0.5, 0.99} {
		fmt.Printf("k=3 u=%.2f: full %v, equal %v\n", u, full.At(3, u), equal.At(3, u))
	}
	// Output:
	// k=3 u=0.00: full 0s, equal 4s
	// k=3 u=0.50: full 4s, equal 6s
	// k=3 u=0.99: full 7.92s, equal 7.96s
}

// Decorrelated jitter remembers its previous wait: each draw is
// U(base, 3 x previous), capped.
func ExampleDecorrelatedJitter() {
	b := strategies.DecorrelatedJitter{Base: time.Second, Cap: time.Minute}
	r := rand.New(rand.NewPCG(1, 2))
	var st strategies.BackoffState
	for range 6 {
		fmt.Print(b.Next(&st, r).Round(time.Millisecond), " ")
	}
	fmt.Println()
	// Output: 2.353s 3.795s 6.282s 8.67s 20.953s 25.024s
}

// A policy drives one request: Begin before each attempt, Done with its
// result. Here the server refuses twice, then answers 429 with a
// Retry-After hint, then succeeds.
func ExamplePolicy() {
	p := &strategies.Policy{
		Backoff:     strategies.Exponential{Base: time.Second, Cap: time.Minute},
		MaxAttempts: 10,
	}
	r := rand.New(rand.NewPCG(1, 2))
	var sender strategies.Sender
	var req strategies.Request
	now := time.Duration(0)
	for _, res := range []strategies.Result{
		{Outcome: strategies.Refused},
		{Outcome: strategies.Refused},
		{Outcome: strategies.TooManyRequests, RetryAfter: 30 * time.Second, HasRetryAfter: true},
		{Outcome: strategies.Success},
	} {
		permit, _, _ := p.Begin(&sender, &req, now, r)
		d := p.Done(&sender, &req, permit, now, &res, r)
		fmt.Printf("t=%v %v: %v %v\n", now, res.Outcome, d.Action, d.Wait)
		now += d.Wait
	}
	// Output:
	// t=0s refused: retry 1s
	// t=1s refused: retry 2s
	// t=3s 429: retry 30s
	// t=33s success: deliver 0s
}
