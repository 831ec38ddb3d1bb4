package sim

import (
	"time"

	"github.com/zeontools/herdlab/strategies"
)

// deadLetters is the dead-letter queue and its replay.
type deadLetters struct {
	dlq      []int32 // dead letters, in the order they arrived
	replayed int
	dlqDepth int // requests in the dead-letter queue now
}

// replay sends dead letter number k back (k = -1 starts the replay): the
// replay takes the dead letters in the queue when it starts, at the
// scenario's rate, with fresh attempt counts.
func (w *world) replay(k int32) {
	if k < 0 {
		w.replayed = len(w.dlq)
		k = 0
	}
	if int(k) >= w.replayed {
		return
	}
	i := w.dlq[k]
	w.dlq[k] = -1 // no longer in the queue
	w.dlqDepth--
	w.retry = strategies.Request{}
	w.setRetryState(i)
	w.reqs[i].state = stWaiting
	w.run.Replayed++
	w.try(i)
	gap := time.Duration(float64(time.Second) / w.sc.DLQ.Replay.Rate)
	w.q.push(w.now+gap, evReplay, k+1, 0)
}
