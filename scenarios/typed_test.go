package scenarios

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// TestPolicyIsMadeOnceAndNeverStale: Validate makes each strategy's
// policy once (Policy hands out the same one every time, as newPolicy
// would make it); a change after Validate, to a field or in place behind
// a pointer or in a slice, is seen at once (Policy makes the changed
// policy); validating again keeps the new one.
func TestPolicyIsMadeOnceAndNeverStale(t *testing.T) {
	load := func() *Scenario {
		s, err := Load("testdata/valid/everything-policies.yaml")
		require.NoError(t, err)
		return s
	}
	s := load()
	for i := range s.Strategies {
		st := &s.Strategies[i]
		p := st.Policy()
		assert.Same(t, p, st.Policy(), "%s: made once", st.Name)
		assert.Equal(t, must(st.newPolicy()), p, st.Name)
	}
	byName := func(s *Scenario, name string) *Strategy {
		k := slices.IndexFunc(s.Strategies, func(st Strategy) bool { return st.Name == name })
		require.GreaterOrEqual(t, k, 0, name)
		return &s.Strategies[k]
	}
	tests := []struct {
		name, strategy string
		change         func(st *Strategy)
		check          func(t *testing.T, p *strategies.Policy)
	}{
		{"a field", "full", func(st *Strategy) { st.MaxAttempts = 9 }, func(t *testing.T, p *strategies.Policy) { assert.Equal(t, 9, p.MaxAttempts) }},
		{"the backoff", "full", func(st *Strategy) { st.Backoff.Base = 3 * time.Second },
			func(t *testing.T, p *strategies.Policy) {
				assert.Equal(t, 3*time.Second, p.Backoff.(strategies.FullJitter).Base)
			}},
		{"a word", "full", func(st *Strategy) { st.RetryAfter.Mode = "max" },
			func(t *testing.T, p *strategies.Policy) { assert.Equal(t, strategies.RetryAfterMax, p.RetryAfter.Mode) }},
		{"a slice", "full", func(st *Strategy) { st.RetryOn = append(st.RetryOn[:0:0], "refused") },
			func(t *testing.T, p *strategies.Policy) {
				assert.Equal(t, strategies.Outcomes(strategies.Refused), p.RetryOn)
			}},
		{"behind a pointer", "envoy", func(st *Strategy) { st.Budget.Percent = 5 },
			func(t *testing.T, p *strategies.Policy) { assert.InDelta(t, 5, p.Budget.Percent, 0) }},
		{"a kind behind a pointer", "finagle", func(st *Strategy) { st.Budget.Scope = ScopeSender },
			func(t *testing.T, p *strategies.Policy) { assert.Equal(t, strategies.ScopeSender, p.Budget.Scope) }},
		{"a breaker's slice in place", "bucket", func(st *Strategy) { st.Breaker.On[0] = "timeout" },
			func(t *testing.T, p *strategies.Policy) {
				assert.Equal(t, strategies.Outcomes(strategies.Timeout), p.Breaker.Failures)
			}},
		{"a throttle", "aws", func(st *Strategy) { st.Throttle.Beta = 0.5 },
			func(t *testing.T, p *strategies.Policy) { assert.InDelta(t, 0.5, p.Throttle.Beta, 0) }},
		{"a hedge", "hedged", func(st *Strategy) { st.Hedge.Max = 1 },
			func(t *testing.T, p *strategies.Policy) { assert.Equal(t, 1, p.Hedge.Max) }},
		{"a policy added", "fixed", func(st *Strategy) { st.Hedge = &Hedge{Delay: HedgeDelay{Duration: time.Second}, Max: 1} },
			func(t *testing.T, p *strategies.Policy) { assert.NotNil(t, p.Hedge) }},
		{"a policy removed", "envoy", func(st *Strategy) { st.Budget = nil },
			func(t *testing.T, p *strategies.Policy) { assert.Nil(t, p.Budget) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load()
			st := byName(s, tt.strategy)
			made := st.Policy()
			if tt.name == "a breaker's slice in place" {
				require.Equal(t, []string{"5xx"}, st.Breaker.On)
			}
			tt.change(st)
			changed := st.Policy()
			assert.NotSame(t, made, changed, "not the policy made before the change")
			tt.check(t, changed)
			assert.Equal(t, must(st.newPolicy()), changed)
			require.NoError(t, s.Validate())
			kept := st.Policy()
			assert.Same(t, kept, st.Policy(), "made once again by Validate")
			tt.check(t, kept)
			for i := range s.Strategies {
				if other := &s.Strategies[i]; other != st {
					assert.Equal(t, must(other.newPolicy()), other.Policy(), other.Name)
				}
			}
		})
	}
}

// TestValidatingAgainChangesNothing: a scenario validated again, as a
// sweep's point or a server does, keeps the policies made (so that runs
// reading them meanwhile see no write).
func TestValidatingAgainChangesNothing(t *testing.T) {
	s, err := Load("testdata/valid/everything-graph.yaml")
	require.NoError(t, err)
	before := make([][]*strategies.Policy, len(s.Strategies))
	for i := range s.Strategies {
		for _, tp := range s.Strategies[i].typed {
			before[i] = append(before[i], tp.policy)
		}
		require.NotEmpty(t, before[i])
	}
	require.NoError(t, s.Validate())
	for i := range s.Strategies {
		var after []*strategies.Policy
		for _, tp := range s.Strategies[i].typed {
			after = append(after, tp.policy)
		}
		require.Len(t, after, len(before[i]))
		for k := range after {
			assert.Same(t, before[i][k], after[k])
		}
	}
}

// TestEdgePoliciesAreMadeOnce: every edge of a graph gets, through
// EdgeStrategy, the policy Validate made of its merged fields; a change
// to one of its layers after Validate is seen.
func TestEdgePoliciesAreMadeOnce(t *testing.T) {
	s, err := Load("testdata/valid/everything-graph.yaml")
	require.NoError(t, err)
	edges := 0
	for i := range s.Strategies {
		st := &s.Strategies[i]
		for _, svc := range s.ServicesFor(st) {
			for k := range svc.Calls {
				e := EdgeStrategy(st, svc.Name, &svc.Calls[k])
				p := e.Policy()
				assert.Same(t, p, e.Policy(), "%s: %s", st.Name, EdgeKey(svc.Name, svc.Calls[k].Service))
				assert.Same(t, p, st.typed.lookup(&e), "made by Validate")
				assert.Equal(t, must(e.newPolicy()), p)
				edges++
			}
		}
	}
	assert.Equal(t, 8, edges)

	// The api->db edge of strategy edges is written in its edges; the
	// gateway->cache-db one by its call's retry.
	st := &s.Strategies[0]
	require.Equal(t, "edges", st.Name)
	api, gateway := &s.Services[1], &s.Services[0]
	st.Edges.ByEdge["api->db"].Timeout = 150 * time.Millisecond
	assert.Equal(t, 150*time.Millisecond, EdgeStrategy(st, api.Name, &api.Calls[0]).Policy().Timeout)
	gateway.Calls[1].Retry.Timeout = 250 * time.Millisecond
	edge := EdgeStrategy(&s.Strategies[1], gateway.Name, &gateway.Calls[1])
	assert.Equal(t, 250*time.Millisecond, edge.Policy().Timeout)
	assert.Equal(t, must(edge.newPolicy()), edge.Policy())
}

// TestPolicySourceCoversTheStrategy holds policySource to the fields of
// a Strategy: each field makes its policy (newPolicy reads it, and
// policySource keeps it) or does not. A new field must be put in one
// list or the other; one that makes the policy but is not kept would let
// a change after Validate go unseen.
func TestPolicySourceCoversTheStrategy(t *testing.T) {
	makes := []string{"Backoff", "MaxAttempts", "MaxElapsed", "Timeout", "RetryOn", "RetryAfter", "Breaker", "Budget", "Throttle", "Hedge", "IgnorePushback"}
	doesNot := []string{"Name", "Edges", "DeadlinePropagation", "Services", "From", "typed"}
	var fields []string
	for i := range reflect.TypeFor[Strategy]().NumField() {
		fields = append(fields, reflect.TypeFor[Strategy]().Field(i).Name)
	}
	assert.ElementsMatch(t, append(slices.Clone(makes), doesNot...), fields)
	assert.Equal(t, len(makes), reflect.TypeFor[policySource]().NumField())

	// Each field the policy is made of, changed, is seen.
	base := NewStrategy("x")
	base.Breaker, base.Budget, base.Throttle, base.Hedge = &Breaker{}, &Budget{}, &Throttle{}, &Hedge{}
	src := sourceOf(&base)
	require.True(t, src.matches(&base))
	for _, name := range makes {
		st := base
		st.Breaker, st.Budget, st.Throttle, st.Hedge = &Breaker{}, &Budget{}, &Throttle{}, &Hedge{}
		require.True(t, src.matches(&st))
		v := reflect.ValueOf(&st).Elem().FieldByName(name)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		change(t, v)
		assert.False(t, src.matches(&st), name)
	}
}

// change changes v, a settable value: its first field, for a struct.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		change(t, v.Field(0))
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	default:
		t.Fatalf("cannot change a %s", v.Type())
	}
}

// TestTheWordsAreReadAsValidateReadsThem: the engines' typed words
// (RateLimit.HintFormat, Service.Discipline) read each word Validate
// allows as the word's own type says.
func TestTheWordsAreReadAsValidateReadsThem(t *testing.T) {
	for _, f := range []strategies.RetryAfterFormat{strategies.RetryAfterSeconds, strategies.RetryAfterHTTPDate} {
		parsed, err := strategies.ParseRetryAfterFormat(f.String())
		require.NoError(t, err)
		assert.Equal(t, parsed, (&RateLimit{Format: f.String()}).HintFormat())
		assert.NoError(t, validServer(&RateLimit{Rate: 1, Burst: 1, Format: f.String()}))
	}
	assert.Error(t, validServer(&RateLimit{Rate: 1, Burst: 1, Format: "minutes"}), "a word Validate refuses")

	valid := []string{FIFO, LIFO, AdaptiveLIFOQueue, CoDelQueue}
	want := []Discipline{DisciplineFIFO, DisciplineLIFO, DisciplineAdaptiveLIFO, DisciplineCoDel}
	for i, name := range valid {
		svc := Service{QueueDiscipline: name}
		assert.Equal(t, want[i], svc.Discipline(), name)
		assert.Equal(t, name, svc.Discipline().String())
	}
	assert.Equal(t, len(valid), int(numDisciplines))
	assert.Equal(t, "Discipline(7)", Discipline(7).String())
}

// validServer validates a single server with rate limit rl.
func validServer(rl *RateLimit) error {
	var p problems
	s := Server{Concurrency: 1, ServiceTime: Dist{Kind: Constant, Mean: time.Millisecond}, RateLimit: rl}
	s.validate(&p, "server", 1, false)
	if len(p) > 0 {
		return p[0]
	}
	return nil
}

// must returns v, made without error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestAWordNewPolicyCannotReadIsReported: were validation to let a word
// by that newPolicy cannot read, Validate would report it at its field,
// and keep no policy (the engines never meet it).
func TestAWordNewPolicyCannotReadIsReported(t *testing.T) {
	s, err := Load("testdata/valid/everything-graph.yaml")
	require.NoError(t, err)
	s.Strategies[0].RetryAfter.Mode = "sometimes"
	s.Strategies[0].Edges.Default.Budget.Kind = "coins"
	s.Strategies[0].typed = nil
	var p problems
	s.typeStrategies(&p)
	var got []string
	for _, e := range p {
		got = append(got, e.(*FieldError).Path)
	}
	assert.Equal(t, []string{
		"strategies[0].retry_after.mode",
		"strategies[0].edges.gateway->api.budget.kind",
		"strategies[0].edges.gateway->cache-db.budget.kind",
		"strategies[0].edges.api->db.budget.kind",
		"strategies[0].edges.db->store.budget.kind",
	}, got)
	assert.Contains(t, p[0].Error(), `unknown Retry-After mode "sometimes"`)
	assert.Nil(t, s.Strategies[0].typed)
	assert.NotNil(t, s.Strategies[1].typed, "the other strategy's are made")
}
