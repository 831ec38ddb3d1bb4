package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queueUnderTest is the event-list API the engine uses.
type queueUnderTest interface {
	push(at time.Duration, kind uint8, a, b int32)
	pop() (event, bool)
	len() int
	peekTime() (time.Duration, bool)
}

var (
	_ queueUnderTest = (*eventQueue)(nil)
	_ queueUnderTest = (*heapQueue)(nil)
	_ queueUnderTest = (*wheelQueue)(nil)
	_ queueUnderTest = (*refQueue)(nil)
)

// queueImpls are the implementations under test.
var queueImpls = []struct {
	name string
	new  func() queueUnderTest
}{
	{"heap", func() queueUnderTest { return newHeapQueue() }},
	{"wheel", func() queueUnderTest { return newWheelQueue() }},
}

// refQueue is the reference event list: the pending events sorted with
// sort.SliceStable by time, so that equal times stay in push order, plus the
// latest pushes in push order, scanned at each pop and sorted in when they
// grow to about the square root of the pending events.
type refQueue struct {
	sorted []event // older pending events, in pop order
	tail   []event // newer pending events, in push order
	seq    uint64
}

func (r *refQueue) push(at time.Duration, kind uint8, a, b int32) {
	r.tail = append(r.tail, newEvent(at, r.seq, kind, a, b))
	r.seq++
	if len(r.tail)*len(r.tail) > max(len(r.sorted), 1<<12) {
		r.settle()
	}
}

// settle sorts the tail stably by time and merges it after the older events
// of equal time.
func (r *refQueue) settle() {
	sort.SliceStable(r.tail, func(i, j int) bool { return r.tail[i].at < r.tail[j].at })
	merged := make([]event, 0, len(r.sorted)+len(r.tail))
	i, j := 0, 0
	for i < len(r.sorted) && j < len(r.tail) {
		if r.tail[j].at < r.sorted[i].at {
			merged = append(merged, r.tail[j])
			j++
		} else {
			merged = append(merged, r.sorted[i])
			i++
		}
	}
	merged = append(merged, r.sorted[i:]...)
	r.sorted = append(merged, r.tail[j:]...)
	r.tail = r.tail[:0]
}

// next returns the index in tail of the next event, or -1 if it is
// sorted[0] (older, so first among equal times).
func (r *refQueue) next() int {
	m := -1
	for i := range r.tail {
		switch {
		case m >= 0:
			if r.tail[i].at < r.tail[m].at {
				m = i
			}
		case len(r.sorted) == 0 || r.tail[i].at < r.sorted[0].at:
			m = i
		}
	}
	return m
}

func (r *refQueue) pop() (event, bool) {
	if r.len() == 0 {
		return event{}, false
	}
	m := r.next()
	if m < 0 {
		e := r.sorted[0]
		r.sorted = r.sorted[1:]
		return e, true
	}
	e := r.tail[m]
	r.tail = append(r.tail[:m], r.tail[m+1:]...)
	return e, true
}

func (r *refQueue) len() int { return len(r.sorted) + len(r.tail) }

func (r *refQueue) peekTime() (time.Duration, bool) {
	if r.len() == 0 {
		return 0, false
	}
	if m := r.next(); m >= 0 {
		return r.tail[m].at, true
	}
	return r.sorted[0].at, true
}

// diffRun drives the reference and every implementation with the same
// operations and fails at the first difference.
type diffRun struct {
	t      *testing.T
	names  []string
	qs     []queueUnderTest // qs[0] is the reference
	now    time.Duration    // time of the last pop
	pushes int
	pops   int
}

func newDiffRun(t *testing.T) *diffRun {
	d := &diffRun{t: t, names: []string{"ref"}, qs: []queueUnderTest{&refQueue{}}}
	for _, impl := range queueImpls {
		d.names = append(d.names, impl.name)
		d.qs = append(d.qs, impl.new())
	}
	return d
}

// wheel returns the timing wheel under test.
func (d *diffRun) wheel() *wheelQueue {
	for _, q := range d.qs {
		if w, ok := q.(*wheelQueue); ok {
			return w
		}
	}
	panic("no wheel under test")
}

// push schedules an event at now+offset with a distinct payload.
func (d *diffRun) push(offset time.Duration) {
	d.t.Helper()
	if offset < 0 {
		d.t.Fatalf("push %d: negative offset %v", d.pushes, offset)
	}
	k := d.pushes
	for _, q := range d.qs {
		q.push(d.now+offset, uint8(k), int32(k), int32(k>>31))
	}
	d.pushes++
}

// pop pops from every queue and compares; it returns false when empty.
func (d *diffRun) pop() bool {
	d.t.Helper()
	want, wok := d.qs[0].pop()
	for i, q := range d.qs[1:] {
		got, ok := q.pop()
		if got != want || ok != wok {
			d.t.Fatalf("pop %d: %s = %+v, %v; ref = %+v, %v", d.pops, d.names[i+1], got, ok, want, wok)
		}
	}
	if wok {
		if want.at < d.now {
			d.t.Fatalf("pop %d: time went back from %v to %v", d.pops, d.now, want.at)
		}
		d.now = want.at
	}
	d.pops++
	return wok
}

// check compares len and peekTime, and the wheel's earliest (which fit
// takes for the base of a re-bucketing) before peekTime turns it.
func (d *diffRun) check() {
	d.t.Helper()
	wantAt, wok := d.qs[0].peekTime()
	wantLen := d.qs[0].len()
	for i, q := range d.qs[1:] {
		if w, ok := q.(*wheelQueue); ok && wok {
			if at := w.earliest(); at != wantAt {
				d.t.Fatalf("after pop %d: %s.earliest() = %v; ref peekTime = %v", d.pops, d.names[i+1], at, wantAt)
			}
		}
		if at, ok := q.peekTime(); at != wantAt || ok != wok {
			d.t.Fatalf("after pop %d: %s.peekTime() = %v, %v; ref = %v, %v", d.pops, d.names[i+1], at, ok, wantAt, wok)
		}
		if n := q.len(); n != wantLen {
			d.t.Fatalf("after pop %d: %s.len() = %d; ref = %d", d.pops, d.names[i+1], n, wantLen)
		}
	}
}

// drain pops until empty, pushing at the current time every pushEvery pops
// (never if 0).
func (d *diffRun) drain(pushEvery int) {
	d.t.Helper()
	for i := 1; d.pop(); i++ {
		if pushEvery > 0 && i%pushEvery == 0 {
			d.push(0)
		}
		if i%101 == 0 {
			d.check()
		}
	}
	d.check()
}

// hold performs ops pop-then-push steps, the push at the popped time plus
// incr(). Every 7th pop follows a peekTime, as in the engine.
func (d *diffRun) hold(ops int, incr func() time.Duration) {
	d.t.Helper()
	for i := range ops {
		if i%7 == 0 {
			d.check()
		}
		if !d.pop() {
			d.t.Fatalf("hold: empty after %d of %d ops", i, ops)
		}
		d.push(incr())
	}
	d.check()
}

func expDur(r *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(mean))
}

func uniformDur(r *rand.Rand, hi time.Duration) time.Duration {
	return time.Duration(r.Int64N(int64(hi)))
}

// mixedOffset draws an offset from now: many exact ties (zero, whole
// milliseconds), nanoseconds, exponential and uniform seconds, and hours
// up to 100 h.
func mixedOffset(r *rand.Rand) time.Duration {
	switch u := r.IntN(20); {
	case u < 5:
		return 0
	case u < 10:
		return time.Duration(r.IntN(10)) * time.Millisecond
	case u < 12:
		return time.Duration(r.IntN(1000))
	case u < 16:
		return expDur(r, time.Second)
	case u < 18:
		return uniformDur(r, 60*time.Second)
	default:
		return uniformDur(r, 100*time.Hour)
	}
}

func TestQueueDifferential(t *testing.T) {
	skipUnderRace(t)
	tests := []struct {
		name string
		run  func(d *diffRun, r *rand.Rand)
	}{
		{"mixed", func(d *diffRun, r *rand.Rand) {
			// Grow, wander, then drain with ever fewer pushes.
			for _, p := range []float64{0.6, 0.5, 0.3} {
				for i := range 100_000 {
					if r.Float64() < p {
						d.push(mixedOffset(r))
					} else {
						d.pop()
					}
					if i%64 == 0 {
						d.check()
					}
				}
			}
			d.drain(0)
		}},
		{"burst", func(d *diffRun, r *rand.Rand) {
			// 100k events at one time amid 20k spread around it; pops push
			// at the current time and just after.
			const t0 = 5 * time.Second
			for range 120_000 {
				if r.IntN(6) == 0 {
					d.push(uniformDur(r, 2*t0))
				} else {
					d.push(t0)
				}
			}
			d.check()
			for i := 1; d.pop(); i++ {
				switch {
				case i%50 == 0:
					d.push(0)
				case i%200 == 1:
					d.push(time.Duration(r.IntN(3)) * time.Millisecond)
				case i%1000 == 7:
					d.push(t0) // a later burst member
				}
				if i%100 == 0 {
					d.check()
				}
			}
			d.check()
		}},
		{"gaps", func(d *diffRun, r *rand.Rand) {
			// Clusters separated by empty stretches of up to 72 h; every
			// other cluster leaves a straggler 50 h out.
			for round := range 300 {
				gap := uniformDur(r, 72*time.Hour)
				for range 1 + r.IntN(300) {
					d.push(gap + time.Duration(r.IntN(100))*10*time.Microsecond)
				}
				if round%2 == 0 {
					d.push(50 * time.Hour)
				}
				d.check()
				for i := 1; d.len() > round/2; i++ {
					d.pop()
					if i%7 == 0 {
						d.push(0)
					}
				}
			}
			d.drain(3)
		}},
		{"density", func(d *diffRun, r *rand.Rand) {
			// Dense, then a few events per minute for days, then a dense
			// burst an hour out.
			for range 20_000 {
				d.push(uniformDur(r, time.Second))
			}
			d.hold(100_000, func() time.Duration { return uniformDur(r, time.Second) })
			for d.len() > 20 {
				d.pop()
			}
			d.hold(10_000, func() time.Duration { return expDur(r, 10*time.Minute) })
			for range 50_000 {
				d.push(time.Hour + uniformDur(r, 10*time.Millisecond))
			}
			d.hold(100_000, func() time.Duration { return uniformDur(r, 10*time.Millisecond) })
			d.drain(0)
		}},
		{"wide", func(d *diffRun, r *rand.Rand) {
			// A dense second amid a sparse hour: the ring would need more
			// than 2^wheelTailBits pages, so the pages widen; then, with
			// few events left, they narrow again.
			incr := func() time.Duration {
				if r.IntN(300) == 0 {
					return uniformDur(r, time.Hour)
				}
				return uniformDur(r, time.Second)
			}
			for range 50_000 {
				d.push(incr())
			}
			d.hold(200_000, incr)
			require.Equal(d.t, uint(wheelMaxPageBits), d.wheel().pageBits, "pages of the dense second")
			for d.len() > 2000 {
				d.pop()
			}
			d.hold(100_000, func() time.Duration { return uniformDur(r, time.Second) })
			require.Equal(d.t, uint(wheelMinPageBits), d.wheel().pageBits, "pages of 2000 events")
			d.drain(0)
		}},
		{"lockstep", func(d *diffRun, r *rand.Rand) {
			// A burst retried in lockstep, its backoff doubling (1, 3,
			// 7, 15 s...), an event at 30 s beyond it, and now and then
			// an event at the current time or just after: the herd
			// crowds side until the wheel re-buckets.
			for range 30_000 {
				d.push(time.Second)
			}
			d.push(30 * time.Second)
			for i := 1; d.pop(); i++ {
				if d.now < 20*time.Second {
					d.push(d.now + time.Second)
				}
				if i%5 == 0 && d.now < 40*time.Second {
					d.push(time.Duration(r.IntN(2)) * time.Millisecond)
				}
				if i%97 == 0 {
					d.check()
				}
			}
			d.check()
		}},
		{"hold-ties", func(d *diffRun, r *rand.Rand) {
			for range 10_000 {
				d.push(time.Duration(r.IntN(3)) * time.Millisecond)
			}
			d.hold(100_000, func() time.Duration { return time.Duration(r.IntN(3)) * time.Millisecond })
			d.drain(10)
		}},
		{"hold-exp", func(d *diffRun, r *rand.Rand) {
			for range 20_000 {
				d.push(expDur(r, time.Second))
			}
			d.hold(100_000, func() time.Duration { return expDur(r, time.Second) })
			d.drain(0)
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newDiffRun(t)
			tt.run(d, rand.New(rand.NewPCG(uint64(i)+1, 2024)))
			_, ok := d.qs[0].pop()
			require.False(t, ok, "the scenario must end empty")
			for _, q := range d.qs {
				if w, ok := q.(*wheelQueue); ok {
					t.Logf("%d pushes, %d pops; the wheel re-bucketed %d times", d.pushes, d.pops, w.rebuilds)
				}
			}
		})
	}
}

func TestQueueReusedAfterRelease(t *testing.T) {
	skipUnderRace(t)
	// Queues of small runs, released and taken again by newWheelQueue,
	// pop in the reference's order run after run: nothing of a run is
	// left for the next but memory. Some runs are large enough to use
	// several chunk blocks and to re-bucket; a large queue is not kept.
	r := rand.New(rand.NewPCG(7, 8))
	reused := 0
	var last *wheelQueue
	for run := range 300 {
		d := &diffRun{t: t, names: []string{"ref", "wheel"}, qs: []queueUnderTest{&refQueue{}}}
		q := newWheelQueue()
		if q == last {
			reused++
		}
		d.qs = append(d.qs, q)
		n := 1 + r.IntN(50)
		if run%10 == 0 {
			n = 1 + r.IntN(5000)
		}
		for range n {
			d.push(mixedOffset(r) / 1000)
		}
		d.hold(n, func() time.Duration { return mixedOffset(r) / 1000 })
		d.drain(0)
		q.release()
		last = q
	}
	if !raceDetector { // which drops some of what a sync.Pool is given
		assert.Greater(t, reused, 100, "released queues are taken again")
	}
	big := newWheelQueue()
	for i := range 300_000 {
		big.push(time.Duration(i), 0, 0, 0)
	}
	big.release()
	assert.NotSame(t, big, newWheelQueue(), "a large queue is not kept")
}

// len is a shorthand for the reference's len.
func (d *diffRun) len() int { return d.qs[0].len() }

func TestQueueEdgeCases(t *testing.T) {
	const h100 = 100 * time.Hour
	type step struct {
		op     string // "push", "pop" or "peek"
		at     time.Duration
		wantAt time.Duration // pop and peek
		wantA  int32         // pop: the payload a, the push index
		wantOK bool          // pop and peek
		len    int           // len after the step
	}
	steps := []step{
		{op: "pop", wantOK: false, len: 0},
		{op: "peek", wantOK: false, len: 0},
		{op: "push", at: 0, len: 1}, // a = 0
		{op: "peek", wantAt: 0, wantOK: true, len: 1},
		{op: "push", at: h100, len: 2},     // a = 1
		{op: "push", at: 0, len: 3},        // a = 2
		{op: "push", at: h100, len: 4},     // a = 3
		{op: "push", at: h100 / 2, len: 5}, // a = 4
		{op: "pop", wantAt: 0, wantA: 0, wantOK: true, len: 4},
		{op: "pop", wantAt: 0, wantA: 2, wantOK: true, len: 3},
		{op: "push", at: 0, len: 4}, // a = 5: at the current time
		{op: "pop", wantAt: 0, wantA: 5, wantOK: true, len: 3},
		{op: "peek", wantAt: h100 / 2, wantOK: true, len: 3},
		{op: "push", at: 0, len: 4}, // a = 6: the current time, after a peek far ahead
		{op: "pop", wantAt: 0, wantA: 6, wantOK: true, len: 3},
		{op: "pop", wantAt: h100 / 2, wantA: 4, wantOK: true, len: 2},
		{op: "push", at: h100, len: 3},          // a = 7
		{op: "push", at: math.MaxInt64, len: 4}, // a = 8
		{op: "push", at: math.MaxInt64, len: 5}, // a = 9
		{op: "push", at: h100 / 2, len: 6},      // a = 10
		{op: "pop", wantAt: h100 / 2, wantA: 10, wantOK: true, len: 5},
		{op: "pop", wantAt: h100, wantA: 1, wantOK: true, len: 4},
		{op: "pop", wantAt: h100, wantA: 3, wantOK: true, len: 3},
		{op: "peek", wantAt: h100, wantOK: true, len: 3},
		{op: "pop", wantAt: h100, wantA: 7, wantOK: true, len: 2},
		{op: "pop", wantAt: math.MaxInt64, wantA: 8, wantOK: true, len: 1},
		{op: "pop", wantAt: math.MaxInt64, wantA: 9, wantOK: true, len: 0},
		{op: "pop", wantOK: false, len: 0},
		{op: "peek", wantOK: false, len: 0},
	}
	for _, impl := range queueImpls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new()
			pushes := int32(0)
			for i, s := range steps {
				switch s.op {
				case "push":
					q.push(s.at, 7, pushes, -pushes)
					pushes++
				case "pop":
					e, ok := q.pop()
					require.Equal(t, s.wantOK, ok, "step %d: pop ok", i)
					if ok {
						assert.Equal(t, newEvent(s.wantAt, uint64(s.wantA), 7, s.wantA, -s.wantA), e, "step %d: pop", i)
					} else {
						assert.Zero(t, e, "step %d: pop of empty", i)
					}
				case "peek":
					at, ok := q.peekTime()
					require.Equal(t, s.wantOK, ok, "step %d: peek ok", i)
					assert.Equal(t, s.wantAt, at, "step %d: peek", i)
				}
				assert.Equal(t, s.len, q.len(), "step %d: len", i)
			}
		})
	}
}

func TestQueueEventSize(t *testing.T) {
	assert.Equal(t, uintptr(24), unsafe.Sizeof(event{}))
	assert.Equal(t, uintptr(1024), unsafe.Sizeof(wheelChunk{}), "a chunk is 1 KiB")
	e := newEvent(5, 1<<55, 255, -1, 2)
	assert.Equal(t, uint64(1<<55), e.sk>>8, "the sequence number")
	assert.Equal(t, uint8(255), e.kind())
	assert.True(t, eventBefore(&e, &event{at: 5, sk: (1<<55 + 1) << 8}), "a later push with a lower kind sorts after")
}

// holdIncrements returns n increments drawn from dist ("exp1s": exponential
// with mean 1 s; "unif60s": uniform on [0, 60 s); "exp1h": exponential with
// mean 1 h; "unif1s": uniform on [0, 1 s)).
func holdIncrements(dist string, n int, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 7))
	incr := make([]time.Duration, n)
	for i := range incr {
		switch dist {
		case "exp1s":
			incr[i] = expDur(r, time.Second)
		case "unif60s":
			incr[i] = uniformDur(r, 60*time.Second)
		case "exp1h":
			incr[i] = expDur(r, time.Hour)
		case "unif1s":
			incr[i] = uniformDur(r, time.Second)
		default:
			panic("unknown distribution " + dist)
		}
	}
	return incr
}

func TestQueueNoAllocs(t *testing.T) {
	incr := holdIncrements("exp1s", 1<<16, 1)
	for _, impl := range queueImpls {
		t.Run(impl.name, func(t *testing.T) {
			q := impl.new()
			for i := range 10_000 {
				q.push(incr[i], 0, int32(i), 0)
			}
			i := 0
			step := func() {
				e, _ := q.pop()
				q.push(e.at+incr[i&(len(incr)-1)], e.kind(), e.a, e.b)
				i++
			}
			for range 200_000 { // reach the steady state
				step()
			}
			assert.Zero(t, testing.AllocsPerRun(20_000, step))
		})
	}
}

// TestQueueWheelAdapts checks that, across densities from a thousand events
// an hour to a million a second, the wheel settles where its own measures
// of work (see wheelQueue.check) are good: a few distinct times per loaded
// slot, few events from overflow, few empty bitmap words scanned.
func TestQueueWheelAdapts(t *testing.T) {
	skipUnderRace(t)
	tests := []struct {
		dist    string
		pending int
	}{
		{"exp1s", 1_000},
		{"exp1s", 100_000},
		{"unif60s", 1_000},
		{"unif60s", 100_000},
		{"unif1s", 100_000},
		{"unif60s", 500_000}, // fit samples every 7th event
		{"exp1s", 500_000},
		{"exp1h", 1_000},
		{"exp1h", 20},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/pending=%d", tt.dist, tt.pending), func(t *testing.T) {
			incr := holdIncrements(tt.dist, 1<<16, 3)
			mask := len(incr) - 1
			q := newWheelQueue()
			for i := range tt.pending {
				q.push(incr[i&mask], 0, 0, 0)
			}
			hold := func(ops int) {
				for i := range ops {
					e, _ := q.pop()
					q.push(e.at+incr[i&mask], 0, 0, 0)
				}
			}
			hold(4 * max(tt.pending, 20_000))
			// One window of statistics, stopping short of the next check.
			hold(wheelCheckEvery - 64)
			q.winLoads, q.winLoaded, q.winTies, q.winMigrated, q.winScanned = 0, 0, 0, 0, 0
			for q.winLoaded < wheelCheckEvery-64 {
				hold(1)
			}
			loaded := float64(q.winLoaded)
			perSlot := float64(q.winLoaded-q.winTies) / float64(q.winLoads)
			t.Logf("%d rebuilds; slot 2^%d ns, ring 2^%d pages; %.1f distinct times per slot; per event: %.3f migrated, %.3f words scanned",
				q.rebuilds, q.shift, q.ringBits, perSlot, float64(q.winMigrated)/loaded, float64(q.winScanned)/loaded)
			assert.GreaterOrEqual(t, perSlot, wheelTarget/4.0, "distinct times per slot")
			assert.LessOrEqual(t, perSlot, wheelTarget*4.0, "distinct times per slot")
			assert.LessOrEqual(t, float64(q.winMigrated), loaded/8, "events from overflow")
			assert.LessOrEqual(t, float64(q.winScanned), 2*loaded, "bitmap words scanned")
		})
	}
}

// TestQueueWheelNarrowsWideSlots checks that a wheel whose slots have
// become far too wide (a burst of ties widened them, say) narrows them
// again. Its statistics judge a slot's width over a window of 4096
// loaded events: with more than 64 events in a slot, a window held too
// few slots to judge, and at 10^7 pending events of the hold model the
// wheel sorted runs of 80 events for good, at twice the time a hold.
func TestQueueWheelNarrowsWideSlots(t *testing.T) {
	incr := holdIncrements("exp1s", 1<<16, 3)
	mask := len(incr) - 1
	q := newWheelQueue()
	const pending = 200_000
	for i := range pending {
		q.push(incr[i&mask], 0, 0, 0)
	}
	hold := func(ops int) {
		for i := range ops {
			e, _ := q.pop()
			q.push(e.at+incr[i&mask], 0, 0, 0)
		}
	}
	hold(4 * pending)
	fitted := q.shift
	q.rebuild(fitted+5, q.pageBits, q.ringBits, q.earliest()) // 32 times too wide
	hold(4 * pending)
	t.Logf("slots fitted 2^%d ns, widened to 2^%d ns, then 2^%d ns", fitted, fitted+5, q.shift)
	assert.LessOrEqual(t, q.shift, fitted+1, "the slots narrowed again")
}

// TestQueueWheelSpreadsALockstepHerd checks that a burst retried in
// lockstep does not pile into side. 50,000 events at 1 s and one at 30 s
// (thundering-herd.yaml's exponential strategy: a burst refused at once,
// the outage's end): fitted to two distinct times, the first slot was
// 2^37 ns wide, and every retry of the herd, pushed into it before the
// event at 30 s, went to side, a heap that grew to all 50,000 (a sixth
// of the strategy's pops came from it, 7% of the file's CPU). A crowded
// side now makes the wheel re-bucket.
func TestQueueWheelSpreadsALockstepHerd(t *testing.T) {
	const pending = 50_000
	q := newWheelQueue()
	for i := range pending {
		q.push(time.Second, 0, int32(i), 0)
	}
	q.push(30*time.Second, 1, 0, 0)
	most, last := 0, time.Duration(0)
	for {
		e, ok := q.pop()
		if !ok {
			break
		}
		require.GreaterOrEqual(t, e.at, last, "pops in time order")
		last = e.at
		if k := e.b + 1; e.kind() == 0 && k < 10 {
			q.push(2*e.at+time.Second, 0, e.a, k) // 1, 3, 7, 15 s...
		}
		most = max(most, len(q.side.items))
	}
	t.Logf("%d rebuilds; at most %d events in side", q.rebuilds, most)
	assert.LessOrEqual(t, most, pending/4, "events in side at once")
}

// TestQueueWheelRunBounded checks that events pushed at the current time,
// forever, do not grow the wheel's sorted run without bound.
func TestQueueWheelRunBounded(t *testing.T) {
	q := newWheelQueue()
	const pending = 1000
	for i := range pending {
		q.push(time.Second, 0, int32(i), 0)
	}
	for range 1_000_000 {
		e, ok := q.pop()
		require.True(t, ok)
		q.push(e.at, e.kind(), e.a, e.b)
	}
	assert.Equal(t, pending, q.len())
	assert.LessOrEqual(t, cap(q.run), 4*pending)
}

// TestQueueFit checks fit's measures of the pending events, measured in
// full and, past fitSample events, on a sample: a slot width that puts
// about wheelTarget events in a slot, the exact earliest time, and a span
// that covers the events.
func TestQueueFit(t *testing.T) {
	for _, n := range []int{5_000, 500_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 5))
			q := newWheelQueue()
			const start, span = time.Second, 60 * time.Second
			earliest := time.Duration(math.MaxInt64)
			for range n {
				at := start + uniformDur(r, span)
				earliest = min(earliest, at)
				q.push(at, 0, 0, 0)
			}
			shift, spanBits, base := q.fit()
			perSlot := float64(n) / float64(span) * float64(int64(1)<<shift)
			t.Logf("slot 2^%d ns: %.1f events a slot; span 2^%d ns", shift, perSlot, spanBits)
			assert.GreaterOrEqual(t, perSlot, wheelTarget/2.0, "events a slot")
			assert.LessOrEqual(t, perSlot, 2.0*wheelTarget, "events a slot")
			assert.Equal(t, earliest, base)
			assert.GreaterOrEqual(t, time.Duration(1)<<spanBits, span*999/1000, "the span covers the events")
			assert.Less(t, time.Duration(1)<<spanBits, 2*span, "the span is the least power of two")
		})
	}
}

// TestQueueRingHoldsTheRetries checks that the ring reaches past the
// pending events, to where their retries land: a burst retried with full
// jitter, its backoff doubling, pushes each event up to twice as far as
// the last. With a ring fitted to the pending events alone, a tenth of
// them waited in the overflow heap, whose growth by appending left
// garbage at the run's peak.
func TestQueueRingHoldsTheRetries(t *testing.T) {
	const pending = 200_000
	r := rand.New(rand.NewPCG(1, 2))
	q := newWheelQueue()
	for i := range pending {
		q.push(time.Duration(r.Int64N(int64(time.Second))), 0, int32(i), 0)
	}
	most := 0
	for {
		e, ok := q.pop()
		if !ok {
			break
		}
		if k := e.b + 1; k < 10 {
			wait := min(time.Second<<k, time.Minute)
			q.push(e.at+time.Duration(r.Int64N(int64(wait))), 0, e.a, k)
		}
		most = max(most, len(q.overflow.items))
	}
	t.Logf("%d rebuilds; at most %d events in overflow", q.rebuilds, most)
	assert.Less(t, most, pending/50, "events in overflow at once")
}

// TestQueueSlabAhead checks that the chunks a queue has allocated beyond
// the blocks it uses, in the slab being cut, stay within slabAhead, which
// the memory estimate adds; and that a small queue allocates none ahead.
func TestQueueSlabAhead(t *testing.T) {
	chunk := int64(unsafe.Sizeof(wheelChunk{}))
	block := chunk * wheelBlockLen
	q := newWheelQueue()
	worst := 0.0                          // the largest share of slabAhead taken
	for i := range 4000 * wheelBlockLen { // 250 MiB of chunks, as 10^7 requests take
		q.newChunk(&q.freeRing)
		if i%wheelBlockLen != 0 {
			continue
		}
		used := int64(len(q.blocks)) * block
		ahead := int64(len(q.slab)) * chunk
		bound := slabAhead(used)
		require.LessOrEqual(t, ahead, bound, "at %d blocks", len(q.blocks))
		if len(q.blocks) < wheelSlabFrom {
			require.Zero(t, ahead, "a small queue allocates blocks one at a time")
		}
		if bound > 0 {
			worst = max(worst, float64(ahead)/float64(bound))
		}
	}
	assert.Greater(t, worst, 0.9, "slabAhead is not far above what is allocated ahead")
}
