package sim

import (
	"testing"
	"unsafe"
)

// TestPrefetchGraphStopsAndLoadsOnlyJobs: prefetchGraph returns on no
// events, and reads only a job's call, inside jobs: calls and creation
// times out of range either side, of kinds inside and outside each mask,
// with nothing to prefetch from (nil), must not fault; nor may a job
// event whose job is out of range, or whose job names a call out of
// range.
func TestPrefetchGraphStopsAndLoadsOnlyJobs(t *testing.T) {
	calls := make([]call, 4)
	created := make([]int64, 4)
	jobs := make([]job, 3)
	jobs[0].call, jobs[1].call, jobs[2].call = 2, -1, 9
	events := []event{
		newEvent(1, 1, gTry, -1, 0),
		newEvent(2, 2, gTry, 4, 0),
		newEvent(3, 3, gResponse, 3, 0),
		newEvent(4, 4, gWorkDone, 0, 7),
		newEvent(5, 5, gAtService, 1, 0),
		newEvent(6, 6, gAtService, 2, 0),
		newEvent(7, 7, gAtService, 3, 0),
		newEvent(8, 8, gAtService, -1, 0),
		newEvent(9, 9, 63, 2, 0),
	}
	prefetchGraph(events[:0], nil, 0, nil, nil, 0, callEvents, jobEvents, endsCall)
	prefetchGraph(events, nil, 1<<20, nil, nil, 0, ^uint64(0), 0, ^uint64(0))
	prefetchGraph(events, nil, 1<<20, nil, nil, 0, 0, ^uint64(0), ^uint64(0))
	prefetchGraph(events, unsafe.Pointer(&calls[0]), len(calls), unsafe.Pointer(&created[0]), unsafe.Pointer(&jobs[0]), len(jobs), callEvents, jobEvents|1<<63, endsCall|1<<63)
}
