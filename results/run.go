package results

import (
	"time"
)

// Run is what one run of one strategy produced: counts, the time series
// per bucket, and the latency histogram. The simulator and the real-HTTP
// driver both fill it in; Figures derives the summary figures from it.
type Run struct {
	Strategy string
	Run      int // replication index, from 0

	Requests     int64 // requests created
	Attempts     int64 // attempts that reached the server
	Delivered    int64 // requests whose sender saw a success
	DeadLettered int64 // requests in the dead-letter queue at the end
	Unfinished   int64 // requests neither delivered nor dead-lettered at the end
	// DeadLetteredBy counts dead letters at the end by reason
	// (not_retryable, max_attempts, max_elapsed, budget).
	DeadLetteredBy map[string]int64
	Replayed       int64 // dead letters sent again by a DLQ replay

	Processed      int64 // attempts the server processed (served to completion)
	Duplicates     int64 // processings of a request beyond its first
	Wasted         int64 // processings whose answer no sender was waiting for
	ShortCircuited int64 // tries refused by an open breaker, without an attempt
	Rejected       int64 // attempts answered 503 because the queue was full
	Throttled      int64 // attempts answered 429 by the rate limit
	TimedOut       int64 // attempts the sender gave up on
	Lost           int64 // answers lost on the way back (response loss)

	// The overload controls' counts (see Figures).
	ClientRejected     int64 // attempts a client-side throttle rejected locally, without sending them
	RateLimited        int64 // times an attempt waited for the client's rate limiter's token
	SharedBudgetDenied int64 // retries denied by a budget shared by a group of senders
	Hedges             int64 // hedged copies sent
	HedgeWins          int64 // requests a hedged copy delivered
	// ClientRates is, with the AWS SDKs' adaptive rate limiter, the
	// senders' limiters at the end of each bucket; nil without one.
	ClientRates []ClientRate

	// Backlog counts the requests left to recover at the end of the last
	// outage: created by then and neither delivered nor dead-lettered. It
	// is nil without an outage, or when the outage outlasts the run.
	// GaveUpInOutage counts the requests dead-lettered by then.
	Backlog        *int64
	GaveUpInOutage int64

	// Drain is the time from the end of the last outage until every
	// request that existed then was delivered or dead-lettered; Completion
	// is the time from the start until the last request's final state.
	// Each is nil when some request it covers is unfinished.
	Drain, Completion *time.Duration

	// Latency holds delivered requests' latencies (creation to delivery)
	// in microseconds; LatencySum is their exact sum in seconds. (In
	// JSON, EncodeRuns writes the histogram's buckets beside the run.)
	Latency    *Latencies `json:"-"`
	LatencySum float64

	Series []Bucket // one per bucket from t = 0
	// Services are the services of a graph, in file order; nil for a
	// scenario of one server. The run's own counts describe the service
	// the fleet calls.
	Services []*ServiceRun
	// Edges are a graph's call edges, the fleet's first, then each
	// service's calls in file order.
	Edges []EdgeRun
	// QueueTracked is set when the server's queue was measured: the
	// Series' Queue, QueueMax and QueueMean hold what it was (the
	// simulator's runs). When it is not set they are 0 and mean
	// nothing: the real-HTTP driver does not see its server's queue.
	QueueTracked bool

	Events int64         // events the engine processed
	Wall   time.Duration // wall-clock time of the run
}

// Bucket is one histogram bucket of a run. Counts are of things that
// happened in the bucket; Queue and InFlight are sampled at its end,
// QueueMax and QueueMean describe the whole bucket (see Run.QueueTracked).
type Bucket struct {
	Attempts       int64 // attempts that reached the server
	OK             int64 // of those, the ones whose sender saw a success
	NotOK          int64 // of those, the ones whose sender saw a failure or gave up
	NotOKTimeout   int64 // of NotOK, the ones whose sender gave up
	Delivered      int64 // requests delivered
	Failed         int64 // attempts whose sender saw a failure
	Rejected       int64 // attempts answered 503 for a full queue
	ShortCircuited int64 // breaker short-circuits
	Throttled      int64 // attempts answered 429
	TimedOut       int64 // attempts the sender gave up on
	Queue          int64 // server queue length at the bucket's end
	InFlight       int64 // requests in service at the bucket's end
	Delayed        int64 // requests waiting for their backoff (the delay queue) at the bucket's end
	DLQ            int64 // requests in the dead-letter queue at the bucket's end
	// QueueMax is the longest the server queue was at any instant of the
	// bucket, its start included: requests.
	QueueMax int64
	// QueueMean is the server queue's length averaged over the bucket's
	// time (the integral of the length over the bucket, divided by its
	// width; the last bucket's width ends at the horizon): requests.
	QueueMean float64
}

// ClientRate is the state of a fleet's client rate limiters (the AWS
// SDKs' adaptive mode) at a bucket's end: how many senders' limiters are
// on (after a throttle; the others send freely), and the sum of their
// fill rates, in attempts a second.
type ClientRate struct {
	Limited int64
	Rate    float64
}

// Breakdown is what became of the attempts that reached the server in
// one bucket, by class, for the stacked load chart. The classes add up to
// the bucket's attempts.
type Breakdown struct {
	Succeeded  int64 // the sender saw a success
	Rejected   int64 // 503: the server's queue was full
	Throttled  int64 // 429: the rate limit
	TimedOut   int64 // the sender gave up waiting
	Failed     int64 // any other failure: refused, 5xx, reset
	Unresolved int64 // no result by the end of the run
}

// Breakdown splits the bucket's attempts into classes. Rejections and
// 429s are counted as the server sends them; an attempt whose sender
// timed out before such an answer arrived counts once, as rejected or
// throttled.
func (b Bucket) Breakdown() Breakdown {
	d := Breakdown{
		Succeeded: b.OK,
		Rejected:  b.Rejected,
		Throttled: b.Throttled,
		TimedOut:  max(min(b.NotOKTimeout, b.NotOK-b.Rejected-b.Throttled), 0),
	}
	d.Failed = max(b.NotOK-d.Rejected-d.Throttled-d.TimedOut, 0)
	d.Unresolved = max(b.Attempts-d.Succeeded-d.Rejected-d.Throttled-d.TimedOut-d.Failed, 0)
	return d
}

// NewRun returns a run with its latency histogram and buckets ready.
func NewRun(strategy string, run, buckets int) *Run {
	return &Run{
		Strategy:       strategy,
		Run:            run,
		DeadLetteredBy: map[string]int64{},
		Latency:        NewLatencies(),
		Series:         make([]Bucket, buckets),
	}
}

// RecordLatency records the latency of one delivered request.
func (r *Run) RecordLatency(d time.Duration) {
	r.Latency.Record(int64(d / time.Microsecond))
	r.LatencySum += d.Seconds()
}
