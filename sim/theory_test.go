package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// scenario returns a valid scenario for tests: one strategy that never
// retries, a server with c slots and exponential service of the given
// mean, no outage. Tests change what they need.
func scenario(t testing.TB, c int, mean time.Duration) *scenarios.Scenario {
	t.Helper()
	sc := scenarios.Default()
	sc.Name = "test"
	sc.Server.Concurrency = scenarios.Limit(c)
	sc.Server.ServiceTime = scenarios.Dist{Kind: scenarios.Exponential, Mean: mean}
	st := scenarios.NewStrategy("once")
	st.Backoff.Kind = scenarios.BackoffNone
	st.MaxAttempts = 1
	st.Timeout = time.Hour
	sc.Strategies = []scenarios.Strategy{st}
	return &sc
}

func simulate(t testing.TB, sc *scenarios.Scenario) *Result {
	t.Helper()
	require.NoError(t, sc.Validate())
	res, err := Run(context.Background(), sc, Options{})
	require.NoError(t, err)
	return res
}

// erlangC returns the probability that an arrival waits in an M/M/c
// queue with offered load a = lambda/mu.
func erlangC(c int, a float64) float64 {
	term, sum := 1.0, 1.0 // a^k/k! summed for k < c
	for k := 1; k < c; k++ {
		term *= a / float64(k)
		sum += term
	}
	last := term * a / float64(c) * float64(c) / (float64(c) - a) // a^c/c! * c/(c-a)
	return last / (sum + last)
}

func TestMMcMeanResponseTimeMatchesErlangC(t *testing.T) {
	const (
		c      = 10
		mu     = 10.0 // per second: 100 ms service
		lambda = 80.0 // utilisation 0.8
	)
	sc := scenario(t, c, 100*time.Millisecond)
	sc.Duration = 4000 * time.Second
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: lambda}
	res := simulate(t, sc)

	a := lambda / mu
	want := erlangC(c, a)/(c*mu-lambda) + 1/mu
	got := res.Summary.Strategies[0].LatencyS.Mean
	t.Logf("M/M/%d at rho %.2f: mean response %.5fs, Erlang C %.5fs, %d requests", c, lambda/(c*mu), got, want, int(res.Summary.Strategies[0].Delivered))
	assert.InEpsilon(t, want, got, 0.02)
	assert.Greater(t, res.Summary.Strategies[0].Delivered, 300_000.0, "enough samples")
}

// blocking returns the probability that an arrival finds an M/M/c/K
// system full (K = c + waiting room).
func blocking(c, k int, a float64) float64 {
	p := make([]float64, k+1) // unnormalised state probabilities
	p[0] = 1
	for n := 1; n <= k; n++ {
		p[n] = p[n-1] * a / float64(min(n, c))
	}
	var sum float64
	for _, x := range p {
		sum += x
	}
	return p[k] / sum
}

func TestMMcKBlockingMatchesClosedForm(t *testing.T) {
	const (
		c      = 5
		room   = 5
		mu     = 10.0
		lambda = 50.0 // offered load 5 on 5 slots: heavy blocking
	)
	sc := scenario(t, c, 100*time.Millisecond)
	sc.Server.Queue = room
	sc.Duration = 4000 * time.Second
	sc.Workload.Arrival = scenarios.Arrival{Kind: scenarios.Poisson, Rate: lambda}
	res := simulate(t, sc)
	s := res.Summary.Strategies[0]
	want := blocking(c, c+room, lambda/mu)
	got := s.Rejected / s.Attempts
	t.Logf("M/M/%d/%d: blocking %.5f, closed form %.5f", c, c+room, got, want)
	assert.InEpsilon(t, want, got, 0.02)
}

func TestFixedDelayPreservesTheSpike(t *testing.T) {
	// The article: 800 dispatchers fail at 12:00:00 and retry every 5 s
	// against a server that stays down.
	sc := scenario(t, 100, 100*time.Millisecond)
	sc.Duration = 60 * time.Second
	sc.Workload = scenarios.Workload{Requests: 800, Arrival: scenarios.Arrival{Kind: scenarios.Burst}}
	sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.ErrorMode}}
	sc.Strategies[0].Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: 5 * time.Second}
	sc.Strategies[0].MaxAttempts = 0
	res := simulate(t, sc)
	for i, b := range res.Runs[0].Series {
		want := int64(0)
		if i%5 == 0 {
			want = 800
		}
		require.Equal(t, want, b.Attempts, "bucket %ds", i)
	}
}

// attemptTimes returns, on a grid of step, the expected number of
// attempts per request in each cell for a request that starts at 0 and
// whose n-th retry waits U(lo(n), hi(n)), with at most attempts attempts.
func attemptTimes(step time.Duration, cells, attempts int, lo, hi func(k int) time.Duration) []float64 {
	dens := make([]float64, cells) // distribution of the current attempt's time
	dens[0] = 1
	total := make([]float64, cells)
	for k := 0; ; k++ {
		for i, p := range dens {
			total[i] += p
		}
		if k+1 == attempts {
			return total
		}
		// Convolve with U(lo, hi): a moving average over [lo, hi), on the
		// grid, with prefix sums.
		a, b := int(lo(k)/step), int(hi(k)/step)
		if b == a {
			b = a + 1
		}
		prefix := make([]float64, cells+1)
		for i, p := range dens {
			prefix[i+1] = prefix[i] + p
		}
		next := make([]float64, cells)
		for i := range next {
			from, to := max(i-b+1, 0), i-a+1
			if to <= 0 {
				continue
			}
			next[i] = (prefix[min(to, cells)] - prefix[from]) / float64(b-a)
		}
		dens = next
	}
}

func TestJitterMatchesConvolvedAttemptTimes(t *testing.T) {
	skipUnderRace(t)
	const (
		requests = 200_000
		attempts = 6
	)
	base, cap := time.Second, 60*time.Second
	expo := func(k int) time.Duration { return min(cap, base<<k) }
	tests := []struct {
		kind   string
		lo, hi func(k int) time.Duration
	}{
		{scenarios.BackoffFullJitter, func(int) time.Duration { return 0 }, expo},
		{scenarios.BackoffEqualJitter, func(k int) time.Duration { return expo(k) / 2 }, expo},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			sc := scenario(t, 100, 100*time.Millisecond)
			sc.Duration = 40 * time.Second
			sc.Workload = scenarios.Workload{Requests: requests, Arrival: scenarios.Arrival{Kind: scenarios.Burst}}
			sc.Server.Outages = []scenarios.Outage{{Start: 0, Duration: time.Hour, Mode: scenarios.Refuse}}
			sc.Strategies[0].Backoff = scenarios.Backoff{Kind: tt.kind, Base: base, Cap: cap, Multiplier: 2}
			sc.Strategies[0].MaxAttempts = attempts
			res := simulate(t, sc)

			const step = time.Millisecond
			cells := int(sc.Duration / step)
			want := attemptTimes(step, cells, attempts, tt.lo, tt.hi)
			perBucket := int(sc.Bucket / step)
			var tv float64
			series := res.Runs[0].Series
			for i, b := range series {
				var expected float64
				for _, p := range want[i*perBucket : (i+1)*perBucket] {
					expected += p
				}
				tv += math.Abs(float64(b.Attempts)/(requests*attempts) - expected/attempts)
			}
			tv /= 2
			t.Logf("%s: total variation distance %.4f", tt.kind, tv)
			assert.Less(t, tv, 0.02)
			assert.Equal(t, float64(requests*attempts), res.Summary.Strategies[0].Attempts)
		})
	}
}

func TestAmplificationAgainstFlakyDependency(t *testing.T) {
	for _, tt := range []struct {
		p       float64
		retries int
	}{{0.1, 3}, {0.5, 3}, {0.75, 5}} {
		sc := scenario(t, 0, 10*time.Millisecond)
		sc.Server.Concurrency = scenarios.Unlimited
		sc.Server.FailureProbability = tt.p
		sc.Workload = scenarios.Workload{Requests: 100_000, Arrival: scenarios.Arrival{Kind: scenarios.Uniform, Until: 10 * time.Second}}
		sc.Duration = time.Minute
		sc.Strategies[0].Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: 100 * time.Millisecond}
		sc.Strategies[0].MaxAttempts = tt.retries + 1
		res := simulate(t, sc)
		want := 0.0
		for k := 0; k <= tt.retries; k++ {
			want += math.Pow(tt.p, float64(k))
		}
		s := res.Summary.Strategies[0]
		assert.InEpsilon(t, want, s.Amplification, 0.01, "p=%v N=%d", tt.p, tt.retries)
		assert.InEpsilon(t, 1-math.Pow(tt.p, float64(tt.retries+1)), s.DeliveredRatio, 0.01, "p=%v N=%d", tt.p, tt.retries)
	}
}

func TestBrookerPoliciesBoundRetries(t *testing.T) {
	// 100 senders, 10,000 calls over 10 s to a dependency failing with
	// probability p, retried without a per-call limit.
	//
	// Brooker's bucket (5 tokens, 0.1 a first try, a retry above 1 token
	// costs 1): a sender's retries are fewer than its first tries x 0.1
	// plus the 5 tokens it starts with (the last retry may take it from
	// just above 1 to just above 0), so the amplification is at most
	// 1 + 0.1 + 500/10,000 = 1.15, and near it when p is high; when p is
	// low every failure is retried: 1/(1-p).
	//
	// Brooker's cumulative breaker (0.1): with p = 0.05 failures over
	// first tries settle near p/(1-p) = 0.053, below 0.1, and failures
	// are retried: nearly 1/(1-p); with p = 0.5 the ratio is over 0.1
	// from the start and almost no retry goes.
	run := func(p float64, policy func(*scenarios.Strategy)) results.StrategySummary {
		sc := scenario(t, 0, 10*time.Millisecond)
		sc.Server.Concurrency = scenarios.Unlimited
		sc.Server.FailureProbability = p
		sc.Workload = scenarios.Workload{Requests: 10_000, Senders: 100, Arrival: scenarios.Arrival{Kind: scenarios.Uniform, Until: 10 * time.Second}}
		sc.Duration = time.Minute
		st := &sc.Strategies[0]
		st.Backoff = scenarios.Backoff{Kind: scenarios.BackoffFixed, Delay: 10 * time.Millisecond}
		st.MaxAttempts = 0
		policy(st)
		return simulate(t, sc).Summary.Strategies[0]
	}
	bucket := func(st *scenarios.Strategy) {
		st.Budget = &scenarios.Budget{Kind: "bucket", Capacity: 5, Deposit: 0.1, Cost: 1, Threshold: 1}
	}
	breaker := func(st *scenarios.Strategy) {
		st.Breaker = &scenarios.Breaker{Kind: scenarios.BreakerCumulative, FailureRatio: 0.1}
	}
	high := run(0.75, bucket)
	assert.LessOrEqual(t, high.Amplification, 1.15, "bucket, p=0.75: bounded by the deposits and the starting tokens")
	assert.Greater(t, high.Amplification, 1.1, "bucket, p=0.75: it spends what it is given")
	low := run(0.01, bucket)
	assert.InEpsilon(t, 1/(1-0.01), low.Amplification, 0.002, "bucket, p=0.01: every failure retried")
	assert.Equal(t, 10_000.0, low.Delivered)

	ok := run(0.05, breaker)
	assert.InDelta(t, 1/(1-0.05), ok.Amplification, 0.02, "breaker, p=0.05: failures retried, but for a sender's first ones")
	assert.Less(t, ok.Amplification, 1/(1-0.05))
	// A failure among a sender's first 10 first tries puts its ratio
	// over 0.1 for a while (1 of fewer than 10): those are not retried,
	// about 100 senders x 10 x 0.05 = 50 to 150 calls.
	assert.InDelta(t, 9_900, ok.Delivered, 100)
	bad := run(0.5, breaker)
	assert.Less(t, bad.Amplification, 1.01, "breaker, p=0.5: the ratio is over 0.1 almost at once")
	assert.InEpsilon(t, 0.5, bad.DeliveredRatio, 0.05)
}

func TestPoissonStreamPerSender(t *testing.T) {
	// 100 senders, 1,000 requests/s for 10 s. Dealt in turn, every sender
	// makes 100 requests, give or take one; with a Poisson stream each,
	// a sender's count is Poisson(100): the counts' variance over their
	// mean (the index of dispersion) is about 1 (chi-square with 99
	// degrees of freedom over 99: 0.6 to 1.5 with room to spare).
	dispersion := func(perSender bool) (float64, int) {
		sc := scenario(t, 0, 10*time.Millisecond)
		sc.Server.Concurrency = scenarios.Unlimited
		sc.Workload = scenarios.Workload{Senders: 100, Arrival: scenarios.Arrival{Kind: scenarios.Poisson, Rate: 1000, Until: 10 * time.Second, PerSender: perSender}}
		sc.Duration = 20 * time.Second
		sc.Strategies[0].Budget = &scenarios.Budget{Kind: "tokens", MaxTokens: 10, TokenRatio: 0.1} // senders matter
		require.NoError(t, sc.Validate())
		g := newRun(sc, 0, 0, RunSeed(sc.Seed, 0))
		_, err := g.simulate(context.Background())
		require.NoError(t, err)
		counts := make([]float64, 100)
		for _, c := range g.calls {
			counts[c.sender]++
		}
		mean, variance := stat.MeanVariance(counts, nil)
		return variance / mean, len(g.calls)
	}
	dealt, n := dispersion(false)
	assert.Less(t, dealt, 0.05, "dealt in turn: equal counts")
	assert.InDelta(t, 10_000, n, 400)
	own, n := dispersion(true)
	assert.InDelta(t, 1, own, 0.45, "a Poisson stream each")
	assert.InDelta(t, 10_000, n, 400, "the same total rate: 1,000/s for 10 s, within 4 standard deviations")
}
