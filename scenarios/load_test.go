package scenarios

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestShippedAndValidFilesLoad(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yaml")
	require.NoError(t, err)
	shipped, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, shipped, "the scenario library ships files")
	for _, file := range append(files, shipped...) {
		t.Run(file, func(t *testing.T) {
			s, err := Load(file)
			require.NoError(t, err)
			assert.NoError(t, s.Validate())
			assert.NotEmpty(t, s.Describe())
		})
	}
}

// TestInvalidFiles loads each file of testdata/invalid and compares every
// problem reported with the golden file beside it; go test -update
// rewrites the goldens.
func TestInvalidFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := Load(file)
			require.Error(t, err)
			assert.Nil(t, s)
			for _, e := range unjoin(err) {
				var le *Error
				require.True(t, errors.As(e, &le), "every problem is an *Error: %v", e)
				assert.Equal(t, file, le.File)
				assert.Positive(t, le.Line)
				assert.Positive(t, le.Col)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./scenarios -update to create it")
			assert.Equal(t, string(want), got)
		})
	}
}

func TestHugeFile(t *testing.T) {
	data := []byte("description: " + strings.Repeat("x", MaxFileSize) + "\n")
	_, err := Parse("huge.yaml", data)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "huge.yaml:1:1: file is larger than")

	dir := t.TempDir()
	path := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Load(path)
	assert.ErrorContains(t, err, "file is larger than")
}

func TestMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-file.yaml")
	assert.EqualError(t, err, "testdata/no-such-file.yaml:1:1: cannot read: no such file or directory")
}

func TestDefaults(t *testing.T) {
	s, err := Load("testdata/valid/minimal.yaml")
	require.NoError(t, err)
	assert.Equal(t, "minimal", s.Name, "name defaults to the file's base name")
	assert.Equal(t, uint64(1), s.Seed)
	assert.Equal(t, 1, s.Runs)
	assert.Equal(t, 15*time.Minute, s.Duration)
	assert.Equal(t, time.Second, s.Bucket)
	assert.Equal(t, Limit(10), s.Server.Concurrency)
	assert.True(t, s.Server.Queue.Unlimited(), "queue defaults to unlimited")
	assert.Equal(t, Dist{Kind: Constant, Mean: 100 * time.Millisecond}, s.Server.ServiceTime)
	assert.Equal(t, Burst, s.Workload.Arrival.Kind)
	assert.Nil(t, s.Network.Latency)
	assert.Nil(t, s.DLQ.Replay)

	st := s.Strategies[0]
	assert.Equal(t, DefaultTimeout, st.Timeout)
	assert.Equal(t, "honor", st.RetryAfter.Mode)
	assert.Equal(t, strategies.DefaultRetryAfterCap, st.RetryAfter.Cap)
	assert.Equal(t, 3, st.MaxAttempts)
	assert.Zero(t, s.Strategies[0].MaxElapsed, "0 = unlimited")
	assert.InDelta(t, 100.0, s.Server.Capacity(), 1e-9, "10 slots / 100ms")
}

func TestEveryFieldDecodes(t *testing.T) {
	s, err := Load("testdata/valid/everything.yaml")
	require.NoError(t, err)
	assert.Equal(t, uint64(7), s.Seed)
	assert.Equal(t, 3, s.Runs)
	assert.Equal(t, 2*time.Hour, s.Duration)
	assert.Equal(t, 500*time.Millisecond, s.Bucket)
	srv := s.Server
	assert.True(t, srv.Concurrency.Unlimited())
	assert.Equal(t, Limit(0), srv.Queue, "queue: 0 is a server without a waiting room")
	assert.Equal(t, Dist{Kind: Lognormal, Mean: 80 * time.Millisecond, StdDev: 40 * time.Millisecond}, srv.ServiceTime)
	require.Len(t, srv.Outages, 3)
	assert.Equal(t, Outage{Start: time.Minute, Duration: 10 * time.Second, Mode: TimeoutMode}, srv.Outages[1])
	assert.Equal(t, 0.01, srv.FailureProbability)
	assert.Equal(t, 10*time.Millisecond, srv.Slowdown)
	assert.True(t, srv.DropExpired)
	assert.Equal(t, Warmup{Duration: 20 * time.Second, From: 0.25}, srv.Warmup)
	assert.Equal(t, &RateLimit{Rate: 1500, Burst: 300, RetryAfter: AutoDuration(2 * time.Second), Format: "http-date"}, srv.RateLimit)
	assert.Equal(t, 0.01, srv.ResponseLoss)
	assert.True(t, srv.Idempotency)
	assert.Equal(t, &Dist{Kind: UniformDist, Min: time.Millisecond, Max: 9 * time.Millisecond}, s.Network.Latency)
	assert.Equal(t, Workload{
		Requests: 10000,
		Arrival: Arrival{Kind: Poisson, Rate: 40, Until: 80 * time.Second,
			Schedule: []RateStep{{From: 20 * time.Second, Until: 25 * time.Second, Rate: 80}}},
		Senders: 100, Workers: 5, Dispatch: DispatchBlocking,
	}, s.Workload)
	assert.Equal(t, &Replay{At: time.Hour, Rate: 100}, s.DLQ.Replay)
	require.Len(t, s.Strategies, 7)
	assert.Equal(t, &Breaker{Kind: BreakerStandard, Consecutive: 50, Window: time.Minute, MinCalls: 10, OpenFor: 15 * time.Minute,
		OpenJitter: 0.1, Canaries: 1, On: []string{"timeout"}}, s.Strategies[2].Breaker)
	assert.Equal(t, RetryAfter{Mode: "max", Cap: 2 * time.Minute}, s.Strategies[2].RetryAfter)
}

func TestShorthand(t *testing.T) {
	s, err := Load("testdata/valid/shorthand.yaml")
	require.NoError(t, err)
	assert.Equal(t, Dist{Kind: Constant, Mean: 100 * time.Millisecond}, s.Server.ServiceTime)
	assert.Equal(t, &Dist{Kind: Constant, Mean: 5 * time.Millisecond}, s.Network.Latency)
	assert.Equal(t, 1_000_000, s.Workload.Requests)
	assert.Equal(t, Backoff{Kind: BackoffExponential, Base: time.Second, Cap: time.Minute, Multiplier: 2, Jitter: 0.2}, s.Strategies[0].Backoff)
}

func TestPolicy(t *testing.T) {
	s, err := Load("testdata/valid/everything.yaml")
	require.NoError(t, err)
	byName := map[string]*strategies.Policy{}
	for _, st := range s.Strategies {
		byName[st.Name] = st.Policy()
	}
	assert.Equal(t, &strategies.Policy{Backoff: strategies.Fixed{Delay: 5 * time.Second}, MaxAttempts: 10,
		Timeout: DefaultTimeout, RetryAfter: strategies.RetryAfter{Cap: strategies.DefaultRetryAfterCap}}, byName["fixed"])

	expo := byName["expo"]
	assert.Equal(t, strategies.Exponential{Base: 100 * time.Millisecond, Cap: 30 * time.Second, Multiplier: 3}, expo.Backoff)
	assert.Equal(t, strategies.Outcomes(strategies.Refused, strategies.Timeout, strategies.ServerError), expo.RetryOn)
	assert.Equal(t, 10*time.Minute, expo.MaxElapsed)
	assert.Equal(t, 3*time.Second, expo.Timeout)

	full := byName["full"]
	assert.Equal(t, strategies.RetryAfterMax, full.RetryAfter.Mode)
	assert.Equal(t, &strategies.Breaker{Consecutive: 50, Window: time.Minute, MinCalls: 10, OpenFor: 15 * time.Minute,
		OpenJitter: 0.1, Canaries: 1, Failures: strategies.Outcomes(strategies.Timeout)}, full.Breaker)
	assert.True(t, byName["equal"].ShortCircuitIsAttempt)
	assert.True(t, byName["equal"].Breaker.RetriesOnly)
	assert.Equal(t, &strategies.Budget{Kind: strategies.BudgetTokens, MaxTokens: 10, TokenRatio: 0.1,
		Capacity: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1, Deposit: 0.1, Cost: 1, Threshold: 1,
		Percent: 20, MinConcurrency: 3, TTL: 10 * time.Second, MinPerSecond: 10}, byName["decorrelated"].Budget)
	assert.Equal(t, strategies.BudgetQuota, byName["grpc"].Budget.Kind)
	assert.Equal(t, strategies.ProportionalJitter{Base: time.Second, Cap: 120 * time.Second, Multiplier: 1.6, Factor: 0.2}, byName["grpc"].Backoff)
	assert.Equal(t, strategies.DecorrelatedJitterV2{Base: time.Second, Cap: time.Minute}, byName["polly"].Backoff)
	assert.Equal(t, strategies.RetryAfterIgnore, byName["polly"].RetryAfter.Mode)
}

func TestDescribe(t *testing.T) {
	s, err := Load("thundering-herd.yaml")
	require.NoError(t, err)
	assert.Equal(t, "50,000 requests in a burst at 0s, one sender each; server: 200 slots x exponential mean 100ms (2,000 req/s), queue 2,000; "+
		"outages: refuse 0s-30s; 15m0s horizon; strategies: fixed-60s, exponential, full-jitter, equal-jitter, decorrelated-jitter", s.Describe())

	s, err = Load("metastable.yaml")
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(s.Describe(), "; sweep: 70 points over trigger end x surge rate"), s.Describe())
}

func TestValidateGoScenario(t *testing.T) {
	// A scenario built in Go from the defaults validates like a file.
	s := Default()
	s.Name = "go"
	s.Server.Concurrency = 4
	s.Workload.Requests = 10
	st := NewStrategy("fixed")
	st.Backoff.Kind = BackoffFixed
	st.Backoff.Delay = time.Second
	s.Strategies = append(s.Strategies, st)
	require.NoError(t, s.Validate())

	s.Strategies[0].Backoff.Delay = -time.Second
	err := s.Validate()
	require.Error(t, err)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "strategies[0].backoff.delay", fe.Path)
}

func TestTooManyNodes(t *testing.T) {
	skipUnderRace(t)
	// 200,000 list items fit in a megabyte; the decoder stops at maxNodes.
	data := "server: {concurrency: 1}\nworkload: {requests: 1}\nstrategies:\n  - name: a\n    backoff: {kind: none}\n    retry_on: [" +
		strings.Repeat("x,", 200_000) + "x]\n"
	_, err := Parse("nodes.yaml", []byte(data))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too many YAML nodes (more than 100000")
	assert.Len(t, unjoin(err), 1, "the cause alone, not the problems of the nodes before it")
}

// seed adds every file matching the patterns to the fuzz corpus.
func seed(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			require.NoError(f, err)
			f.Add(data)
		}
	}
}

func FuzzParse(f *testing.F) {
	seed(f, "testdata/valid/*.yaml", "testdata/invalid/*.yaml", "*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			require.Nil(t, s)
			for _, e := range unjoin(err) {
				var le *Error
				require.ErrorAs(t, e, &le)
				require.Positive(t, le.Line)
			}
			return
		}
		// Never accept what Validate rejects, and accepted scenarios give
		// policies without panicking.
		require.NoError(t, s.Validate())
		for _, st := range s.Strategies {
			require.NotNil(t, st.Policy())
		}
		s.Describe()
	})
}

// TestReadmeScenariosParse: every complete scenario the README and the
// docs show (a yaml block with strategies) parses and validates, and
// they show a server scenario and a graph.
func TestReadmeScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	var server, graph int
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
		for i, b := range blocks {
			if !strings.Contains(b[1], "\nstrategies:") {
				continue
			}
			name := fmt.Sprintf("%s-block-%d.yaml", filepath.Base(file), i)
			s, err := Parse(name, []byte(b[1]))
			if !assert.NoError(t, err, name) {
				continue
			}
			if len(s.Services) > 1 {
				graph++
			} else {
				server++
			}
		}
	}
	assert.Positive(t, server, "the docs show a scenario of one server")
	assert.Positive(t, graph, "the docs show a graph of services")
}

func TestDescribeAGraph(t *testing.T) {
	s, err := Parse("g.yaml", []byte(`services:
  - {name: api, concurrency: 10, service_time: 10ms, calls: [{service: db, fanout: 2}]}
  - {name: db, replicas: 3, balancer: random, concurrency: 5, service_time: 5ms, outages: [{start: 0s, duration: 10s, mode: error, replicas: [1]}]}
workload: {requests: 100}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`))
	require.NoError(t, err)
	assert.Equal(t, "100 requests in a burst at 0s, one sender each; 2 services, the fleet calls api; "+
		"api: calls db x2; 10 slots x 10ms (1,000 req/s); no outage; "+
		"db: 3 replicas (random) of 5 slots x 5ms (1,000 req/s); outages: error 0s-10s (replicas [1]); 15m0s horizon; strategies: s", s.Describe())
}

func TestBrookerPolicies(t *testing.T) {
	// The bucket budget takes its own defaults (capacity 5, not the
	// quota's 500) and a written capacity; the cumulative breaker takes
	// only failure_ratio and on.
	s, err := Parse("brooker.yaml", []byte(`name: brooker
workload: {requests: 10}
strategies:
  - {name: bucket, backoff: {kind: fixed, delay: 10ms}, budget: {kind: bucket}}
  - {name: bucket-10, backoff: {kind: fixed, delay: 10ms}, budget: {kind: bucket, capacity: 10, deposit: 0.2}}
  - {name: breaker, backoff: {kind: fixed, delay: 10ms}, breaker: {kind: cumulative, failure_ratio: 0.1}}
`))
	require.NoError(t, err)
	assert.Equal(t, &strategies.Budget{Kind: strategies.BudgetBucket, MaxTokens: 10, TokenRatio: 0.1, Capacity: 5,
		RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1, Deposit: 0.1, Cost: 1, Threshold: 1,
		Percent: 20, MinConcurrency: 3, TTL: 10 * time.Second, MinPerSecond: 10}, s.Strategies[0].Policy().Budget)
	b := s.Strategies[1].Policy().Budget
	assert.Equal(t, 10.0, b.Capacity)
	assert.Equal(t, 0.2, b.Deposit)
	br := s.Strategies[2].Policy().Breaker
	assert.True(t, br.Cumulative)
	assert.Equal(t, 0.1, br.FailureRatio)

	for _, tc := range []struct{ setting, want string }{
		{"budget: {kind: bucket, threshold: 5}", "strategies[0].budget.threshold: must be below the capacity (5), or no retry ever goes, got 5"},
		{"budget: {kind: bucket, deposit: 0}", "strategies[0].budget.deposit: must be > 0, got 0"},
		{"budget: {kind: bucket, max_tokens: 3}", "strategies[0].budget.max_tokens: not used by bucket (it uses capacity, deposit, cost, threshold)"},
		{"breaker: {kind: cumulative}", "strategies[0].breaker.failure_ratio: must be in (0,1]"},
		{"breaker: {kind: cumulative, failure_ratio: 0.1, consecutive: 3}", "strategies[0].breaker.consecutive: not used by cumulative (it uses failure_ratio, on)"},
		{"breaker: {kind: sliding, consecutive: 3}", `strategies[0].breaker.kind: unknown value "sliding" (want one of standard, cumulative)`},
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nworkload: {requests: 10}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 3, "+tc.setting+"}\n"))
		require.Error(t, err, tc.setting)
		assert.Contains(t, err.Error(), tc.want, tc.setting)
	}
}

func TestPerSenderArrivals(t *testing.T) {
	for _, tc := range []struct{ workload, want string }{
		{"{arrival: {kind: poisson, rate: 10, per_sender: true}}", "workload.arrival.per_sender: needs workload.senders"},
		{"{requests: 10, senders: 2, arrival: {kind: uniform, until: 1s, per_sender: true}}", "workload.arrival.per_sender: not used by uniform"},
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nduration: 1m\nworkload: "+tc.workload+"\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 1}\n"))
		require.Error(t, err, tc.workload)
		assert.Contains(t, err.Error(), tc.want, tc.workload)
	}
	s, err := Parse("ok.yaml", []byte("name: ok\nduration: 1m\nworkload: {senders: 4, arrival: {kind: poisson, rate: 10, per_sender: true, schedule: [{from: 1s, until: 2s, rate: 20}]}}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 1}\n"))
	require.NoError(t, err)
	one := s.Workload.Arrival.SenderStream(4)
	assert.Equal(t, 2.5, one.Rate)
	assert.Equal(t, 5.0, one.Schedule[0].Rate)
	assert.Equal(t, 20.0, s.Workload.Arrival.Schedule[0].Rate, "the scenario's own schedule is not changed")
}

func TestOverloadControlPolicies(t *testing.T) {
	s, err := Parse("overload.yaml", []byte(`name: overload
workload: {requests: 100, senders: 10}
strategies:
  - {name: sre, backoff: {kind: none}, max_attempts: 1, throttle: {kind: sre}}
  - {name: failsafe, backoff: {kind: none}, max_attempts: 1, throttle: {kind: failsafe, success_threshold: 0.8}}
  - {name: aws, backoff: {kind: full-jitter, base: 50ms, cap: 20s}, max_attempts: 3, throttle: {kind: aws-adaptive},
     budget: {kind: quota, retry_cost: 14, timeout_cost: 14, throttling_cost: 5}}
  - {name: envoy, backoff: {kind: none}, max_attempts: 3, budget: {kind: envoy, percent: 25, min_concurrency: 2, scope: fleet}}
  - {name: finagle, backoff: {kind: none}, max_attempts: 3, budget: {kind: finagle, scope: group, group_size: 5, min_per_second: 0}}
  - {name: deaf, backoff: {kind: none}, max_attempts: 3, ignore_pushback: true}
`))
	require.NoError(t, err)
	p := func(i int) *strategies.Policy { return s.Strategies[i].Policy() }
	assert.Equal(t, &strategies.Throttle{Kind: strategies.ThrottleSRE, K: 2, SuccessThreshold: 0.9, Window: 2 * time.Minute, MaxRejection: 1, Beta: 0.7}, p(0).Throttle)
	assert.Equal(t, &strategies.Throttle{Kind: strategies.ThrottleFailsafe, K: 2, SuccessThreshold: 0.8, Window: time.Minute, MaxRejection: 0.9, Beta: 0.7}, p(1).Throttle)
	assert.Equal(t, strategies.ThrottleAWSAdaptive, p(2).Throttle.Kind)
	assert.Equal(t, 5.0, p(2).Budget.ThrottlingCost)
	assert.Equal(t, 14.0, p(2).Budget.RetryCost)
	e := p(3).Budget
	assert.Equal(t, strategies.BudgetEnvoy, e.Kind)
	assert.Equal(t, strategies.ScopeFleet, e.Scope)
	assert.Equal(t, 25.0, e.Percent)
	assert.Equal(t, 2, e.MinConcurrency)
	f := p(4).Budget
	assert.Equal(t, strategies.BudgetFinagle, f.Kind)
	assert.Equal(t, strategies.ScopeGroup, f.Scope)
	assert.Equal(t, 5, f.GroupSize)
	assert.Equal(t, 10*time.Second, f.TTL)
	assert.Negative(t, f.MinPerSecond, "min_per_second 0 is no reserve")
	assert.True(t, p(5).IgnorePushback)
	assert.False(t, p(0).IgnorePushback)

	for _, tc := range []struct{ setting, want string }{
		{"throttle: {kind: sre, k: 0.5}", "strategies[0].throttle.k: must be >= 1"},
		{"throttle: {kind: sre, window: 0s}", "strategies[0].throttle.window: must be > 0"},
		{"throttle: {kind: sre, max_rejection: 1.5}", "strategies[0].throttle.max_rejection: must be in (0,1]"},
		{"throttle: {kind: failsafe, success_threshold: 0}", "strategies[0].throttle.success_threshold: must be in (0,1]"},
		{"throttle: {kind: sre, success_threshold: 0.9}", "strategies[0].throttle.success_threshold: not used by sre (it uses k, window, max_rejection)"},
		{"throttle: {kind: aws-adaptive, k: 3}", "strategies[0].throttle.k: not used by aws-adaptive (it uses on, beta)"},
		{"throttle: {kind: aws-adaptive, beta: 1}", "strategies[0].throttle.beta: must be in (0,1)"},
		{"throttle: {kind: aws-adaptive, beta: 0}", "strategies[0].throttle.beta: must be in (0,1)"},
		{"throttle: {kind: cubic}", `strategies[0].throttle.kind: unknown value "cubic" (want one of sre, failsafe, aws-adaptive)`},
		{"budget: {kind: envoy, percent: -1}", "strategies[0].budget.percent: must be in [0,100]"},
		{"budget: {kind: finagle, percent: 0}", "strategies[0].budget.percent: must be in (0,100]"},
		{"budget: {kind: envoy, min_concurrency: 0}", "strategies[0].budget.min_concurrency: must be >= 1"},
		{"budget: {kind: finagle, ttl: 0s}", "strategies[0].budget.ttl: must be > 0"},
		{"budget: {kind: finagle, min_per_second: -1}", "strategies[0].budget.min_per_second: must be >= 0"},
		{"budget: {kind: envoy, scope: proxy}", `strategies[0].budget.scope: unknown value "proxy" (want one of sender, fleet, group)`},
		{"budget: {kind: envoy, scope: group}", "strategies[0].budget.group_size: scope group needs group_size >= 1"},
		{"budget: {kind: envoy, group_size: 3}", "strategies[0].budget.group_size: only with scope: group"},
		{"budget: {kind: envoy, scope: group, group_size: 11}", "strategies[0].budget.group_size: 11 senders a group, but the fleet has 10 (workload.senders)"},
		{"budget: {kind: tokens, scope: fleet}", "strategies[0].budget.scope: not used by tokens"},
		{"budget: {kind: quota, throttling_cost: -1}", "strategies[0].budget.throttling_cost: must be > 0, or 0 for the retry_cost"},
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nworkload: {requests: 100, senders: 10}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 3, "+tc.setting+"}\n"))
		require.Error(t, err, tc.setting)
		assert.Contains(t, err.Error(), tc.want, tc.setting)
		assert.Contains(t, err.Error(), "bad.yaml:4:", tc.setting)
	}
}

func TestClosedLoopClients(t *testing.T) {
	s, err := Parse("closed.yaml", []byte("name: closed\nduration: 1m\nworkload: {clients: {count: 50, think_time: 100ms}}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 1}\n"))
	require.NoError(t, err)
	assert.Equal(t, 50, s.Workload.Senders, "each client is a sender")
	assert.True(t, s.Workload.Uncapped())
	assert.Contains(t, s.Describe(), "a closed loop of 50 clients, each sending its next request 100ms after its previous one ends")

	for _, tc := range []struct{ workload, want string }{
		{"{clients: {count: 0}, requests: 10}", "workload.clients.count: must be >= 1, got 0"},
		{"{clients: {count: 5, think_time: -1s}}", "workload.clients.think_time: must be >= 0, got -1s"},
		{"{clients: {count: 5}}", "workload.clients.think_time: 0, with no network latency and no cap"},
		{"{clients: {count: 5, think_time: 1s}, arrival: {kind: poisson, rate: 10}}", "workload.arrival: a closed loop (clients) has no arrivals"},
		{"{clients: {count: 5, think_time: 1s}, senders: 4}", "workload.senders: each client is a sender: leave senders out, or make it clients.count (5)"},
		{"{clients: {count: 5, think_time: 1s}, workers: 2}", "workload.workers: a closed-loop client has one request at a time"},
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nduration: 1m\nworkload: "+tc.workload+"\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 1}\n"))
		require.Error(t, err, tc.workload)
		assert.Contains(t, err.Error(), tc.want, tc.workload)
		assert.Contains(t, err.Error(), "bad.yaml:3:", tc.workload)
	}
	_, err = Parse("bad.yaml", []byte("name: bad\nduration: 1m\nworkload: {clients: {count: 5, think_time: 1s}}\ndlq: {replay: {at: 10s, rate: 1}}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 1}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dlq.replay: a closed loop cannot replay its dead letters")
}

func TestHedgePolicies(t *testing.T) {
	s, err := Parse("hedge.yaml", []byte(`name: hedge
workload: {requests: 100}
strategies:
  - {name: fixed, backoff: {kind: none}, max_attempts: 1, hedge: {delay: 50ms}}
  - {name: p95, backoff: {kind: none}, max_attempts: 1, hedge: {delay: p95, max: 2, cancel: true}}
`))
	require.NoError(t, err)
	assert.Equal(t, &strategies.Hedge{Delay: 50 * time.Millisecond, Max: 1}, s.Strategies[0].Policy().Hedge)
	assert.Equal(t, &strategies.Hedge{Percentile: 95, Max: 2, Cancel: true}, s.Strategies[1].Policy().Hedge)
	assert.Equal(t, "p95", s.Strategies[1].Hedge.Delay.String())

	for _, tc := range []struct{ setting, want string }{
		{"hedge: {max: 1}", "strategies[0].hedge.delay: missing: a hedge goes after a delay"},
		{"hedge: {delay: p100}", "strategies[0].hedge.delay: a percentile must be in (0,100), got p100"},
		{"hedge: {delay: p0}", "strategies[0].hedge.delay: missing"},
		{"hedge: {delay: soon}", `strategies[0].hedge.delay: want a duration such as 50ms or a percentile such as p95, got "soon"`},
		{"hedge: {delay: pxx}", `strategies[0].hedge.delay: want a duration such as 50ms or a percentile such as p95, got "pxx"`},
		{"hedge: {delay: 10ms, max: 5}", "strategies[0].hedge.max: must be in [1,4]"},
		{"hedge: {delay: -1s}", "strategies[0].hedge.delay: missing"},
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nworkload: {requests: 10}\nstrategies:\n  - {name: s, backoff: {kind: none}, max_attempts: 3, "+tc.setting+"}\n"))
		require.Error(t, err, tc.setting)
		assert.Contains(t, err.Error(), tc.want, tc.setting)
		assert.Contains(t, err.Error(), "bad.yaml:4:", tc.setting)
	}
	g, err := Parse("g.yaml", []byte(`services:
  - {name: api, service_time: 10ms, calls: [{service: db, retry: {hedge: {delay: 20ms, max: 2}}}]}
  - {name: db, service_time: 5ms}
workload: {requests: 100}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1, hedge: {delay: 10ms}}]
`))
	require.NoError(t, err, "the fleet's calls and a call edge may hedge")
	edge := EdgeStrategy(&g.Strategies[0], "api", &g.Services[0].Calls[0])
	assert.Equal(t, &strategies.Hedge{Delay: 20 * time.Millisecond, Max: 2}, edge.Policy().Hedge)
	_, err = Parse("occ.yaml", []byte("name: occ\nserver: {model: occ}\nnetwork: {latency: 1ms}\nworkload: {requests: 10}\nstrategies: [{name: s, backoff: {kind: none}, max_attempts: 1, hedge: {delay: 10ms}}]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "strategies[0].hedge: model occ has one write in flight a request")
}

func TestOneServiceIsTheServerAsAGraph(t *testing.T) {
	sc, err := Parse("one.yaml", []byte(`server:
  concurrency: 4
  service_time: 5ms
  outages: [{start: 1s, duration: 2s, mode: error}]
workload: {requests: 10}
strategies: [{name: s, backoff: {kind: none}, max_attempts: 1}]
`))
	require.NoError(t, err)
	before := *sc
	g := sc.OneService()
	require.True(t, g.Graph())
	require.Len(t, g.Services, 1)
	svc := g.Services[0]
	assert.Equal(t, "server", svc.Name)
	assert.Equal(t, sc.Server, svc.Server, "the server, outages and all")
	assert.Equal(t, 1, svc.Replicas)
	assert.Equal(t, RoundRobin, svc.Balancer)
	assert.Equal(t, FIFO, svc.QueueDiscipline)
	assert.Empty(t, svc.Calls)
	assert.Zero(t, g.TargetIndex())
	assert.Equal(t, sc.Server, *g.Target())
	assert.Equal(t, sc.Strategies, g.Strategies)
	assert.Equal(t, before, *sc, "sc is not changed")
	assert.False(t, sc.Graph())
}
