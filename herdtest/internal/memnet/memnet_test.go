package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const addr = "herdlab.test:80"

// constant returns a Delay that always draws d.
func constant(d time.Duration) func() time.Duration {
	return func() time.Duration { return d }
}

// pair dials n with o and accepts the connection: the client's end and
// the server's.
func pair(t testing.TB, n *Network, o DialOptions) (client, server *Conn) {
	t.Helper()
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed)
	go func() {
		c, err := n.Dial(context.Background(), o)
		ch <- dialed{c, err}
	}()
	s, err := n.Listener().Accept()
	require.NoError(t, err)
	d := <-ch
	require.NoError(t, d.err)
	return d.c.(*Conn), s.(*Conn)
}

// event is something a reader saw, and when (since the test's start).
type event struct {
	at   time.Duration
	data string
	err  error
}

// readAll reads c until an error, with a buffer of size bytes, and
// returns what each Read gave.
func readAll(c net.Conn, start time.Time, size int) []event {
	var events []event
	b := make([]byte, size)
	for {
		n, err := c.Read(b)
		events = append(events, event{at: time.Since(start), data: string(b[:n]), err: err})
		if err != nil {
			return events
		}
	}
}

func TestDialTakesTwoDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		start := time.Now()
		var accepted time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := n.Listener().Accept()
			assert.NoError(t, err)
			accepted = time.Since(start)
		}()
		c, err := n.Dial(context.Background(), DialOptions{Delay: constant(10 * time.Millisecond), Tag: "sender 7"})
		require.NoError(t, err)
		<-done
		assert.Equal(t, 10*time.Millisecond, accepted, "the SYN takes one delay")
		assert.Equal(t, 20*time.Millisecond, time.Since(start), "Dial returns after the answer's")
		assert.Equal(t, "sender 7", c.(*Conn).Tag())
		assert.Equal(t, 1, n.Open())
	})
}

func TestLatency(t *testing.T) {
	// A writer writes at each row's time, drawing the row's delay; the
	// reader records what each Read returns, and when.
	writes := []struct {
		at    time.Duration
		delay time.Duration
		data  string // "" closes
	}{
		{at: 0, delay: 30 * time.Millisecond, data: "a"},
		{at: 5 * time.Millisecond, delay: 10 * time.Millisecond, data: "b"}, // would arrive before "a": waits for it
		{at: 10 * time.Millisecond, delay: 5 * time.Millisecond, data: "c"},
		{at: 40 * time.Millisecond, delay: 10 * time.Millisecond, data: "d"},
		{at: 41 * time.Millisecond, delay: 1 * time.Millisecond, data: "e"},
		{at: 70 * time.Millisecond, delay: 7 * time.Millisecond, data: "fgh"},
		{at: 70 * time.Millisecond, delay: 0, data: ""}, // the close keeps its place too
	}
	want := []event{
		{at: 30 * time.Millisecond, data: "ab"}, // a buffer of two bytes: partial reads
		{at: 30 * time.Millisecond, data: "c"},
		{at: 50 * time.Millisecond, data: "de"},
		{at: 77 * time.Millisecond, data: "fg"},
		{at: 77 * time.Millisecond, data: "h"},
		{at: 77 * time.Millisecond, err: io.EOF},
	}
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		var delay time.Duration // set by the writer before each message
		client, server := pair(t, n, DialOptions{Delay: func() time.Duration { return delay }})
		start := time.Now()
		go func() {
			for _, w := range writes {
				time.Sleep(w.at - time.Since(start))
				delay = w.delay
				if w.data == "" {
					assert.NoError(t, server.Close())
					continue
				}
				k, err := server.Write([]byte(w.data))
				assert.NoError(t, err)
				assert.Equal(t, len(w.data), k)
			}
		}()
		assert.Equal(t, want, readAll(client, start, 2))
		assert.Equal(t, 1, n.Open(), "the client's end is open")
		require.NoError(t, client.Close())
		assert.Equal(t, 0, n.Open())
	})
}

func TestWriteNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := pair(t, New(addr), DialOptions{Delay: constant(time.Second)})
		start := time.Now()
		big := make([]byte, 1<<20)
		sent := 0
		for i := range 1000 {
			k, err := client.Write(big[:i%7+1])
			require.NoError(t, err)
			require.Equal(t, i%7+1, k)
			sent += k
		}
		k, err := client.Write(big)
		require.NoError(t, err)
		require.Equal(t, len(big), k)
		sent += k
		assert.Zero(t, time.Since(start), "nobody read, and no time passed")

		total := 0
		for total < sent {
			k, err := server.Read(big)
			require.NoError(t, err)
			total += k
			assert.Equal(t, time.Second, time.Since(start))
		}
		assert.Equal(t, sent, total)
		assert.Nil(t, server.in.buf, "nothing kept once read")
	})
}

func TestWritesArrivingTogetherShareARecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var delay time.Duration
		client, server := pair(t, New(addr), DialOptions{Delay: func() time.Duration { return delay }})
		records := func() int {
			server.c.mu.Lock()
			defer server.c.mu.Unlock()
			return len(server.in.msgs)
		}
		for range 1000 {
			_, err := client.Write([]byte("frame"))
			require.NoError(t, err)
		}
		assert.Equal(t, 1, records(), "written at one instant")

		b := make([]byte, 5000)
		k, err := server.Read(b)
		require.NoError(t, err)
		require.Equal(t, 5000, k)

		// Sent later, with shorter delays: they wait for the first.
		for _, d := range []time.Duration{30, 20, 10} {
			delay = d * time.Millisecond
			_, err := client.Write([]byte("x"))
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond)
		}
		assert.Equal(t, 1, records(), "arriving at one instant")
	})
}

func TestAReaderThatLagsDoesNotGrowTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := pair(t, New(addr), DialOptions{Delay: constant(time.Millisecond)})
		b := make([]byte, 100)
		_, err := client.Write(b)
		require.NoError(t, err)
		for range 10_000 {
			// A message always in flight: the inbox is never empty,
			// and 1 MB goes through it.
			time.Sleep(time.Millisecond)
			_, err := client.Write(b)
			require.NoError(t, err)
			_, err = io.ReadFull(server, b)
			require.NoError(t, err)
			require.Len(t, server.in.msgs, 1)
		}
		assert.Less(t, cap(server.in.buf), 1024, "what was read is dropped")
	})
}

func TestReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := pair(t, New(addr), DialOptions{Delay: constant(10 * time.Millisecond)})
		start := time.Now()
		require.NoError(t, server.SetReadDeadline(start.Add(50*time.Millisecond)))
		_, err := server.Read(make([]byte, 10))
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
		assertTimeout(t, err)
		_, err = server.Read(make([]byte, 10))
		assertTimeout(t, err)

		// A deadline passed wins over data ready, as on a socket.
		_, err = client.Write([]byte("x"))
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		_, err = server.Read(make([]byte, 10))
		assertTimeout(t, err)

		require.NoError(t, server.SetReadDeadline(time.Time{}))
		k, err := server.Read(make([]byte, 10))
		assert.NoError(t, err)
		assert.Equal(t, 1, k)
	})
}

func assertTimeout(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	if assert.ErrorAs(t, err, &ne) {
		assert.True(t, ne.Timeout())
	}
}

func TestADeadlineSetDuringARead(t *testing.T) {
	tests := []struct {
		name     string
		set      func(c *Conn, now time.Time) error
		want     time.Duration // when the Read returns
		deadline bool          // with a timeout, else with the data
	}{
		{name: "in the past wakes it at once",
			set:  func(c *Conn, now time.Time) error { return c.SetReadDeadline(now.Add(-time.Hour)) },
			want: 5 * time.Millisecond, deadline: true},
		{name: "SetDeadline too",
			set:  func(c *Conn, now time.Time) error { return c.SetDeadline(now.Add(-time.Hour)) },
			want: 5 * time.Millisecond, deadline: true},
		{name: "sooner than the data",
			set:  func(c *Conn, now time.Time) error { return c.SetReadDeadline(now.Add(10 * time.Millisecond)) },
			want: 15 * time.Millisecond, deadline: true},
		{name: "later than the data",
			set:  func(c *Conn, now time.Time) error { return c.SetReadDeadline(now.Add(time.Second)) },
			want: 100 * time.Millisecond},
		{name: "a write deadline does not stop a read",
			set:  func(c *Conn, now time.Time) error { return c.SetWriteDeadline(now.Add(-time.Hour)) },
			want: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, server := pair(t, New(addr), DialOptions{Delay: constant(100 * time.Millisecond)})
				start := time.Now()
				_, err := client.Write([]byte("x"))
				require.NoError(t, err)
				go func() {
					time.Sleep(5 * time.Millisecond)
					assert.NoError(t, tt.set(server, time.Now()))
				}()
				_, err = server.Read(make([]byte, 1))
				assert.Equal(t, tt.want, time.Since(start))
				if tt.deadline {
					assertTimeout(t, err)
				} else {
					assert.NoError(t, err)
				}
			})
		})
	}
}

func TestWriteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, _ := pair(t, New(addr), DialOptions{})
		now := time.Now()
		require.NoError(t, client.SetWriteDeadline(now.Add(time.Second)))
		_, err := client.Write([]byte("before"))
		assert.NoError(t, err)
		time.Sleep(time.Second)
		k, err := client.Write([]byte("at"))
		assert.Zero(t, k)
		assertTimeout(t, err)
		require.NoError(t, client.SetDeadline(time.Time{}))
		_, err = client.Write([]byte("cleared"))
		assert.NoError(t, err)
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		client, server := pair(t, n, DialOptions{Delay: constant(10 * time.Millisecond)})
		start := time.Now()

		// A Read waiting on the end that closes returns at once.
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := client.Read(make([]byte, 1))
			assert.ErrorIs(t, err, net.ErrClosed)
			assert.Zero(t, time.Since(start))
		}()
		synctest.Wait()
		_, err := client.Write([]byte("sent before the close"))
		require.NoError(t, err)
		require.NoError(t, client.Close())
		require.NoError(t, client.Close(), "idempotent")
		<-done
		assert.Equal(t, 1, n.Open())

		_, err = client.Read(make([]byte, 1))
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = client.Write([]byte("x"))
		assert.ErrorIs(t, err, net.ErrClosed)
		assert.ErrorIs(t, client.SetDeadline(time.Time{}), net.ErrClosed)

		// Until the close arrives, the peer's writes are lost; then
		// they fail, as after a reset.
		k, err := server.Write([]byte("lost"))
		assert.NoError(t, err)
		assert.Equal(t, 4, k)
		assert.Equal(t, []event{
			{at: 10 * time.Millisecond, data: "sent before the close"},
			{at: 10 * time.Millisecond, err: io.EOF},
		}, readAll(server, start, 100))
		_, err = server.Read(make([]byte, 1))
		assert.Equal(t, io.EOF, err, "EOF again")
		_, err = server.Write([]byte("after"))
		assert.ErrorIs(t, err, syscall.EPIPE)

		require.NoError(t, server.Close())
		assert.Equal(t, 0, n.Open())
	})
}

func TestConcurrentReadsWakeOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, server := pair(t, New(addr), DialOptions{})
		require.NoError(t, server.SetReadDeadline(time.Now().Add(time.Hour)))
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				_, err := server.Read(make([]byte, 1))
				assert.ErrorIs(t, err, net.ErrClosed)
			})
		}
		synctest.Wait()
		require.NoError(t, server.Close())
		wg.Wait()
	})
}

func TestRefusing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		o := DialOptions{Delay: constant(10 * time.Millisecond)}
		n.SetRefusing(true)
		start := time.Now()
		c, err := n.Dial(context.Background(), o)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		var op *net.OpError
		if assert.ErrorAs(t, err, &op) {
			assert.Equal(t, "dial", op.Op)
			assert.Equal(t, "tcp", op.Net)
			assert.Equal(t, addr, op.Addr.String())
		}
		assert.Equal(t, 20*time.Millisecond, time.Since(start), "the SYN there, the reset back")
		assert.Equal(t, 0, n.Open())

		n.SetRefusing(false)
		client, server := pair(t, n, o)
		assert.Equal(t, 1, n.Open())
		require.NoError(t, client.Close())
		require.NoError(t, server.Close())
	})
}

func TestListenerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		ln := n.Listener()
		assert.Equal(t, addr, ln.Addr().String())
		client, server := pair(t, n, DialOptions{})
		queued, err := n.Dial(context.Background(), DialOptions{Delay: constant(time.Millisecond)})
		require.NoError(t, err)
		assert.Equal(t, 2, n.Open())

		require.NoError(t, ln.Close())
		require.NoError(t, ln.Close(), "idempotent")
		_, err = ln.Accept()
		assert.ErrorIs(t, err, net.ErrClosed, "not the queued connection")
		start := time.Now()
		_, err = queued.Read(make([]byte, 1))
		assert.Equal(t, io.EOF, err, "reset by the listener's close")
		assert.Equal(t, time.Millisecond, time.Since(start))
		require.NoError(t, queued.Close())
		assert.Equal(t, 1, n.Open())

		_, err = n.Dial(context.Background(), DialOptions{})
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)

		// An accepted connection lives on.
		_, err = client.Write([]byte("x"))
		require.NoError(t, err)
		k, err := server.Read(make([]byte, 1))
		assert.NoError(t, err)
		assert.Equal(t, 1, k)
	})
}

func TestCloseWakesAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := n.Listener().Accept()
			assert.ErrorIs(t, err, net.ErrClosed)
		}()
		synctest.Wait()
		require.NoError(t, n.Listener().Close())
		<-done
	})
}

func TestDialContext(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		queued  bool // the server's end was made, and sees the give-up
	}{
		{name: "during the SYN", timeout: 5 * time.Millisecond},
		{name: "during the answer", timeout: 15 * time.Millisecond, queued: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := New(addr)
				ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
				defer cancel()
				start := time.Now()
				c, err := n.Dial(ctx, DialOptions{Delay: constant(10 * time.Millisecond)})
				assert.Nil(t, c)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				var op *net.OpError
				assert.ErrorAs(t, err, &op)
				assert.Equal(t, tt.timeout, time.Since(start))

				if !tt.queued {
					assert.Equal(t, 0, n.Open())
					return
				}
				s, err := n.Listener().Accept()
				require.NoError(t, err)
				_, err = s.Read(make([]byte, 1))
				assert.Equal(t, io.EOF, err)
				assert.Equal(t, 25*time.Millisecond, time.Since(start))
				require.NoError(t, s.Close())
				assert.Equal(t, 0, n.Open())
			})
		})
	}
}

func TestAcceptInDialOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(addr)
		for i := range 5 {
			go func() {
				time.Sleep(time.Duration(i) * time.Millisecond)
				_, err := n.Dial(context.Background(), DialOptions{Tag: i})
				assert.NoError(t, err)
			}()
		}
		time.Sleep(time.Second)
		for i := range 5 {
			c, err := n.Listener().Accept()
			require.NoError(t, err)
			assert.Equal(t, i, c.(*Conn).Tag())
		}
	})
}

func TestAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := pair(t, New(addr), DialOptions{})
		assert.Equal(t, addr, server.LocalAddr().String())
		assert.Equal(t, addr, client.RemoteAddr().String())
		assert.Equal(t, "10.0.0.1:1024", client.LocalAddr().String())
		assert.Equal(t, client.LocalAddr(), server.RemoteAddr())
		assert.Equal(t, "tcp", client.LocalAddr().Network())
		assert.Equal(t, "tcp", server.LocalAddr().Network())
		assert.Equal(t, "10.0.0.1:61023", clientAddr(60_000).String())
		assert.Equal(t, "10.0.0.2:1024", clientAddr(60_001).String())
		assert.Equal(t, "10.0.1.0:1024", clientAddr(255*60_000+1).String())
	})
}

func TestErrorsAreTheSocketsOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, _ := pair(t, New(addr), DialOptions{})
		require.NoError(t, client.Close())
		_, err := client.Read(nil)
		var op *net.OpError
		if assert.ErrorAs(t, err, &op) {
			assert.Equal(t, "read", op.Op)
			assert.Equal(t, "10.0.0.1:1024", op.Source.String())
			assert.Equal(t, addr, op.Addr.String())
		}
		assert.True(t, errors.Is(err, net.ErrClosed))
	})
}
