package sim

import (
	"github.com/zeontools/herdlab/strategies"
)

// occModel is the server as a single row under optimistic concurrency
// control (model occ).
type occModel struct {
	occ      bool    // the server is a single row under optimistic concurrency control
	version  int64   // the row's version, one more per committed write
	versions []int64 // per request: the row version its attempt read
}

// occWrite is the conditional write of attempt tag of request i reaching
// the row at now: it commits when no other write has committed since the
// attempt read the version, and fails otherwise.
func (w *world) occWrite(i, tag int32) {
	w.run.Attempts++
	w.current().Attempts++
	w.reqs[i].arrived = int32(w.sampled)
	w.run.Processed++
	o := strategies.ServerError // a conflict
	if w.versions[i] == w.version {
		w.version++
		o = strategies.Success
	}
	w.reply(i, tag, o)
}
