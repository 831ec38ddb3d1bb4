package strategies

import (
	"fmt"
	"strings"
	"time"
)

// Outcome is what one attempt came to, as seen by the sender.
type Outcome uint8

// The outcomes of an attempt.
const (
	Success         Outcome = iota // a 2xx answer
	Refused                        // the connection was refused: the attempt failed at once
	Timeout                        // no answer before the per-attempt timeout
	Reset                          // the connection dropped before the answer: the response was lost
	ServerError                    // a 5xx answer (503 for an outage, a full queue or a random failure)
	TooManyRequests                // a 429 answer, possibly with Retry-After
	ClientError                    // a 4xx answer other than 429
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "refused", "timeout", "reset", "5xx", "429", "4xx"}

// String returns the outcome's name as written in scenario files:
// success, refused, timeout, reset, 5xx, 429 or 4xx.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// ParseOutcome returns the outcome named s (see Outcome.String).
func ParseOutcome(s string) (Outcome, error) {
	for i, name := range outcomeNames {
		if name == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown outcome %q (want one of %s)", s, strings.Join(outcomeNames[:], ", "))
}

// Failed reports whether the attempt did not succeed.
func (o Outcome) Failed() bool { return o != Success }

// OutcomeSet is a set of outcomes, one bit per Outcome. The zero value is
// the empty set.
type OutcomeSet uint8

// DefaultRetryOn is the set of outcomes retried when a policy names none:
// every failure except a 4xx other than 429, which asks the sender to fix
// the request rather than to send it again.
const DefaultRetryOn = OutcomeSet(1<<Refused | 1<<Timeout | 1<<Reset | 1<<ServerError | 1<<TooManyRequests)

// DefaultBreakerFailures is the set of outcomes a circuit breaker counts as
// failures when its policy names none: the outcomes that say the
// destination is unwell (refused, timeout, reset, 5xx). A 429 or another
// 4xx is an answer from a live server and counts as a success.
const DefaultBreakerFailures = OutcomeSet(1<<Refused | 1<<Timeout | 1<<Reset | 1<<ServerError)

// Outcomes returns the set holding exactly the given outcomes.
func Outcomes(os ...Outcome) OutcomeSet {
	var s OutcomeSet
	for _, o := range os {
		s |= 1 << o
	}
	return s
}

// Has reports whether o is in the set.
func (s OutcomeSet) Has(o Outcome) bool { return s&(1<<o) != 0 }

// String lists the set's outcomes, comma-separated, in Outcome order.
func (s OutcomeSet) String() string {
	var names []string
	for o := Outcome(0); o < numOutcomes; o++ {
		if s.Has(o) {
			names = append(names, o.String())
		}
	}
	return "[" + strings.Join(names, ",") + "]"
}

// Result is what the driver observed for one attempt.
type Result struct {
	Outcome Outcome
	// RetryAfter is the server's Retry-After hint, already parsed (see
	// ParseRetryAfter); meaningful only when HasRetryAfter is true.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Pushback is the server's gRPC pushback hint
	// (grpc-retry-pushback-ms); meaningful only when HasPushback is true.
	// A negative hint asks the sender not to retry.
	Pushback    time.Duration
	HasPushback bool
}
