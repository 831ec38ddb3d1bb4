package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// The typed values the engines read. A scenario names its kinds in words
// (a budget's kind, a rate limit's format, a queue discipline); Validate
// reads each word (the strategies.Parse* functions are its), and the
// engines (sim, realhttp) read typed values, never a Parse* function
// nor an error that validation should have caught: Strategy.Policy,
// RateLimit.HintFormat, Service.Discipline. (A balancer, an arrival's
// and a distribution's kind are still compared as words in the engines'
// switches, each with its default: validated words, which no switch can
// fail on.)
//
// A strategy's policy is made once, by Validate, and kept with what it
// was made of. A scenario changed after Validate (a sweep's point, a test
// that sets a field of a loaded scenario) is seen by Policy, which then
// makes the policy again from the fields as they are (as Validate makes
// it: they must be valid) rather than hand out a stale one; validating
// again keeps the new one. A word (a format, a discipline) is typed where
// it is read, by a table of the words Validate allows: keeping it would
// cost what reading it costs, the comparison of a word.

// policySource is what a strategies.Policy is made of: the fields of a
// Strategy that Strategy.newPolicy reads, copied deep (a pointer's
// struct, a slice's elements), so that a change made in place after
// Validate, such as st.Budget.Percent = 5, is seen. The other fields of
// a Strategy (its name, edges, services, from, deadline propagation) do
// not make its policy: TestPolicySourceCoversTheStrategy holds the two
// lists to the type.
type policySource struct {
	backoff        Backoff
	maxAttempts    int
	maxElapsed     time.Duration
	timeout        time.Duration
	retryOn        []string
	retryAfter     RetryAfter
	breaker        *Breaker
	budget         *Budget
	throttle       *Throttle
	hedge          *Hedge
	ignorePushback bool
}

// sourceOf copies what s's policy is made of.
func sourceOf(s *Strategy) policySource {
	src := policySource{
		backoff:        s.Backoff,
		maxAttempts:    s.MaxAttempts,
		maxElapsed:     s.MaxElapsed,
		timeout:        s.Timeout,
		retryOn:        slices.Clone(s.RetryOn),
		retryAfter:     s.RetryAfter,
		ignorePushback: s.IgnorePushback,
	}
	if b := s.Breaker; b != nil {
		c := *b
		c.On = slices.Clone(b.On)
		src.breaker = &c
	}
	if b := s.Budget; b != nil {
		c := *b
		src.budget = &c
	}
	if t := s.Throttle; t != nil {
		c := *t
		c.On = slices.Clone(t.On)
		src.throttle = &c
	}
	if h := s.Hedge; h != nil {
		c := *h
		src.hedge = &c
	}
	return src
}

// matches reports whether s's policy is made of src: whether a policy
// made from src is s's.
func (src *policySource) matches(s *Strategy) bool {
	return src.backoff == s.Backoff && src.maxAttempts == s.MaxAttempts && src.maxElapsed == s.MaxElapsed &&
		src.timeout == s.Timeout && slices.Equal(src.retryOn, s.RetryOn) && src.retryAfter == s.RetryAfter &&
		src.ignorePushback == s.IgnorePushback &&
		samePtr(src.breaker, s.Breaker, func(a, b *Breaker) bool { return reflect.DeepEqual(a, b) }) &&
		samePtr(src.budget, s.Budget, func(a, b *Budget) bool { return *a == *b }) &&
		samePtr(src.throttle, s.Throttle, func(a, b *Throttle) bool { return reflect.DeepEqual(a, b) }) &&
		samePtr(src.hedge, s.Hedge, func(a, b *Hedge) bool { return *a == *b })
}

// samePtr reports whether a and b are both nil, or both not nil and
// equal.
func samePtr[T any](a, b *T, equal func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equal(a, b)
}

// typedPolicy is a policy and what it was made of.
type typedPolicy struct {
	src    policySource
	policy *strategies.Policy
}

// typedPolicies are the policies Validate made for a strategy: its own
// and its edges' (see EdgeStrategy, which hands them on). They are never
// changed once made (a new validation makes new ones), and a policy is
// immutable: runs in parallel share them.
type typedPolicies []typedPolicy

// lookup returns the policy made of s's fields, or nil.
func (ts typedPolicies) lookup(s *Strategy) *strategies.Policy {
	for i := range ts {
		if ts[i].src.matches(s) {
			return ts[i].policy
		}
	}
	return nil
}

// Policy returns the strategies.Policy that s describes: the one
// Validate made, shared by every run of s (a Policy is immutable; each
// sender's state is its own). A strategy made in Go and never validated,
// or changed since it was, gets a new one, made from its fields as
// Validate makes it; such a strategy must be valid.
func (s Strategy) Policy() *strategies.Policy {
	if p := s.typed.lookup(&s); p != nil {
		return p
	}
	p, _ := s.newPolicy() // valid: see above
	return p
}

// typeStrategies makes the policies of every strategy of s and of its
// edges, once s is valid, and reports a word that validation let by and
// newPolicy cannot read (none: the check that it stays so). A strategy
// whose policies are all made already keeps them (so that validating a
// scenario again while it runs writes nothing); one changed since gets
// new ones.
func (s *Scenario) typeStrategies(p *problems) {
	for i := range s.Strategies {
		st := &s.Strategies[i]
		path := fmt.Sprintf("strategies[%d]", i)
		want := []Strategy{*st}
		at := []string{path}
		for _, caller := range s.ServicesFor(st) {
			for j := range caller.Calls {
				want = append(want, EdgeStrategy(st, caller.Name, &caller.Calls[j]))
				at = append(at, path+".edges."+EdgeKey(caller.Name, caller.Calls[j].Service))
			}
		}
		if !slices.ContainsFunc(want, func(w Strategy) bool { return st.typed.lookup(&w) == nil }) {
			continue
		}
		var ts typedPolicies
		ok := true
		for k := range want {
			if ts.lookup(&want[k]) != nil {
				continue
			}
			pol, err := want[k].newPolicy()
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					fe := e.(*FieldError)
					p.once(at[k]+"."+fe.Path, "%s", fe.Msg)
				}
				ok = false
				continue
			}
			ts = append(ts, typedPolicy{src: sourceOf(&want[k]), policy: pol})
		}
		if ok {
			st.typed = ts
		}
	}
}

// HintFormat returns how the rate limit writes its Retry-After hints:
// Format, typed. Format must be valid (see Scenario.Validate, which
// reads it with strategies.ParseRetryAfterFormat): any word but
// http-date is the default, seconds.
func (r *RateLimit) HintFormat() strategies.RetryAfterFormat {
	if r.Format == strategies.RetryAfterHTTPDate.String() {
		return strategies.RetryAfterHTTPDate
	}
	return strategies.RetryAfterSeconds
}

// Discipline is a queue discipline as the engines read it (see
// Service.QueueDiscipline for what each does); the zero value is FIFO.
type Discipline uint8

// The queue disciplines, typed.
const (
	DisciplineFIFO Discipline = iota
	DisciplineLIFO
	DisciplineAdaptiveLIFO
	DisciplineCoDel
	numDisciplines
)

// disciplineNames are the disciplines' names in a file, by Discipline.
var disciplineNames = [numDisciplines]string{FIFO, LIFO, AdaptiveLIFOQueue, CoDelQueue}

// String returns the discipline's name as written in a file.
func (d Discipline) String() string {
	if d < numDisciplines {
		return disciplineNames[d]
	}
	return "Discipline(" + strconv.Itoa(int(d)) + ")"
}

// Discipline returns the service's queue discipline: QueueDiscipline,
// typed. QueueDiscipline must be valid (see Scenario.Validate): any
// other word is the default, FIFO.
func (s *Service) Discipline() Discipline {
	for d, name := range disciplineNames {
		if name == s.QueueDiscipline {
			return Discipline(d)
		}
	}
	return DisciplineFIFO
}
