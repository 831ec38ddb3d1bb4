package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/scenarios"
)

// TestDequeIsASlice drives a deque and a plain slice through the same
// random pushes, pops at either end and removals, across many growths
// and wrap-arounds of its ring, and holds the two to the same jobs in
// the same order after every step.
func TestDequeIsASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d deque
	var want []int32
	next := int32(0)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(want) == 0:
			d.push(waiter{ref: next, tag: -next})
			want = append(want, next)
			next++
		case op < 7:
			require.Equal(t, want[0], d.front().ref, "step %d", step)
			require.Equal(t, waiter{ref: want[0], tag: -want[0]}, d.popFront(), "step %d", step)
			want = want[1:]
		case op < 9:
			require.Equal(t, want[len(want)-1], d.popBack().ref, "step %d", step)
			want = want[:len(want)-1]
		default:
			j := want[rng.IntN(len(want))]
			require.True(t, d.remove(j))
			want = slices.DeleteFunc(want, func(x int32) bool { return x == j })
			require.False(t, d.remove(j), "removed twice")
		}
		require.Equal(t, len(want), d.len())
		for i, j := range want {
			require.Equal(t, j, d.at(i).ref, "step %d, place %d", step, i)
		}
	}
	require.Greater(t, len(d.buf), 16, "the ring grew")
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
