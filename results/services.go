package results

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// ServiceRun is what one service of a service graph saw in one run: the
// attempts that reached it from every caller, what became of them, and
// its time series. A service with replicas holds one ServiceRun per
// replica as well.
type ServiceRun struct {
	Name    string
	Replica int // the replica's number, -1 for the whole service

	Attempts        int64         // attempts that reached the service
	OK              int64         // of those, the ones whose caller saw a success
	Rejected        int64         // answered 503: the queue was full, or shed
	Throttled       int64         // answered 429 by the rate limit
	Processed       int64         // local work done to completion
	Duplicates      int64         // local work for a call beyond its first
	Wasted          int64         // local work whose caller had given up
	LateWork        int64         // local work done after the fleet's deadline above it
	DeadlineDropped int64         // work dropped (queued or cut short) because its propagated deadline passed
	Lost            int64         // answers lost on the way back
	Shed            int64         // taken from the queue and answered 503: waited past the shed bound, or dropped by CoDel
	Started         int64         // jobs that got a slot
	QueueWait       time.Duration // their waits in the queue, summed

	Series []Bucket // Attempts, OK, NotOK, Rejected, Throttled, Queue, InFlight, QueueMax, QueueMean
	// Cache is, with a cache in front of the service, its lookups and
	// hits per bucket; CacheLookups and CacheHits their sums.
	Cache        []CacheBucket
	CacheLookups int64
	CacheHits    int64
	Replicas     []*ServiceRun

	// Capacity is the service's (or replica's) capacity in requests per
	// second; Concurrency its slots (0 unlimited): the recovery rule's
	// slack.
	Capacity    float64
	Concurrency int
}

// EdgeRun is what went along one call edge of a graph in one run: the
// attempts its caller sent (the fleet's edge has Caller "").
type EdgeRun struct {
	Caller, Callee string
	Attempts       int64
}

// EdgeFigures are the figures of one call edge: its attempts, and per
// fleet request (amplification); means over runs.
type EdgeFigures struct {
	From          string  `json:"from"` // "" for the fleet
	To            string  `json:"to"`
	Attempts      float64 `json:"attempts"`
	Amplification float64 `json:"amplification"`
}

// MeanEdgeFigures returns the edges' figures, means over runs (each run
// with the same edges, in the same order).
func MeanEdgeFigures(runs []*Run) []EdgeFigures {
	if len(runs) == 0 || len(runs[0].Edges) == 0 {
		return nil
	}
	out := make([]EdgeFigures, len(runs[0].Edges))
	n := float64(len(runs))
	for i, e := range runs[0].Edges {
		out[i] = EdgeFigures{From: e.Caller, To: e.Callee}
	}
	for _, r := range runs {
		for i, e := range r.Edges {
			out[i].Attempts += float64(e.Attempts) / n
			if r.Requests > 0 {
				out[i].Amplification += float64(e.Attempts) / float64(r.Requests) / n
			}
		}
	}
	return out
}

// CacheBucket is a cache's lookups and hits in one bucket.
type CacheBucket struct {
	Lookups, Hits int64
}

// ServiceFigures are the figures of one service of a graph: of one run,
// or the means over runs. Amplification is the service's attempts per
// fleet request.
type ServiceFigures struct {
	Name            string   `json:"name"`
	Replica         *int     `json:"replica,omitempty"`
	Attempts        float64  `json:"attempts"`
	Delivered       float64  `json:"delivered"`
	Rejected        float64  `json:"rejected"`
	Throttled       float64  `json:"throttled"`
	PeakLoad        float64  `json:"peak_load"`
	PeakLoadRatio   *float64 `json:"peak_load_ratio"`
	PeakAtS         float64  `json:"peak_at_s"`
	PeakLoadOverall float64  `json:"peak_load_overall"`
	RecoveryTimeS   *float64 `json:"recovery_time_s"`
	RecoveredRuns   int      `json:"recovered_runs"`
	// AttemptsAfterOutage are the attempts that reached the service from
	// the end of the graph's last outage on. With none, its recovery is
	// vacuous (nothing came to be served, healthy or not): tables say
	// "no load" rather than a time.
	AttemptsAfterOutage float64 `json:"attempts_after_outage"`
	Processed           float64 `json:"processed"`
	Duplicates          float64 `json:"duplicates"`
	Wasted              float64 `json:"wasted_work"`
	LateWork            float64 `json:"late_work"`
	DeadlineDropped     float64 `json:"deadline_dropped"`
	Lost                float64 `json:"responses_lost"`
	Shed                float64 `json:"shed"`
	// QueueDelayS is the mean wait in the queue of the requests that got
	// a slot (0 for those that got one at once).
	QueueDelayS float64 `json:"queue_delay_s"`
	// CacheHitRatio is the hits over the lookups of the cache in front
	// of the service; nil without a cache (or a lookup).
	CacheHitRatio *float64         `json:"cache_hit_ratio,omitempty"`
	Amplification float64          `json:"amplification"`
	Replicas      []ServiceFigures `json:"replicas,omitempty"`
}

// Figures computes the figures of the service in one run with requests
// fleet requests; lastOutageEnd is the end of the graph's last outage.
func (s *ServiceRun) Figures(bucket, lastOutageEnd time.Duration, requests int64) ServiceFigures {
	return s.figures(bucket, lastOutageEnd, false, requests)
}

// FiguresUnder is Figures under the scenario's setup: without an outage
// in the graph (setup.NoOutage), no service has a recovery figure.
func (s *ServiceRun) FiguresUnder(setup Setup, requests int64) ServiceFigures {
	return s.figures(setup.Bucket, setup.LastOutageEnd, setup.NoOutage, requests)
}

func (s *ServiceRun) figures(bucket, lastOutageEnd time.Duration, noOutage bool, requests int64) ServiceFigures {
	f := ServiceFigures{
		Name:            s.Name,
		Attempts:        float64(s.Attempts),
		Delivered:       float64(s.OK),
		Rejected:        float64(s.Rejected),
		Throttled:       float64(s.Throttled),
		Processed:       float64(s.Processed),
		Duplicates:      float64(s.Duplicates),
		Wasted:          float64(s.Wasted),
		LateWork:        float64(s.LateWork),
		DeadlineDropped: float64(s.DeadlineDropped),
		Lost:            float64(s.Lost),
		Shed:            float64(s.Shed),
	}
	if s.Started > 0 {
		f.QueueDelayS = s.QueueWait.Seconds() / float64(s.Started)
	}
	if s.CacheLookups > 0 {
		f.CacheHitRatio = ptr(float64(s.CacheHits) / float64(s.CacheLookups))
	}
	if s.Replica >= 0 {
		r := s.Replica
		f.Replica = &r
	}
	if requests > 0 {
		f.Amplification = f.Attempts / float64(requests)
	}
	setup := Setup{Bucket: bucket, Capacity: s.Capacity, Concurrency: s.Concurrency, LastOutageEnd: lastOutageEnd, NoOutage: noOutage}
	after := afterOutage(setup)
	for i, b := range s.Series {
		n := float64(b.Attempts)
		f.PeakLoadOverall = max(f.PeakLoadOverall, n)
		if i >= after {
			f.AttemptsAfterOutage += n
			if n > f.PeakLoad {
				f.PeakLoad, f.PeakAtS = n, (time.Duration(i) * bucket).Seconds()
			}
		}
	}
	if !math.IsInf(s.Capacity, 1) && s.Capacity > 0 {
		f.PeakLoadRatio = ptr(f.PeakLoad / bucket.Seconds() / s.Capacity)
	}
	if t, ok := Recovery(s.Series, setup); ok && !noOutage {
		f.RecoveryTimeS = ptr(t.Seconds())
		f.RecoveredRuns = 1
	}
	for _, r := range s.Replicas {
		f.Replicas = append(f.Replicas, r.figures(bucket, lastOutageEnd, noOutage, requests))
	}
	return f
}

// MeanServiceFigures averages the figures of one service over runs: the
// counts' means, a recovery time's mean over the runs that recovered
// (nil when none did), RecoveredRuns summed.
func MeanServiceFigures(runs []ServiceFigures) ServiceFigures {
	if len(runs) == 1 {
		return runs[0]
	}
	n := float64(len(runs))
	m := ServiceFigures{Name: runs[0].Name, Replica: runs[0].Replica}
	var recovery, ratio, hit float64
	ratios, hits := 0, 0
	for _, f := range runs {
		m.Attempts += f.Attempts / n
		m.Delivered += f.Delivered / n
		m.Rejected += f.Rejected / n
		m.Throttled += f.Throttled / n
		m.PeakLoad += f.PeakLoad / n
		m.PeakAtS += f.PeakAtS / n
		m.PeakLoadOverall += f.PeakLoadOverall / n
		m.Processed += f.Processed / n
		m.Duplicates += f.Duplicates / n
		m.Wasted += f.Wasted / n
		m.LateWork += f.LateWork / n
		m.DeadlineDropped += f.DeadlineDropped / n
		m.Lost += f.Lost / n
		m.Shed += f.Shed / n
		m.QueueDelayS += f.QueueDelayS / n
		m.Amplification += f.Amplification / n
		m.RecoveredRuns += f.RecoveredRuns
		m.AttemptsAfterOutage += f.AttemptsAfterOutage / n
		if f.RecoveryTimeS != nil {
			recovery += *f.RecoveryTimeS
		}
		if f.PeakLoadRatio != nil {
			ratio += *f.PeakLoadRatio
			ratios++
		}
		if f.CacheHitRatio != nil {
			hit += *f.CacheHitRatio
			hits++
		}
	}
	if m.RecoveredRuns > 0 {
		m.RecoveryTimeS = ptr(recovery / float64(m.RecoveredRuns))
	}
	if ratios == len(runs) {
		m.PeakLoadRatio = ptr(ratio / n)
	}
	if hits > 0 {
		m.CacheHitRatio = ptr(hit / float64(hits))
	}
	for k := range runs[0].Replicas {
		per := make([]ServiceFigures, len(runs))
		for i := range runs {
			per[i] = runs[i].Replicas[k]
		}
		m.Replicas = append(m.Replicas, MeanServiceFigures(per))
	}
	return m
}

// ClientRatesHeader is the header of client_rates.csv.
const ClientRatesHeader = "strategy,run,t,limited_senders,rate_per_s\n"

// WriteClientRates writes client_rates.csv: per strategy, run and bucket,
// the senders whose adaptive rate limiter is on and the sum of their
// fill rates (see ClientRate). Runs without one write nothing but the
// header.
func WriteClientRates(w io.Writer, bucket time.Duration, runs []*Run) error {
	var b []byte
	b = append(b, ClientRatesHeader...)
	for _, r := range runs {
		for i, c := range r.ClientRates {
			b = fmt.Appendf(b, "%s,%d,%s,%d,%s\n", r.Strategy, r.Run, Decimal((time.Duration(i) * bucket).Seconds()), c.Limited, Decimal(c.Rate))
		}
	}
	_, err := w.Write(b)
	return err
}

// ServicesHeader is the header of services.csv.
const ServicesHeader = "strategy,run,service,replica,t,attempts,ok,not_ok,rejected,throttled,queue,in_flight,queue_max,queue_mean,cache_lookups,cache_hits\n"

// WriteServices writes services.csv: per strategy, run, service (and
// replica: "all" for the whole service) and bucket, the service's time
// series. Runs without services write nothing but the header.
func WriteServices(w io.Writer, bucket time.Duration, runs []*Run) error {
	var b []byte
	b = append(b, ServicesHeader...)
	for _, r := range runs {
		for _, s := range r.Services {
			for _, x := range append([]*ServiceRun{s}, s.Replicas...) {
				replica := "all"
				if x.Replica >= 0 {
					replica = strconv.Itoa(x.Replica)
				}
				for i, k := range x.Series {
					var c CacheBucket
					if i < len(x.Cache) {
						c = x.Cache[i]
					}
					b = fmt.Appendf(b, "%s,%d,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d\n", r.Strategy, r.Run, s.Name, replica,
						Decimal((time.Duration(i) * bucket).Seconds()), k.Attempts, k.OK, k.NotOK, k.Rejected, k.Throttled, k.Queue, k.InFlight, k.QueueMax, Decimal(k.QueueMean), c.Lookups, c.Hits)
				}
				if len(b) > 1<<20 {
					if _, err := w.Write(b); err != nil {
						return err
					}
					b = b[:0]
				}
			}
		}
	}
	_, err := w.Write(b)
	return err
}
