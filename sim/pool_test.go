package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPool(t *testing.T) {
	// Two workers, five requests: 0 and 1 get one, 2, 3 and 4 wait, and
	// freed workers go to the waiters in the order they came.
	p, next := NewPool(), make([]int32, 5)
	var got []bool
	for i := range int32(5) {
		got = append(got, p.Acquire(i, 2, next))
	}
	assert.Equal(t, []bool{true, true, false, false, false}, got)
	for _, want := range []int32{2, 3, 4} {
		i, ok := p.Release(next)
		assert.True(t, ok)
		assert.Equal(t, want, i)
		assert.True(t, p.Acquire(i, 2, next), "the freed worker is there for it")
	}
	_, ok := p.Release(next)
	assert.False(t, ok, "nobody waits")
	assert.True(t, p.Acquire(0, 2, next), "one worker is free again")
	assert.False(t, p.Acquire(1, 2, next))
}
