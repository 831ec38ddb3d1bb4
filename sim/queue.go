package sim

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// event is one scheduled happening: 24 bytes.
type event struct {
	at time.Duration // virtual time since the start of the run
	// sk is the sequence number push assigned, FIFO among equal times,
	// shifted left by 8, and the kind of event (the engine's enum) in
	// the low byte: as sequence numbers differ, sk orders as they do.
	sk   uint64
	a, b int32 // payload: e.g. a request index and an attempt tag
}

// newEvent returns the event of kind at time at with sequence number seq
// (below 2^56) and payload a, b.
func newEvent(at time.Duration, seq uint64, kind uint8, a, b int32) event {
	return event{at: at, sk: seq<<8 | uint64(kind), a: a, b: b}
}

// kind returns what happens.
func (e *event) kind() uint8 { return uint8(e.sk) }

// eventBefore reports whether x pops before y: the earlier time first, and
// among equal times the lower sequence number (the earlier push).
func eventBefore(x, y *event) bool {
	return x.at < y.at || (x.at == y.at && x.sk < y.sk)
}

// eventCmp is eventBefore as a three-way comparison, for slices.SortFunc.
func eventCmp(x, y event) int {
	switch {
	case eventBefore(&x, &y):
		return -1
	case eventBefore(&y, &x):
		return 1
	}
	return 0
}

// eventQueue is the simulator's event list: the timing wheel, which
// BenchmarkEngine shows faster than the heap at every size and density
// measured. Both implement the same methods with the same results.
type eventQueue = wheelQueue

// newEventQueue returns an empty event list.
func newEventQueue() *eventQueue { return newWheelQueue() }

// heapQueue is a binary min-heap of events ordered by (at, seq): the
// baseline event list and a building block of wheelQueue. (A 4-ary heap,
// tried when events were 32 bytes, was 7-20% slower at every size from 10
// to 10^6: moving them cost more than the levels it saved.)
//
// The zero value is an empty queue. It is not safe for concurrent use.
type heapQueue struct {
	items []event
	seq   uint64 // the next sequence number push assigns
}

// newHeapQueue returns an empty heap.
func newHeapQueue() *heapQueue { return &heapQueue{} }

// push schedules an event at virtual time at.
func (q *heapQueue) push(at time.Duration, kind uint8, a, b int32) {
	// As pushEvent, but the new seq is the largest: it sorts after every
	// event of its time. The fields are written in place, which spares a
	// store-forwarding stall.
	q.items = append(q.items, event{})
	h := q.items
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if at >= h[p].at {
			break
		}
		h[i] = h[p]
		i = p
	}
	e := &h[i]
	e.at, e.sk, e.a, e.b = at, q.seq<<8|uint64(kind), a, b
	q.seq++
}

// pop removes and returns the next event: the earliest, and among equal
// times the first pushed. ok is false when the queue is empty.
func (q *heapQueue) pop() (e event, ok bool) {
	if len(q.items) == 0 {
		return event{}, false
	}
	return q.popEvent(), true
}

// len returns the number of pending events.
func (q *heapQueue) len() int { return len(q.items) }

// peekTime returns the time of the next event; ok is false when the queue
// is empty.
func (q *heapQueue) peekTime() (at time.Duration, ok bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].at, true
}

// pushEvent adds e, whose seq is already assigned.
func (q *heapQueue) pushEvent(e event) {
	q.items = append(q.items, e)
	h := q.items
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !eventBefore(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// popEvent removes and returns the minimum. The heap must not be empty.
func (q *heapQueue) popEvent() event {
	h := q.items
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	q.items = h
	if n > 0 {
		heapDown(h, 0, last)
	}
	return top
}

// heapDown fills the hole at i with e, moving e down to its place.
func heapDown(h []event, i int, e event) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && eventBefore(&h[c+1], &h[c]) {
			c++
		}
		if !eventBefore(&h[c], &e) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = e
}

// heapify makes h a heap in O(len(h)).
func heapify(h []event) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i, h[i])
	}
}

// sortEvents sorts h by (at, seq): insertion sort when short or already
// sorted (a slot filled in time order), pdqsort otherwise.
func sortEvents(h []event) {
	if len(h) > 32 {
		sorted := true
		for i := 1; i < len(h); i++ {
			if eventBefore(&h[i], &h[i-1]) {
				sorted = false
				break
			}
		}
		if !sorted {
			slices.SortFunc(h, eventCmp)
		}
		return
	}
	for i := 1; i < len(h); i++ {
		e := h[i]
		j := i
		for ; j > 0 && eventBefore(&e, &h[j-1]); j-- {
			h[j] = h[j-1]
		}
		h[j] = e
	}
}

// Tuning of wheelQueue, chosen with BenchmarkEngine.
const (
	// wheelTarget = 2^wheelTargetBits is the number of distinct times a
	// slot near the head should hold.
	wheelTargetBits = 3
	wheelTarget     = 1 << wheelTargetBits
	// A page has 2^wheelMinPageBits slots (about 8192 events, whose
	// chunks stay in cache while the page is served), or up to
	// 2^wheelMaxPageBits where the ring would otherwise need more than
	// 2^wheelTailBits pages: each page's tail chunk is being written, and
	// too many tails leave the cache. (With 512 slots, at 10^7 events the
	// ring's 16,384 pages took a sixth more time than with 1024. With
	// 1024, its 32,768 pages took a third more time than 2,048 to 4,096
	// pages of up to 8192 slots, and 8,192 pages an eighth more.)
	wheelMinPageBits = 10
	wheelMaxPageBits = 13
	wheelTailBits    = 11
	// The ring has between 2^wheelMinRingBits and 2^wheelMaxRingBits pages.
	wheelMinRingBits = 6
	wheelMaxRingBits = 16
	// wheelChunkLen is the number of events in one chunk of a list: a chunk
	// is 1 KiB.
	wheelChunkLen = 42
	// Chunks are allocated in blocks of 2^wheelBlockBits, never moved.
	wheelBlockBits = 6
	wheelBlockLen  = 1 << wheelBlockBits
	// Past wheelSlabFrom blocks (4 MiB), blocks are cut from slabs of up
	// to wheelMaxSlab blocks (16 MiB).
	wheelSlabFrom = 64
	wheelMaxSlab  = 256
	// wheelCheckEvery is how many loaded events pass between looks at the
	// statistics.
	wheelCheckEvery = 4096
	// wheelMinGrow is the smallest queue length that triggers a look on push.
	wheelMinGrow = 1024
)

// wheelChunk holds up to wheelChunkLen events of a list. A list's chunks
// are linked through next, a chunk number (see wheelQueue.chunk); 0 ends it.
type wheelChunk struct {
	next int32
	_    [4]byte
	ev   [wheelChunkLen]event
	_    [8]byte
}

// wheelList is a slot or a page: a list of chunks in push order, all full
// but the tail, which holds tailN events; head and tail are 0 when empty.
type wheelList struct{ head, tail, tailN int32 }

// wheelQueue is a two-level timing wheel (a calendar queue) that exploits
// monotone time. Virtual time is cut into slots of 2^shift ns, and slots
// into pages of 2^pageBits slots:
//
//   - run holds, sorted, the events of the slot being served (cur) and of
//     earlier slots; side, a small heapQueue, holds those pushed there
//     after the run was sorted. pop takes the lesser of their heads.
//   - An event in one of the next 2^ringBits-1 pages is appended, unsorted,
//     to its page's list of chunks on the ring. When the current page is
//     exhausted, the next occupied one (found in a bitmap) is spread:
//     counting-sorted by slot into one buffer. The page lists are few, so
//     their tails tend to stay in cache, and a page is read back
//     sequentially.
//   - An event later in the current page, pushed after it was spread, is
//     appended to its slot's list. When run and side are empty, the next
//     occupied slot (found in a bitmap) is loaded into run and sorted: a
//     few events, insertion-sorted.
//   - overflow, a heapQueue, holds the events beyond the ring; they move
//     onto it as it turns. When the ring is empty it jumps straight to
//     overflow's minimum, so empty stretches cost nothing.
//
// The slot width and the ring size adapt to the density of the pending
// events. Every wheelCheckEvery loaded events (and when the queue grows
// 4x), wheelQueue looks at the work they took: distinct times per loaded
// slot, events migrated from overflow, bitmap words scanned. When that
// shows a poor fit, it picks a slot width that brings the slots to about
// wheelTarget distinct times, and a ring four times as long as the span
// that holds 99.9% of the pending events (with no more pages than
// events, and pages of more slots rather than more than 2^wheelTailBits
// pages), and re-buckets everything. (Covering 95%, at 10^7 requests the
// retries drifting later as their backoff grew kept 14% of the events in
// overflow, whose pops then took an eighth of the run; covering 99.9%
// exactly, the retries of the events pending, pushed up to a backoff
// beyond them, filled overflow with a million events, whose heap, grown
// by appending, left 130 MB of garbage at the run's peak.) A
// re-bucketing costs O(len) and is
// allowed only once per len/2 pushes and pops (up to 16 times that after
// looks that changed nothing), so it is amortized O(1).
//
// Pops come out in exactly the order of heapQueue: by time, then by push
// order. Monotone time (no push before the last pop) is what makes it
// fast, not what makes it correct.
//
// The zero value is not usable; call newWheelQueue. It is not safe for
// concurrent use.
type wheelQueue struct {
	run      []event // sorted; run[runPos:] are pending
	runPos   int
	side     heapQueue // slots <= cur, pushed after run was sorted
	overflow heapQueue // pages >= page + 2^ringBits

	// The slots of the current page after cur: slot k's events are
	// spread[spreadOff[k]:spreadOff[k+1]], as the page was spread, and
	// those in the list slots[k], pushed since. slotsUsed marks the slots
	// with events.
	// They are slices of 2^pageBits slots (spreadOff one more).
	spread    []event
	spreadOff []int32
	slots     []wheelList
	slotsUsed []uint64
	fill      []int32 // turnPage's cursors into spread

	ring     []wheelList // pages after the current one, by page mod 2^ringBits
	ringUsed []uint64
	// Chunk c is blocks[c/wheelBlockLen][c%wheelBlockLen]. The blocks are
	// slices, not pointers to arrays, so that reaching a chunk checks a
	// length beside the block's address rather than nil-checking the
	// block by loading its first byte: at 10^7 events that load missed
	// the cache on most pushes.
	blocks  [][]wheelChunk
	slab    []wheelChunk // allocated for blocks to come
	nChunks int32        // chunks allocated; chunk 0 is never used
	scratch []wheelList  // for rebuild
	// The free chunks of the slots and of the ring, each a list (0 when
	// empty). Kept apart so that a ring chunk, read when its page is
	// spread, is reused while in cache, for the ring.
	freeSlot, freeRing int32

	shift    uint  // slot width is 2^shift ns
	pageBits uint  // a page has 2^pageBits slots
	pageMask int64 // 2^pageBits - 1
	ringBits uint  // the ring has 2^ringBits pages
	ringMask int64 // 2^ringBits - 1
	cur      int64 // the slot served by run and side: slot(at) = at >> shift
	page     int64 // the current page: slot >> pageBits
	inSlots  int   // events in slots
	inRing   int   // events in ring
	n        int   // all pending events
	seq      uint64
	loads    uint64 // runs loaded from the slots, ever

	// Adaptation.
	rebuildOps int  // pushes and pops at the last look at all events
	nRebuild   int  // n at the last look at all events
	growAt     int  // n that triggers a look on push
	sideAt     int  // the side's length that triggers one
	backoff    uint // looks that changed nothing since the last rebuild
	rebuilds   int  // re-bucketings, ever

	// Work since the last check.
	winLoads    int // slots loaded into run
	winLoaded   int // events loaded into run
	winTies     int // of which at the time of the previous one in the run
	winMigrated int // events moved from overflow
	winScanned  int // bitmap words scanned
}

// newWheelQueue returns an empty timing wheel with slots of about 1 ms and
// 64 pages of 0.5 s; both adapt as events arrive.
func newWheelQueue() *wheelQueue {
	q, _ := queuePool.Get().(*wheelQueue)
	if q == nil {
		q = &wheelQueue{}
	}
	// A released queue keeps only its memory: its chunks are unused
	// again, and newChunk expects a chunk it has not handed out to have
	// next 0.
	for _, b := range q.blocks {
		for i := range b {
			b[i].next = 0
		}
	}
	q.nChunks, q.nRebuild, q.growAt, q.sideAt, q.cur = 1, wheelMinGrow/4, wheelMinGrow, wheelCheckEvery, -1
	q.resize(20, wheelMinPageBits, wheelMinRingBits)
	return q
}

// resize sets the slot width to 2^shift ns, the page to 2^pageBits slots
// and the ring to 2^ringBits pages, and empties spread, the slots and the
// ring (without freeing their chunks).
func (q *wheelQueue) resize(shift, pageBits, ringBits uint) {
	q.shift, q.pageBits, q.pageMask = shift, pageBits, 1<<pageBits-1
	q.ringBits, q.ringMask = ringBits, 1<<ringBits-1
	q.spreadOff = zeroed(q.spreadOff, 1<<pageBits+1)
	q.slots = zeroed(q.slots, 1<<pageBits)
	q.slotsUsed = zeroed(q.slotsUsed, 1<<pageBits/64)
	q.ring = zeroed(q.ring, 1<<ringBits)
	q.ringUsed = zeroed(q.ringUsed, 1<<ringBits/64)
}

// zeroed returns s resliced to length n and cleared, or a new slice if
// its capacity is short.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// pageSlots returns the number of slots in a page.
func (q *wheelQueue) pageSlots() int { return 1 << (q.pageBits & 63) }

// slotOf returns the slot of time at. (The shifts are under 64: masking
// them says so, and spares each the compiler's guard for a longer one,
// four instructions natively and more in WebAssembly.)
func (q *wheelQueue) slotOf(at time.Duration) int64 { return int64(at) >> (q.shift & 63) }

// pageOf returns the page of slot s.
func (q *wheelQueue) pageOf(s int64) int64 { return s >> (q.pageBits & 63) }

// pageStart returns the first slot of page p.
func (q *wheelQueue) pageStart(p int64) int64 { return p << (q.pageBits & 63) }

// unloaded returns the events spread into the current page's slots after
// cur: those not yet loaded into run.
func (q *wheelQueue) unloaded() []event {
	return q.spread[q.spreadOff[q.cur+1-q.pageStart(q.page)]:q.spreadOff[q.pageSlots()]]
}

// ops returns the number of pushes and pops, ever.
func (q *wheelQueue) ops() int { return 2*int(q.seq) - q.n }

// push schedules an event at virtual time at.
func (q *wheelQueue) push(at time.Duration, kind uint8, a, b int32) {
	// Writing the fields in place, rather than copying an event built on
	// the stack, spares a store-forwarding stall.
	crowded := false
	if dst := q.reserve(at); dst != nil {
		dst.at, dst.sk, dst.a, dst.b = at, q.seq<<8|uint64(kind), a, b
	} else {
		q.placeNear(newEvent(at, q.seq, kind, a, b))
		crowded = len(q.side.items) > q.sideAt // only placeNear adds to side
	}
	q.seq++
	q.n++
	if q.n > q.growAt || crowded {
		q.check() // with the event counted
	}
}

// pop removes and returns the next event: the earliest, and among equal
// times the first pushed. ok is false when the queue is empty.
func (q *wheelQueue) pop() (e event, ok bool) {
	if i := q.runPos; i < len(q.run) && len(q.side.items) == 0 {
		q.runPos = i + 1
		q.n--
		return q.run[i], true
	}
	return q.popSlow()
}

func (q *wheelQueue) popSlow() (e event, ok bool) {
	if q.runPos == len(q.run) && len(q.side.items) == 0 && !q.advance() {
		return event{}, false
	}
	q.n--
	if q.runPos < len(q.run) {
		r := &q.run[q.runPos]
		if len(q.side.items) == 0 || !eventBefore(&q.side.items[0], r) {
			q.runPos++
			return *r, true
		}
	}
	return q.side.popEvent(), true
}

// len returns the number of pending events.
func (q *wheelQueue) len() int { return q.n }

// upcoming returns the events of the sorted run being served that are
// still to come. It is a hint for prefetching, not a promise of order:
// events pushed since may come first. The slice must not be changed.
func (q *wheelQueue) upcoming() []event {
	return q.run[q.runPos:]
}

// loaded returns a number that changes whenever a new run is loaded.
func (q *wheelQueue) loaded() uint64 { return q.loads }

// following returns the events that were spread into the next occupied
// slot of the current page, after the run being served: those the run
// after this one starts with. Like upcoming, it is only a hint.
func (q *wheelQueue) following() []event {
	if (q.cur+1)&q.pageMask == 0 {
		return nil // the next slot is on another page
	}
	i, _, ok := q.nextSlot()
	if !ok {
		return nil
	}
	return q.spread[q.spreadOff[i]:q.spreadOff[i+1]]
}

// nextSlot returns the next occupied slot of the current page after cur,
// and the empty bitmap words it passed; ok is false when there is none.
func (q *wheelQueue) nextSlot() (i, scanned int, ok bool) {
	start := int((q.cur + 1) & q.pageMask)
	w := start >> 6
	word := q.slotsUsed[w] &^ (1<<(start&63) - 1)
	for word == 0 {
		if w++; w == len(q.slotsUsed) {
			return 0, scanned, false
		}
		word = q.slotsUsed[w]
		scanned++
	}
	return w<<6 + bits.TrailingZeros64(word), scanned, true
}

// nextPage returns the ring's index of the next occupied page after the
// current one, and the empty bitmap words it passed. The ring must not be
// empty.
func (q *wheelQueue) nextPage() (i, scanned int) {
	start := int((q.page + 1) & q.ringMask)
	w := start >> 6
	word := q.ringUsed[w] &^ (1<<(start&63) - 1)
	last := len(q.ringUsed) - 1 // a power of two minus one
	for word == 0 {
		// Wrapping round to the start word sees its low bits: the far end
		// of the ring.
		w = (w + 1) & last
		word = q.ringUsed[w]
		scanned++
	}
	return w<<6 + bits.TrailingZeros64(word), scanned
}

// peekTime returns the time of the next event; ok is false when the queue
// is empty. It may turn the wheel, which changes no later result.
func (q *wheelQueue) peekTime() (at time.Duration, ok bool) {
	if q.runPos == len(q.run) && len(q.side.items) == 0 && !q.advance() {
		return 0, false
	}
	if q.runPos < len(q.run) {
		r := &q.run[q.runPos]
		if len(q.side.items) == 0 || !eventBefore(&q.side.items[0], r) {
			return r.at, true
		}
	}
	return q.side.items[0].at, true
}

// reserve returns where to store an event at time at if it goes to a slot
// or to the ring, and nil if it goes to run, side or overflow (placeNear).
func (q *wheelQueue) reserve(at time.Duration) *event {
	s := q.slotOf(at)
	if s <= q.cur {
		return nil
	}
	// s > cur >= page<<pageBits - 1, so p >= page.
	switch p := q.pageOf(s); {
	case p == q.page:
		i := int(s & q.pageMask)
		q.inSlots++
		return q.add(&q.slots[i], &q.slotsUsed[i>>6], i, &q.freeSlot)
	case p-q.page <= q.ringMask:
		i := int(p & q.ringMask)
		q.inRing++
		return q.add(&q.ring[i], &q.ringUsed[i>>6], i, &q.freeRing)
	}
	return nil
}

// place files e.
func (q *wheelQueue) place(e *event) {
	if dst := q.reserve(e.at); dst != nil {
		*dst = *e
	} else {
		q.placeNear(*e)
	}
}

// placeNear files e where reserve does not: before the slots in run or
// side, beyond the ring in overflow.
func (q *wheelQueue) placeNear(e event) {
	if q.slotOf(e.at) > q.cur {
		q.overflow.pushEvent(e)
		return
	}
	if len(q.side.items) == 0 {
		if q.runPos == len(q.run) {
			q.run, q.runPos = append(q.run[:0], e), 0
			return
		}
		if last := &q.run[len(q.run)-1]; !eventBefore(&e, last) {
			if len(q.run) == cap(q.run) && q.runPos >= len(q.run)/2 {
				// Reclaim the popped half rather than grow (events
				// pushed at the current time, forever, would).
				q.run = q.run[:copy(q.run, q.run[q.runPos:])]
				q.runPos = 0
			}
			q.run = append(q.run, e)
			return
		}
	}
	q.side.pushEvent(e)
}

// add appends an event to list l, number i of its level, whose bit is in
// *used, and returns where to store it.
func (q *wheelQueue) add(l *wheelList, used *uint64, i int, free *int32) *event {
	if l.tail == 0 || l.tailN == wheelChunkLen {
		q.addChunk(l, used, i, free)
	}
	l.tailN++
	ch := q.chunk(l.tail)
	if n := l.tailN; n < wheelChunkLen {
		// If the list's next event ends in a cache line this one does not
		// reach, fetch it: left since the chunk was taken, it has likely
		// left the cache.
		const size = unsafe.Sizeof(event{})
		end := unsafe.Offsetof(ch.ev) + uintptr(n+1)*size - 1
		if end/64 != (end-size)/64 {
			prefetch(unsafe.Add(unsafe.Pointer(ch), end))
		}
	}
	return &ch.ev[l.tailN-1]
}

// addChunk appends an empty chunk to list l (see add).
func (q *wheelQueue) addChunk(l *wheelList, used *uint64, i int, free *int32) {
	c := q.newChunk(free)
	if l.tail == 0 {
		l.head = c
		*used |= 1 << (i & 63)
	} else {
		q.chunk(l.tail).next = c
	}
	l.tail, l.tailN = c, 0
}

// chunk returns chunk number c.
func (q *wheelQueue) chunk(c int32) *wheelChunk {
	return &q.blocks[c>>wheelBlockBits][c&(wheelBlockLen-1)]
}

// events returns the events of chunk c of l.
func (q *wheelQueue) events(l *wheelList, c int32) []event {
	if c == l.tail {
		return q.chunk(c).ev[:l.tailN]
	}
	return q.chunk(c).ev[:]
}

// newChunk returns the index of an empty chunk, reusing one of the free
// list *free, else of the other free list, if it can.
func (q *wheelQueue) newChunk(free *int32) int32 {
	if *free == 0 {
		free = &q.freeSlot
		if q.freeSlot == 0 {
			free = &q.freeRing
		}
	}
	c := *free
	if c == 0 {
		if q.nChunks == math.MaxInt32 {
			panic("sim: event queue: too many events")
		}
		if int(q.nChunks)>>wheelBlockBits == len(q.blocks) {
			q.blocks = append(q.blocks, q.newBlock())
		}
		c = q.nChunks
		q.nChunks++
		return c
	}
	ch := q.chunk(c)
	*free = ch.next
	ch.next = 0
	return c
}

// newBlock returns a new block of chunks. Past wheelSlabFrom blocks, it
// cuts them from a slab of as many blocks as the queue has (up to
// wheelMaxSlab): a large queue's chunks are then in memory that huge
// pages can back (adviseHuge). slabAhead bounds what that allocates ahead
// of use.
func (q *wheelQueue) newBlock() []wheelChunk {
	if len(q.blocks) < wheelSlabFrom {
		return make([]wheelChunk, wheelBlockLen)
	}
	if len(q.slab) == 0 {
		n := min(len(q.blocks), wheelMaxSlab) * wheelBlockLen
		q.slab = make([]wheelChunk, n)
		adviseHuge(unsafe.Pointer(unsafe.SliceData(q.slab)), uintptr(n)*unsafe.Sizeof(wheelChunk{}))
	}
	b := q.slab[:wheelBlockLen:wheelBlockLen]
	q.slab = q.slab[wheelBlockLen:]
	return b
}

// slabAhead returns the most that a queue whose chunks take used bytes
// may have allocated beyond them, in the slab being cut (newBlock).
func slabAhead(used int64) int64 {
	block := int64(unsafe.Sizeof(wheelChunk{})) * wheelBlockLen
	if used < wheelSlabFrom*block {
		return 0
	}
	return min(used, wheelMaxSlab*block)
}

// queuePool holds the queues of finished small runs, for other runs to
// use. A queue's chunks come in blocks of 64 KiB, and its slots are 9 KiB:
// a small run, with a few events, spent most of its time allocating and
// zeroing them.
var queuePool sync.Pool

// pooledBlocks is how many chunk blocks a finished queue may keep in
// queuePool: a small run's. A large run's queue is freed, not kept.
const pooledBlocks = 4

// release ends the queue's use: a small queue goes to queuePool, for
// newWheelQueue to reuse, and a large one to the garbage collector. The
// queue must not be used after it.
func (q *wheelQueue) release() {
	small := len(q.blocks) <= pooledBlocks && cap(q.ring) <= 1<<wheelMinRingBits && cap(q.slots) <= 1<<wheelMinPageBits &&
		max(cap(q.run), cap(q.spread), cap(q.scratch), cap(q.side.items), cap(q.overflow.items)) <= 1<<wheelMinPageBits*wheelTarget
	if !small {
		*q = wheelQueue{}
		return
	}
	keep := wheelQueue{run: q.run[:0], spread: q.spread[:0], scratch: q.scratch[:0], ring: q.ring, ringUsed: q.ringUsed, blocks: q.blocks,
		slots: q.slots, slotsUsed: q.slotsUsed, spreadOff: q.spreadOff, fill: q.fill}
	keep.side.items, keep.overflow.items = q.side.items[:0], q.overflow.items[:0]
	*q = keep
	queuePool.Put(q)
}

// freeChunk adds chunk c to the free list *free and returns its successor.
func (q *wheelQueue) freeChunk(c int32, free *int32) (next int32) {
	ch := q.chunk(c)
	next = ch.next
	ch.next = *free
	*free = c
	return next
}

// advance turns the wheel so that run holds the next events. run and side
// must be empty. It returns false when the queue is empty.
func (q *wheelQueue) advance() bool {
	if q.winLoaded >= wheelCheckEvery {
		q.check()
	}
	if q.n == 0 {
		return false
	}
	for q.inSlots == 0 {
		q.turnPage()
	}
	// The next occupied slot of the page: there is one, as inSlots > 0.
	i, scanned, _ := q.nextSlot()
	q.winScanned += scanned
	q.cur = q.pageStart(q.page) + int64(i)

	// Load it into run.
	q.run, q.runPos = append(q.run[:0], q.spread[q.spreadOff[i]:q.spreadOff[i+1]]...), 0
	l := &q.slots[i]
	for c := l.head; c != 0; {
		q.run = append(q.run, q.events(l, c)...)
		c = q.freeChunk(c, &q.freeSlot)
	}
	*l = wheelList{}
	q.slotsUsed[i>>6] &^= 1 << (i & 63)
	q.inSlots -= len(q.run)
	sortEvents(q.run)

	q.loads++
	q.winLoads++
	q.winLoaded += len(q.run)
	for j := 1; j < len(q.run); j++ {
		if q.run[j].at == q.run[j-1].at {
			q.winTies++
		}
	}
	return true
}

// turnPage moves to the next page that holds events, spreads its events
// into the slots, and moves the events of overflow that the ring now
// covers onto it. run, side and slots must be empty; the queue must not.
func (q *wheelQueue) turnPage() {
	if q.inRing == 0 {
		// Nothing on the ring: jump to the earliest event beyond it.
		q.page = q.pageOf(q.slotOf(q.overflow.items[0].at))
		q.cur = q.pageStart(q.page) - 1
		clear(q.spreadOff)
		q.migrate()
		return
	}
	i, scanned := q.nextPage()
	q.winScanned += scanned
	q.page += 1 + (int64(i)-q.page-1)&q.ringMask
	q.cur = q.pageStart(q.page) - 1

	// Spread the page into the slots: a counting sort into spread.
	l := &q.ring[i]
	slots := q.pageSlots()
	off := q.spreadOff
	clear(off)
	for c := l.head; c != 0; c = q.chunk(c).next {
		if next := q.chunk(c).next; next != 0 {
			// Written long ago, the page's chunks have left the cache.
			ch := unsafe.Pointer(q.chunk(next))
			for o := uintptr(0); o < unsafe.Sizeof(wheelChunk{}); o += 64 {
				prefetch(unsafe.Add(ch, o))
			}
		}
		ev := q.events(l, c)
		for j := range ev {
			k := int(q.slotOf(ev[j].at) & q.pageMask)
			off[k+1]++
			q.slotsUsed[k>>6] |= 1 << (k & 63)
		}
	}
	// The sums in a register: summing in place, each slot's would wait
	// for the store of the one before (a page turned in a small run
	// spent most of its time there).
	sum, cum := int32(0), off[1:slots+1]
	for k, m := range cum {
		sum += m
		cum[k] = sum
	}
	n := int(off[slots])
	q.spread = slices.Grow(q.spread[:0], n)[:n]
	q.fill = slices.Grow(q.fill[:0], slots)[:slots]
	fill := q.fill
	copy(fill, off)
	for c := l.head; c != 0; {
		ev := q.events(l, c)
		for j := range ev {
			k := int(q.slotOf(ev[j].at) & q.pageMask)
			q.spread[fill[k]] = ev[j]
			fill[k]++
		}
		c = q.freeChunk(c, &q.freeRing)
	}
	q.inSlots += n
	q.inRing -= n
	*l = wheelList{}
	q.ringUsed[i>>6] &^= 1 << (i & 63)
	q.migrate()
}

// migrate moves the events of overflow that the ring now covers onto it.
func (q *wheelQueue) migrate() {
	for len(q.overflow.items) > 0 {
		p := q.pageOf(q.slotOf(q.overflow.items[0].at))
		if p-q.page > q.ringMask { // p >= page
			return
		}
		e := q.overflow.popEvent()
		q.place(&e)
		q.winMigrated++
	}
}

// check looks at the work done since the last check and re-buckets when it
// shows the slot width or the ring fits the pending events poorly.
//
// The slot width is judged by the distinct times per loaded slot (no width
// could split equal times): outside [wheelTarget/2, 2*wheelTarget] it is
// poor, and the width is scaled to bring it to wheelTarget. Without enough
// loads to judge by (while the queue fills), fit estimates the width from
// the pending events.
func (q *wheelQueue) check() {
	loaded := max(q.winLoaded, 1)
	// Distinct times per loaded slot, if known: from 64 slots, or from
	// a full window of events in fewer (slots of more than 64 events,
	// which would otherwise never be judged too wide), but at least 8.
	perSlot := 0.0
	if q.winLoads >= 64 || q.winLoads >= 8 && q.winLoaded >= wheelCheckEvery {
		perSlot = float64(q.winLoaded-q.winTies) / float64(q.winLoads)
	}
	// A side heap of an eighth of the pending events: the slot being
	// served is too wide for the events pushed into it, each of which
	// then costs a heap's push and pop. (A burst's first fit, from the
	// few times pending, made it minutes wide: every retry of the
	// burst's lockstep herd went to side.) Every event in side was
	// pushed since the last re-bucketing, so one now is amortized too.
	crowded := len(q.side.items) > max(q.n/8, wheelCheckEvery)
	poor := perSlot > 0 && (perSlot < wheelTarget/2 || perSlot > 2*wheelTarget) ||
		q.winMigrated*8 > loaded || // ring too short
		q.winScanned > 2*loaded || // slots too narrow or ring too large
		q.n > 4*q.nRebuild || 4*q.n < q.nRebuild
	q.winLoads, q.winLoaded, q.winTies, q.winMigrated, q.winScanned = 0, 0, 0, 0, 0
	q.growAt = max(4*q.n, wheelMinGrow)
	q.sideAt = max(2*len(q.side.items), q.n/8, wheelCheckEvery)
	if !crowded && (!poor || q.n == 0 || q.ops()-q.rebuildOps < max(q.n/2, wheelCheckEvery)<<q.backoff) {
		return
	}
	shift, spanBits, base := q.fit()
	// The loads' distinct times say how wide a slot should be, but
	// a crowded side says it is too wide already: the loads of a
	// lockstep herd hold one time each, and would widen it.
	if perSlot > 0 && !crowded {
		d := int(math.Round(math.Log2(wheelTarget / perSlot)))
		shift = uint(min(max(int(q.shift)+d, 0), 62-wheelMaxPageBits))
	}
	// Four times the span of the pending events, for the retries they
	// push later; no more pages than pending events: a ring stretched to
	// reach a few far events (a replay hours away) would be mostly empty.
	// Past 2^wheelTailBits pages, wider pages rather than more.
	ringBits := uint(min(max(min(spanBits+2-int(shift)-wheelMinPageBits, bits.Len(uint(q.n))), wheelMinRingBits), wheelMaxRingBits))
	pageBits := wheelMinPageBits + min(ringBits-min(ringBits, wheelTailBits), wheelMaxPageBits-wheelMinPageBits)
	ringBits -= pageBits - wheelMinPageBits
	q.rebuildOps, q.nRebuild = q.ops(), q.n
	if shift == q.shift && pageBits == q.pageBits && absDiff(ringBits, q.ringBits) <= 1 {
		q.backoff = min(q.backoff+1, 4)
		return
	}
	q.backoff = 0
	q.rebuild(shift, pageBits, ringBits, base)
}

func absDiff(x, y uint) uint {
	if x > y {
		return x - y
	}
	return y - x
}

// each calls f on slices that hold every pending event once, in no
// particular order.
func (q *wheelQueue) each(f func(ev []event)) {
	f(q.run[q.runPos:])
	f(q.side.items)
	f(q.overflow.items)
	f(q.unloaded())
	for _, lists := range [][]wheelList{q.slots, q.ring} {
		for i := range lists {
			l := &lists[i]
			for c := l.head; c != 0; c = q.chunk(c).next {
				f(q.events(l, c))
			}
		}
	}
}

// fitSample is about how many pending events fit measures: every
// (len/fitSample)th.
const fitSample = 1 << 16

// fit measures the pending events and returns the slot width (2^shift ns)
// that suits them, the span (2^spanBits ns) the ring should cover, and the
// earliest time, base. With o the offset of an event from base and C(x) the
// number of events with 0 < o < x:
//
//	width = wheelTarget * X / C(X), X the least power of two with C(X) >= C(inf)/2
//	span  = the least power of two that covers 99.9% of the offsets
//
// C(X)/X estimates the density of events near the head; events at exactly
// base (a burst) are left out, as no width could spread them. Beyond
// fitSample events, C is estimated from a sample of about fitSample, taken
// at a fixed stride: at 10^7 events, measuring them all took a tenth of a
// run's time in its re-bucketings. base is exact.
func (q *wheelQueue) fit() (shift uint, spanBits int, base time.Duration) {
	base = q.earliest()
	stride := max(q.n/fitSample, 1)
	var hist [65]int // hist[k]: sampled events with bits.Len64(o) == k
	skip := 0        // events to pass over before the next one sampled
	q.each(func(ev []event) {
		i := skip
		for ; i < len(ev); i += stride {
			hist[bits.Len64(uint64(ev[i].at-base))]++
		}
		skip = i - len(ev)
	})

	n := 0
	for _, c := range hist {
		n += c
	}
	rest := n - hist[0]
	sum := 0
	for sum = hist[0]; sum*1000 < n*999; sum += hist[spanBits] {
		spanBits++
	}
	shift = q.shift
	if rest > 0 {
		k, c := 1, hist[1]
		for c*2 < rest {
			k++
			c += hist[k]
		}
		// width = wheelTarget * 2^k / C, rounded down to a power of two,
		// with C = c * stride: with 2^(l-1) <= C < 2^l, 2^(k+wheelTargetBits-l)
		// is in [width/2, width).
		shift = uint(min(max(k+wheelTargetBits-bits.Len(uint(c*stride)), 0), 62-wheelMaxPageBits))
	}
	return shift, spanBits, base
}

// earliest returns the time of the earliest pending event without turning
// the wheel: the head of run or side, else the earliest of the next
// occupied slot, else of the next occupied page of the ring, else
// overflow's head. The queue must not be empty.
func (q *wheelQueue) earliest() time.Duration {
	at := time.Duration(math.MaxInt64)
	if q.runPos < len(q.run) {
		at = q.run[q.runPos].at
	}
	if len(q.side.items) > 0 {
		at = min(at, q.side.items[0].at)
	}
	if at != math.MaxInt64 {
		return at // run and side hold the slots up to cur
	}
	var l *wheelList
	switch {
	case q.inSlots > 0:
		i, _, _ := q.nextSlot()
		for _, e := range q.spread[q.spreadOff[i]:q.spreadOff[i+1]] {
			at = min(at, e.at)
		}
		l = &q.slots[i]
	case q.inRing > 0:
		i, _ := q.nextPage()
		l = &q.ring[i]
	default:
		return q.overflow.items[0].at
	}
	for c := l.head; c != 0; c = q.chunk(c).next {
		for _, e := range q.events(l, c) {
			at = min(at, e.at)
		}
	}
	return at
}

// rebuild re-buckets every pending event with slots of 2^shift ns, pages
// of 2^pageBits slots and a ring of 2^ringBits pages, starting at the page
// of base. No event is before base, so place puts none in run or side.
func (q *wheelQueue) rebuild(shift, pageBits, ringBits uint, base time.Duration) {
	old := append(append(q.scratch[:0], q.slots...), q.ring...)
	q.scratch = old
	spread := q.unloaded() // resize empties spreadOff, not spread
	q.resize(shift, pageBits, ringBits)
	q.page = q.pageOf(q.slotOf(base))
	q.cur = q.pageStart(q.page) - 1
	q.inSlots, q.inRing = 0, 0
	q.rebuilds++

	// Overflow, compacted in place.
	of, j := q.overflow.items, 0
	for i := range of {
		if p := q.pageOf(q.slotOf(of[i].at)); p-q.page > q.ringMask {
			of[j] = of[i]
			j++
		} else {
			q.place(&of[i])
		}
	}
	q.overflow.items = of[:j]
	heapify(q.overflow.items)

	for i := q.runPos; i < len(q.run); i++ {
		q.place(&q.run[i])
	}
	for i := range q.side.items {
		q.place(&q.side.items[i])
	}
	for i := range spread {
		q.place(&spread[i])
	}
	q.run, q.runPos = q.run[:0], 0
	q.side.items = q.side.items[:0]

	// The old lists, freeing each chunk once read.
	for i := range old {
		l := &old[i]
		for c := l.head; c != 0; {
			for _, e := range q.events(l, c) {
				q.place(&e)
			}
			c = q.freeChunk(c, &q.freeRing)
		}
	}
}
