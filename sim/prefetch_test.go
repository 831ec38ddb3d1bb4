package sim

import (
	"testing"
	"unsafe"
)

// TestPrefetchRequestsStopsAndNeverLoads: prefetchRequests (assembly on
// amd64) returns on no events, and only prefetches what the others
// name, which cannot fault: requests out of range either side, kinds
// inside and outside ends, with nothing to prefetch from (nil) or
// arrays that hold them. A loop that ran on past an empty slice, or
// that loaded a request or a creation time rather than prefetching it,
// faults here (both mutations were tried).
func TestPrefetchRequestsStopsAndNeverLoads(t *testing.T) {
	reqs := make([]request, 4)
	created := make([]int64, 4)
	events := []event{
		newEvent(1, 1, evServed, -1, 0),
		newEvent(2, 2, evServed, 4, 0),
		newEvent(3, 3, evServed, 3, 0),
		newEvent(4, 4, evTry, 0, 7),
		newEvent(5, 5, 63, 2, 0),
	}
	prefetchRequests(events[:0], nil, 0, nil, endsRequest)
	prefetchRequests(events, nil, 1<<20, nil, ^uint64(0))
	prefetchRequests(events, unsafe.Pointer(&reqs[0]), len(reqs), unsafe.Pointer(&created[0]), endsRequest|1<<63)
}
