package sweep

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"syscall"
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
// of small runs) in CPU time (the process's user and system time: the
// sweep's runs go on both cores), against, in turn, the same runs made
// and summarised by sim.Run, as herdlab run makes them, point by point,
// and the same runs alone (sim.RunOne, each run's results dropped): what
// the engine takes, which the sweep cannot go below. The sweep's cost
// beyond its runs is recording, merging and writing its outputs, as
// herdlab sweep does (without charts). It reports the CPU seconds of
// each, sweep/runs and sweep/engine, and the runs' events and the
// engine's CPU nanoseconds per event.
func BenchmarkSweepAgainstItsRuns(b *testing.B) {
	sc, vary := awsSweep(b)
	var sweepCPU, runsCPU, engineCPU time.Duration
	var events int64
	for b.Loop() {
		start := cpuTime()
		plan, err := NewPlan(context.Background(), sc, vary, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		st, err := plan.Run(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rs := st.Records // as herdlab sweep gathers them: kept, else read back
		if rs == nil {
			if rs, err = Collect(dir); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := Merge(dir, rs, plan.Metric, nil); err != nil {
			b.Fatal(err)
		}
		sweepCPU += cpuTime() - start

		start = cpuTime()
		for _, point := range points(b, plan) {
			res, err := sim.Run(context.Background(), point, sim.Options{})
			if err != nil {
				b.Fatal(err)
			}
			_ = sim.Summary(point, res.Runs)
		}
		runsCPU += cpuTime() - start

		start = cpuTime()
		next := make(chan *scenarios.Scenario)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				var n int64
				for point := range next {
					n += runUnits(b, point)
				}
				mu.Lock()
				events += n
				mu.Unlock()
			})
		}
		for _, point := range points(b, plan) {
			next <- point
		}
		close(next)
		wg.Wait()
		engineCPU += cpuTime() - start
	}
	n := float64(b.N)
	b.ReportMetric(sweepCPU.Seconds()/n, "sweep-cpu-s")
	b.ReportMetric(runsCPU.Seconds()/n, "runs-cpu-s")
	b.ReportMetric(engineCPU.Seconds()/n, "engine-cpu-s")
	b.ReportMetric(sweepCPU.Seconds()/runsCPU.Seconds(), "sweep/runs")
	b.ReportMetric(sweepCPU.Seconds()/engineCPU.Seconds(), "sweep/engine")
	b.ReportMetric(float64(engineCPU.Nanoseconds())/float64(events), "engine-ns/event")
	b.ReportMetric(float64(events)/n, "events")
}

// awsSweep returns aws-occ-10 and the AWS study's sweep of it: 10 to 190
// clients.
func awsSweep(b *testing.B) (*scenarios.Scenario, []scenarios.Vary) {
	sc, err := scenarios.Load("../scenarios/aws-occ-10.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var values []string
	for n := 10; n <= 190; n += 10 {
		values = append(values, strconv.Itoa(n))
	}
	return sc, []scenarios.Vary{{Path: "workload.requests", Values: values}}
}

// BenchmarkSweepOneWorker measures the AWS study's sweep (as
// BenchmarkSweepAgainstItsRuns) run by one worker (--parallel 1), in CPU
// time, against, in turn, the same runs made one after the other in a
// plain loop (sim.RunOne). What a worker does between its units (taking
// the next) shows in sweep/engine: handing each unit over through a
// channel, which woke a parked worker for each, was a tenth of the sweep.
func BenchmarkSweepOneWorker(b *testing.B) {
	sc, vary := awsSweep(b)
	var sweepCPU, engineCPU time.Duration
	for b.Loop() {
		start := cpuTime()
		plan, err := NewPlan(context.Background(), sc, vary, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plan.Run(context.Background(), b.TempDir(), Options{Parallel: 1}); err != nil {
			b.Fatal(err)
		}
		sweepCPU += cpuTime() - start

		start = cpuTime()
		for _, point := range points(b, plan) {
			runUnits(b, point)
		}
		engineCPU += cpuTime() - start
	}
	n := float64(b.N)
	b.ReportMetric(sweepCPU.Seconds()/n, "sweep-cpu-s")
	b.ReportMetric(engineCPU.Seconds()/n, "engine-cpu-s")
	b.ReportMetric(sweepCPU.Seconds()/engineCPU.Seconds(), "sweep/engine")
}

// points returns the scenario of each of plan's points.
func points(b *testing.B, plan *Plan) []*scenarios.Scenario {
	var all []*scenarios.Scenario
	for i := range plan.Spec.Points {
		point, err := plan.Point(i)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, point)
	}
	return all
}

// runUnits runs every unit of point alone (sim.RunOne, its results
// dropped) and returns their events. It may run in a goroutine of its
// own.
func runUnits(b *testing.B, point *scenarios.Scenario) int64 {
	var n int64
	for s := range point.Strategies {
		for r := range point.Runs {
			res, err := sim.RunOne(context.Background(), point, s, r, nil, 0)
			if err != nil {
				b.Error(err)
				return n
			}
			n += res.Events
		}
	}
	return n
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
