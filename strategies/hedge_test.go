package strategies

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPSquareFollowsTheQuantile(t *testing.T) {
	// Lognormal latencies (median 10 ms, sigma 1): the P-square estimate
	// of p95, p50 and p99 after 10,000 is within 3% of the sample's own.
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 10_000)
	for i := range xs {
		xs[i] = 10e6 * math.Exp(r.NormFloat64())
	}
	for _, p := range []float64{0.5, 0.95, 0.99} {
		e := psquare{p: p}
		for _, x := range xs {
			e.add(x)
		}
		sorted := append([]float64(nil), xs...)
		sort.Float64s(sorted)
		want := sorted[int(p*float64(len(sorted)))]
		assert.InEpsilon(t, want, e.quantile(), 0.03, "p%v", p*100)
	}
}

func TestHedgeDelay(t *testing.T) {
	var s Sender
	fixed := &Policy{Hedge: &Hedge{Delay: 50 * time.Millisecond}}
	d, ok := fixed.HedgeDelay(&s)
	assert.True(t, ok)
	assert.Equal(t, 50*time.Millisecond, d)
	assert.Equal(t, 2, fixed.Hedge.Copies(), "max 0 is 1 hedge")
	assert.Equal(t, 1+MaxHedges, (&Hedge{Max: 9}).Copies(), "at most gRPC's 5 attempts")

	p := &Policy{Hedge: &Hedge{Percentile: 95}}
	assert.True(t, p.PerSender(), "a percentile is per sender")
	r := rand.New(rand.NewPCG(1, 1))
	for i := range MinObserved {
		_, ok := p.HedgeDelay(&s)
		require.False(t, ok, "no hedge before %d latencies (%d seen)", MinObserved, i)
		p.Observe(&s, time.Duration(i+1)*time.Millisecond)
	}
	d, ok = p.HedgeDelay(&s)
	require.True(t, ok)
	ms := d.Seconds() * 1000
	assert.True(t, ms >= 15 && ms <= 20, "near the p95 of 1..20 ms (P-square is rough on 20): %v", d)
	_ = r
}

func TestAllowHedge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var s Sender
	var q Request
	assert.True(t, (&Policy{}).AllowHedge(&s, &q, 0), "no budget: always")

	// gRPC's tokens: hedges go while more than half the tokens are left,
	// and cost nothing themselves.
	p := &Policy{Budget: &Budget{Kind: BudgetTokens, MaxTokens: 4}}
	assert.True(t, p.AllowHedge(&s, &q, 0))
	for range 2 {
		var f Request
		permit, _, _ := p.Begin(&s, &f, 0, r)
		p.Done(&s, &f, permit, 0, &Result{Outcome: ServerError}, r)
	}
	assert.False(t, p.AllowHedge(&s, &q, 0), "2 of 4 tokens left: no more than half")

	// A bucket: each hedge takes a retry's token.
	b := &Policy{Budget: &Budget{Kind: BudgetBucket, Capacity: 3}}
	var sb Sender
	assert.True(t, b.AllowHedge(&sb, &q, 0))
	assert.True(t, b.AllowHedge(&sb, &q, 0))
	assert.False(t, b.AllowHedge(&sb, &q, 0), "1 token left, and a retry needs more than 1")
	assert.InDelta(t, 1, b.Budget.Available(&sb.Budget), 1e-9)
}

func TestHedgeSteps(t *testing.T) {
	// A percentile hedge under a gRPC token budget, step by step: no
	// hedge until MinObserved latencies, then at their 95th percentile;
	// a hedge only while the budget would allow a retry.
	p := &Policy{Hedge: &Hedge{Percentile: 95}, Budget: &Budget{Kind: BudgetTokens, MaxTokens: 4}}
	var s Sender
	r := rand.New(rand.NewPCG(1, 1))
	type row struct {
		at    time.Duration
		event string // "observe", "fail" (an attempt's failure), "delay", "allow"
		x     time.Duration
		want  any // the delay (or false for none), or whether a hedge is allowed
	}
	ms := time.Millisecond
	var rows []row
	rows = append(rows, row{0, "delay", 0, false})
	for range MinObserved - 1 {
		rows = append(rows, row{0, "observe", 10 * ms, nil})
	}
	rows = append(rows,
		row{0, "delay", 0, false},           // 19 seen: not yet
		row{0, "observe", 10 * ms, nil},     // the 20th
		row{0, "delay", 0, 10 * ms},         // all alike: p95 is 10 ms
		row{0, "allow", 0, true},            // 4 tokens of 4
		row{0, "fail", 0, nil},              // 3 left
		row{0, "allow", 0, true},            // 3 > 2
		row{0, "fail", 0, nil},              // 2 left
		row{0, "allow", 0, false},           // 2 is not more than half
		row{0, "observe", time.Second, nil}, // one slow answer barely moves a p95 of 21
		row{0, "delay", 0, 10 * ms},
	)
	for i, w := range rows {
		switch w.event {
		case "observe":
			p.Observe(&s, w.x)
		case "fail":
			var q Request
			permit, _, ok := p.Begin(&s, &q, w.at, r)
			require.True(t, ok)
			p.Done(&s, &q, permit, w.at, &Result{Outcome: ServerError}, r)
		case "delay":
			d, ok := p.HedgeDelay(&s)
			if w.want == false {
				assert.False(t, ok, "row %d: no hedge yet", i)
			} else {
				require.True(t, ok, "row %d", i)
				assert.InDelta(t, float64(w.want.(time.Duration)), float64(d), float64(ms), "row %d: delay", i)
			}
		case "allow":
			var q Request
			assert.Equal(t, w.want, p.AllowHedge(&s, &q, w.at), "row %d: allowed", i)
		}
	}
}
