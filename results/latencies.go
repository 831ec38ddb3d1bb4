package results

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The latency histograms' geometry: 1 µs to 100 days, 3 significant
// digits. Every run's histogram has it, so that histograms of runs,
// shards and records merge exactly.
const (
	latencyLowest  = 1
	latencyHighest = int64(100 * 24 * time.Hour / time.Microsecond)
	latencyDigits  = 3
)

// denseAfter is how many populated buckets a run's latencies hold before
// they turn dense. The sparse histogram inserts a new bucket in time
// proportional to the buckets it holds; by this many, the dense one's
// 280 KB are the cheaper.
const denseAfter = 1024

// LatencyHistogram returns an empty dense latency histogram of the
// geometry every run uses: 1 µs to 100 days, 3 significant digits.
func LatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(latencyLowest, latencyHighest, latencyDigits)
}

// LatenciesBytes is at most what the latencies of n requests take: n
// buckets at most, sparse, or the dense histogram's counts.
func LatenciesBytes(n float64) int64 {
	if n <= denseAfter {
		// A bucket's index and its count, at most 8 bytes wide, with room
		// to grow: the slices double.
		return 512 + 24*int64(max(n, 0))
	}
	return denseBytes()
}

// denseBytes is the dense histogram's size, measured once.
var denseBytes = sync.OnceValue(func() int64 { return int64(LatencyHistogram().ByteSize()) })

// Latencies are a run's latencies in microseconds, in an HDR histogram of
// LatencyHistogram's geometry. They start sparse (hdrhistogram's
// PackedHistogram: a few bytes a populated bucket, where the dense
// histogram is 280 KB of counts to allocate and zero for every run, most
// of a small run's cost) and turn dense once many buckets are populated.
// The two have the same buckets and answer queries the same way, so when
// they turn changes no figure.
type Latencies struct {
	sparse *hdrhistogram.PackedHistogram // nil once dense
	dense  *hdrhistogram.Histogram
}

// NewLatencies returns empty latencies.
func NewLatencies() *Latencies {
	return &Latencies{sparse: hdrhistogram.NewPacked(latencyLowest, latencyHighest, latencyDigits)}
}

// Record records a latency of us microseconds; one beyond the range is
// clamped to it, not dropped.
func (l *Latencies) Record(us int64) {
	_ = l.Add(min(max(us, latencyLowest), latencyHighest), 1)
}

// Add records n latencies of us microseconds; an error when us is out of
// range or n negative.
func (l *Latencies) Add(us, n int64) error {
	if l.dense != nil {
		return l.dense.RecordValues(us, n)
	}
	if err := l.sparse.RecordValues(us, n); err != nil {
		return err
	}
	if l.sparse.Populated() > denseAfter {
		l.dense = LatencyHistogram()
		l.sparse.MergeInto(l.dense)
		l.sparse = nil
	}
	return nil
}

// TotalCount returns how many latencies there are.
func (l *Latencies) TotalCount() int64 {
	if l.dense != nil {
		return l.dense.TotalCount()
	}
	return l.sparse.TotalCount()
}

// Percentiles returns the latencies at the percentiles ps (0 to 100), as
// the histogram's ValueAtPercentilesSlice: each the highest value of the
// bucket that holds it.
func (l *Latencies) Percentiles(ps ...float64) []int64 {
	if l.dense != nil {
		return l.dense.ValueAtPercentilesSlice(ps)
	}
	return l.sparse.ValueAtPercentilesSlice(ps)
}

// Buckets calls fn with each populated bucket's value (the lowest value
// it holds) and count, in increasing value, until fn returns false.
// Adding them to empty latencies gives these back.
func (l *Latencies) Buckets(fn func(value, count int64) bool) {
	if l.dense == nil {
		l.sparse.ForEachBucket(fn)
		return
	}
	// The dense histogram's buckets, read through a sparse copy: its
	// counts are only exported by index.
	p := hdrhistogram.NewPacked(latencyLowest, latencyHighest, latencyDigits)
	p.MergeFrom(l.dense)
	p.ForEachBucket(fn)
}

// MergeInto adds the latencies to h, a histogram of LatencyHistogram's
// geometry, and returns how many it could not hold.
func (l *Latencies) MergeInto(h *hdrhistogram.Histogram) (dropped int64) {
	if l.dense != nil {
		return h.Merge(l.dense)
	}
	return l.sparse.MergeInto(h)
}

// Histogram returns the latencies as a dense histogram of their own.
func (l *Latencies) Histogram() *hdrhistogram.Histogram {
	h := LatencyHistogram()
	l.MergeInto(h)
	return h
}
