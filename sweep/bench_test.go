package sweep

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/sim"
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

// BenchmarkSweepAgainstItsRuns measures the AWS backoff study's sweep
// (aws-occ-10 at 10 to 190 clients: 19 points x 5 strategies x 100 runs
// of small runs) against the same runs made and summarised by sim.Run, as
// herdlab run makes them, point by point: the sweep's cost beyond its
// runs is writing, syncing and merging its records. It reports the
// ratio, sweep/runs.
func BenchmarkSweepAgainstItsRuns(b *testing.B) {
	sc, err := scenarios.Load("../scenarios/aws-occ-10.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var values []string
	for n := 10; n <= 190; n += 10 {
		values = append(values, strconv.Itoa(n))
	}
	vary := []scenarios.Vary{{Path: "workload.requests", Values: values}}
	var sweepTime, runsTime time.Duration
	for b.Loop() {
		start := time.Now()
		plan, err := NewPlan(context.Background(), sc, vary, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		if _, err := plan.Run(context.Background(), dir, Options{}); err != nil {
			b.Fatal(err)
		}
		rs, err := Collect(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Build(rs, plan.Metric); err != nil {
			b.Fatal(err)
		}
		sweepTime += time.Since(start)

		start = time.Now()
		for i := range plan.Spec.Points {
			point, err := plan.Point(i)
			if err != nil {
				b.Fatal(err)
			}
			res, err := sim.Run(context.Background(), point, sim.Options{})
			if err != nil {
				b.Fatal(err)
			}
			_ = sim.Summary(point, res.Runs)
		}
		runsTime += time.Since(start)
	}
	b.ReportMetric(sweepTime.Seconds()/float64(b.N), "sweep-s")
	b.ReportMetric(runsTime.Seconds()/float64(b.N), "runs-s")
	b.ReportMetric(sweepTime.Seconds()/runsTime.Seconds(), "sweep/runs")
}
