package plots

import (
	"fmt"
	"time"

	"github.com/zeontools/herdlab/results"
)

// fixture returns the results of a small scenario built by hand, without
// the simulator: 500 requests, 3 strategies, 60 one-second buckets, a
// server of capacity 100/s and a queue of 500 down (refusing) from 0 to
// 10 s, runs replications that differ a little.
//
//   - fixed-10s: the whole backlog comes back every 10 s: a herd at 0,
//     10, ..., 50 s, refused during the outage, then 100 served and the
//     rest rejected (503), the queue filling to 490 and empty again
//     but for 5 at the bucket's end; it recovers once the herds are gone.
//   - full-jitter: spread out, some 429s (throttled) at first, a few
//     queued then; with several runs, it recovers in all but one.
//   - no-backoff: 300 attempts every second, nearly all rejected or
//     timed out, the queue full and growing at the buckets' ends, 20
//     attempts unresolved at the end: it never recovers.
func fixture(runs int) (*results.Summary, []*results.Run) {
	const (
		n        = 60
		requests = 500
	)
	capacity := 100.0
	queue := int64(500)
	setup := results.Setup{Bucket: time.Second, Capacity: capacity, Concurrency: 10, LastOutageEnd: 10 * time.Second}
	s := &results.Summary{
		Scenario:     "fixture",
		Description:  "a hand-made herd",
		Seed:         1,
		Runs:         runs,
		BucketS:      1,
		HorizonS:     n,
		CapacityPerS: &capacity,
		QueueLimit:   &queue,
		Outages:      []results.Window{{StartS: 0, EndS: 10, Mode: "refuse"}},
	}
	names := []string{"fixed-10s", "full-jitter", "no-backoff"}
	var all []*results.Run
	for k, name := range names {
		var rs []*results.Run
		for r := range runs {
			run := results.NewRun(name, r, n)
			run.Requests = requests
			run.QueueTracked = true
			left := int64(requests)
			for i := range run.Series {
				b := &run.Series[i]
				switch k {
				case 0: // fixed-10s
					if i%10 == 0 && left > 0 {
						b.Attempts = left
						if i < 10 {
							b.NotOK, b.Failed = left, left
						} else {
							b.OK = min(100, left)
							b.Rejected = left - b.OK
							b.NotOK = b.Rejected
							b.Queue = 5
							b.QueueMax = min(left-10, queue)
							b.QueueMean = float64(b.QueueMax) / 4
							left -= b.OK
						}
					}
				case 1: // full-jitter
					a := int64(40 - i + r)
					if i >= 10 {
						a = int64(max(30-(i-10), 0) + r)
					}
					b.Attempts = a
					if i < 10 {
						b.NotOK, b.Failed = a, a
					} else {
						if i < 15 {
							b.Throttled = 5
							b.QueueMax, b.QueueMean = int64(8+r), 1.5
						}
						b.NotOK = b.Throttled
						b.OK = a - b.NotOK
					}
				case 2: // no-backoff
					b.Attempts = 300
					switch {
					case i < 10:
						b.NotOK, b.Failed = 300, 300
					case i == n-1: // 20 unresolved
						b.OK, b.Rejected = 5, 195
						b.NotOK, b.NotOKTimeout, b.TimedOut = 275, 75, 75
					default:
						b.OK, b.Rejected = 5, 195
						b.NotOK, b.NotOKTimeout, b.TimedOut = 295, 100, 100
					}
					if i >= 10 {
						b.Queue = int64(10 * (i - 9))
						b.QueueMax = queue
						b.QueueMean = float64(b.Queue+queue) / 2
					}
				}
				b.Delivered = b.OK
				run.Attempts += b.Attempts
				run.Delivered += b.OK
				for range b.OK {
					// Latency: the bucket's time plus up to a second, by request.
					run.RecordLatency(time.Duration(i)*time.Second + time.Duration(run.Delivered%97)*10*time.Millisecond + time.Duration(r)*time.Millisecond)
				}
			}
			run.DeadLettered = run.Requests - min(run.Delivered, run.Requests)
			rs = append(rs, run)
		}
		st := results.StrategySummary{Name: name, Figures: rs[0].Figures(setup)}
		if st.RecoveryTimeS != nil {
			st.RecoveredRuns = runs
		}
		if runs > 1 {
			st.CI95 = &results.Figures{Amplification: 0.15 * float64(k+1)}
			if st.RecoveryTimeS != nil {
				st.CI95.RecoveryTimeS = ptr(1.5 * float64(k+1))
			}
			if k == 1 {
				st.RecoveredRuns = runs - 1
			}
		}
		st.Recovery = results.RecoveryOf(runs, st.RecoveredRuns, st.NothingLeftRuns)
		s.Strategies = append(s.Strategies, st)
		all = append(all, rs...)
	}
	return s, all
}

// bigFixture returns results of strategies strategies over buckets
// one-second buckets, one run each, with a herd every 60 s in the first
// and noise in the others: the size of a 15-minute scenario.
func bigFixture(strategies, buckets int) (*results.Summary, []*results.Run) {
	capacity := 2000.0
	s := &results.Summary{
		Scenario:     "big",
		Runs:         1,
		BucketS:      1,
		HorizonS:     float64(buckets),
		CapacityPerS: &capacity,
		Outages:      []results.Window{{StartS: 0, EndS: 30, Mode: "refuse"}},
	}
	var runs []*results.Run
	for k := range strategies {
		name := fmt.Sprintf("strategy-%d", k)
		run := results.NewRun(name, 0, buckets)
		run.Requests = 50000
		for i := range run.Series {
			b := &run.Series[i]
			switch {
			case k == 0 && i%60 == 0:
				b.Attempts = 50000
			default:
				b.Attempts = int64((i*7919+k*104729)%2500 + 100)
			}
			if i < 30 {
				b.NotOK, b.Failed = b.Attempts, b.Attempts
			} else {
				b.OK = min(b.Attempts, 2000)
				b.Rejected = b.Attempts - b.OK
				b.NotOK = b.Rejected
				b.Queue = int64((i * 31) % 2000)
			}
			run.Attempts += b.Attempts
			for j := range min(b.OK, 50) {
				run.RecordLatency(time.Duration(i)*time.Second + time.Duration(j)*time.Millisecond)
			}
		}
		runs = append(runs, run)
		st := results.StrategySummary{Name: name, Figures: run.Figures(results.Setup{
			Bucket: time.Second, Capacity: capacity, Concurrency: 200, LastOutageEnd: 30 * time.Second,
		})}
		s.Strategies = append(s.Strategies, st)
	}
	return s, runs
}

func ptr(x float64) *float64 { return &x }
