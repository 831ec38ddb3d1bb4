package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/zeontools/herdlab/results"
)

// engine is the clock and the event list of one run, with what stops it:
// the horizon, the context, the event budget and a clock that stands
// still. The graph embeds it, and its loop hands each event to the
// graph.
type engine struct {
	q       *eventQueue
	now     time.Duration
	horizon time.Duration
	events  int64

	ctx       context.Context
	maxEvents int64 // the event budget
	failed    error // stops the run at the next check

	// The run's progress (see setLimits and workDone): units of
	// ProgressUnits reported so far, the requests the run is expected to
	// create, those that reached a final state (delivered or given up),
	// and the events when the first did (-1 before).
	progress     func(int)
	progressDone int
	expected     float64
	finished     int64
	firstEvents  int64

	name string // the strategy, for errors
}

func newEngine(name string, horizon time.Duration) engine {
	return engine{q: newEventQueue(), horizon: horizon, name: name, maxEvents: DefaultMaxEvents}
}

// setLimits sets the run's progress callback, with the requests the run
// is expected to create (0: unknown; see expectedRequests), and its
// event budget (0: DefaultMaxEvents).
func (e *engine) setLimits(progress func(int), expected float64, maxEvents int64) {
	if maxEvents > 0 {
		e.maxEvents = maxEvents
	}
	if progress != nil {
		e.progress = progress
		e.expected = expected
		e.firstEvents = -1
	}
}

// releaseQueue ends the run's use of its event queue, which another run
// may take (see wheelQueue.release).
func (e *engine) releaseQueue() {
	e.q.release()
	e.q = nil
}

// loop pops events in order until the horizon, calling the graph's
// advance with each new time before its handle with the event. An event
// at or after the horizon never happens. It calls them directly, not as
// function values: the indirect calls were 2-3% of the CPU of the AWS
// study's sweep's runs (docs/performance.md).
func (g *graph) loop(ctx context.Context) error {
	e := &g.engine
	e.ctx = ctx
	defer e.releaseQueue() // no event is pushed or popped after the loop
	var instant int64      // events at the current time
	check := min(int64(checkEvery), e.maxEvents)
	for {
		ev, ok := e.q.pop()
		if !ok || ev.at >= e.horizon {
			break
		}
		if ev.at == e.now {
			instant++
		} else {
			instant = 0
		}
		g.advance(ev.at)
		e.tick(ev.at)
		g.handle(ev)
		e.events++
		if e.events >= check {
			check = min(e.events+checkEvery, e.maxEvents)
			e.report()
			if err := ctx.Err(); err != nil {
				return err
			}
			switch {
			case e.failed != nil:
				return e.failed
			case e.events >= e.maxEvents:
				return fmt.Errorf("%w: strategy %s stopped after %s events, at t=%s of %s: raise --max-events if the scenario is this big; otherwise its retries never wait or never stop",
					ErrEventBudget, e.name, results.Count(float64(e.events)), e.now, e.horizon)
			case instant >= maxInstant:
				return fmt.Errorf("%w: strategy %s made %s events at t=%s without the clock moving: its retries never wait (a zero delay, or no backoff, with unlimited attempts?)",
					ErrStuck, e.name, results.Count(float64(instant)), e.now)
			}
		}
	}
	g.advance(e.horizon)
	e.tick(e.horizon)
	e.reportDone()
	return nil
}

// tick moves the clock to t.
func (e *engine) tick(t time.Duration) { e.now = t }

// report reports the progress of the run, if anyone listens: the units
// of workDone's share not reported yet, ProgressUnits-1 at most until
// reportDone. It is called every checkEvery events, not at every event:
// the engine's loop pays nothing for it.
func (e *engine) report() {
	if e.progress == nil {
		return
	}
	if e.firstEvents < 0 && e.finished > 0 {
		e.firstEvents = max(e.events-checkEvery, 0) // the first finished since the last report
	}
	units := min(int(workDone(e.now, e.horizon, e.events, e.firstEvents, e.finished, e.expected)*ProgressUnits), ProgressUnits-1)
	if units > e.progressDone {
		e.progress(units - e.progressDone)
		e.progressDone = units
	}
}

// reportDone reports the rest of the run's ProgressUnits: it has ended.
func (e *engine) reportDone() {
	if e.progress != nil && e.progressDone < ProgressUnits {
		e.progress(ProgressUnits - e.progressDone)
		e.progressDone = ProgressUnits
	}
}

// workDone returns the share of a run's work done, in [0, 1], from the
// simulated time now of the horizon, the events so far, those when the
// first request finished (firstEvents; -1 before), and the requests
// finished of those expected (0: unknown).
//
// A run's cost is its events, and a run stops as soon as its last
// request is finished, often long before its horizon: the share of the
// horizon passed says little of the work left. Requests finish at a
// roughly steady cost in events once they start to (an outage's herd
// costs events and finishes none, then drains at the capacity), so the
// events a run will take are estimated from the share f of the expected
// requests finished as
//
//	total = firstEvents + (events - firstEvents) / f
//
// and the work done is the larger of events / total and now / horizon
// (which counts the events of an outage before anything finishes as
// time). It is 1 once every expected request is finished. It is not
// monotonic: the caller reports its running maximum.
func workDone(now, horizon time.Duration, events, firstEvents, finished int64, expected float64) float64 {
	done := 0.0
	if horizon > 0 {
		done = min(float64(now)/float64(horizon), 1)
	}
	if expected <= 0 || finished <= 0 || firstEvents < 0 {
		return done
	}
	f := min(float64(finished)/expected, 1)
	total := float64(firstEvents) + float64(events-firstEvents)/f
	if total <= 0 {
		return max(done, f)
	}
	return max(done, min(float64(events)/total, 1))
}
