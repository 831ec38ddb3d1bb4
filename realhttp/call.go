package realhttp

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/strategies"
)

// The client's side of a retry policy, written once for both of its
// callers: the fleet's driver (one loop goroutine, driver.go) and a
// graph's call edges (a goroutine a call, graph_call.go), as the
// simulator's fleet and edges share sim/call.go. callBegin before each
// attempt, callDone with its answer, callCancel when the caller gives
// the request up; s is the sender's state, nil when the policy keeps
// none, and the caller holds whatever lock guards s and q. A hedged
// attempt's copies are hedge.go's.
//
// fleet is the run that counts what the policy decides without the
// server (short-circuits, client rejections, rate waits, shared-budget
// denials): the fleet's; nil on a call edge, whose local decisions no
// output counts (plan row 21; as in the simulator).

// callBegin asks p whether request q of sender s may make an attempt at
// now (see strategies.Policy.Begin). When it may not, the fleet counts
// why, a short-circuit in b too (the bucket of now; nil with fleet).
func callBegin(p *strategies.Policy, s *strategies.Sender, q *strategies.Request, now time.Duration, r *rand.Rand,
	fleet *results.Run, b *results.Bucket) (strategies.Permit, strategies.Decision, bool) {
	permit, d, ok := p.Begin(s, q, now, r)
	if !ok && fleet != nil {
		switch d.Local {
		case strategies.ShortCircuit:
			fleet.ShortCircuited++
			b.ShortCircuited++
		case strategies.Rejected:
			fleet.ClientRejected++
		case strategies.RateWait:
			fleet.RateLimited++
		}
	}
	return permit, d, ok
}

// callDone reports to p the result res of request q's attempt, which
// callBegin permitted, at now, and returns the decision (see
// strategies.Policy.Done). The fleet counts a retry a shared budget
// denied.
func callDone(p *strategies.Policy, s *strategies.Sender, q *strategies.Request, permit strategies.Permit, now time.Duration,
	res strategies.Result, r *rand.Rand, fleet *results.Run) strategies.Decision {
	d := p.Done(s, q, permit, now, &res, r)
	if fleet != nil && d.Reason == strategies.BudgetDenied && p.Budget.HeldByGroup() {
		fleet.SharedBudgetDenied++
	}
	return d
}

// callCancel tells p that the caller gave request q up, with an attempt
// in flight if inFlight (see strategies.Policy.Cancel).
func callCancel(p *strategies.Policy, s *strategies.Sender, q *strategies.Request, inFlight bool) {
	if s != nil {
		p.Cancel(s, q, inFlight)
	}
}

// answerOf returns the answer that an HTTP status and the answer's
// Herdlab-Reason make (see driverStatusOutcome): a 503 whose reason is
// a full queue's (driverRejectedReason) is rejected.
func answerOf(status int, h http.Header) driverAnswer {
	o := driverStatusOutcome(status)
	return driverAnswer{res: strategies.Result{Outcome: o}, status: status,
		rejected: o == strategies.ServerError && h.Get(ServerReasonHeader) == driverRejectedReason}
}

// answerClass is what an answer counts as in the outputs.
type answerClass uint8

const (
	answerOK        answerClass = iota // a success
	answerFailed                       // a failure that is none of the below
	answerTimeout                      // no answer within the attempt's deadline
	answerThrottled                    // a 429
	answerRejected                     // a 503 for a full queue
)

// classify counts answer a in b, the bucket its attempt was sent in (OK,
// or NotOK and of those the timeouts, the 429s and the full queue's
// 503s), and returns its class, for the caller's totals: the fleet's
// (results.Run) or a service's and replica's (results.ServiceRun).
func classify(b *results.Bucket, a driverAnswer) answerClass {
	switch a.res.Outcome {
	case strategies.Success:
		b.OK++
		return answerOK
	case strategies.Timeout:
		b.NotOK++
		b.NotOKTimeout++
		return answerTimeout
	case strategies.TooManyRequests:
		b.NotOK++
		b.Throttled++
		return answerThrottled
	}
	b.NotOK++
	if a.rejected {
		b.Rejected++
		return answerRejected
	}
	return answerFailed
}
