package strategies

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Scope says which senders hold one budget together.
type Scope uint8

// The scopes of a budget.
const (
	ScopeSender Scope = iota // each sender holds its own (the default)
	ScopeFleet               // every sender of the strategy holds one
	ScopeGroup               // senders in groups of Budget.GroupSize, standing for proxies
	numScopes
)

var scopeNames = [numScopes]string{"sender", "fleet", "group"}

// String returns the scope's name as written in scenario files: sender,
// fleet or group.
func (s Scope) String() string {
	if s < numScopes {
		return scopeNames[s]
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// ParseScope returns the scope named s (see Scope.String).
func ParseScope(s string) (Scope, error) {
	for i, name := range scopeNames {
		if name == s {
			return Scope(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown budget scope %q (want one of %s)", s, strings.Join(scopeNames[:], ", "))
}

// finagleSlices is the number of slices of a Finagle budget's window
// (Finagle's WindowedAdder, as TokenBucket.newLeakyBucket makes it).
const finagleSlices = 10

// finagleScale is what one request deposits in a Finagle budget (its
// RetryBudget's ScaleFactor): a retry withdraws finagleScale/percent.
const finagleScale = 1000

// SharedBudget is the state of a budget that a group of senders may hold
// together: BudgetEnvoy's counts of attempts and retries in flight, or
// BudgetFinagle's windowed deposits. The zero value is a budget that has
// seen nothing. It is not safe for concurrent use: the senders that share
// one must be driven from one goroutine, or hold a lock around the
// Policy's calls.
type SharedBudget struct {
	active  int64 // attempts in flight (BudgetEnvoy)
	retries int64 // retries granted whose attempt has not ended (BudgetEnvoy)
	at      int64 // the newest slice (BudgetFinagle)
	slices  [finagleSlices]int64
}

// Shared reports whether b's kind keeps its state in a SharedBudget
// (BudgetEnvoy, BudgetFinagle) rather than a sender's BudgetState.
func (b *Budget) Shared() bool {
	return b != nil && (b.Kind == BudgetEnvoy || b.Kind == BudgetFinagle)
}

// HeldByGroup reports whether b is a shared budget held by more than
// one sender (scope fleet or group): its denials are the figure
// shared_budget_denied.
func (b *Budget) HeldByGroup() bool { return b.Shared() && b.Scope != ScopeSender }

// Start records that an attempt goes out under the budget at now; first
// says it is a request's first try. The driver calls it for every
// attempt, and End when the attempt ends.
func (b *Budget) Start(sh *SharedBudget, now time.Duration, first bool) {
	switch b.Kind {
	case BudgetEnvoy:
		sh.active++
	case BudgetFinagle:
		if first {
			b.advance(sh, now)
			sh.slices[sh.at%finagleSlices] += finagleScale
		}
	}
}

// End records that an attempt ended; cost is what AcquireShared granted
// it (0 for a first try). A BudgetEnvoy retry stops counting then.
func (b *Budget) End(sh *SharedBudget, cost float64) {
	if b.Kind != BudgetEnvoy {
		return
	}
	sh.active = max(sh.active-1, 0)
	if cost > 0 {
		sh.retries = max(sh.retries-1, 0)
	}
}

// AcquireShared asks for a retry at now. BudgetEnvoy allows it while the
// retries in flight are fewer than max(MinConcurrency, Percent% of the
// attempts in flight); BudgetFinagle while its balance (the deposits of
// the last TTL, less the withdrawals, plus MinPerSecond x TTL retries)
// holds one retry's withdrawal. A denial changes nothing. The cost
// returned is what the driver passes to End (and Record) with the
// retry's outcome.
func (b *Budget) AcquireShared(sh *SharedBudget, now time.Duration) (cost float64, ok bool) {
	switch b.Kind {
	case BudgetEnvoy:
		if float64(sh.retries) >= b.envoyLimit(sh) {
			return 0, false
		}
		sh.retries++
		return 1, true
	case BudgetFinagle:
		w := b.withdrawal()
		if b.balance(sh, now) < w {
			return 0, false
		}
		sh.slices[sh.at%finagleSlices] -= w
		return 1, true
	}
	return 0, true
}

// RetriesAllowed returns how many more retries the shared budget would
// allow at now: for tests and metrics.
func (b *Budget) RetriesAllowed(sh *SharedBudget, now time.Duration) int64 {
	switch b.Kind {
	case BudgetEnvoy:
		return max(int64(b.envoyLimit(sh))-sh.retries, 0)
	case BudgetFinagle:
		return max(b.balance(sh, now)/b.withdrawal(), 0)
	}
	return 0
}

// envoyLimit is Envoy's retry budget: max(min_retry_concurrency,
// budget_percent x active requests), truncated as Envoy's integer
// resource limit is.
func (b *Budget) envoyLimit(sh *SharedBudget) float64 {
	limit := math.Floor(def(b.Percent, 20) / 100 * float64(sh.active))
	return max(float64(b.minConcurrency()), limit) // a negative Percent: the floor alone
}

func (b *Budget) minConcurrency() int {
	if b.MinConcurrency == 0 {
		return 3
	}
	return b.MinConcurrency
}

// withdrawal is what one retry withdraws from a Finagle budget:
// ScaleFactor / percentCanRetry.
func (b *Budget) withdrawal() int64 {
	return int64(finagleScale / (def(b.Percent, 20) / 100))
}

// balance is a Finagle budget's tokens at now: the window's deposits and
// withdrawals plus the reserve, MinPerSecond x TTL retries.
func (b *Budget) balance(sh *SharedBudget, now time.Duration) int64 {
	b.advance(sh, now)
	var n int64
	for _, x := range sh.slices {
		n += x
	}
	reserve := int64(max(def(b.MinPerSecond, 10), 0) * b.ttl().Seconds() * float64(b.withdrawal()))
	return n + reserve
}

func (b *Budget) ttl() time.Duration {
	if b.TTL == 0 {
		return 10 * time.Second
	}
	return b.TTL
}

// advance moves a Finagle budget's window to now, emptying the slices
// that have left it.
func (b *Budget) advance(sh *SharedBudget, now time.Duration) {
	width := max(b.ttl()/finagleSlices, 1)
	at := int64(now / width)
	if at <= sh.at {
		return
	}
	if at-sh.at >= finagleSlices {
		sh.slices = [finagleSlices]int64{}
	} else {
		for i := sh.at + 1; i <= at; i++ {
			sh.slices[i%finagleSlices] = 0
		}
	}
	sh.at = at
}

// Groups hands out the shared budgets of one fleet of senders, as the
// budget's Scope says: each sender its own, one for the whole fleet, or
// one for each GroupSize senders in turn. The zero Groups, or Groups of a
// policy without a shared budget, hands out nothing, and each sender
// makes its own at first use.
type Groups struct {
	budget *Budget
	groups []*SharedBudget
}

// NewGroups returns the groups of a fleet following p.
func NewGroups(p *Policy) *Groups {
	return &Groups{budget: p.Budget}
}

// Join gives sender s, the i-th of the fleet (from 0), its group's
// budget. Call it before the sender's first attempt.
func (g *Groups) Join(s *Sender, i int) {
	b := g.budget
	if !b.Shared() || b.Scope == ScopeSender {
		return
	}
	group := 0
	if b.Scope == ScopeGroup && b.GroupSize > 0 {
		group = i / b.GroupSize
	}
	for len(g.groups) <= group {
		g.groups = append(g.groups, new(SharedBudget))
	}
	s.extended().shared = g.groups[group]
}

// Len returns the number of groups handed out so far.
func (g *Groups) Len() int { return len(g.groups) }
