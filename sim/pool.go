package sim

// Pool is one sender's dispatcher: at most a fixed number of workers, one
// per request being tried; the other requests wait in FIFO order, linked
// through a slice next (next[i] is the request queued after i), so that a
// million senders cost no allocation. The real-HTTP driver shares it. The
// zero Pool is not ready: start from NewPool.
type Pool struct{ inFlight, head, tail int32 }

// NewPool returns a pool with every worker free and nobody waiting.
func NewPool() Pool { return Pool{head: -1, tail: -1} }

// Acquire gives request i one of the workers if one is free, and
// reports true; otherwise it queues i and reports false.
func (p *Pool) Acquire(i, workers int32, next []int32) bool {
	if p.inFlight < workers {
		p.inFlight++
		return true
	}
	next[i] = -1
	if p.tail >= 0 {
		next[p.tail] = i
	} else {
		p.head = i
	}
	p.tail = i
	return false
}

// Release frees a worker and returns the request that has waited longest,
// to try again now (it will Acquire the freed worker), if any.
func (p *Pool) Release(next []int32) (int32, bool) {
	p.inFlight--
	if p.head < 0 {
		return -1, false
	}
	i := p.head
	p.head = next[i]
	if p.head < 0 {
		p.tail = -1
	}
	return i, true
}
