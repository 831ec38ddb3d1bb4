package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a progress bar on a terminal for work that takes more
// than a couple of seconds, with the time elapsed since the work began
// and an estimate of the time left; on anything else it shows nothing. A
// nil *progress is silent. Once the bar shows, its last line stays when
// the work ends: 100% and "done", or how far it came and "stopped".
type progress struct {
	done  atomic.Int64
	note  atomic.Pointer[string] // shown after the title, when set
	stop  chan struct{}
	wg    sync.WaitGroup
	total int
}

// showAfter is how long work runs before its progress bar appears.
const showAfter = 2 * time.Second

// startProgress starts a progress bar of total units on w, if w is a
// terminal.
func startProgress(w io.Writer, title string, total int) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return showProgress(w, title, total, showAfter, 100*time.Millisecond)
}

// showProgress shows a progress bar on w after the delay, updated every
// tick.
func showProgress(w io.Writer, title string, total int, delay, every time.Duration) *progress {
	p := &progress{stop: make(chan struct{}), total: total}
	start := time.Now()
	p.wg.Go(func() {
		select {
		case <-p.stop:
			return
		case <-time.After(delay):
		}
		bar := progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(title),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
		)
		var est eta
		note := ""
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				// The last line stays: 100% and "done" when all the
				// work was done, else how far it came.
				if n := p.note.Swap(nil); n != nil {
					note = " " + *n
				}
				done := int(p.done.Load())
				end := ", stopped"
				if done >= total {
					end = ", done"
				}
				bar.Describe(title + note + " " + roundTime(time.Since(start)).String() + end)
				if done >= total {
					bar.Finish()
				} else {
					bar.Set(done)
				}
				fmt.Fprintln(w)
				return
			case <-tick.C:
				done := int(p.done.Load())
				elapsed := time.Since(start)
				est.observe(elapsed, done)
				if n := p.note.Swap(nil); n != nil {
					note = " " + *n
				}
				left, ok := est.left(total)
				bar.Set(min(done, total-1)) // 100% is for finish, which says done
				bar.Describe(title + note + " " + timing(elapsed, left, ok))
			}
		}
	})
	return p
}

// timing says how long the work has taken and how long it has left:
// "12s, about 40s left".
func timing(elapsed time.Duration, left time.Duration, ok bool) string {
	s := roundTime(elapsed).String()
	switch {
	case !ok:
		return s
	case left < time.Second:
		return s + ", almost done"
	}
	return fmt.Sprintf("%s, about %s left", s, roundTime(left))
}

// roundTime rounds to the second, or to the minute past an hour.
func roundTime(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// eta estimates the time work has left from the units done so far, at
// the rate of the last etaWindow (since the start, when the work is
// younger): the cost of a unit changes as work goes on (a simulated
// second of a herd costs more than one of a recovered server), and a
// recent rate follows it where the average since the start lags.
type eta struct {
	samples []etaSample // in time order, the oldest at most etaWindow before the newest (and one before that)
}

type etaSample struct {
	at   time.Duration // since the work began
	done int
}

// etaWindow is how far back eta looks for its rate.
const etaWindow = 5 * time.Second

// observe records that done units were done at elapsed.
func (e *eta) observe(elapsed time.Duration, done int) {
	e.samples = append(e.samples, etaSample{elapsed, done})
	for len(e.samples) > 2 && e.samples[1].at <= elapsed-etaWindow {
		e.samples = e.samples[1:]
	}
}

// left returns the time left to do total units, and false while there is
// no rate to go by.
func (e *eta) left(total int) (time.Duration, bool) {
	if len(e.samples) == 0 {
		return 0, false
	}
	last := e.samples[len(e.samples)-1]
	if last.done >= total {
		return 0, true
	}
	from := etaSample{} // the start: nothing done
	if last.at >= etaWindow {
		from = e.samples[0]
	}
	units, took := last.done-from.done, last.at-from.at
	if units <= 0 || took <= 0 {
		return 0, false
	}
	return time.Duration(float64(took) * float64(total-last.done) / float64(units)), true
}

func (p *progress) add(n int) {
	if p != nil {
		p.done.Add(int64(n))
	}
}

// set sets the units done, and the note shown after the title.
func (p *progress) set(done int, note string) {
	if p != nil {
		p.done.Store(int64(done))
		p.note.Store(&note)
	}
}

func (p *progress) finish() {
	if p != nil {
		close(p.stop)
		p.wg.Wait()
	}
}
