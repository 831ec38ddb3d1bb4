package memnet

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Network is one listener's worth of in-memory connections: clients
// Dial it, a server Accepts from its Listener. Make it with New inside
// the bubble that uses it. Its methods are safe for concurrent use.
type Network struct {
	addr  net.Addr      // a serverAddr
	ready chan struct{} // one token while queue is not empty, for Accept
	done  chan struct{} // closed by the listener's Close

	mu       sync.Mutex
	queue    []*Conn // server ends not yet accepted, in dial order
	closed   bool
	refusing bool
	dialed   uint32 // connections made so far, numbering client addresses

	open atomic.Int64 // connections with an end not yet closed
}

// New returns a network whose listener, and the server end of every
// connection, report addr (such as "herdlab.test:80") as their address.
func New(addr string) *Network {
	return &Network{
		addr:  serverAddr(addr),
		ready: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// DialOptions are one connection's settings. The zero value has no
// delay and no tag.
type DialOptions struct {
	// Delay draws a one-way delay. It is called once per message: each
	// leg of the connect (the SYN, then the answer), each Write that
	// sends bytes and each Close, from the goroutine doing it (for a
	// Write or a Close, with the connection's lock held: it must not
	// use the connection). A negative delay counts as zero. nil: none.
	Delay func() time.Duration
	// Tag is what (*Conn).Tag returns on both ends: the server learns
	// who dialed.
	Tag any
}

// SetRefusing makes Dial fail, while on, as a connect to a port nobody
// listens on: the SYN is answered by a reset. Connections already made
// are not affected.
func (n *Network) SetRefusing(on bool) {
	n.mu.Lock()
	n.refusing = on
	n.mu.Unlock()
}

// Open reports how many connections have an end not yet closed.
// Connections still waiting in the listener's queue count.
func (n *Network) Open() int { return int(n.open.Load()) }

// Dial connects to the network's listener as a TCP connect would: the
// SYN takes one delay; then, if the listener is closed or the network
// refusing, the reset takes a second delay back and Dial returns an
// error for which errors.Is(err, syscall.ECONNREFUSED) holds; otherwise
// the server end is queued for Accept and the client end is returned
// after the second delay (the server's answer). If ctx ends first, Dial
// returns ctx's error in a *net.OpError (and closes the server end,
// if it was made).
func (n *Network) Dial(ctx context.Context, o DialOptions) (net.Conn, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	leg := func() error {
		d := draw(o.Delay)
		if d == 0 {
			return ctx.Err()
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	dialErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: n.addr, Err: err}
	}

	if err := leg(); err != nil {
		return nil, dialErr(err)
	}
	client, refused := n.connect(o)
	if err := leg(); err != nil {
		if client != nil {
			// The client gives up: the server end sees the connection
			// close, as after a reset.
			client.Close()
		}
		return nil, dialErr(err)
	}
	if refused {
		return nil, dialErr(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	}
	return client, nil
}

// connect makes a connection and queues its server end for Accept, or
// reports that the network refuses it.
func (n *Network) connect(o DialOptions) (client *Conn, refused bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.refusing {
		return nil, true
	}
	n.dialed++
	c := &conn{n: n, delay: o.Delay, tag: o.Tag, id: n.dialed}
	c.ends[0].c, c.ends[0].side = c, 0
	c.ends[1].c, c.ends[1].side = c, 1
	n.open.Add(1)
	n.queue = append(n.queue, &c.ends[serverSide])
	select {
	case n.ready <- struct{}{}:
	default:
	}
	return &c.ends[clientSide], false
}

// Listener returns the network's listener. There is one: every call
// returns the same.
func (n *Network) Listener() net.Listener { return (*listener)(n) }

// listener is a Network seen from the server's side.
type listener Network

var _ net.Listener = (*listener)(nil)

// Accept returns the next connection's server end, in dial order,
// waiting for one to be dialed. After Close it returns net.ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	n := (*Network)(l)
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: n.addr, Err: net.ErrClosed}
		}
		if len(n.queue) > 0 {
			c := n.queue[0]
			n.queue[0] = nil
			n.queue = n.queue[1:]
			if len(n.queue) == 0 {
				n.queue = nil
			} else {
				// Another Accept may take the next one.
				select {
				case n.ready <- struct{}{}:
				default:
				}
			}
			n.mu.Unlock()
			return c, nil
		}
		n.mu.Unlock()
		select {
		case <-n.ready:
		case <-n.done:
		}
	}
}

// Close makes Accept return net.ErrClosed and later Dials be refused;
// it closes the connections not yet accepted, as a real listener resets
// them. Connections already accepted are not affected. Close is
// idempotent.
func (l *listener) Close() error {
	n := (*Network)(l)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.done)
	queue := n.queue
	n.queue = nil
	n.mu.Unlock()
	for _, c := range queue {
		c.Close()
	}
	return nil
}

// Addr returns the network's address.
func (l *listener) Addr() net.Addr { return l.addr }

// draw returns f's delay, zero for a nil f or a negative delay.
func draw(f func() time.Duration) time.Duration {
	if f == nil {
		return 0
	}
	return max(f(), 0)
}

// serverAddr is the address New was given.
type serverAddr string

func (a serverAddr) Network() string { return "tcp" }
func (a serverAddr) String() string  { return string(a) }

// clientAddr is the client end's address of the connection numbered
// with it (from 1): 10.0.0.1:1024, 10.0.0.1:1025... 60,000 ports per
// address.
type clientAddr uint32

func (a clientAddr) Network() string { return "tcp" }
func (a clientAddr) String() string {
	const ports = 60_000
	i := uint32(a) - 1
	host := i/ports + 1
	return fmt.Sprintf("10.%d.%d.%d:%d", host>>16&0xff, host>>8&0xff, host&0xff, 1024+i%ports)
}
