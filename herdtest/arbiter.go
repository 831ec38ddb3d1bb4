package herdtest

import (
	"cmp"
	"slices"
	"sync"
	"testing/synctest"
)

// arbiter puts what happens at one instant of the bubble's clock in a
// set order. Attempts that reach the server at the same virtual
// nanosecond would otherwise take its slots, its rate limit's tokens and
// its random draws in the order the Go scheduler runs their goroutines,
// and two runs of one seed would differ by an attempt. Each waits for
// its turn (enter); the arbiter, the only caller of synctest.Wait, lets
// the instant's work settle first (the timers due, the answers sent),
// then lets the turns go one at a time in the order of their keys, each
// until its goroutine blocks again.
type arbiter struct {
	mu      sync.Mutex
	pending []*turn
	seq     int64
	wake    chan struct{} // a turn is pending
	stop    chan struct{}
	done    chan struct{}
}

// turn is one goroutine waiting for its turn.
type turn struct {
	key  turnKey
	seq  int64 // arrival order, the last tie-break (not reproducible)
	next chan struct{}
}

// turnKey orders the turns of one instant: the phase first (samples
// before attempts, attempts before the steps of a graph of services),
// then the sender, the request and the attempt, then a graph's step
// (see graphKey).
type turnKey struct {
	phase            int
	sender           int64
	request, attempt int64
	graph            [8]int64
}

// The phases of a turn.
const (
	phaseSample  = iota // the end of a bucket: sampled before the instant's attempts
	phaseAttempt        // an attempt reaching the server
	phaseGraph          // a step of a graph's services (see graphKey)
)

func newArbiter() *arbiter {
	a := &arbiter{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.loop()
	return a
}

// enter waits for the turn of key.
func (a *arbiter) enter(key turnKey) {
	t := &turn{key: key, next: make(chan struct{})}
	a.mu.Lock()
	a.seq++
	t.seq = a.seq
	a.pending = append(a.pending, t)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	<-t.next
}

// close stops the arbiter once no turn is pending.
func (a *arbiter) close() {
	close(a.stop)
	<-a.done
}

func (a *arbiter) loop() {
	defer close(a.done)
	for {
		select {
		case <-a.wake:
		case <-a.stop:
			return
		}
		for {
			synctest.Wait()
			a.mu.Lock()
			batch := a.pending
			a.pending = nil
			a.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			slices.SortFunc(batch, func(x, y *turn) int {
				return cmp.Or(cmp.Compare(x.key.phase, y.key.phase), cmp.Compare(x.key.sender, y.key.sender),
					cmp.Compare(x.key.request, y.key.request), cmp.Compare(x.key.attempt, y.key.attempt), slices.Compare(x.key.graph[:], y.key.graph[:]), cmp.Compare(x.seq, y.seq))
			})
			for i, t := range batch {
				close(t.next)
				if i < len(batch)-1 {
					synctest.Wait()
				}
			}
		}
	}
}
