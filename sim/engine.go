package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/zeontools/herdlab/results"
)

// engine is the clock and the event list of one run, with what stops it:
// the horizon, the context, the event budget and a clock that stands
// still. A model (a graph of services) embeds it and hands it the
// function that handles each event.
type engine struct {
	q       *eventQueue
	now     time.Duration
	horizon time.Duration
	events  int64

	ctx       context.Context
	maxEvents int64 // the event budget
	failed    error // stops the run at the next check

	progress      func(int)
	progressEvery time.Duration
	progressNext  time.Duration
	progressDone  int // units reported

	name string // the strategy, for errors
}

func newEngine(name string, horizon time.Duration) engine {
	return engine{q: newEventQueue(), horizon: horizon, name: name, maxEvents: DefaultMaxEvents}
}

// setLimits sets the run's progress callback and event budget (0:
// DefaultMaxEvents).
func (e *engine) setLimits(progress func(int), maxEvents int64) {
	if maxEvents > 0 {
		e.maxEvents = maxEvents
	}
	if progress != nil {
		e.progress = progress
		e.progressEvery = max(e.horizon/ProgressUnits, 1)
		e.progressNext = e.progressEvery
	}
}

// releaseQueue ends the run's use of its event queue, which another run
// may take (see wheelQueue.release).
func (e *engine) releaseQueue() {
	e.q.release()
	e.q = nil
}

// loop pops events in order until the horizon, calling advance with each
// new time before handle with the event. An event at or after the
// horizon never happens.
func (e *engine) loop(ctx context.Context, advance func(t time.Duration), handle func(ev event)) error {
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
		advance(ev.at)
		e.tick(ev.at)
		handle(ev)
		e.events++
		if e.events >= check {
			check = min(e.events+checkEvery, e.maxEvents)
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
	advance(e.horizon)
	e.tick(e.horizon)
	return nil
}

// tick moves the clock to t and reports progress: a unit for each
// progressEvery of the horizon passed, ProgressUnits in all once t
// reaches the horizon.
func (e *engine) tick(t time.Duration) {
	if e.progress != nil && t >= e.progressNext && e.progressDone < ProgressUnits {
		n := 0
		for e.progressNext <= t && e.progressDone+n < ProgressUnits {
			e.progressNext += e.progressEvery
			n++
		}
		if t >= e.horizon {
			n = ProgressUnits - e.progressDone
		}
		e.progressDone += n
		e.progress(n)
	}
	e.now = t
}
