package sim

import (
	"errors"
	"math"
	"time"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// The states of a request.
const (
	stWaiting   uint8 = iota // created, or waiting for its backoff: no attempt in flight
	stQueued                 // waiting for a worker of its sender's dispatcher
	stInFlight               // an attempt is in flight
	stDelivered              // final: the sender saw a success
	stDead                   // final (unless replayed): in the dead-letter queue
)

// retryMemory is the part of a request's strategies.Request that only
// some policies read back (strategies.Policy.Reads).
type retryMemory struct {
	first time.Duration
	prev  float64
	cost  float32
}

// The flags of a request.
const (
	// flagStarted is set once the server begins processing the request:
	// with idempotency the key is recorded then, and repeats are answered
	// from the cache.
	flagStarted uint8 = 1 << iota
	// flagProcessed is set once processing ends, so that another
	// processing is a duplicate.
	flagProcessed
	// flagWorker is set while the request holds a worker of its sender's
	// dispatcher.
	flagWorker
)

// epoch is the wall-clock time of virtual time 0, for HTTP-date hints.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// maxInstant stops a run whose clock stands still: retries at the same
// instant forever, say. (Options.MaxEvents stops one that would take too
// long.)
const maxInstant = 1 << 26

// checkEvery is how many events go by between two looks at the context
// and the limits.
const checkEvery = 1 << 16

// ErrEventBudget is returned, wrapped, by a run that reached its event
// budget (Options.MaxEvents); ErrStuck by one whose clock stood still for
// maxInstant events.
var (
	ErrEventBudget = errors.New("sim: the run reached its event budget")
	ErrStuck       = errors.New("sim: the clock stands still")
)

// warmupSteps is how many times capacity grows during a warmup.
const warmupSteps = 100

// mulDiv returns d * a / b (a, b > 0) in integers where d * a fits, and
// in floating point where it would overflow (a duration of years).
func mulDiv(d time.Duration, a, b int64) time.Duration {
	if d <= math.MaxInt64/time.Duration(a) {
		return d * time.Duration(a) / time.Duration(b)
	}
	return time.Duration(float64(d) * float64(a) / float64(b))
}

// finals counts the final states of a run's requests into its run.
type finals struct {
	run           *results.Run
	lastOutageEnd time.Duration
	drained       bool // every request created by the end of the outage is final
}

// add counts one request, in state, created at created.
func (f *finals) add(state uint8, reason strategies.Reason, created time.Duration) {
	run := f.run
	run.Requests++
	switch state {
	case stDelivered:
	case stDead:
		run.DeadLettered++
		run.DeadLetteredBy[reason.String()]++
	default:
		run.Unfinished++
		if created <= f.lastOutageEnd {
			f.drained = false
		}
	}
}

// close sets the run's completion and drain times from the latest final
// state of any request (completion) and of one created by the end of the
// outage (drain), and checks conservation.
func (f *finals) close(completion, drain time.Duration) {
	run := f.run
	if run.Unfinished == 0 {
		run.Completion = &completion // a copy: the run must not hold the world
	}
	if f.drained {
		d := max(drain-f.lastOutageEnd, 0)
		run.Drain = &d
	}
	if got := run.Delivered + run.DeadLettered + run.Unfinished; got != run.Requests {
		conservation("%d requests but %d delivered + %d dead-lettered + %d unfinished",
			run.Requests, run.Delivered, run.DeadLettered, run.Unfinished)
	}
}

// hugeSlice returns an empty slice of capacity n whose memory, if it is
// large, is backed by huge pages where the system allows (adviseHuge).
func hugeSlice[T any](n int) []T {
	s := make([]T, 0, n)
	var zero T
	adviseHuge(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n)*unsafe.Sizeof(zero))
	return s
}

// failureHint marks, in hints, a 5xx of the failure probability that
// carries the failure pushback.
const failureHint = math.MaxUint32

// warmupSlots returns the slots of a server with slots in full since
// into its warmup wu: from wu.From of them, in warmupSteps steps, to all.
func warmupSlots(since time.Duration, wu scenarios.Warmup, slots int) int {
	step := float64(mulDiv(since, warmupSteps, int64(wu.Duration))) / warmupSteps
	return max(1, int((wu.From+(1-wu.From)*step)*float64(slots)))
}

// retryAfterHeader returns the number a Retry-After header written at
// virtual time now carries for a wait: delta-seconds rounded up, or for
// an HTTP-date the second it names, counted from the virtual epoch (the
// second at or after now + wait). It is what strategies.FormatRetryAfter
// writes, without the string.
func retryAfterHeader(wait time.Duration, format strategies.RetryAfterFormat, now time.Duration) int64 {
	if format == strategies.RetryAfterHTTPDate {
		return int64((now + wait + time.Second - 1) / time.Second)
	}
	return int64((wait + time.Second - 1) / time.Second)
}

// retryAfterWait returns the wait a sender parses from the header h when
// it receives it at now, as strategies.ParseRetryAfter does: a date in
// the past means now.
func retryAfterWait(h int64, format strategies.RetryAfterFormat, now time.Duration) time.Duration {
	if format == strategies.RetryAfterHTTPDate {
		return max(time.Duration(h)*time.Second-now, 0)
	}
	return time.Duration(h) * time.Second
}

// sender is one sender's state beyond the strategy's: its dispatcher.
type sender struct {
	retry strategies.Sender
	pool  Pool
}

// push appends x to s, doubling its capacity when it is full (in a
// hugeSlice), where append grows a large slice by a quarter: a run's
// calls and jobs grow to hundreds of thousands where their count is not
// known ahead, and each growth copies them all into fresh memory.
//
// It appends through a pointer, so that the compiler stores only the
// length where the slice has room: storing the whole slice back, its
// pointer too, would take the garbage collector's write barrier while it
// marks, a third of a million times in a run of million.yaml.
func push[T any](s *[]T, x T) {
	if len(*s) == cap(*s) {
		*s = append(hugeSlice[T](max(2*cap(*s), 8)), *s...)
	}
	*s = append(*s, x)
}
