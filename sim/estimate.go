package sim

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// Needs is what a scenario's runs will take, estimated before they run
// from the scenario alone: the memory of a run in progress (its requests,
// senders and pending events), of a finished run kept for the outputs
// (its time series and latency histogram), and the rows of
// timeseries.csv.
type Needs struct {
	Requests float64 // requests of one run: the expected number for poisson arrivals
	PerRun   int64   // bytes of one run in progress
	Kept     int64   // bytes of one finished run, kept until the outputs are written
	Runs     int     // runs in all (strategies x replications)
	AtOnce   int     // runs in progress at once
	Rows     int64   // rows of timeseries.csv
	// ServiceRows is the rows of services.csv, for a graph: a row per
	// strategy, run, service (and replica) and bucket.
	ServiceRows int64
	// Floor is the heap the process may hold before a collection
	// (HeapFloorUnder the memory limit): what Memory counts when the
	// runs take less.
	Floor int64

	perRun  []need // what makes up PerRun, largest first
	tooMany *need  // a graph's attempts beyond the event budget, if they are: the field and why
	maxRows *need  // the field that makes services.csv's rows, and how
}

// need is one part of a run's memory, and the scenario field it grows
// with.
type need struct {
	path  string
	bytes int64
	what  string
}

// Memory returns the bytes the runs will take at their peak: every run
// kept, AtOnce runs in progress, and the program itself; or, when the
// runs take less than Floor, what the heap may grow to before the
// collector runs.
func (n Needs) Memory() int64 {
	return addBytes(baseMemory, max(addBytes(mulBytes(n.Kept, int64(n.Runs)), mulBytes(n.PerRun, int64(n.AtOnce))), n.Floor))
}

// BytesText returns b bytes as results.Bytes does, or "more than 4096
// PB" where the estimate saturated: an estimate that overflowed is never
// shown as a figure it is not.
func BytesText(b int64) string {
	if b >= maxBytes {
		return "more than " + results.Bytes(maxBytes)
	}
	return results.Bytes(b)
}

// maxBytes is where the estimate's byte counts saturate (4 EiB): more
// than any machine has, and far enough from the int64 limit that a sum
// of a few of them does not wrap. A count of fan-outs and attempts can
// exceed every integer type (a fan-out of 1,000 over 6 edges makes 10^18
// attempts); the estimate counts in float64 and saturates here, so that
// it never wraps to a small number.
const maxBytes = 1 << 62

// toBytes returns x bytes as an int64, saturated to [0, maxBytes] (NaN:
// maxBytes, as an estimate must never understate).
func toBytes(x float64) int64 {
	switch {
	case !(x < maxBytes):
		return maxBytes
	case x < 0:
		return 0
	}
	return int64(x)
}

// addBytes returns a+b, saturated at maxBytes.
func addBytes(a, b int64) int64 { return min(a+b, maxBytes) }

// mulBytes returns a*k, saturated at maxBytes (a, k >= 0).
func mulBytes(a, k int64) int64 {
	if k != 0 && a > maxBytes/k {
		return maxBytes
	}
	return min(a*k, maxBytes)
}

// baseMemory is the program's own memory beside its runs: code, charts
// being drawn, buffers (measured: herdlab run of a one-request scenario
// peaks at 46 MB resident; 52-55 MB on 2026-12-03).
const baseMemory = 48 << 20

// HeapFloor is the least heap goal that the herdlab command sets for its
// process (internal/gcfloor), when its memory limit leaves room for it
// (HeapFloorUnder): the collector lets the heap grow to it before it
// runs. Small runs, whose heap is mostly garbage (their results kept,
// little else), then collect far less often: a run of one request costs
// less than half the time (BenchmarkSmallRuns). Past half of it, the
// collector runs as it would without.
const HeapFloor = 32 << 20

// HeapFloorUnder returns the heap floor that a memory limit of limit
// bytes leaves room for beside the program itself: HeapFloor, or less
// (a limit of 0 is none: HeapFloor). Under it, runs that fit the limit
// without a floor fit it with one.
func HeapFloorUnder(limit int64) int64 {
	if limit <= 0 {
		return HeapFloor
	}
	return min(max(limit-baseMemory, 0), HeapFloor)
}

// MaxRows bounds the rows of timeseries.csv (about 60 bytes each), and
// those of a graph's services.csv (about serviceRowBytes each): a file a
// spreadsheet or a script can still open.
const MaxRows = 5_000_000

// serviceRowBytes is about the size of a row of services.csv (measured:
// 15 million rows of 5 services of 10,000 replicas took 563 MB).
const serviceRowBytes = 40

// The sizes the estimate counts, per request.
//
// On a single server, a request has one event pending at most times: its
// next (a try, an answer, its timeout while it waits in the queue); one
// whose attempt travels the network with a timeout running has two, as
// has one being hedged. Each takes listedEventBytes in the timing wheel's
// lists. Where retries come back at the same instant (a burst retried
// without jitter), the herd's events are held twice as its instant is
// served, in their slot's list and in the sorted run, which grows by
// appending: lockstepEvents more. Each request in service holds one more
// event, its end of service.
// Measured, this estimate is 1.06x the peak resident memory of herdlab
// run of the million scenario scaled to 10^7 requests, and 1.32x at 10^6
// (where the program's own memory counts more); and it covers every
// shipped scenario's heap (TestEstimateCoversTheRuns).
//
// A graph's calls are counted with eventsPerCall of eventBytes, three
// events' worth, for the slack of the event list and the garbage
// collector's headroom: about 2x their live heap.
const (
	eventBytes = 3 * int64(unsafe.Sizeof(event{}))
	// listedEventBytes is an event's share of its chunk (24 B), and 10%
	// for chunks partly filled and for the slices of events that grow by
	// appending.
	listedEventBytes = int64(unsafe.Sizeof(wheelChunk{})/wheelChunkLen) * 11 / 10
	eventsPerCall    = 2
	lockstepEvents   = 3
	// queueEntryBytes is an attempt's entry in a replica's waiting room
	// (a waiter), in a ring that grows by an eighth (see deque). A
	// request may wait there maxWaiting times at once: attempts that
	// timed out stay
	// queued beside their retries (measured: 2.15 entries a request,
	// 500,000 requests through a 30 s outage into an unlimited queue).
	queueEntryBytes = int64(unsafe.Sizeof(waiter{})) * 9 / 8
	maxWaiting      = 3
	// chartBytes is what drawing the charts takes per bucket of a run
	// (measured: 700 MB for 5 runs of a million buckets).
	chartBytes = 160
	// eventListBytes is what the event list takes whatever its events:
	// the timing wheel's ring, of up to 2^16 pages, and its first block
	// of chunks.
	eventListBytes = 1 << 20
)

// Estimate estimates what running sc with opts will take. sc must be
// valid.
func Estimate(sc *scenarios.Scenario, opts Options) Needs {
	strats := len(sc.Strategies)
	if len(opts.Strategies) > 0 {
		strats = len(opts.Strategies)
	}
	n := Needs{Runs: strats * sc.Runs, Floor: HeapFloorUnder(opts.MaxMemory)}
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	n.AtOnce = max(min(parallel, n.Runs), 1)
	buckets := int64((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	n.Rows = buckets * int64(n.Runs)
	reqs, path := requestsOf(sc)
	n.Requests = reqs
	n.Kept = addBytes(buckets*(int64(unsafe.Sizeof(results.Bucket{}))+chartBytes), results.LatenciesBytes(min(reqs, scenarios.MaxCount)))
	growth := 1.0
	if sc.Workload.Uncapped() {
		growth = 2 // slices grow by appending, up to twice the count
	}
	if sc.Graph() {
		estimateGraph(sc, opts, &n, reqs, growth)
		return n.total()
	}
	events, lock := int64(1), int64(0)
	travels := !newSampler(sc.Network.Latency).zero() || sc.Server.Model == scenarios.ModelOCC
	waiting := 1.0 // attempts of a request in the waiting room at once
	var extras []string
	anyBreaker, anySenders, anyHedge, anyExt, anyMemory := false, false, false, false, false
	for _, st := range sc.Strategies {
		p := st.Policy()
		if p.Timeout > 0 && travels || p.Hedge != nil {
			events = 2
		}
		if lockstep(sc, p) {
			lock = lockstepEvents
		}
		if p.Timeout > 0 && !sc.Server.DropExpired {
			// An attempt its sender gave up on stays queued beside the
			// retry.
			a := float64(maxWaiting)
			if p.MaxAttempts > 0 {
				a = min(a, float64(p.MaxAttempts))
			}
			waiting = max(waiting, a)
		}
		anyBreaker = anyBreaker || p.Breaker != nil
		anyMemory = anyMemory || p.Reads() != 0
		anySenders = anySenders || p.PerSender()
		anyHedge = anyHedge || p.Hedge != nil
		anyExt = anyExt || p.Throttle != nil || p.Budget.Shared() || (p.Hedge != nil && p.Hedge.Percentile > 0)
	}
	// A request (the fleet's call), its creation time, its events, its
	// place in the dead-letter queue.
	perReq := int64(unsafe.Sizeof(call{})) + 8 + (events+lock)*listedEventBytes + 4
	if lock > 0 {
		extras = append(extras, "a herd retried at one instant")
	}
	if anyMemory {
		perReq += int64(unsafe.Sizeof(retryMemory{}))
		extras = append(extras, "its first attempt, previous wait or budget cost")
	}
	if anyBreaker {
		perReq += int64(unsafe.Sizeof(strategies.Permit{}))
		extras = append(extras, "a breaker permit")
	}
	if anyHedge {
		perReq += int64(unsafe.Sizeof(callCopies{}))
		extras = append(extras, "its hedged copies")
	}
	if sc.Server.RateLimit != nil {
		perReq += 4
		extras = append(extras, "a Retry-After hint")
	}
	if sc.Workload.Workers > 0 {
		perReq += 4
		anySenders = true
		extras = append(extras, "a place in its sender's queue")
	}
	if sc.Server.Model == scenarios.ModelOCC {
		perReq += 8
		extras = append(extras, "a row version")
	}
	senderBytes := int64(unsafe.Sizeof(sender{}))
	if anyExt {
		senderBytes += senderExtBytes
	}
	if anySenders && sc.Workload.Senders == 0 {
		perReq += senderBytes
		extras = append(extras, "a sender of its own")
	}
	queued, serving := reqs*waiting, reqs
	if !sc.Server.Queue.Unlimited() {
		queued = min(queued, float64(sc.Server.Queue))
	}
	if !sc.Server.Concurrency.Unlimited() {
		serving = min(serving, float64(sc.Server.Concurrency))
	} else {
		queued = 0 // no attempt waits for a slot
	}
	// The server is a graph's service: an attempt in service is a job,
	// and so is one on its way there or queued where the graph has no
	// waiters (see waiter).
	jobBytes := int64(unsafe.Sizeof(job{})) + 4 // + its place on the free list
	delayed := !newSampler(sc.Network.Latency).zero()
	entryBytes := queueEntryBytes
	if delayed || anyHedge {
		entryBytes += jobBytes
	}
	what := fmt.Sprintf("%s requests x %s", results.Count(math.Round(reqs)), results.Bytes(perReq))
	if len(extras) > 0 {
		what += " (with " + joinWords(extras) + ")"
	}
	n.perRun = append(n.perRun,
		need{path, toBytes(growth * reqs * float64(perReq)), what},
		need{"server.queue", toBytes(growth * queued * float64(entryBytes)), fmt.Sprintf("a queue of up to %s attempts", results.Count(math.Round(queued)))},
		need{"server.concurrency", toBytes(serving * float64(jobBytes+listedEventBytes)), fmt.Sprintf("up to %s requests in service, each a job with its end pending", results.Count(math.Round(serving)))},
	)
	if delayed {
		n.perRun = append(n.perRun, need{"network.latency", toBytes(growth * reqs * float64(jobBytes)),
			fmt.Sprintf("up to %s attempts on their way, each a job", results.Count(math.Round(reqs)))})
	}
	chunks := (growth*reqs*float64(events+lock) + serving) * float64(listedEventBytes)
	if ahead := slabAhead(toBytes(chunks)); ahead > 0 {
		n.perRun = append(n.perRun, need{path, ahead, "the event list's chunks allocated ahead of use"})
	}
	if anySenders && sc.Workload.Senders > 0 {
		n.perRun = append(n.perRun, need{"workload.senders", mulBytes(int64(sc.Workload.Senders), senderBytes),
			fmt.Sprintf("%s senders x %s", results.Count(float64(sc.Workload.Senders)), results.Bytes(senderBytes))})
	}
	return n.total()
}

// lockstep reports whether p's retries of sc's requests can come back at
// one instant: a burst, retried after waits without jitter.
func lockstep(sc *scenarios.Scenario, p *strategies.Policy) bool {
	if sc.Workload.Clients != nil || sc.Workload.Arrival.Kind != scenarios.Burst {
		return false
	}
	switch p.Backoff.(type) {
	case nil, strategies.None, strategies.Fixed, strategies.Exponential:
		return true
	}
	return false
}

// senderExtBytes is what a sender keeps beside its Sender for a
// throttle, a shared budget or a percentile hedge delay (strategies'
// senderExt, and a shared budget of its own), with the allocator's
// rounding.
const senderExtBytes = 640

// total sums the parts of a run's memory, and sorts them largest first
// for the message.
func (n Needs) total() Needs {
	n.PerRun = eventListBytes
	for _, p := range n.perRun {
		n.PerRun = addBytes(n.PerRun, p.bytes)
	}
	slices.SortStableFunc(n.perRun, func(a, b need) int { return cmp.Compare(b.bytes, a.bytes) })
	return n
}

// requestsOf returns how many requests a run of sc creates (the expected
// number, for uncapped poisson arrivals) and the field that says so.
func requestsOf(sc *scenarios.Scenario) (float64, string) {
	w := sc.Workload
	if c := w.Clients; c != nil {
		if w.Requests > 0 {
			return float64(w.Requests), "workload.requests"
		}
		// Each client's cycle is at least its think time and a round
		// trip; as many as that allows, answered at once.
		cycle := c.ThinkTime
		if l := sc.Network.Latency; l != nil {
			cycle += 2 * l.MeanValue()
		}
		return float64(c.Count) * (sc.Duration.Seconds()/max(cycle.Seconds(), 1e-3) + 1), "workload.clients.count"
	}
	if w.Arrival.Kind != scenarios.Poisson {
		return float64(w.Requests), "workload.requests"
	}
	a := w.Arrival
	end := a.Until
	if end == 0 {
		end = sc.Duration
	}
	end = min(end, sc.Duration)
	mean := scheduledMean(a, end)
	// Six standard deviations above the mean: a run that makes more is
	// a one in a billion.
	n := mean + 6*math.Sqrt(mean)
	path := "workload.arrival.rate"
	if w.Requests > 0 && float64(w.Requests) <= n {
		return float64(w.Requests), "workload.requests"
	}
	return n, path
}

// expectedRequests returns how many requests a run of sc is expected to
// create, as its progress counts them: the number of a burst or uniform
// workload, the mean of poisson arrivals (capped by workload.requests),
// and for closed-loop clients without workload.requests, as many as
// their cycles allow (an upper bound).
func expectedRequests(sc *scenarios.Scenario) float64 {
	w := sc.Workload
	if w.Clients != nil || w.Arrival.Kind != scenarios.Poisson {
		n, _ := requestsOf(sc)
		return n
	}
	end := w.Arrival.Until
	if end == 0 {
		end = sc.Duration
	}
	n := scheduledMean(w.Arrival, min(end, sc.Duration))
	if w.Requests > 0 {
		n = min(n, float64(w.Requests))
	}
	return n
}

// scheduledMean returns the expected arrivals of a from a.From to end:
// the rate in force (rateAt's) integrated over time. Where no two steps
// of the schedule overlap (the usual case) it is the base rate over the
// span and each step's difference over its part of the span, in time
// linear in the steps (a sweep estimates 10,000 points of 2,000 steps);
// otherwise, the first step in force wins, piece by piece.
func scheduledMean(a scenarios.Arrival, end time.Duration) float64 {
	if a.From >= end {
		return 0
	}
	steps := slices.SortedFunc(slices.Values(a.Schedule), func(x, y scenarios.RateStep) int { return cmp.Compare(x.From, y.From) })
	for i := 1; i < len(steps); i++ {
		if steps[i].From < steps[i-1].Until {
			mean := 0.0
			for t := a.From; t < end; {
				rate, until := rateAt(a, end, t)
				mean += rate * (until - t).Seconds()
				t = until
			}
			return mean
		}
	}
	mean := a.Rate * (end - a.From).Seconds()
	for _, st := range steps {
		if from, until := max(st.From, a.From), min(st.Until, end); until > from {
			mean += (st.Rate - a.Rate) * (until - from).Seconds()
		}
	}
	return mean
}

// Fit returns how many runs may go at once, at most opts.Parallel (0:
// GOMAXPROCS), for sc's runs to fit in limit bytes of memory (0: no
// limit) and in MaxRows rows of time series; it is an error, naming the
// field and the figures, when even one run at a time does not fit. sc
// must be valid.
func Fit(sc *scenarios.Scenario, opts Options, limit int64) (int, error) {
	n := Estimate(sc, opts)
	if err := n.check(sc, limit, false, opts.limitName()); err != nil {
		return 0, err
	}
	return n.fit(limit), nil
}

// FitUnits is Fit for runs that are not kept once done (a sweep writes
// each run's record as it ends): what must fit is AtOnce runs in progress
// and as many finished ones.
func FitUnits(sc *scenarios.Scenario, opts Options, limit int64) (int, error) {
	n := Estimate(sc, opts)
	n.Runs = n.AtOnce
	n.Rows, n.ServiceRows = 0, 0
	if err := n.check(sc, limit, true, opts.limitName()); err != nil {
		return 0, err
	}
	return n.fit(limit), nil
}

// fit returns how many runs fit at once.
func (n Needs) fit(limit int64) int {
	if limit <= 0 {
		return n.AtOnce
	}
	n.Floor = HeapFloorUnder(limit)
	for n.AtOnce > 1 && n.Memory() > limit {
		n.AtOnce--
	}
	return n.AtOnce
}

// check reports what does not fit, with one run at a time.
func (n Needs) check(sc *scenarios.Scenario, limit int64, units bool, name string) error {
	fail := func(path, format string, args ...any) error {
		line, col := sc.Position(path)
		return &scenarios.Error{File: sc.File(), Line: max(line, 1), Col: max(col, 1), Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Requests > scenarios.MaxCount {
		_, path := requestsOf(sc)
		return fail(path, "a run would make about %s requests, more than the most herdlab counts (%s)",
			results.Count(math.Round(n.Requests)), results.Count(scenarios.MaxCount))
	}
	if n.tooMany != nil {
		return fail(n.tooMany.path, "%s", n.tooMany.what)
	}
	if n.Rows > MaxRows {
		buckets := n.Rows / int64(n.Runs)
		return fail("bucket", "%s buckets a run x %d runs (strategies x replications) make %s rows of timeseries.csv (about %s); at most %s: use a wider bucket, fewer runs or fewer strategies",
			results.Count(float64(buckets)), n.Runs, results.Count(float64(n.Rows)), results.Bytes(n.Rows*60), results.Count(MaxRows))
	}
	if n.ServiceRows > MaxRows && n.maxRows != nil {
		return fail(n.maxRows.path, "%s make %s rows of services.csv (about %s); at most %s: use a wider bucket, fewer replicas, fewer runs or fewer strategies",
			n.maxRows.what, results.Count(float64(n.ServiceRows)), results.Bytes(mulBytes(n.ServiceRows, serviceRowBytes)), results.Count(MaxRows))
	}
	if limit <= 0 {
		return nil
	}
	n.AtOnce, n.Floor = 1, HeapFloorUnder(limit)
	if n.Memory() <= limit {
		return nil
	}
	limitText := results.Bytes(limit)
	kept := mulBytes(n.Kept, int64(n.Runs))
	if !units && kept > n.PerRun {
		buckets := (sc.Duration + sc.Bucket - 1) / sc.Bucket
		path := "runs"
		if n.Runs/sc.Runs > sc.Runs {
			path = "strategies"
		}
		if buckets > 10_000 {
			path = "bucket"
		}
		return fail(path, "%d runs (strategies x replications) of %s buckets each keep about %s in memory until the outputs are written (%s a run); the limit is %s (%s)",
			n.Runs, results.Count(float64(buckets)), BytesText(kept), BytesText(n.Kept), limitText, name)
	}
	top := n.perRun[0]
	return fail(top.path, "a run needs about %s of memory with herdlab's own %s: %s; the limit is %s (%s)",
		BytesText(addBytes(addBytes(n.PerRun, n.Kept), baseMemory)), BytesText(baseMemory), top.what, limitText, name)
}

// joinWords joins words as a list in prose: a, b and c.
func joinWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	s := words[0]
	for _, w := range words[1 : len(words)-1] {
		s += ", " + w
	}
	return s + " and " + words[len(words)-1]
}
