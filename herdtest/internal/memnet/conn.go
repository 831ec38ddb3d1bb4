package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// The ends of a connection, indexes of conn.ends.
const (
	clientSide = 0
	serverSide = 1
)

// conn is one connection: its two ends and what they share. Its
// lock guards both ends' state, and is held only for short critical
// sections: a blocked Read waits on a channel or a timer, unlocked.
type conn struct {
	n     *Network
	delay func() time.Duration
	tag   any
	id    uint32 // numbers the client's address

	mu   sync.Mutex
	ends [2]Conn
}

// Conn is one end of a connection; it implements net.Conn. Its
// methods are safe for concurrent use.
type Conn struct {
	c      *conn
	side   uint8
	closed bool
	in     inbox // what the peer sent this end

	readDeadline, writeDeadline time.Time // zero: none
}

var _ net.Conn = (*Conn)(nil)

// inbox holds the messages sent to one end and not yet read, and the
// peer's close: the stream's bytes from position base are buf, read up
// to off; msgs says from when each is readable.
type inbox struct {
	buf  []byte
	off  int
	base int64
	msgs []msg // not fully read, in stream order and by time

	last  time.Time // when the latest message (or the close) arrives
	eof   bool      // the peer closed; it arrives at eofAt
	eofAt time.Time

	wake      chan struct{} // non-nil while a Read waits; closed to wake it
	timer     *time.Timer   // a waiting Read's, made at the first need
	timerBusy bool          // a Read waits on timer
}

// msg is a message: the stream's bytes up to position end (from the
// previous message's end) are readable from at. Writes that arrive at
// the same instant share one msg.
type msg struct {
	at  time.Time
	end int64
}

// Tag returns DialOptions.Tag of the Dial that made the connection, on
// either end.
func (e *Conn) Tag() any { return e.c.tag }

// Read reads what has arrived, waiting until something has: a message
// whose time has come (as much of it as b holds, and of the following
// ones that have come too), the peer's close (io.EOF, after every byte
// sent before it), the read deadline (os.ErrDeadlineExceeded, a
// net.Error whose Timeout is true), or this end's Close
// (net.ErrClosed). A deadline set, or a Close, while Read waits
// takes effect at once. A deadline that has passed wins over data
// ready, as on a real socket.
func (e *Conn) Read(b []byte) (int, error) {
	c := e.c
	p := &e.in
	c.mu.Lock()
	for {
		if e.closed {
			c.mu.Unlock()
			return 0, e.opError("read", net.ErrClosed)
		}
		now := time.Now()
		if expired(e.readDeadline, now) {
			c.mu.Unlock()
			return 0, e.opError("read", os.ErrDeadlineExceeded)
		}
		if len(b) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		if n := p.read(b, now); n > 0 {
			c.mu.Unlock()
			return n, nil
		}
		if p.eof && len(p.msgs) == 0 && !now.Before(p.eofAt) {
			c.mu.Unlock()
			return 0, io.EOF
		}

		// Wait for the first message, the close or the deadline, or
		// for whatever may change them (a message or a close sent
		// into an empty inbox, a new deadline, Close).
		var until time.Time
		switch {
		case len(p.msgs) > 0:
			until = p.msgs[0].at
		case p.eof:
			until = p.eofAt
		}
		if !e.readDeadline.IsZero() && (until.IsZero() || e.readDeadline.Before(until)) {
			until = e.readDeadline
		}
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake := p.wake
		var t *time.Timer
		var fired <-chan time.Time
		if !until.IsZero() {
			d := until.Sub(now)
			switch {
			case p.timerBusy: // another Read waits on it
				t = time.NewTimer(d)
			case p.timer == nil:
				p.timer = time.NewTimer(d)
				p.timerBusy, t = true, p.timer
			default:
				p.timer.Reset(d)
				p.timerBusy, t = true, p.timer
			}
			fired = t.C
		}
		c.mu.Unlock()
		select {
		case <-wake:
		case <-fired:
		}
		c.mu.Lock()
		if t != nil {
			t.Stop()
			if t == p.timer {
				p.timerBusy = false
			}
		}
	}
}

// Write sends b to the peer without waiting: it copies b and queues it,
// readable at max(now + Delay(), the previous message's time). It
// returns len(b), nil; net.ErrClosed after this end's Close;
// os.ErrDeadlineExceeded (a net.Error whose Timeout is true) once the
// write deadline has passed. After the peer's Close the bytes are lost,
// as on a network, until the close has arrived: then Write fails with
// EPIPE (broken pipe).
func (e *Conn) Write(b []byte) (int, error) {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.closed {
		return 0, e.opError("write", net.ErrClosed)
	}
	now := time.Now()
	if expired(e.writeDeadline, now) {
		return 0, e.opError("write", os.ErrDeadlineExceeded)
	}
	if len(b) == 0 {
		return 0, nil
	}
	peer := &c.ends[1-e.side]
	if peer.closed {
		if !now.Before(e.in.eofAt) {
			return 0, e.opError("write", os.NewSyscallError("write", syscall.EPIPE))
		}
		return len(b), nil
	}
	peer.in.push(b, now.Add(draw(c.delay)))
	return len(b), nil
}

// Close closes this end: its Reads, waiting or not, return
// net.ErrClosed, and the peer reads io.EOF once the close has arrived,
// after the bytes sent before it. Once both ends are closed the
// connection is gone from Network.Open. Close is idempotent and returns
// nil.
func (e *Conn) Close() error {
	c := e.c
	c.mu.Lock()
	if e.closed {
		c.mu.Unlock()
		return nil
	}
	e.closed = true
	e.in.drop()
	peer := &c.ends[1-e.side]
	gone := peer.closed
	if !gone {
		peer.in.close(time.Now().Add(draw(c.delay)))
	}
	c.mu.Unlock()
	if gone {
		c.n.open.Add(-1)
	}
	return nil
}

// LocalAddr returns the network's address on the server's end, the
// connection's client address (10.0.0.1:1024...) on the client's.
func (e *Conn) LocalAddr() net.Addr { return e.addr(e.side) }

// RemoteAddr returns the other end's LocalAddr.
func (e *Conn) RemoteAddr() net.Addr { return e.addr(1 - e.side) }

func (e *Conn) addr(side uint8) net.Addr {
	if side == serverSide {
		return e.c.n.addr
	}
	return clientAddr(e.c.id)
}

// SetDeadline sets both deadlines.
func (e *Conn) SetDeadline(t time.Time) error {
	return e.setDeadlines(t, t, true, true)
}

// SetReadDeadline sets the time from which Read fails with
// os.ErrDeadlineExceeded; the zero time means none. It takes effect at
// once, on a Read already waiting too (net/http's server interrupts its
// background read with a deadline in the past).
func (e *Conn) SetReadDeadline(t time.Time) error {
	return e.setDeadlines(t, time.Time{}, true, false)
}

// SetWriteDeadline sets the time from which Write fails with
// os.ErrDeadlineExceeded; the zero time means none. A Write never
// waits, so only a deadline already passed when it is called matters.
func (e *Conn) SetWriteDeadline(t time.Time) error {
	return e.setDeadlines(time.Time{}, t, false, true)
}

func (e *Conn) setDeadlines(read, write time.Time, setRead, setWrite bool) error {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.closed {
		return e.opError("set", net.ErrClosed)
	}
	if setRead {
		e.readDeadline = read
		e.in.notify()
	}
	if setWrite {
		e.writeDeadline = write
	}
	return nil
}

func (e *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: e.LocalAddr(), Addr: e.RemoteAddr(), Err: err}
}

// expired reports whether deadline is set and has passed at now.
func expired(deadline, now time.Time) bool {
	return !deadline.IsZero() && !now.Before(deadline)
}

// push queues b, readable at at or after the previous message.
func (p *inbox) push(b []byte, at time.Time) {
	if at.Before(p.last) {
		at = p.last
	}
	p.last = at
	if p.off > 0 && p.off >= len(p.buf)-p.off {
		// As much read as not: move the rest to the front, so that a
		// reader that never catches up does not grow buf forever.
		live := copy(p.buf, p.buf[p.off:])
		p.base += int64(p.off)
		p.buf, p.off = p.buf[:live], 0
	}
	p.buf = append(p.buf, b...)
	end := p.base + int64(len(p.buf))
	if n := len(p.msgs); n > 0 && p.msgs[n-1].at.Equal(at) {
		p.msgs[n-1].end = end
		return
	}
	p.msgs = append(p.msgs, msg{at: at, end: end})
	if len(p.msgs) == 1 {
		// A Read waiting on an empty inbox has no timer for this.
		p.notify()
	}
}

// close queues the peer's close, arriving at at or after the last
// message.
func (p *inbox) close(at time.Time) {
	if at.Before(p.last) {
		at = p.last
	}
	p.last, p.eof, p.eofAt = at, true, at
	if len(p.msgs) == 0 {
		p.notify()
	}
}

// read copies into b what has arrived by now, and returns how many
// bytes it copied: zero if nothing has.
func (p *inbox) read(b []byte, now time.Time) int {
	k := 0
	for k < len(p.msgs) && !p.msgs[k].at.After(now) {
		k++
	}
	if k == 0 {
		return 0
	}
	n := copy(b, p.buf[p.off:p.msgs[k-1].end-p.base])
	p.off += n
	pos := p.base + int64(p.off)
	i := 0
	for i < len(p.msgs) && p.msgs[i].end <= pos {
		i++
	}
	p.msgs = p.msgs[i:]
	if len(p.msgs) == 0 {
		// All read: keep nothing while the connection idles.
		p.base += int64(len(p.buf))
		p.buf, p.off, p.msgs = nil, 0, nil
	}
	return n
}

// notify wakes the Reads waiting on p.
func (p *inbox) notify() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// drop wakes the Reads waiting on p and forgets what p holds, for its
// end's Close.
func (p *inbox) drop() {
	p.notify()
	p.buf, p.off, p.msgs = nil, 0, nil
	if !p.timerBusy {
		p.timer = nil
	}
}
