package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string
		log  bool
	}{
		{"durations", "10s,30s,2m", []string{"10s", "30s", "2m"}, false},
		{"numbers", "100, 200 ,500", []string{"100", "200", "500"}, false},
		{"booleans", "true,false", []string{"true", "false"}, false},
		{"one value", "full-jitter", []string{"full-jitter"}, false},
		{"duration range", "10s..5m:8", []string{"10s", "51.429s", "1m32.857s", "2m14.286s", "2m55.714s", "3m37.143s", "4m18.571s", "5m0s"}, false},
		{"duration range under a second is rounded to the microsecond", "1ms..2ms:4", []string{"1ms", "1.333ms", "1.667ms", "2ms"}, false},
		{"duration range from a bare 0", "0..1s:3", []string{"0s", "500ms", "1s"}, false},
		{"duration ends are kept, not rounded", "1.0005s..3s:3", []string{"1.0005s", "2s", "3s"}, false},
		{"descending range", "5m..10s:3", []string{"5m0s", "2m35s", "10s"}, false},
		{"integer range", "100..2000:5", []string{"100", "575", "1050", "1525", "2000"}, false},
		{"integer range rounds to the nearest", "1..10:4", []string{"1", "4", "7", "10"}, false},
		{"integers through zero", "-1..1:3", []string{"-1", "0", "1"}, false},
		{"integers with underscores", "1_000..3_000:3", []string{"1000", "2000", "3000"}, false},
		{"float range", "0.1..0.5:5", []string{"0.1", "0.2", "0.3", "0.4", "0.5"}, false},
		{"float range to 6 significant digits", "0..1.0:4", []string{"0", "0.333333", "0.666667", "1"}, false},
		{"log range", "1e3..1e6:log:7", []string{"1000", "3162", "10000", "31623", "100000", "316228", "1000000"}, true},
		{"float log range", "1.0..1e6:log:7", []string{"1", "10", "100", "1000", "10000", "100000", "1e+06"}, true},
		{"duration log range", "1s..100s:log:3", []string{"1s", "10s", "1m40s"}, true},
		{"spaces", " 10s .. 30s : 3 ", []string{"10s", "20s", "30s"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, log, err := ParseValues(tt.spec)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.log, log)
		})
	}
}

func TestParseValuesErrors(t *testing.T) {
	tests := []struct {
		spec string
		want string
	}{
		{"", "no values: give a list"},
		{"  ", "no values: give a list"},
		{"10s,,2m", `"10s,,2m": value 2 of the list is empty`},
		{"10s,", `"10s,": value 2 of the list is empty`},
		{"10s,30s,10s", `"10s,30s,10s": 10s is listed twice`},
		{"10s..5m", `"10s..5m": a range needs a point count, as in 10s..5m:8`},
		{"1e3..1e6:log", `"1e3..1e6:log": a log range needs a point count, as in 1e3..1e6:log:8`},
		{"1..2:1", `"1..2:1": a range needs at least 2 points, got 1`},
		{"1..2:x", `"1..2:x": the point count "x" is not a whole number`},
		{"1..2:100001", `"1..2:100001": 100001 points is too many (at most 10000)`},
		{"1..2:lin:3", `"1..2:lin:3": want A..B:N or A..B:log:N`},
		{"..2:3", `"..2:3": want A..B with both ends`},
		{"1,2..3:3", `"1,2..3:3": a range stands alone`},
		{"x..3:3", `"x..3:3": "x" is neither a duration, such as 10s, nor a number`},
		{"3..y:3", `"3..y:3": "y" is neither a duration, such as 5m, nor a number`},
		{"3..1s:3", `"3..1s:3": want both ends durations, such as 10s..5m:8, or both numbers`},
		{"nan..1:3", `"nan..1:3": "nan" is neither`},
		{"0..5:log:3", `"0..5:log:3": a log range needs both ends > 0`},
		{"0s..5m:log:3", `"0s..5m:log:3": a log range needs both ends > 0`},
		{"-1..5:log:3", `a log range needs both ends > 0`},
		{"1s..1000ms:3", `"1s..1000ms:3": the range starts and ends at the same value`},
		{"1..5:10", `"1..5:10": rounding to integers makes two values equal (1): ask for fewer points, or write an end with a decimal point (as in 1.0..5:10) for fractional values`},
		{"1e3..2e3:log:2000", `rounding to integers makes two values equal (1000): ask for fewer points, or write an end with a decimal point (as in 1.0e3..2e3:2000)`},
		{"1ms..2ms:5000", `"1ms..2ms:5000": rounding to the microsecond makes two values equal (1ms): ask for fewer points`},
		{"1s..2s:5000", `rounding to the millisecond makes two values equal (1s): ask for fewer points`},
		{"1.0..1.00001:100", `rounding to 6 significant digits makes two values equal (1): ask for fewer points`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			values, log, err := ParseValues(tt.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Nil(t, values)
			assert.False(t, log)
		})
	}
}

// TestParseValuesRanges checks every range against its formula: N values,
// the ends exact, each value within rounding of A + (B-A)*i/(N-1) or
// A*(B/A)^(i/(N-1)), in order.
func TestParseValuesRanges(t *testing.T) {
	tests := []struct {
		spec   string
		a, b   float64
		n      int
		log    bool
		within float64
		parse  func(string) (float64, error)
	}{
		{"10s..5m:8", 10, 300, 8, false, 0.0005, seconds},
		{"250ms..750ms:11", 0.25, 0.75, 11, false, 0.0000005, seconds},
		{"100ms..1h:log:20", 0.1, 3600, 20, true, 0.0005, seconds},
		{"100..2000:7", 100, 2000, 7, false, 0.5, parseNumber},
		{"1e2..1e7:log:11", 100, 1e7, 11, true, 0.5, parseNumber},
		{"0.001..0.5:9", 0.001, 0.5, 9, false, 0, parseNumber},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			values, log, err := ParseValues(tt.spec)
			require.NoError(t, err)
			require.Len(t, values, tt.n)
			assert.Equal(t, tt.log, log)
			prev := tt.a - 1
			for i, v := range values {
				got, err := tt.parse(v)
				require.NoError(t, err, v)
				f := float64(i) / float64(tt.n-1)
				want := tt.a + (tt.b-tt.a)*f
				if tt.log {
					want = tt.a * math.Pow(tt.b/tt.a, f)
				}
				assert.InDelta(t, want, got, tt.within+1e-6*math.Abs(want), "value %d: %s", i, v)
				assert.Greater(t, got, prev, "in order")
				prev = got
			}
			first, _ := tt.parse(values[0])
			last, _ := tt.parse(values[tt.n-1])
			assert.Equal(t, tt.a, first)
			assert.Equal(t, tt.b, last)
		})
	}
}

func seconds(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return d.Seconds(), err
}

func TestParseVary(t *testing.T) {
	v, err := ParseVary("server.outages[0].duration=10s..5m:8")
	require.NoError(t, err)
	assert.Equal(t, "server.outages[0].duration", v.Path)
	assert.Empty(t, v.Label)
	assert.Len(t, v.Values, 8)
	assert.False(t, v.Log)

	v, err = ParseVary(" workload.requests = 1e3..1e6:log:4 ")
	require.NoError(t, err)
	assert.Equal(t, Vary{Path: "workload.requests", Values: []string{"1000", "10000", "100000", "1000000"}, Log: true}, v)

	v, err = ParseVary("strategies[fixed.5s].backoff.kind=full-jitter,equal-jitter")
	require.NoError(t, err)
	assert.Equal(t, Vary{Path: "strategies[fixed.5s].backoff.kind", Values: []string{"full-jitter", "equal-jitter"}}, v)

	errs := []struct{ flag, want string }{
		{"workload.requests", `"workload.requests": want PATH=VALUES, as in server.outages[0].duration=10s..5m:8`},
		{"=1,2", `"=1,2": want PATH=VALUES`},
		{"workload.requests=", `workload.requests: no values`},
		{"workload.requests=1..5", `workload.requests: "1..5": a range needs a point count`},
		{"runs=1,2", `runs: cannot be varied: runs is set for the whole sweep, with --runs`},
		{"name=a,b", `name: cannot be varied: name names the output folder`},
		{"sweep.metric=peak_load", `sweep.metric: cannot be varied: a sweep's points do not sweep`},
		{"checks[0].why=x", `checks[0].why: cannot be varied: checks judge results`},
		{"lint.silence[0].rule=HL001", `lint.silence[0].rule: cannot be varied: lint settings do not change the simulation`},
		{"server..concurrency=1", `server..concurrency: a field name is missing after "server."`},
		{"server.=1", `server.: a field name is missing after "server."`},
		{".server=1", `.server: want a field name first`},
		{"[0]=1", `[0]: want a field name first`},
		{"server.outages[0=1", `server.outages[0: [ is not closed by ]`},
		{"strategies[]=1", `strategies[]: want an index, a name or * in [], got []`},
		{"strategies[-1].timeout=1s", `want an index, a name or * in [], got [-1]`},
		{"strategies[99999999999999999999].timeout=1s", `index 99999999999999999999 is out of range`},
		{"strategies[0]x=1", `strategies[0]x: want . or [ after "strategies[0]", got "x"`},
		{"server concurrency=1", `want field names of letters, digits, _, - and > (in an edge, a->b), joined by '.', got "server concurrency"`},
	}
	for _, tt := range errs {
		t.Run(tt.flag, func(t *testing.T) {
			_, err := ParseVary(tt.flag)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestReservedPathsNameTheirReason(t *testing.T) {
	for key := range reserved {
		_, err := parsePath(key + ".x")
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), "cannot be varied: ")
	}
	_, err := parsePath("seed")
	assert.NoError(t, err, "the seed may be varied")
	_, err = parsePath("description")
	assert.NoError(t, err)
}

// everything loads testdata/valid/everything.yaml afresh, so that a test
// may change it.
func everything(t *testing.T) *Scenario {
	t.Helper()
	s, err := Load("testdata/valid/everything.yaml")
	require.NoError(t, err)
	return s
}

// plain returns the fields of s without where they were written.
// plain returns s without where it was read from, nor the policies
// Validate made of its strategies (see TestPolicyIsMadeOnceAndNeverStale).
func plain(s *Scenario) Scenario {
	c := *s
	c.src = nil
	c.Strategies = slices.Clone(s.Strategies)
	for i := range c.Strategies {
		c.Strategies[i].typed = nil
	}
	return c
}

func TestWithChangesTheFieldAndNothingElse(t *testing.T) {
	tests := []struct {
		name     string
		settings []Setting
		change   func(s *Scenario)
	}{
		{"an integer", []Setting{{"workload.requests", "1000"}}, func(s *Scenario) { s.Workload.Requests = 1000 }},
		{"an index", []Setting{{"server.outages[1].duration", "45s"}}, func(s *Scenario) { s.Server.Outages[1].Duration = 45 * time.Second }},
		{"a name", []Setting{{"strategies[full].backoff.base", "2s"}}, func(s *Scenario) { s.Strategies[2].Backoff.Base = 2 * time.Second }},
		{"a name with a dot", []Setting{{"strategies[fixed].backoff.delay", "7s"}}, func(s *Scenario) { s.Strategies[0].Backoff.Delay = 7 * time.Second }},
		{"every element", []Setting{{"strategies[*].timeout", "2s"}}, func(s *Scenario) {
			for i := range s.Strategies {
				s.Strategies[i].Timeout = 2 * time.Second
			}
		}},
		{"every outage's mode", []Setting{{"server.outages[*].mode", "error"}}, func(s *Scenario) {
			for i := range s.Server.Outages {
				s.Server.Outages[i].Mode = ErrorMode
			}
		}},
		{"the seed", []Setting{{"seed", "42"}}, func(s *Scenario) { s.Seed = 42 }},
		{"a float", []Setting{{"server.failure_probability", "0.5"}}, func(s *Scenario) { s.Server.FailureProbability = 0.5 }},
		{"a boolean", []Setting{{"server.idempotency", "false"}}, func(s *Scenario) { s.Server.Idempotency = false }},
		{"a keyword", []Setting{{"server.queue", "unlimited"}}, func(s *Scenario) { s.Server.Queue = Unlimited }},
		{"a mapping replaced by a shorthand", []Setting{{"server.service_time", "50ms"}}, func(s *Scenario) {
			s.Server.ServiceTime = Dist{Kind: Constant, Mean: 50 * time.Millisecond}
		}},
		{"null leaves the default", []Setting{{"network.latency", "null"}}, func(s *Scenario) { s.Network.Latency = nil }},
		{"a missing key is added", []Setting{{"strategies[fixed].max_elapsed", "1h"}}, func(s *Scenario) { s.Strategies[0].MaxElapsed = time.Hour }},
		{"missing keys are added on the way", []Setting{{"strategies[expo].breaker.consecutive", "5"}}, func(s *Scenario) {
			s.Strategies[1].Breaker = &Breaker{Kind: BreakerStandard, Consecutive: 5, OpenFor: 15 * time.Minute, Canaries: 1, MinCalls: 10}
		}},
		{"settings apply in turn", []Setting{{"workload.requests", "500"}, {"server.outages[0].start", "0s"}, {"workload.requests", "600"}}, func(s *Scenario) {
			s.Workload.Requests = 600
			s.Server.Outages[0].Start = 0
		}},
		{"no setting", nil, func(*Scenario) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := everything(t)
			before := plain(s)
			got, err := s.With(tt.settings...)
			require.NoError(t, err)
			want := everything(t)
			tt.change(want)
			assert.Equal(t, plain(want), plain(got))
			for i := range want.Strategies {
				// want was changed after its validation, got validated
				// with the change: the same policy.
				assert.Equal(t, want.Strategies[i].Policy(), got.Strategies[i].Policy(), want.Strategies[i].Name)
			}
			assert.Equal(t, before, plain(s), "s is not changed")
			assert.Equal(t, s.Name, got.Name)
			assert.Equal(t, s.File(), got.File())
			assert.Nil(t, got.Sweep)
		})
	}
}

func TestWithCreatesMissingKeys(t *testing.T) {
	s, err := Load("testdata/valid/minimal.yaml")
	require.NoError(t, err)
	got, err := s.With(
		Setting{"server.rate_limit.rate", "100"},
		Setting{"server.rate_limit.burst", "10"},
		Setting{"network.latency", "5ms"},
		Setting{"duration", "1m"},
	)
	require.NoError(t, err)
	assert.Equal(t, &RateLimit{Rate: 100, Burst: 10, Format: "seconds"}, got.Server.RateLimit)
	assert.Equal(t, &Dist{Kind: Constant, Mean: 5 * time.Millisecond}, got.Network.Latency)
	assert.Equal(t, time.Minute, got.Duration)
	assert.Nil(t, s.Server.RateLimit, "the original keeps its own")

	// A created field takes the position of the mapping it was added to.
	sl, sc := got.Position("server")
	l, c := got.Position("server.rate_limit.rate")
	assert.Equal(t, []int{sl, sc}, []int{l, c})
	assert.Positive(t, l)

	// An empty field is filled in.
	empty, err := Parse("empty-field.yaml", []byte("server:\n  concurrency: 10\n  rate_limit:\nworkload: {requests: 1}\nstrategies: [{name: a, backoff: {kind: none}, max_attempts: 1}]\n"))
	require.NoError(t, err)
	got, err = empty.With(Setting{"server.rate_limit.rate", "5"}, Setting{"server.rate_limit.burst", "1"})
	require.NoError(t, err)
	assert.Equal(t, &RateLimit{Rate: 5, Burst: 1, Format: "seconds"}, got.Server.RateLimit)
}

func TestWithKeepsTheSourceAndDropsTheSweep(t *testing.T) {
	s, err := Load("testdata/valid/sweep.yaml")
	require.NoError(t, err)
	require.NotNil(t, s.Sweep)
	text, err := yaml.Marshal(s.src.root)
	require.NoError(t, err)

	got, err := s.With(Setting{"workload.arrival.schedule[0].rate", "900"})
	require.NoError(t, err)
	assert.Nil(t, got.Sweep)
	assert.Equal(t, 900.0, got.Workload.Arrival.Schedule[0].Rate)
	assert.Equal(t, 1250.0, s.Workload.Arrival.Schedule[0].Rate)
	assert.Equal(t, "sweep", got.Name)
	line, col := got.Position("workload.arrival.schedule[0].rate")
	wantLine, wantCol := s.Position("workload.arrival.schedule[0].rate")
	assert.Equal(t, []int{wantLine, wantCol}, []int{line, col}, "a replaced value keeps its position")
	_, err = got.With(Setting{"sweep.metric", "peak_load"})
	assert.ErrorContains(t, err, "cannot be varied")

	// With again from the result, and the original's nodes never change.
	again, err := got.With(Setting{"workload.arrival.schedule[0].until", "30s"})
	require.NoError(t, err)
	assert.Equal(t, 900.0, again.Workload.Arrival.Schedule[0].Rate)
	assert.Equal(t, 30*time.Second, again.Workload.Arrival.Schedule[0].Until)
	after, err := yaml.Marshal(s.src.root)
	require.NoError(t, err)
	assert.Equal(t, string(text), string(after))
}

func TestWithAliases(t *testing.T) {
	data := `server: {concurrency: 10}
workload: {requests: 100}
strategies:
  - name: a
    backoff: &b {kind: full-jitter, base: 1s, cap: 1m}
    max_attempts: 3
  - name: b
    backoff: *b
    max_attempts: 3
`
	s, err := Parse("aliases.yaml", []byte(data))
	require.NoError(t, err)
	for _, tt := range []struct {
		path   string
		a, b   time.Duration
		reason string
	}{
		{"strategies[a].backoff.base", 2 * time.Second, time.Second, "the anchor changes, the alias does not"},
		{"strategies[b].backoff.base", time.Second, 2 * time.Second, "the alias changes, the anchor does not"},
		{"strategies[*].backoff.base", 2 * time.Second, 2 * time.Second, "both"},
	} {
		got, err := s.With(Setting{tt.path, "2s"})
		require.NoError(t, err)
		assert.Equal(t, tt.a, got.Strategies[0].Backoff.Base, tt.reason)
		assert.Equal(t, tt.b, got.Strategies[1].Backoff.Base, tt.reason)
	}
	assert.Equal(t, time.Second, s.Strategies[1].Backoff.Base)
}

func TestWithErrors(t *testing.T) {
	tests := []struct {
		name    string
		setting Setting
		want    string
	}{
		{"index out of range", Setting{"server.outages[3].duration", "1s"}, "server.outages[3].duration: server.outages[3] is out of range: server.outages has 3 elements"},
		{"no element named so", Setting{"strategies[jitter].timeout", "1s"}, "strategies[jitter].timeout: no element of strategies is named jitter (the names are fixed, expo, full, equal, decorrelated, grpc, polly)"},
		{"into a value", Setting{"workload.requests.count", "1"}, `workload.requests.count: workload.requests is a value ("10_000"), not a mapping with fields, so it has no field count`},
		{"a value indexed", Setting{"seed[0]", "1"}, `seed[0]: seed is a value ("7"), not a list, so it has no element [0]`},
		{"a mapping indexed", Setting{"server[0].x", "1"}, "server[0].x: server is a mapping, not a list, so it has no element [0]"},
		{"a missing list", Setting{"strategies[fixed].retry_on[0]", "timeout"}, "strategies[fixed].retry_on[0]: the file has no strategies[fixed].retry_on, so there is no strategies[fixed].retry_on[0]"},
		{"elements without names", Setting{"server.outages[first].mode", "error"}, "server.outages[first].mode: no element of server.outages has a name, so there is no server.outages[first]"},
		{"reserved", Setting{"runs", "2"}, "runs: cannot be varied: runs is set for the whole sweep, with --runs"},
		{"syntax", Setting{"server..queue", "1"}, `server..queue: a field name is missing after "server."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := everything(t).With(tt.setting)
			assert.Nil(t, got)
			assert.EqualError(t, err, tt.want)
		})
	}

	t.Run("every bad setting", func(t *testing.T) {
		_, err := everything(t).With(Setting{"runs", "2"}, Setting{"workload.requests", "5"}, Setting{"strategies[9].timeout", "1s"})
		require.Error(t, err)
		assert.Len(t, unjoin(err), 2)
	})
	t.Run("every element of an empty list", func(t *testing.T) {
		s, err := Load("testdata/valid/minimal.yaml")
		require.NoError(t, err)
		withEmpty, err := s.With(Setting{"server.outages", "[]"})
		require.Error(t, err, "a scalar is not a list")
		assert.Nil(t, withEmpty)
		empty, err := Parse("e.yaml", []byte("server: {concurrency: 1, outages: []}\nworkload: {requests: 1}\nstrategies: [{name: a, backoff: {kind: none}, max_attempts: 1}]\n"))
		require.NoError(t, err)
		_, err = empty.With(Setting{"server.outages[*].mode", "error"})
		assert.EqualError(t, err, "server.outages[*].mode: server.outages is empty, so server.outages[*] selects nothing")
	})
	t.Run("the result does not validate", func(t *testing.T) {
		_, err := everything(t).With(Setting{"server.outages[0].duration", "-5s"}, Setting{"strategies[expo].backoff", "fast"}, Setting{"server.typo", "1"})
		require.Error(t, err)
		var errs []string
		for _, e := range unjoin(err) {
			var le *Error
			require.ErrorAs(t, e, &le)
			assert.Equal(t, "testdata/valid/everything.yaml", le.File)
			errs = append(errs, e.Error())
		}
		assert.Equal(t, []string{
			"testdata/valid/everything.yaml:9:3: server.typo: unknown field (want one of concurrency, drop_expired, failure_probability, failure_pushback, idempotency, model, outages, queue, rate_limit, response_loss, service_time, slowdown, warmup)",
			"testdata/valid/everything.yaml:13:30: server.outages[0].duration: must be > 0, got -5s",
			`testdata/valid/everything.yaml:37:14: strategies[1].backoff: want a mapping, got "fast"`,
		}, errs)
	})
	t.Run("a scenario built in Go", func(t *testing.T) {
		s := Default()
		_, err := s.With(Setting{"seed", "2"})
		assert.ErrorIs(t, err, errNoSource)
		assert.ErrorContains(t, err, "only a scenario loaded from a file can be varied")
		_, err = s.Points(nil)
		assert.ErrorIs(t, err, errNoSource)
	})
}

func TestPoints(t *testing.T) {
	s := everything(t)
	vary := []Vary{
		{Path: "server.outages[0].duration", Values: []string{"10s", "20s", "30s"}},
		{Path: "strategies[*].timeout", Values: []string{"1s", "2s"}},
	}
	points, err := s.Points(vary)
	require.NoError(t, err)
	require.Len(t, points, 6)
	var got []string
	for _, p := range points {
		var set []string
		for _, st := range p.Settings {
			set = append(set, st.text())
		}
		got = append(got, strings.Join(set, " "))
		require.NotNil(t, p.Scenario)
		assert.Nil(t, p.Scenario.Sweep)
		d, _ := time.ParseDuration(p.Settings[0].Value)
		timeout, _ := time.ParseDuration(p.Settings[1].Value)
		assert.Equal(t, d, p.Scenario.Server.Outages[0].Duration)
		for _, st := range p.Scenario.Strategies {
			assert.Equal(t, timeout, st.Timeout)
		}
	}
	assert.Equal(t, []string{
		"server.outages[0].duration=10s strategies[*].timeout=1s",
		"server.outages[0].duration=10s strategies[*].timeout=2s",
		"server.outages[0].duration=20s strategies[*].timeout=1s",
		"server.outages[0].duration=20s strategies[*].timeout=2s",
		"server.outages[0].duration=30s strategies[*].timeout=1s",
		"server.outages[0].duration=30s strategies[*].timeout=2s",
	}, got, "the first vary is the outer loop")

	one, err := s.Points(nil)
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Empty(t, one[0].Settings)
	assert.Equal(t, plain(s), plain(one[0].Scenario))

	seeds, err := s.Points([]Vary{{Path: "seed", Values: []string{"1", "2", "3"}}})
	require.NoError(t, err)
	require.Len(t, seeds, 3)
	for i, p := range seeds {
		assert.Equal(t, uint64(i+1), p.Scenario.Seed)
		want := plain(s)
		want.Seed = uint64(i + 1)
		assert.Equal(t, want, plain(p.Scenario), "only the seed differs")
	}
}

func TestPointsErrors(t *testing.T) {
	s := everything(t)
	tests := []struct {
		name string
		vary []Vary
		want []string
	}{
		{"one value fails whatever the others", []Vary{
			{Path: "server.outages[0].duration", Values: []string{"-5s", "10s"}},
			{Path: "seed", Values: []string{"1", "2"}},
		}, []string{
			"server.outages[0].duration=-5s: testdata/valid/everything.yaml:13:30: server.outages[0].duration: must be > 0, got -5s",
		}},
		{"a combination fails", []Vary{
			{Path: "duration", Values: []string{"5s", "1h"}},
			{Path: "server.outages[0].start", Values: []string{"1s", "10s"}},
		}, []string{
			"duration=5s: testdata/valid/everything.yaml:14:15: server.outages[1].start: 1m0s is not before the horizon (duration 5s)",
			"duration=5s: testdata/valid/everything.yaml:15:15: server.outages[2].start: 2m0s is not before the horizon (duration 5s)",
			"duration=5s, server.outages[0].start=10s: testdata/valid/everything.yaml:13:15: server.outages[0].start: 10s is not before the horizon (duration 5s)",
		}},
		{"problems in the order of the points", []Vary{
			{Path: "server.warmup.from", Values: []string{"0.5", "2"}},
			{Path: "server.failure_probability", Values: []string{"0.1", "2", "3"}},
		}, []string{
			"server.failure_probability=2: testdata/valid/everything.yaml:16:24: server.failure_probability: must be a probability in [0,1], got 2",
			"server.failure_probability=3: testdata/valid/everything.yaml:16:24: server.failure_probability: must be a probability in [0,1], got 3",
			"server.warmup.from=2: testdata/valid/everything.yaml:19:33: server.warmup.from: must be a fraction of capacity in (0,1], got 2",
		}},
		{"a problem of a combination shared by several points", []Vary{
			{Path: "strategies[full].breaker.consecutive", Values: []string{"0", "5"}},
			{Path: "seed", Values: []string{"1", "2"}},
			{Path: "strategies[full].breaker.failure_ratio", Values: []string{"0", "0.5"}},
		}, []string{
			"strategies[full].breaker.consecutive=0, strategies[full].breaker.failure_ratio=0: testdata/valid/everything.yaml:44:14: strategies[2].breaker: set consecutive, failure_ratio or both, or the breaker never trips",
		}},
		{"every point fails the same way", []Vary{
			{Path: "server.typo", Values: []string{"1", "2"}},
		}, []string{
			"testdata/valid/everything.yaml:9:3: server.typo: unknown field (want one of concurrency, drop_expired, failure_probability, failure_pushback, idempotency, model, outages, queue, rate_limit, response_loss, service_time, slowdown, warmup)",
		}},
		{"a path that leads nowhere is reported once", []Vary{
			{Path: "seed", Values: []string{"1", "2"}},
			{Path: "strategies[9].timeout", Values: []string{"1s", "2s"}},
		}, []string{
			"strategies[9].timeout: strategies[9] is out of range: strategies has 7 elements",
		}},
		{"the vary itself", []Vary{
			{Path: "runs", Values: []string{"1", "2"}},
			{Path: "seed", Values: nil},
			{Path: "seed", Values: []string{"1", "1"}},
		}, []string{
			"runs: cannot be varied: runs is set for the whole sweep, with --runs",
			"seed: missing: give a list, such as [10s, 30s, 2m], or a range, such as 10s..5m:8",
			"seed is varied twice",
			"seed: 1 is listed twice",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			points, err := s.Points(tt.vary)
			assert.Nil(t, points)
			require.Error(t, err)
			var got []string
			for _, e := range unjoin(err) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("the problems of a point are each an *Error", func(t *testing.T) {
		_, err := s.Points([]Vary{{Path: "workload.requests", Values: []string{"-1", "-2"}}})
		require.Error(t, err)
		for _, e := range unjoin(err) {
			var le *Error
			require.ErrorAs(t, e, &le)
			assert.Equal(t, "workload.requests", le.Path)
		}
	})
	t.Run("ten problems, then how many more", func(t *testing.T) {
		values, _, err := ParseValues("-1..-25:25")
		require.NoError(t, err)
		_, err = s.Points([]Vary{{Path: "workload.requests", Values: values}})
		require.Error(t, err)
		errs := unjoin(err)
		require.Len(t, errs, maxProblems+1)
		assert.Contains(t, errs[0].Error(), "workload.requests=-1: ")
		assert.Contains(t, errs[9].Error(), "workload.requests=-10: ")
		assert.EqualError(t, errs[10], "and 15 more problems")
	})
	t.Run("too many points", func(t *testing.T) {
		values := make([]string, 101)
		for i := range values {
			values[i] = fmt.Sprint(i + 1)
		}
		_, err := s.Points([]Vary{{Path: "seed", Values: values}, {Path: "workload.requests", Values: values}})
		assert.EqualError(t, err, "10201 points is too many (at most 10000): ask for fewer values")
	})
}

func TestPointProblemSettings(t *testing.T) {
	vary := []Vary{
		{Path: "a", Values: []string{"1", "2"}},
		{Path: "b", Values: []string{"x", "y", "z"}},
	}
	first := []Setting{{"a", "1"}, {"b", "x"}}
	tests := []struct {
		name   string
		at     []int
		count  int
		prefix string
		only   int
	}{
		{"one point", []int{0, 0}, 1, "a=1, b=x", -1},
		{"every point with a=1", []int{0, -1}, 3, "a=1", 0},
		{"every point with b=x", []int{-1, 0}, 2, "b=x", 1},
		{"every point", []int{-1, -1}, 6, "", -1},
		{"some points with a=1", []int{0, -1}, 2, "a=1, b=x (and 1 more point)", -1},
		{"points with nothing in common", []int{-1, -1}, 3, "a=1, b=x (and 2 more points)", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := &pointProblem{err: errors.New("x"), first: first, at: tt.at, count: tt.count}
			prefix, only := pr.settings(vary)
			assert.Equal(t, tt.prefix, prefix)
			assert.Equal(t, tt.only, only)
		})
	}
	pr := &pointProblem{err: &settingError{index: 1, path: "b", msg: "no such field"}, first: first, at: []int{0, 0}, count: 1}
	prefix, only := pr.settings(vary)
	assert.Empty(t, prefix, "a path leads nowhere whatever the values")
	assert.Equal(t, 1, only)
}

func TestSweepSection(t *testing.T) {
	s, err := Load("testdata/valid/sweep.yaml")
	require.NoError(t, err)
	require.NotNil(t, s.Sweep)
	assert.Equal(t, &Sweep{Metric: "recovery_time_s", Vary: []Vary{
		{Path: "workload.arrival.schedule[0].until", Label: "trigger end", Values: []string{"21s", "23s", "25s", "27s", "29s", "31s", "33s", "35s"}},
		{Path: "workload.arrival.schedule[0].rate", Values: []string{"600", "900", "1200", "1500"}},
		{Path: "strategies[equal-jitter-10s].backoff.base", Values: []string{"5s", "10s"}},
		{Path: "server.service_time", Values: []string{"50ms", "100ms", "200ms"}, Log: true},
	}}, s.Sweep)
	points, err := s.Points(s.Sweep.Vary)
	require.NoError(t, err)
	assert.Len(t, points, 8*4*2*3)

	line, col := s.Position("sweep.vary[1].values")
	assert.Equal(t, []int{27, 59}, []int{line, col})

	// The metric defaults to recovery_time_s; a sweep: with nothing in it
	// is no sweep.
	base := "server: {concurrency: 10}\nworkload: {requests: 100}\nstrategies: [{name: a, backoff: {kind: none}, max_attempts: 1}]\n"
	s, err = Parse("default.yaml", []byte(base+"sweep: {vary: [{path: seed, values: 1..3:3}]}\n"))
	require.NoError(t, err)
	assert.Equal(t, &Sweep{Metric: "recovery_time_s", Vary: []Vary{{Path: "seed", Values: []string{"1", "2", "3"}}}}, s.Sweep)
	s, err = Parse("none.yaml", []byte(base+"sweep:\n"))
	require.NoError(t, err)
	assert.Nil(t, s.Sweep)
	s, err = Parse("none.yaml", []byte(base))
	require.NoError(t, err)
	assert.Nil(t, s.Sweep)
	_, err = Parse("empty.yaml", []byte(base+"sweep: {}\n"))
	assert.EqualError(t, err, "empty.yaml:4:8: sweep.vary: missing: list the fields to vary, as in [{path: server.outages[0].duration, values: 10s..5m:8}]")
}

func TestValidateSweep(t *testing.T) {
	s := Default()
	s.Name = "go"
	s.Server.Concurrency = 4
	s.Workload.Requests = 10
	st := NewStrategy("none")
	st.Backoff.Kind = BackoffNone
	st.MaxAttempts = 1
	s.Strategies = append(s.Strategies, st)
	s.Sweep = &Sweep{Vary: []Vary{
		{Path: "seed", Values: []string{"1", "1"}},
		{Path: "", Values: []string{"1"}},
		{Path: "seed", Values: []string{" "}},
	}}
	err := s.Validate()
	require.Error(t, err)
	var got []string
	for _, e := range unjoin(err) {
		got = append(got, e.Error())
	}
	assert.Equal(t, []string{
		"sweep.vary[0].values: 1 is listed twice",
		"sweep.vary[1].path: missing: name the field to vary, such as server.outages[0].duration",
		"sweep.vary[2].path: seed is varied twice (also sweep.vary[0])",
		"sweep.vary[2].values: a value is empty",
		"sweep.metric: missing: name a figure such as recovery_time_s",
	}, got)

	s.Sweep = &Sweep{Metric: "p99", Vary: []Vary{{Path: "seed", Values: []string{"1"}}}}
	assert.EqualError(t, s.Validate(), "sweep.metric: unknown figure (did you mean latency_s.p99?)")
}

// TestParseSweepIsCheap: a sweep of 100 points adds a few milliseconds
// to Parse at most (its points are built to check them); see
// BenchmarkParseSweep for the figure.
func BenchmarkParseSweep(b *testing.B) {
	data := []byte(sweep100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNoSweep(b *testing.B) {
	data := []byte(strings.Split(sweep100, "sweep:")[0])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSweep100(t *testing.T) {
	s, err := Parse("bench.yaml", []byte(sweep100))
	require.NoError(t, err)
	points, err := s.Points(s.Sweep.Vary)
	require.NoError(t, err)
	assert.Len(t, points, 100)
}

// sweep100 is the metastable scenario with a sweep of 100 points.
const sweep100 = `name: metastable
seed: 1
runs: 10
duration: 90s
server:
  concurrency: unlimited
  service_time: 100ms
  slowdown: 1ms
network:
  latency: {dist: exponential, mean: 10ms}
workload:
  arrival: {kind: poisson, rate: 500, from: 0s, schedule: [{from: 20s, until: 23s, rate: 1250}]}
strategies:
  - name: no-retries
    backoff: {kind: none}
    max_attempts: 1
    timeout: 1s
  - name: immediate
    backoff: {kind: none}
    max_attempts: 3
    timeout: 1s
  - name: full-jitter-1s
    backoff: {kind: full-jitter, base: 1s, cap: 60s}
    max_attempts: 3
    timeout: 1s
  - name: equal-jitter-10s
    backoff: {kind: equal-jitter, base: 10s, cap: 60s}
    max_attempts: 3
    timeout: 1s
checks:
  - strategy: no-retries
    recovered_runs: {min: 10}
sweep:
  vary:
    - path: workload.arrival.schedule[0].until
      values: 21s..35s:10
    - path: workload.arrival.schedule[0].rate
      values: 600..1500:10
`

func TestWithFromSeveralGoroutines(t *testing.T) {
	s := everything(t)
	type result struct {
		s   *Scenario
		err error
	}
	done := make(chan result)
	for i := range 8 {
		go func() {
			v, err := s.With(Setting{"strategies[*].max_attempts", fmt.Sprint(i + 1)}, Setting{"server.outages[0].duration", "20s"})
			done <- result{v, err}
		}()
	}
	for range 8 {
		r := <-done
		require.NoError(t, r.err)
		assert.Equal(t, 20*time.Second, r.s.Server.Outages[0].Duration)
	}
	assert.Equal(t, 30*time.Second, s.Server.Outages[0].Duration)
}

func FuzzParseValues(f *testing.F) {
	for _, spec := range []string{"10s,30s,2m", "10s..5m:8", "1e3..1e6:log:7", "0.1..0.5:5", "1..5:10", "a,,b", "1ms..2ms:3"} {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		values, log, err := ParseValues(spec)
		if err != nil {
			require.Nil(t, values)
			require.False(t, log)
			return
		}
		require.NotEmpty(t, values)
		require.LessOrEqual(t, len(values), maxPoints)
		require.NoError(t, checkValues(values), "no value empty or listed twice")
	})
}

// TestSweepAGraph: a sweep varies any field of any service (by index or
// name) or edge.
func TestSweepAGraph(t *testing.T) {
	s, err := Parse("graph.yaml", []byte(`services:
  - {name: a, calls: [{service: b}]}
  - {name: b, concurrency: 10, outages: [{start: 0s, duration: 10s}]}
workload: {requests: 10}
strategies:
  - name: s
    backoff: {kind: none}
    max_attempts: 2
    edges: {a->b: {max_attempts: 2}}
sweep:
  vary:
    - {path: "services[b].concurrency", values: [5, 20]}
    - {path: "services[1].outages[0].duration", values: [5s, 20s]}
    - {path: "strategies[0].edges.a->b.max_attempts", values: [1, 3]}
`))
	require.NoError(t, err)
	var seen [][3]string
	err = s.EachPoint(context.Background(), s.Sweep.Vary, func(p Point) error {
		sc := p.Scenario
		edge := EdgeStrategy(&sc.Strategies[0], "a", &sc.Services[0].Calls[0])
		seen = append(seen, [3]string{sc.Services[1].Concurrency.String(), sc.Services[1].Outages[0].Duration.String(), fmt.Sprint(edge.MaxAttempts)})
		return nil
	})
	require.NoError(t, err)
	assert.Len(t, seen, 8)
	assert.Contains(t, seen, [3]string{"5", "5s", "1"})
	assert.Contains(t, seen, [3]string{"20", "20s", "3"})
}

// bigSweep is a scenario of steps schedule steps with a sweep of
// 100 x 100 points; cap is the backoff's cap (below 100s, some points
// are invalid).
func bigSweep(steps int, cap string) []byte {
	var b strings.Builder
	b.WriteString("name: big\nduration: 40m\nserver: {concurrency: 10}\nworkload:\n  arrival:\n    kind: poisson\n    rate: 5\n    schedule:\n")
	for i := range steps {
		fmt.Fprintf(&b, "      - {from: %ds, until: %ds, rate: %d}\n", i, i+1, 10+i%7)
	}
	fmt.Fprintf(&b, `strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: %s}, max_attempts: 3}
sweep:
  vary:
    - {path: server.concurrency, values: "1..100:100"}
    - {path: "strategies[a].backoff.base", values: "1s..100s:100"}
`, cap)
	return []byte(b.String())
}

// TestSweepChecksWhatVaries: checking the 10,000 points of a sweep of a
// scenario with 2,000 schedule steps decodes the file once and what
// varies at each point, not every point whole (it took 18-50 s of CPU:
// 10,000 decodes of 2,000 steps): well under 100 allocations a point,
// where decoding the steps alone made thousands. The problems found are
// the same.
func TestSweepChecksWhatVaries(t *testing.T) {
	if testing.Short() {
		t.Skip("checks 10,000 points")
	}
	good := bigSweep(2000, "200s")
	allocs := testing.AllocsPerRun(1, func() {
		_, err := Parse("big.yaml", good)
		require.NoError(t, err)
	})
	t.Logf("%.0f allocations for 10,000 points", allocs)
	assert.Less(t, allocs, 2e6, "about 100 a point at most")

	_, err := Parse("big.yaml", bigSweep(2000, "10s"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "big.yaml:2014:52: sweep.vary[1].values: strategies[a].backoff.base=11s: strategies[0].backoff.cap: must be >= base (11s), got 10s")
	assert.Contains(t, err.Error(), "and 80 more problems in other points")
}

// BenchmarkSweepCheck checks the 10,000 points of TestSweepChecksWhatVaries.
func BenchmarkSweepCheck(b *testing.B) {
	good := bigSweep(2000, "200s")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("big.yaml", good); err != nil {
			b.Fatal(err)
		}
	}
}
