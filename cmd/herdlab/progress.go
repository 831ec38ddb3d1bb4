package main

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a progress bar on a terminal for work that takes more
// than a couple of seconds; on anything else it shows nothing. A nil
// *progress is silent.
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
	p := &progress{stop: make(chan struct{}), total: total}
	p.wg.Go(func() {
		select {
		case <-p.stop:
			return
		case <-time.After(showAfter):
		}
		bar := progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(title),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				bar.Set(total)
				bar.Finish()
				return
			case <-tick.C:
				bar.Set(int(p.done.Load()))
				if note := p.note.Swap(nil); note != nil {
					bar.Describe(title + " " + *note)
				}
			}
		}
	})
	return p
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
