package realhttp

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// serverListenRetry is how often a listener that could not re-open its
// address (another socket took the port during the outage) tries again.
const serverListenRetry = 5 * time.Millisecond

// serverListener is a TCP listener that can be taken down and put back
// up on the same address, for refuse outages: while it is down, no
// socket listens on the address, so the kernel refuses connections
// (ECONNREFUSED), and Accept blocks until it is up again. Connections
// already accepted are not touched. A connection in the accept backlog
// when it goes down is reset by the kernel.
//
// It caps the connections open at once: at the cap, Accept waits for
// one to close (new ones wait in the kernel's backlog).
//
// Close is final, and http.Server.Shutdown calls it.
type serverListener struct {
	addr    string // host:port, the port fixed by the first listen
	netAddr net.Addr
	done    chan struct{} // closed by Close
	slots   chan struct{} // one token per open connection
	conns   atomic.Int64
	wg      sync.WaitGroup
	// onFail is called (outside the lock) when putting the listener up
	// fails, and onRestored when a retry then succeeds; either may be
	// nil. They are set before the listener is used.
	onFail     func(error)
	onRestored func()

	mu       sync.Mutex
	inner    net.Listener // nil while down
	wantUp   bool
	closed   bool
	retrying bool
	changed  chan struct{} // closed and replaced whenever inner changes
}

// newServerListener binds addr, with a cap of maxConns connections (>0).
func newServerListener(addr string, maxConns int) (*serverListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &serverListener{
		addr:    ln.Addr().String(),
		netAddr: ln.Addr(),
		done:    make(chan struct{}),
		slots:   make(chan struct{}, maxConns),
		inner:   ln,
		wantUp:  true,
		changed: make(chan struct{}),
	}, nil
}

// Open returns the connections open now.
func (l *serverListener) Open() int { return int(l.conns.Load()) }

// Accept waits for a free connection slot, then for the next connection,
// through any number of outages.
func (l *serverListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.conns.Add(1)
	return &serverConn{Conn: c, l: l}, nil
}

func (l *serverListener) accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, net.ErrClosed
		}
		inner, changed := l.inner, l.changed
		l.mu.Unlock()
		if inner == nil {
			select {
			case <-changed:
			case <-l.done:
			}
			continue
		}
		c, err := inner.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		replaced := l.closed || l.inner != inner
		l.mu.Unlock()
		if !replaced {
			return nil, err // net/http retries temporary errors such as EMFILE
		}
	}
}

// serverConn is an accepted connection, which gives its slot back when
// it closes.
type serverConn struct {
	net.Conn
	l    *serverListener
	once sync.Once
}

func (c *serverConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.conns.Add(-1)
		<-c.l.slots
	})
	return err
}

// Close stops the listener for good, and waits for a re-open in progress
// to give up.
func (l *serverListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	var err error
	if l.inner != nil {
		err = l.inner.Close()
		l.inner = nil
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

// Addr returns the listening address, the same through outages.
func (l *serverListener) Addr() net.Addr { return l.netAddr }

// SetUp takes the listener down or puts it back up. Putting it up listens
// at once; if the address is taken, it says so (onFail) and tries again
// every serverListenRetry in the background until it can (onRestored),
// until it is taken down again, or until Close.
func (l *serverListener) SetUp(up bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.wantUp = up
	if !up {
		if l.inner != nil {
			_ = l.inner.Close()
			l.inner = nil
			l.signalLocked()
		}
		l.mu.Unlock()
		return
	}
	if l.inner != nil || l.retrying {
		l.mu.Unlock()
		return
	}
	err := l.listenLocked()
	if err == nil {
		l.mu.Unlock()
		return
	}
	l.retrying = true
	l.wg.Add(1)
	go l.retry()
	l.mu.Unlock()
	if l.onFail != nil {
		l.onFail(err)
	}
}

// retry re-opens the listener in the background.
func (l *serverListener) retry() {
	defer l.wg.Done()
	t := time.NewTicker(serverListenRetry)
	defer t.Stop()
	for {
		select {
		case <-l.done:
		case <-t.C:
		}
		l.mu.Lock()
		if l.closed || !l.wantUp || l.inner != nil {
			l.retrying = false
			l.mu.Unlock()
			return
		}
		if l.listenLocked() == nil {
			l.retrying = false
			l.mu.Unlock()
			if l.onRestored != nil {
				l.onRestored()
			}
			return
		}
		l.mu.Unlock()
	}
}

// listenLocked opens a socket on the address.
func (l *serverListener) listenLocked() error {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return err
	}
	l.inner = ln
	l.signalLocked()
	return nil
}

func (l *serverListener) signalLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}
