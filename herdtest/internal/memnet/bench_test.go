package memnet

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inUse returns the bytes of live heap and goroutine stacks, after a
// collection.
func inUse() int64 {
	heap, stacks := memory()
	return heap + stacks
}

// warmGoroutines runs count goroutines at once, and lets them end:
// the runtime keeps a goroutine's descriptor (and some of its stack)
// for the next one, so a measure taken after this does not count them
// where count goroutines come and go.
func warmGoroutines(count int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range count {
		wg.Go(func() { <-release })
	}
	close(release)
	wg.Wait()
}

// memory returns the bytes of live heap, and of goroutine stacks, after
// a collection.
func memory() (heap, stacks int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.StackInuse)
}

// idleConns makes count connections on n that each carried a message
// both ways, and whose server end waited for a read deadline (so that
// it made its timer), and returns their ends.
func idleConns(t testing.TB, n *Network, count int) []*Conn {
	ends := make([]*Conn, 0, 2*count)
	b := make([]byte, 64)
	for i := range count {
		c, err := n.Dial(context.Background(), DialOptions{Tag: i})
		require.NoError(t, err)
		s, err := n.Listener().Accept()
		require.NoError(t, err)
		client, server := c.(*Conn), s.(*Conn)
		_, err = client.Write(b)
		require.NoError(t, err)
		_, err = server.Read(b)
		require.NoError(t, err)
		_, err = server.Write(b[:10])
		require.NoError(t, err)
		_, err = client.Read(b)
		require.NoError(t, err)
		ends = append(ends, client, server)
	}
	// All at once: on the wall clock, outside a bubble, one after the
	// other would take count times the wait.
	var wg sync.WaitGroup
	deadline := time.Now().Add(100 * time.Millisecond)
	for i := 1; i < len(ends); i += 2 {
		server := ends[i]
		require.NoError(t, server.SetReadDeadline(deadline))
		wg.Go(func() {
			_, err := server.Read(make([]byte, 1))
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
			assert.NoError(t, server.SetReadDeadline(time.Time{}))
		})
	}
	wg.Wait()
	timers := 0
	for i := 1; i < len(ends); i += 2 {
		if ends[i].in.timer != nil {
			timers++
		}
	}
	if timers < count*9/10 {
		t.Fatalf("%d timers made for %d connections", timers, count)
	}
	return ends
}

func TestIdleConnectionsAreSmall(t *testing.T) {
	// 50,000 connections must fit in well under 20 KB each, with the
	// HTTP client and server over them: memnet's part is under 1 KB
	// (a few hundred bytes more with the race detector). A goroutine or
	// a 1 KB buffer per end would break the limit.
	const count, limit = 10_000, 2048
	synctest.Test(t, func(t *testing.T) {
		warmGoroutines(count)
		before := inUse()
		n := New(addr)
		ends := idleConns(t, n, count)
		perConn := float64(inUse()-before) / count
		t.Logf("%.0f B/conn", perConn)
		assert.Less(t, perConn, float64(limit))
		assert.Equal(t, count, n.Open())
		for _, e := range ends {
			require.NoError(t, e.Close())
		}
		assert.Equal(t, 0, n.Open())
	})
}

// BenchmarkIdleConns measures what an idle connection costs memnet:
// both ends, each having sent and received a message.
func BenchmarkIdleConns(b *testing.B) {
	const count = 10_000
	var perConn float64
	for b.Loop() {
		warmGoroutines(count)
		before := inUse()
		n := New(addr)
		ends := idleConns(b, n, count)
		perConn = float64(inUse()-before) / count
		for _, e := range ends {
			e.Close()
		}
	}
	b.ReportMetric(perConn, "B/conn")
}

// BenchmarkIdleHTTPConns measures what an idle keep-alive HTTP/1.1
// connection costs with net/http on both ends: memnet's ends, the
// server's goroutine and buffers, a client transport (one per
// connection, as one per sender) with its two goroutines and buffers.
// It runs outside a bubble (synctest.Test wants a *testing.T), on the
// wall clock, without delay.
func BenchmarkIdleHTTPConns(b *testing.B) {
	for _, count := range []int{10_000} {
		b.Run("conns="+strconv.Itoa(count), func(b *testing.B) {
			var heap, stacks float64
			for b.Loop() {
				heap0, stacks0 := memory()
				n := New(addr)
				srv := &http.Server{Handler: echoTag(0)}
				go srv.Serve(n.Listener())
				transports := make([]*http.Transport, count)
				for i := range transports {
					transports[i] = transport(n, DialOptions{Tag: i})
					if _, err := get(&http.Client{Transport: transports[i]}); err != nil {
						b.Fatal(err)
					}
				}
				if n.Open() != count {
					b.Fatalf("%d connections open, want %d", n.Open(), count)
				}
				heap1, stacks1 := memory()
				heap = float64(heap1-heap0) / float64(count)
				stacks = float64(stacks1-stacks0) / float64(count)
				for _, tr := range transports {
					tr.CloseIdleConnections()
				}
				if err := srv.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(heap+stacks, "B/conn")
			b.ReportMetric(stacks, "stack-B/conn")
		})
	}
}

// BenchmarkHTTPRoundTrip measures a request's round trip over a
// keep-alive connection, net/http on both ends, without delay.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	n := New(addr)
	srv := &http.Server{Handler: echoTag(0)}
	go srv.Serve(n.Listener())
	tr := transport(n, DialOptions{Tag: 1})
	c := &http.Client{Transport: tr}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := get(c); err != nil {
			b.Fatal(err)
		}
	}
	tr.CloseIdleConnections()
	srv.Shutdown(context.Background())
}

// BenchmarkSmallWrites measures a small write and its read, as a gRPC
// connection's frames are: the writer sends ten 9-byte frames per
// read.
func BenchmarkSmallWrites(b *testing.B) {
	c, s := pair(b, New(addr), DialOptions{})
	frame := make([]byte, 9)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			c.Write(frame)
		}
		s.Read(buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(10*b.N), "ns/write")
	c.Close()
	s.Close()
}
