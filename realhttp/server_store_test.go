package realhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryStoreIsBounded(t *testing.T) {
	ctx := context.Background()
	t.Run("keys", func(t *testing.T) {
		m := NewMemoryStore(MemoryLimits{Keys: 2})
		for _, k := range []string{"a", "b"} {
			fresh, err := m.Begin(ctx, k)
			require.NoError(t, err)
			require.True(t, fresh)
		}
		_, err := m.Begin(ctx, "c")
		require.ErrorIs(t, err, ErrStoreFull, "keys in progress are never forgotten")
		require.NoError(t, m.Done(ctx, "a"))
		fresh, err := m.Begin(ctx, "c")
		require.NoError(t, err)
		assert.True(t, fresh, "the oldest processed key made room")
		state, _ := m.State(ctx, "a")
		assert.Empty(t, state, "forgotten")
		state, _ = m.State(ctx, "b")
		assert.Equal(t, IdempotencyInProgress, state)
		assert.Equal(t, MemoryStats{Keys: 2, Bytes: 2 * (1 + memoryKeyOverhead), Forgotten: 1}, m.Stats())
	})
	t.Run("bytes", func(t *testing.T) {
		// Room for two keys of 100 bytes (each costs 200).
		m := NewMemoryStore(MemoryLimits{Bytes: 400})
		keys := []string{strings.Repeat("a", 100), strings.Repeat("b", 100), strings.Repeat("c", 100)}
		for _, k := range keys {
			fresh, err := m.Begin(ctx, k)
			require.NoError(t, err)
			require.True(t, fresh)
			require.NoError(t, m.Done(ctx, k))
		}
		st := m.Stats()
		assert.Equal(t, 2, st.Keys)
		assert.LessOrEqual(t, st.Bytes, int64(400))
		assert.Equal(t, int64(1), st.Forgotten)
	})
	t.Run("many", func(t *testing.T) {
		// 100,000 keys of 1 KB through a store of 1,000 keys stay within
		// its bound.
		m := NewMemoryStore(MemoryLimits{Keys: 1000})
		pad := strings.Repeat("x", 1000)
		for i := range 100_000 {
			k := fmt.Sprint(i, pad)
			_, err := m.Begin(ctx, k)
			require.NoError(t, err)
			require.NoError(t, m.Done(ctx, k))
		}
		st := m.Stats()
		assert.Equal(t, 1000, st.Keys)
		assert.Less(t, st.Bytes, int64(1200_000))
		assert.Equal(t, int64(99_000), st.Forgotten)
	})
}

func TestServerRejectsLongKeys(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  idempotency: true\n")
	store := NewMemoryStore(MemoryLimits{})
	s := serverTestStart(t, sc, ServerOptions{Store: store})
	c := serverTestClient(t)
	resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", strings.Repeat("k", ServerMaxKeyLen+1))
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", strings.Repeat("k", ServerMaxKeyLen))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	st := s.Stats()
	assert.Equal(t, int64(1), st.BadKeys)
	assert.Equal(t, int64(1), st.Attempts, "a refused key is not an attempt")
	assert.Equal(t, 1, store.Stats().Keys, "nor is it kept")
}

func TestServerCountsEveryDuplicate(t *testing.T) {
	for _, idempotency := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotency=%v", idempotency), func(t *testing.T) {
			serverTestLeaks(t)
			sc := serverTestScenario(t, fmt.Sprintf("  service_time: 1ms\n  idempotency: %v\n", idempotency))
			// A store of one key: a second key makes it forget the
			// first, as a Redis that lost its data would.
			store := NewMemoryStore(MemoryLimits{Keys: 1})
			log := &serverTestLog{}
			s := serverTestStart(t, sc, ServerOptions{Store: store, Log: log})
			c := serverTestClient(t)
			for _, k := range []string{"k1", "k2", "k1", "k1"} {
				resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", k)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode)
			}
			st := s.Stats()
			var reasons []string
			var duplicates int64
			for _, l := range log.lines(t) {
				reasons = append(reasons, l.Reason)
				if l.Duplicate {
					duplicates++
				}
			}
			if idempotency {
				assert.Equal(t, []string{"processed", "processed", "processed", "cached"}, reasons)
				assert.Equal(t, int64(1), st.Duplicates, "k1 processed again once the store forgot it")
			} else {
				assert.Equal(t, []string{"processed", "processed", "processed", "processed"}, reasons)
				assert.Equal(t, int64(2), st.Duplicates)
				assert.Zero(t, store.Stats().Keys, "without idempotency the store keeps nothing")
			}
			assert.Equal(t, st.Duplicates, duplicates, "the log marks them")
			resp, err := c.Get(s.URL() + "metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Contains(t, string(body), fmt.Sprintf("herdlab_server_duplicates_total %d\n", st.Duplicates))
		})
	}
}

func TestServerDuplicateWindow(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	s := serverTestStart(t, sc, ServerOptions{DuplicateWindow: 2})
	c := serverTestClient(t)
	for _, k := range []string{"a", "b", "b", "c", "a"} {
		_, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", k)
		require.NoError(t, err)
	}
	st := s.Stats()
	assert.Equal(t, int64(1), st.Duplicates, "b again; a was forgotten when c came")
	assert.Equal(t, int64(2), st.KeysForgotten)
}

// serverTestStore is an IdempotencyStore around a memory store whose
// calls fail or hang as told.
type serverTestStore struct {
	*MemoryStore
	failDone atomic.Bool // Done fails
	forgets  atomic.Bool // Begin and State act as if the store were empty
	mu       sync.Mutex
	hang     bool // every call waits for its context
}

func (f *serverTestStore) Begin(ctx context.Context, key string) (bool, error) {
	if err := f.wait(ctx); err != nil {
		return false, err
	}
	if f.forgets.Load() {
		return true, nil
	}
	return f.MemoryStore.Begin(ctx, key)
}

func (f *serverTestStore) State(ctx context.Context, key string) (string, error) {
	if err := f.wait(ctx); err != nil {
		return "", err
	}
	if f.forgets.Load() {
		return "", nil
	}
	return f.MemoryStore.State(ctx, key)
}

func (f *serverTestStore) Done(ctx context.Context, key string) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	if f.failDone.Load() {
		return errors.New("test store: Done fails")
	}
	return f.MemoryStore.Done(ctx, key)
}

func (f *serverTestStore) wait(ctx context.Context) error {
	f.mu.Lock()
	hang := f.hang
	f.mu.Unlock()
	if !hang {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestServerRetriesAFailedDone(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  idempotency: true\n")
	store := &serverTestStore{MemoryStore: NewMemoryStore(MemoryLimits{})}
	store.failDone.Store(true)
	s := serverTestStart(t, sc, ServerOptions{Store: store})
	c := serverTestClient(t)
	resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "processed: the failed Done does not change the answer")
	serverTestWait(t, "a few retries", func() bool { return s.Stats().StoreErrors >= 3 })
	// Until the Done lands, a repeat is told to come back, by this
	// server even if the store forgot the key (its lease ended)...
	store.forgets.Store(true)
	resp, err = serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	assert.Equal(t, "in_progress", resp.Header.Get(ServerReasonHeader))
	assert.Equal(t, 1, s.Stats().DonePending)
	// ...then it is answered from the cache: the key is not stuck in
	// progress.
	store.forgets.Store(false)
	store.failDone.Store(false)
	serverTestWait(t, "the Done retried until it lands", func() bool {
		state, _ := store.State(context.Background(), "k")
		return state == IdempotencyProcessed
	})
	resp, err = serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	assert.Equal(t, "cached", resp.Header.Get(ServerReasonHeader))
	st := s.Stats()
	assert.Equal(t, int64(1), st.DoneRetried)
	assert.GreaterOrEqual(t, st.StoreErrors, int64(3))
	assert.Zero(t, st.DonePending)
	assert.Zero(t, st.DoneLost)
	assert.Equal(t, int64(1), st.Processed)
}

func TestServerGivesUpPendingDonesAtShutdown(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  idempotency: true\n")
	store := &serverTestStore{MemoryStore: NewMemoryStore(MemoryLimits{})}
	store.failDone.Store(true)
	s, err := NewServer(sc, ServerOptions{Store: store})
	require.NoError(t, err)
	require.NoError(t, s.Start(""))
	_, err = serverTestPost(context.Background(), serverTestClient(t), s.URL(), "Idempotency-Key", "k")
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(context.Background()), "does not wait for a store that never takes the Done")
	st := s.Stats()
	assert.Equal(t, int64(1), st.DoneLost)
	assert.Zero(t, st.DonePending)
}

func TestServerStoreFailsClosedFast(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n  idempotency: true\n")
	store := &serverTestStore{MemoryStore: NewMemoryStore(MemoryLimits{}), hang: true}
	s := serverTestStart(t, sc, ServerOptions{Store: store, StoreTimeout: 50 * time.Millisecond})
	c := serverTestClient(t)
	for range 3 {
		start := time.Now()
		resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "k")
		took := time.Since(start)
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "store_error", resp.Header.Get(ServerReasonHeader))
		assert.GreaterOrEqual(t, took, 50*time.Millisecond)
		assert.Less(t, took, time.Second, "a hung store fails the request after its timeout")
	}
	assert.Zero(t, s.Stats().Processed, "fails closed: nothing processed")
}

func TestServerCapsConnections(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	s := serverTestStart(t, sc, ServerOptions{MaxConns: 4, ReadHeaderTimeout: 300 * time.Millisecond})
	// Four clients that send their headers at a byte a second hold
	// every connection...
	var slow []net.Conn
	for range 4 {
		conn, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err)
		_, err = conn.Write([]byte("P"))
		require.NoError(t, err)
		slow = append(slow, conn)
	}
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	serverTestWait(t, "four connections", func() bool { return s.Stats().Conns == 4 })
	// ...so the fifth waits, beyond the cap, until the header timeout
	// closes them; then it is served.
	start := time.Now()
	resp, err := serverTestPost(context.Background(), serverTestClient(t), s.URL())
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.GreaterOrEqual(t, took, 200*time.Millisecond, "not accepted beyond the cap")
	assert.Less(t, took, 3*time.Second, "accepted once the slow ones were cut")
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		answer, err := io.ReadAll(c) // to the server's close (net/http says 400 first)
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed by the server")
		assert.NotContains(t, string(answer), "200 OK")
	}
	assert.LessOrEqual(t, s.Stats().Conns, 4)
}

func TestServerBodyTimeout(t *testing.T) {
	// A body that does not arrive within BodyTimeout, of an announced
	// length or chunked, gets no answer, and no 200.
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	s := serverTestStart(t, sc, ServerOptions{BodyTimeout: 100 * time.Millisecond})
	for _, head := range []string{
		"Content-Length: 10\r\n\r\n{",
		"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
	} {
		conn, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err)
		defer conn.Close()
		start := time.Now()
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\n%s", head)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		answer, err := io.ReadAll(conn)
		took := time.Since(start)
		assert.Empty(t, answer, "no answer, and no 200, to a body that never comes: %q", head)
		if err != nil {
			assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed by the server, not by the test's deadline")
		}
		assert.GreaterOrEqual(t, took, 90*time.Millisecond)
		assert.Less(t, took, 3*time.Second)
	}
	assert.Zero(t, s.Stats().Attempts, "not an attempt")
}

func TestServerLogTruncatesKeys(t *testing.T) {
	serverTestLeaks(t)
	sc := serverTestScenario(t, "  service_time: 1ms\n")
	log := &serverTestLog{}
	s := serverTestStart(t, sc, ServerOptions{Log: log})
	key := strings.Repeat("k", 200)
	_, err := serverTestPost(context.Background(), serverTestClient(t), s.URL(), "Idempotency-Key", key)
	require.NoError(t, err)
	lines := log.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, key[:64]+"...", lines[0].Key)
	assert.Equal(t, 200, lines[0].KeyLen)
}

// TestLogFileWritesInBatches: a line waits, then reaches the file
// LogFileFlush after the first line waiting, or at once when
// LogFileBuffer bytes wait; Close writes the lines still waiting.
func TestLogFileWritesInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		l, err := OpenLogFile(path, 1<<30)
		require.NoError(t, err)
		size := func() int {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			return len(b)
		}
		line := []byte(strings.Repeat("x", 99) + "\n") // 100 bytes
		_, err = l.Write(line)
		require.NoError(t, err)
		time.Sleep(LogFileFlush / 2)
		_, err = l.Write(line)
		require.NoError(t, err)
		time.Sleep(LogFileFlush/2 - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 0, size(), "the lines wait")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 200, size(), "LogFileFlush after the first")

		for range LogFileBuffer / len(line) {
			_, err = l.Write(line)
			require.NoError(t, err)
		}
		assert.Equal(t, 200, size())
		_, err = l.Write(line)
		require.NoError(t, err)
		assert.Equal(t, 200+LogFileBuffer/len(line)*len(line)+len(line), size(), "a full buffer is written at once")

		_, err = l.Write(line)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		assert.Equal(t, 300+LogFileBuffer/len(line)*len(line)+len(line), size(), "Close writes the lines waiting")
		time.Sleep(LogFileFlush)
		_, err = l.Write(line)
		assert.Error(t, err, "closed")
	})
}

func TestLogFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o644))
	l, err := OpenLogFile(path, 100)
	require.NoError(t, err)
	old, err := os.ReadFile(path + ".1")
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(old), "an existing log is kept")
	line := []byte(strings.Repeat("x", 39) + "\n") // 40 bytes
	for range 10 {
		_, err := l.Write(line)
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	assert.Equal(t, 4, l.Rotations(), "2 lines a file: 5 files, 4 rotations")
	for _, p := range []string{path, path + ".1"} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Len(t, b, 80, "whole lines, within the bound")
	}
	_, err = OpenLogFile(path, 0)
	assert.Error(t, err)

	// Opened twice without a line between: the older log stays.
	l, err = OpenLogFile(path, 100)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l, err = OpenLogFile(path, 100)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	kept, err := os.ReadFile(path + ".1")
	require.NoError(t, err)
	assert.Len(t, kept, 80, "not replaced by an empty log")
}
