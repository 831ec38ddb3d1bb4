package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestPlanBuildsWhatVaries: planning a sweep of 1,000 points of a
// scenario with 2,000 schedule steps decodes the file once and what
// varies at each point (it decoded every point whole: 43 s for 10,000
// such points, 5 s now), and its digest and worst point are those of the
// points built whole.
func TestPlanBuildsWhatVaries(t *testing.T) {
	skipUnderRace(t)
	sc, err := scenarios.Parse("big.yaml", bigSweep(10))
	require.NoError(t, err)
	var p *Plan
	allocs := testing.AllocsPerRun(1, func() {
		p, err = NewPlan(context.Background(), sc, sc.Sweep.Vary, "", nil)
		require.NoError(t, err)
	})
	t.Logf("%.0f allocations for 1,000 points", allocs)
	assert.Less(t, allocs, 1e6, "well under 1,000 a point (decoding 2,000 steps makes many thousands)")
	assert.Equal(t, 1000, p.Spec.Points)

	// The same digest as points built whole, one by one.
	whole := &Plan{Spec: Spec{Scenario: sc.Name, Seed: sc.Seed, Runs: sc.Runs}, base: sc}
	digest := sha256.New()
	require.NoError(t, sc.EachPoint(context.Background(), sc.Sweep.Vary, func(pt scenarios.Point) error {
		s, err := whole.complete(pt)
		if err != nil {
			return err
		}
		data, err := json.Marshal(s)
		digest.Write(data)
		return err
	}))
	assert.Equal(t, hex.EncodeToString(digest.Sum(nil)), p.Spec.Digest)
	require.NotNil(t, p.worst)
	line, _ := p.worst.Position("workload.arrival.schedule[1999].rate")
	assert.Equal(t, 2008, line, "the worst point is built whole, with its positions")
}

// bigSweep is a scenario with 2,000 schedule steps and a sweep of
// concurrencies x 100 backoff bases.
func bigSweep(concurrencies int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nduration: 40m\nserver: {concurrency: 10}\nworkload:\n  arrival:\n    kind: poisson\n    rate: 5\n    schedule:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "      - {from: %ds, until: %ds, rate: %d}\n", i, i+1, 10+i%7)
	}
	fmt.Fprintf(&b, `strategies:
  - {name: a, backoff: {kind: full-jitter, base: 1s, cap: 200s}, max_attempts: 3}
sweep:
  vary:
    - {path: server.concurrency, values: "1..%d:%d"}
    - {path: "strategies[a].backoff.base", values: "1s..100s:100"}
`, concurrencies, concurrencies)
	return []byte(b.String())
}

// BenchmarkBigSweep checks (validate: load, then what herdlab sweep
// refuses) and plans a sweep of 10,000 points of a scenario with 2,000
// schedule steps; before issue 31 each point was decoded whole: 23 s to
// validate, 43 s to plan.
func BenchmarkBigSweep(b *testing.B) {
	src := bigSweep(100)
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sc, err := scenarios.Parse("big.yaml", src)
			if err != nil {
				b.Fatal(err)
			}
			if err := Check(context.Background(), sc, sc.Sweep.Vary, "", 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan", func(b *testing.B) {
		sc, err := scenarios.Parse("big.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, "", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
