package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestDequeIsASlice drives a deque and a plain slice through the same
// random pushes, pops at either end and removals, and holds the two to
// the same jobs in the same order: while it has one block, and as it
// grows to thousands of waiters in many blocks and drains again.
func TestDequeIsASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d deque
	var want []int32
	next := int32(0)
	check := func(step int) {
		require.Equal(t, len(want), d.len(), "step %d", step)
		for i, j := range want {
			require.Equal(t, j, d.at(i).ref, "step %d, place %d", step, i)
		}
	}
	rings := map[int]bool{}
	peak := 0
	const steps = 60000
	for step := range steps {
		// Pushes outnumber pops for the first half and pops the
		// pushes after.
		push := 3
		if step < steps/2 {
			push = 7
		}
		switch op := rng.IntN(10); {
		case op < push || len(want) == 0:
			d.push(waiter{ref: next, tag: -next})
			want = append(want, next)
			next++
		case op < 9:
			if rng.IntN(3) > 0 {
				require.Equal(t, want[0], d.front().ref, "step %d", step)
				require.Equal(t, waiter{ref: want[0], tag: -want[0]}, d.popFront(), "step %d", step)
				want = want[1:]
			} else {
				require.Equal(t, want[len(want)-1], d.popBack().ref, "step %d", step)
				want = want[:len(want)-1]
			}
		default:
			j := want[rng.IntN(len(want))]
			require.True(t, d.remove(j))
			want = slices.DeleteFunc(want, func(x int32) bool { return x == j })
			require.False(t, d.remove(j), "removed twice")
		}
		rings[len(d.blocks)] = true
		peak = max(peak, len(want))
		if len(want) < 64 || step%101 == 0 {
			check(step)
		}
	}
	check(steps)
	require.Greater(t, len(d.blocks), 8, "the ring of blocks grew")
	for n := 1; n <= 10; n++ {
		require.True(t, rings[n], "a ring of %d blocks", n)
	}
	require.Less(t, d.n, peak+peak/8+2<<dequeBlockBits, "the ring holds about the longest queue")
	for _, b := range d.blocks {
		require.Len(t, b, dequeBlock)
	}
}

// TestDequeGrowsFromTheMiddleOfABlock fills a deque whose front is in
// the middle of a block, so that its ring grows with the last waiters
// before the front in the front's block: they move to a block of their
// own, in order.
func TestDequeGrowsFromTheMiddleOfABlock(t *testing.T) {
	const block = dequeBlock
	var d deque
	for i := range block {
		d.push(waiter{ref: int32(i)})
	}
	for range 300 {
		d.popFront()
	}
	// The one block is full again with waiters 300 to 1,323, the last
	// 300 of them before the front; then the ring grows twice, by a
	// block each time.
	for i := block; i < 2*block+500; i++ {
		d.push(waiter{ref: int32(i)})
	}
	require.Equal(t, 2*block+200, d.len())
	for i := range d.len() {
		require.Equal(t, int32(300+i), d.at(i).ref, "place %d", i)
	}
	require.Len(t, d.blocks, 3)
	require.Equal(t, int32(2*block+499), d.popBack().ref)
	for i := range 2*block + 199 {
		require.Equal(t, int32(300+i), d.popFront().ref, "place %d", i)
	}
	require.Zero(t, d.len())
}

// TestOutageWindows: a service's outages sorted once into those that
// fail attempts (refuse, error, and any other mode: no answer) and those
// that slow it; a flush is the cache's, neither.
func TestOutageWindows(t *testing.T) {
	downs, slows := windows([]scenarios.Outage{
		{Mode: scenarios.Refuse}, {Mode: scenarios.ErrorMode}, {Mode: scenarios.TimeoutMode}, {Mode: ""},
		{Mode: scenarios.FlushMode}, {Mode: scenarios.SlowMode, Factor: 3},
	})
	var modes []uint8
	for _, w := range downs {
		modes = append(modes, w.mode)
	}
	require.Equal(t, []uint8{downRefuse, downError, downTimeout, downTimeout}, modes)
	require.Len(t, slows, 1)
	require.Equal(t, 3.0, slows[0].factor)
}
