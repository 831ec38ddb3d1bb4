package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		floor, live uint64
		want        int
	}{
		{32 * mb, 0, 800},       // the starting goal, 4 MiB x 8
		{32 * mb, 1 * mb, 800},  // 31/1 would be 3100: the starting goal binds
		{32 * mb, 4 * mb, 700},  // 4 MiB x (1 + 7) = 32 MiB
		{32 * mb, 8 * mb, 300},  // 8 MiB x 4
		{32 * mb, 16 * mb, 100}, // past half the floor: as without one
		{32 * mb, 1 << 30, 100},
		{64 * mb, 0, 1600},
		{64 * mb, 12 * mb, 433},
		{2 * mb, 0, 100}, // below the starting goal: as without a floor
		{0, 0, 100},
	} {
		assert.Equal(t, c.want, percent(c.floor, c.live), "floor %d MiB, live %d bytes", c.floor/mb, c.live)
	}
}

// gcMetric reads one runtime metric.
func gcMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// goalAfterGC collects, then waits for the heap goal to settle (the
// floor is set by a finalizer, after the collection) and returns it.
func goalAfterGC(t *testing.T) uint64 {
	t.Helper()
	runtime.GC()
	goal := gcMetric("/gc/heap/goal:bytes")
	for range 50 {
		time.Sleep(2 * time.Millisecond)
		next := gcMetric("/gc/heap/goal:bytes")
		if next == goal {
			break
		}
		goal = next
	}
	return goal
}

func TestSetHoldsTheGoalUntilRestored(t *testing.T) {
	t.Setenv("GOGC", "")
	const floor = 256 << 20 // far above this test's heap
	before := goalAfterGC(t)
	require.Less(t, before, uint64(floor/2), "the heap goal at the default")

	restore := Set(floor)
	goal := goalAfterGC(t)
	assert.GreaterOrEqual(t, goal, uint64(floor*9/10), "the heap goal with the floor")
	assert.LessOrEqual(t, goal, uint64(floor*11/10))

	// As the live heap grows, each collection sets GOGC anew: the goal
	// stays at the floor, then doubles the live heap past half of it.
	live := make([]byte, 96<<20)
	for i := range live {
		live[i] = 1
	}
	goal = goalAfterGC(t)
	assert.GreaterOrEqual(t, goal, uint64(floor*9/10), "96 MiB live")
	assert.LessOrEqual(t, goal, uint64(floor*11/10), "96 MiB live")
	live = append(live, make([]byte, 64<<20)...)
	goal = goalAfterGC(t)
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"), "160 MiB live")
	assert.GreaterOrEqual(t, goal, uint64(2*len(live)), "160 MiB live")
	runtime.KeepAlive(live)

	// A bound holds it lower, at once.
	Cap(128 << 20)
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"), "160 MiB live, past half of 128")
	live = nil
	goal = goalAfterGC(t)
	assert.GreaterOrEqual(t, goal, uint64(128<<20*9/10), "capped at 128 MiB")
	assert.LessOrEqual(t, goal, uint64(128<<20*11/10), "capped at 128 MiB")
	Cap(0)
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"), "no room for a floor")
	Cap(math.MaxUint64)
	assert.GreaterOrEqual(t, goalAfterGC(t), uint64(floor*9/10), "the bound lifted")

	restore()
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"), "GOGC as it was")
	assert.Less(t, goalAfterGC(t), uint64(floor/2), "the heap goal once restored")
	restore() // twice is harmless
}

func TestSetZeroRestoresGOGC(t *testing.T) {
	t.Setenv("GOGC", "")
	old := debug.SetGCPercent(300)
	defer debug.SetGCPercent(old)
	restore := Set(0)
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"), "no floor: GOGC=100")
	restore()
	assert.EqualValues(t, 300, gcMetric("/gc/gogc:percent"), "GOGC as it was")
}

func TestSetLeavesAUsersGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	restore := Set(256 << 20)
	defer restore()
	assert.EqualValues(t, 100, gcMetric("/gc/gogc:percent"))
	assert.Less(t, goalAfterGC(t), uint64(128<<20))
}
