package realhttp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

func TestHedgeCopiesDecideAsTheSimulator(t *testing.T) {
	// The rules the fleet's driver and a call edge share (hedge.go), as
	// the simulator's (sim/call_hedge.go, sim/job.go): step tables of
	// copies sent, answered and given up. The first success decides the
	// attempt, a failure only when no copy is out; with cancel the
	// decision hangs up on the copies out, whose answers then count for
	// nothing; every success that counts is observed, a loser's after
	// the decision too.
	const (
		send   = "send"
		answer = "answer"
		giveUp = "give up"
	)
	type step struct {
		event string
		k     int32 // the copy answered
		o     strategies.Outcome
		want  hedgeAnswer // of an answer; of giving up, only cancelled
		out   int         // copies out after the step
	}
	ok, failed := strategies.Success, strategies.ServerError
	tests := []struct {
		name  string
		hedge strategies.Hedge
		steps []step
	}{
		{"the first copy succeeds alone", strategies.Hedge{Percentile: 50}, []step{
			{event: send, out: 1},
			{event: answer, k: 0, o: ok, want: hedgeAnswer{counts: true, decides: true, observe: true}},
		}},
		{"a hedge wins, the loser is observed after it", strategies.Hedge{Percentile: 50}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: answer, k: 1, o: ok, want: hedgeAnswer{counts: true, decides: true, won: true, observe: true}, out: 1},
			{event: answer, k: 0, o: ok, want: hedgeAnswer{counts: true, observe: true}},
		}},
		{"a failure waits for the copies out", strategies.Hedge{Percentile: 50, Max: 2}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: answer, k: 0, o: failed, want: hedgeAnswer{counts: true}, out: 1},
			{event: send, out: 2},
			{event: answer, k: 2, o: failed, want: hedgeAnswer{counts: true}, out: 1},
			{event: answer, k: 1, o: failed, want: hedgeAnswer{counts: true, decides: true}},
		}},
		{"the first copy's failure before any hedge decides", strategies.Hedge{Delay: time.Second}, []step{
			{event: send, out: 1},
			{event: answer, k: 0, o: strategies.Timeout, want: hedgeAnswer{counts: true, decides: true}},
		}},
		{"a loser's failure after the decision decides nothing", strategies.Hedge{Delay: time.Second}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: answer, k: 0, o: ok, want: hedgeAnswer{counts: true, decides: true}, out: 1},
			{event: answer, k: 1, o: failed, want: hedgeAnswer{counts: true}},
		}},
		{"with cancel the winner hangs up on the copies out", strategies.Hedge{Percentile: 50, Max: 2, Cancel: true}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: send, out: 3},
			{event: answer, k: 2, o: ok, want: hedgeAnswer{counts: true, decides: true, won: true, observe: true, cancelled: 2}},
			{event: answer, k: 0, o: ok, want: hedgeAnswer{}}, // its answer came as it was hung up on
		}},
		{"with cancel a failure hangs up on none", strategies.Hedge{Delay: time.Second, Cancel: true}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: answer, k: 1, o: failed, want: hedgeAnswer{counts: true}, out: 1},
			{event: answer, k: 0, o: ok, want: hedgeAnswer{counts: true, decides: true}},
		}},
		{"an answer counts once", strategies.Hedge{Percentile: 50}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: answer, k: 0, o: failed, want: hedgeAnswer{counts: true}, out: 1},
			{event: answer, k: 0, o: failed, want: hedgeAnswer{}, out: 1},
		}},
		{"given up with cancel, every copy out is hung up on", strategies.Hedge{Delay: time.Second, Max: 2, Cancel: true}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: giveUp, want: hedgeAnswer{cancelled: 2}},
		}},
		{"given up without cancel, the copies run on, observed", strategies.Hedge{Percentile: 50}, []step{
			{event: send, out: 1},
			{event: send, out: 2},
			{event: giveUp, out: 2},
			{event: answer, k: 1, o: ok, want: hedgeAnswer{counts: true, observe: true}, out: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &tt.hedge
			parent := context.Background()
			var c hedgeCopies
			c.start(7)
			var ctxs []context.Context
			for i, s := range tt.steps {
				switch s.event {
				case send:
					k := c.add(int32(i))
					ctxs = append(ctxs, c.context(h, k, parent))
					got, isCopy := c.of(7 + k)
					require.True(t, isCopy)
					require.Equal(t, k, got)
				case answer:
					assert.Equal(t, s.want, c.answered(h, s.k, s.o), "step %d", i)
				case giveUp:
					assert.Equal(t, s.want.cancelled, c.end(), "step %d: copies hung up on", i)
				}
				assert.Equal(t, s.out, c.out(), "step %d: copies out", i)
				for k, ctx := range ctxs {
					done := c.done&(1<<k) != 0
					if h.Cancel {
						assert.Equal(t, done, ctx.Err() != nil, "step %d: copy %d's context ends when it is done", i, k)
					} else {
						assert.Equal(t, parent, ctx, "without cancel a copy runs on its parent's context")
					}
				}
			}
			_, isCopy := c.of(7 + int32(c.sent))
			assert.False(t, isCopy, "a tag beyond the copies sent")
		})
	}
}

func TestHedgeCopiesNextDelay(t *testing.T) {
	// The next hedge is due after the policy's delay until the attempt
	// has all its copies; a percentile delay only once the sender has
	// observed enough.
	p := &strategies.Policy{Hedge: &strategies.Hedge{Delay: 20 * time.Millisecond, Max: 2}}
	var c hedgeCopies
	c.start(0)
	for range 2 {
		c.add(0)
		d, ok := c.nextDelay(p, nil)
		require.True(t, ok)
		assert.Equal(t, 20*time.Millisecond, d)
	}
	c.add(0)
	_, ok := c.nextDelay(p, nil)
	assert.False(t, ok, "three copies, its most")

	p = &strategies.Policy{Hedge: &strategies.Hedge{Percentile: 90}}
	s := new(strategies.Sender)
	c.start(0)
	c.add(0)
	_, ok = c.nextDelay(p, s)
	assert.False(t, ok, "nothing observed yet")
	for range strategies.MinObserved {
		hedgeObserve(p, s, time.Second, time.Second) // clamped to 1 ns
	}
	d, ok := c.nextDelay(p, s)
	require.True(t, ok)
	assert.Equal(t, time.Nanosecond, d)
}
