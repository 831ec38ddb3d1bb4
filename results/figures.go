package results

import (
	"math"
	"slices"
	"time"
)

// Setup is what the figures of a run need to know about its scenario.
type Setup struct {
	Bucket time.Duration // histogram bucket width
	// Capacity is the server's capacity in requests per second:
	// concurrency / mean service time; +Inf when unlimited.
	Capacity float64
	// Concurrency is the server's slots, or 0 when unlimited: the slack
	// the recovery rule allows the queue.
	Concurrency int
	// LastOutageEnd is the end of the last outage, 0 when there is none.
	LastOutageEnd time.Duration
	// NoOutage is true for a scenario without an outage or a load spike
	// (a schedule of arrival rates): there is nothing to recover from, so
	// its runs have no recovery figure.
	NoOutage bool
}

// Figures are the summary figures of one strategy: of one run, or the
// means over several runs. Durations are in seconds. A nil pointer is a
// figure that does not exist: a server that never recovered, requests
// still unfinished, a ratio to an unlimited capacity.
type Figures struct {
	Requests       float64 `json:"requests"`
	Attempts       float64 `json:"attempts"`
	Delivered      float64 `json:"delivered"`
	DeliveredRatio float64 `json:"delivered_ratio"`
	DeadLettered   float64 `json:"dead_lettered"`
	Unfinished     float64 `json:"unfinished"`
	Duplicates     float64 `json:"duplicates"`
	// Amplification is attempts / requests.
	Amplification float64 `json:"amplification"`
	// PeakLoad is the most attempts in one bucket once the server is
	// back: in a bucket that starts at or after the end of the last
	// outage (any bucket when there is no outage). This is the herd that
	// lands on the recovering server; attempts refused during the outage
	// are counted in PeakLoadOverall.
	PeakLoad float64 `json:"peak_load"`
	// PeakLoadRatio is PeakLoad per second / capacity per second.
	PeakLoadRatio *float64 `json:"peak_load_ratio"`
	// PeakAtS is the start of the bucket of PeakLoad (the first such).
	PeakAtS float64 `json:"peak_at_s"`
	// PeakLoadOverall is the most attempts in any bucket, outages
	// included.
	PeakLoadOverall float64 `json:"peak_load_overall"`
	// RecoveryTimeS is when the server recovered, counted from the end of
	// the last outage (see Recovery); nil when it never did, and when
	// there was no outage (see NoOutage). A run that left nothing to
	// recover (BacklogAtOutageEnd 0: every request was delivered or given
	// up by the end of the outage) has a recovery only where later
	// requests show one: the strategy's Recovery says so, and the figure
	// is not a speed.
	RecoveryTimeS *float64 `json:"recovery_time_s"`
	// NoOutage is true when the scenario has no outage (nor a load spike,
	// a schedule of arrival rates): there was nothing to recover from, and
	// RecoveryTimeS and BacklogAtOutageEnd are nil.
	NoOutage bool `json:"no_outage,omitempty"`
	// BacklogAtOutageEnd is how many requests were left to recover at
	// the end of the last outage: created by then and neither delivered
	// nor dead-lettered. Nil without an outage (or when the outage
	// outlasts the run).
	BacklogAtOutageEnd *float64 `json:"backlog_at_outage_end"`
	// DeadLetteredInOutage is how many requests were given up (sent to
	// the dead-letter queue) by the end of the last outage.
	DeadLetteredInOutage float64 `json:"dead_lettered_in_outage"`

	DrainTimeS      *float64 `json:"drain_time_s"`
	CompletionTimeS *float64 `json:"completion_time_s"`
	// LatencyS is request creation to delivery, delivered requests only.
	LatencyS Latency `json:"latency_s"`

	Processed      float64            `json:"processed"`
	Wasted         float64            `json:"wasted_work"`
	ShortCircuited float64            `json:"short_circuited"`
	Rejected       float64            `json:"rejected"`
	Throttled      float64            `json:"throttled"`
	TimedOut       float64            `json:"timed_out"`
	Lost           float64            `json:"responses_lost"`
	Replayed       float64            `json:"replayed"`
	DeadLetteredBy map[string]float64 `json:"dead_lettered_by"`

	// The overload controls' counts, left out of summary.json where they
	// are 0 (a strategy without the control): a check reads a missing
	// one as 0 (see Named.Get).

	// ClientRejected counts attempts that a client-side throttle (sre,
	// failsafe) rejected locally, without sending them.
	ClientRejected float64 `json:"client_rejected,omitempty"`
	// RateLimited counts the times an attempt waited for a token of the
	// client's rate limiter (aws-adaptive) before it went.
	RateLimited float64 `json:"rate_limited,omitempty"`
	// SharedBudgetDenied counts retries denied by a budget that a group
	// of senders holds together (envoy, finagle with scope fleet or
	// group; not one a sender holds alone); they are dead-lettered with
	// reason budget.
	SharedBudgetDenied float64 `json:"shared_budget_denied,omitempty"`
	// Hedges counts the hedged copies sent (beyond each request's first),
	// HedgeWins the requests that a hedged copy delivered.
	Hedges    float64 `json:"hedges,omitempty"`
	HedgeWins float64 `json:"hedge_wins,omitempty"`
}

// ZeroWhenMissing lists the figures that summary.json leaves out where
// they are 0.
var ZeroWhenMissing = []string{"client_rejected", "rate_limited", "shared_budget_denied", "hedges", "hedge_wins"}

// Latency summarises delivery latencies, in seconds.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Figures computes the summary figures of run r.
func (r *Run) Figures(s Setup) Figures {
	f := Figures{
		Requests:       float64(r.Requests),
		Attempts:       float64(r.Attempts),
		Delivered:      float64(r.Delivered),
		DeadLettered:   float64(r.DeadLettered),
		Unfinished:     float64(r.Unfinished),
		Duplicates:     float64(r.Duplicates),
		Processed:      float64(r.Processed),
		Wasted:         float64(r.Wasted),
		ShortCircuited: float64(r.ShortCircuited),
		Rejected:       float64(r.Rejected),
		Throttled:      float64(r.Throttled),
		TimedOut:       float64(r.TimedOut),
		Lost:           float64(r.Lost),
		Replayed:       float64(r.Replayed),
		DeadLetteredBy: map[string]float64{},

		ClientRejected:     float64(r.ClientRejected),
		RateLimited:        float64(r.RateLimited),
		SharedBudgetDenied: float64(r.SharedBudgetDenied),
		Hedges:             float64(r.Hedges),
		HedgeWins:          float64(r.HedgeWins),
	}
	for reason, n := range r.DeadLetteredBy {
		f.DeadLetteredBy[reason] = float64(n)
	}
	if r.Requests > 0 {
		f.DeliveredRatio = f.Delivered / f.Requests
		f.Amplification = f.Attempts / f.Requests
	}
	after := afterOutage(s)
	for i, b := range r.Series {
		n := float64(b.Attempts)
		f.PeakLoadOverall = max(f.PeakLoadOverall, n)
		if i >= after && n > f.PeakLoad {
			f.PeakLoad, f.PeakAtS = n, (time.Duration(i) * s.Bucket).Seconds()
		}
	}
	if !math.IsInf(s.Capacity, 1) && s.Capacity > 0 {
		f.PeakLoadRatio = ptr(f.PeakLoad / s.Bucket.Seconds() / s.Capacity)
	}
	f.NoOutage = s.NoOutage
	if t, ok := Recovery(r.Series, s); ok && !s.NoOutage {
		f.RecoveryTimeS = ptr(t.Seconds())
	}
	if r.Backlog != nil && !s.NoOutage {
		f.BacklogAtOutageEnd = ptr(float64(*r.Backlog))
	}
	f.DeadLetteredInOutage = float64(r.GaveUpInOutage)
	if r.Drain != nil {
		f.DrainTimeS = ptr(r.Drain.Seconds())
	}
	if r.Completion != nil {
		f.CompletionTimeS = ptr(r.Completion.Seconds())
	}
	if n := r.Latency.TotalCount(); n > 0 {
		q := latencyQuantiles(r.Latency)
		f.LatencyS = Latency{Mean: r.LatencySum / float64(n), P50: micros(q[0]), P90: micros(q[1]), P99: micros(q[2]), Max: micros(q[3])}
	}
	return f
}

// SuccessThreshold is the share of a bucket's attempts that must succeed
// for the server to count as recovered in that bucket.
const SuccessThreshold = 0.95

// Recovery returns how long after the end of the last outage the server
// recovered, and false when it never did within the series.
//
// The server has recovered at the start of bucket t when, from t to the
// end of the series, every bucket's attempts succeed at >= 95% (a bucket
// without attempts counts as a success) and the server queue does not
// grow: no later bucket ends with a longer queue than bucket t did, give
// or take the server's concurrency (one slot's worth of noise when
// unlimited). t is the first bucket that starts at or after the end of
// the last outage, or a later one; the recovery time is t's start minus
// that end.
//
// The last buckets of a run may hold attempts whose results were not in
// by its end (answers on their way, senders still waiting for their
// timeout): such a bucket, where fewer than half of the attempts have a
// result, says nothing either way, and trailing ones are left out. A run
// whose buckets after the outage say nothing has not shown a recovery.
//
// Empty buckets are no recovered server: a run in which no attempt
// succeeded from the end of the outage on (its senders timed out on a
// server too slow for them, then gave up on every request and stopped
// sending) has shown no recovery, however quiet its last buckets.
func Recovery(series []Bucket, s Setup) (time.Duration, bool) {
	start := afterOutage(s)
	n := len(series)
	for n > start && undecided(series[n-1]) {
		n--
	}
	if start >= n {
		return 0, false
	}
	slack := int64(max(s.Concurrency, 1))
	// Walk back from the end: t is a recovery point when the buckets
	// after it are all healthy and none of them has a longer queue than
	// t's plus the slack.
	if !slices.ContainsFunc(series[start:n], func(b Bucket) bool { return b.OK > 0 }) {
		return 0, false
	}
	best := -1
	var laterMax int64 = -1 // the longest queue in buckets after t
	for t := n - 1; t >= start; t-- {
		b := series[t]
		if known := b.OK + b.NotOK; known > 0 && float64(b.OK) < SuccessThreshold*float64(known) {
			break
		}
		if laterMax <= b.Queue+slack {
			best = t
		}
		laterMax = max(laterMax, b.Queue)
	}
	if best < 0 {
		return 0, false
	}
	return max(time.Duration(best)*s.Bucket-s.LastOutageEnd, 0), true
}

// undecided reports whether fewer than half of a bucket's attempts have
// a result.
func undecided(b Bucket) bool {
	return b.Attempts > 0 && 2*(b.OK+b.NotOK) < b.Attempts
}

// afterOutage returns the first bucket that starts at or after the end
// of the last outage (never below 0).
func afterOutage(s Setup) int {
	return max(int((s.LastOutageEnd+s.Bucket-1)/s.Bucket), 0)
}

// NothingLeft reports whether a run's figures say that nothing was left
// to recover at the end of the outage.
func (f *Figures) NothingLeft() bool {
	return f.BacklogAtOutageEnd != nil && *f.BacklogAtOutageEnd == 0
}

func ptr(x float64) *float64 { return &x }

func micros(us int64) float64 { return float64(us) / 1e6 }

// latencyQuantiles returns the 50th, 90th and 99th percentiles of l and
// its maximum, in one pass over its counts: the 100th percentile is the
// value Max gives (the highest equivalent value of the highest count),
// which walks the counts one by one, and which took most of a small
// run's fixed cost.
func latencyQuantiles(l *Latencies) []int64 {
	return l.Percentiles(50, 90, 99, 100)
}
