package sweep

import (
	"context"
	"testing"

	"github.com/zeontools/herdlab/scenarios"
)

// BenchmarkCollectAndBuild measures what herdlab merge does per run of a
// sweep: read its record, add its latency counts to its point's, and
// summarise its point.
func BenchmarkCollectAndBuild(b *testing.B) {
	sc, err := scenarios.Load("testdata/small.yaml")
	if err != nil {
		b.Fatal(err)
	}
	plan, err := NewPlan(context.Background(), sc, sc.Sweep.Vary, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := plan.Run(context.Background(), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rs, err := Collect(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Build(rs, plan.Metric); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*plan.Spec.Units()), "µs/run")
}
