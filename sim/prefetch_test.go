package sim

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPrefetchRequestsReadsOnlyItsEvents: prefetchRequests (assembly on
// amd64) walks exactly the events it is given, whatever their payload:
// none, requests out of range either side, and kinds inside and outside
// ends, with the arrays it prefetches from empty or not. Prefetches
// cannot fault, but a loop that read past its slice or ran on with
// none would crash or hang here, and one that wrote would change them.
func TestPrefetchRequestsReadsOnlyItsEvents(t *testing.T) {
	reqs := make([]request, 4)
	created := make([]int64, 4)
	events := []event{
		newEvent(1, 1, evServed, -1, 0),
		newEvent(2, 2, evServed, 4, 0),
		newEvent(3, 3, evServed, 3, 0),
		newEvent(4, 4, evTry, 0, 7),
		newEvent(5, 5, 63, 2, 0),
	}
	want := append([]event(nil), events...)
	prefetchRequests(events[:0], nil, 0, nil, endsRequest)
	prefetchRequests(events, nil, 0, nil, endsRequest)
	prefetchRequests(events, unsafe.Pointer(&reqs[0]), len(reqs), unsafe.Pointer(&created[0]), endsRequest|1<<63)
	// A slice whose backing array runs on: only its length is walked.
	prefetchRequests(events[1:3], unsafe.Pointer(&reqs[0]), len(reqs), unsafe.Pointer(&created[0]), ^uint64(0))
	assert.Equal(t, want, events)
	assert.Equal(t, make([]request, 4), reqs)
}
