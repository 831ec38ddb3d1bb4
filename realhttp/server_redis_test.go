package realhttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisStore returns a store on the Redis that HERDLAB_REDIS_URL names
// (.ci/run installs and starts one on loopback, with appendonly yes);
// without it the test is skipped, saying so, or fails when
// HERDLAB_REQUIRE_REDIS is set (.ci/run sets both).
func redisStore(t *testing.T) *RedisStore {
	t.Helper()
	url := os.Getenv("HERDLAB_REDIS_URL")
	if url == "" {
		if os.Getenv("HERDLAB_REQUIRE_REDIS") != "" {
			t.Fatal("HERDLAB_REDIS_URL is not set, and HERDLAB_REQUIRE_REDIS is set: the store's tests need a running Redis")
		}
		t.Skip("HERDLAB_REDIS_URL is not set: start a redis-server on loopback and set it to redis://127.0.0.1:6379/0 (.ci/run does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := NewRedisStore(ctx, url, RedisOptions{TTL: time.Minute, Lease: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRedisStore(t *testing.T) {
	s := redisStore(t)
	ctx := context.Background()
	key := uuid.NewString() // a fresh key: the Redis may be shared
	state, err := s.State(ctx, key)
	require.NoError(t, err)
	assert.Empty(t, state)

	fresh, err := s.Begin(ctx, key)
	require.NoError(t, err)
	assert.True(t, fresh)
	fresh, err = s.Begin(ctx, key)
	require.NoError(t, err)
	assert.False(t, fresh, "a second Begin finds the key")
	state, _ = s.State(ctx, key)
	assert.Equal(t, IdempotencyInProgress, state)
	ttl, err := s.client.TTL(ctx, s.prefix+key).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, 10*time.Second, "in progress for the lease only")

	require.NoError(t, s.Done(ctx, key))
	state, _ = s.State(ctx, key)
	assert.Equal(t, IdempotencyProcessed, state)
	ttl, err = s.client.TTL(ctx, s.prefix+key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 50*time.Second, "processed keys expire after the TTL")
	assert.LessOrEqual(t, ttl, time.Minute)
	assert.NoError(t, s.Check(ctx), "the epoch key is there")
}

func TestServerWithRedisStore(t *testing.T) {
	serverTestLeaks(t)
	// Every answer is lost: the sender retries, and the Redis-backed cache
	// answers the retry without processing the charge again.
	store := redisStore(t)
	sc := serverTestScenario(t, "  service_time: 10ms\n  idempotency: true\n  response_loss: 1\n")
	s := serverTestStart(t, sc, ServerOptions{TimeScale: 0.5, Store: store})
	c := serverTestClient(t)
	key := uuid.NewString()
	_, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", key)
	assert.Error(t, err, "the answer is lost: the connection is reset")
	resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", key)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "cached", resp.Header.Get(ServerReasonHeader))
	st := s.Stats()
	assert.Equal(t, int64(1), st.Processed)
	assert.Zero(t, st.Duplicates)
	assert.Zero(t, st.StoreErrors)
}

// testRedis is a redis-server of a test's own, on a free loopback port,
// with its data in a folder of the test, that the test may kill, restart
// and pause.
type testRedis struct {
	t          *testing.T
	port       string
	dir        string
	appendonly bool

	mu  sync.Mutex
	cmd *exec.Cmd
}

// startTestRedis starts a redis-server, with appendonly (and appendfsync
// always) or without any persistence. Without redis-server on the PATH
// the test is skipped, or fails when HERDLAB_REQUIRE_REDIS is set (.ci/run
// sets it).
func startTestRedis(t *testing.T, appendonly bool) *testRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("HERDLAB_REQUIRE_REDIS") != "" {
			t.Fatalf("redis-server is not on the PATH, and HERDLAB_REQUIRE_REDIS is set: %v", err)
		}
		t.Skip("redis-server is not on the PATH (apt-get install redis-server; .ci/run does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	require.NoError(t, l.Close())
	r := &testRedis{t: t, port: port, dir: t.TempDir(), appendonly: appendonly}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *testRedis) url() string { return "redis://127.0.0.1:" + r.port + "/0" }

// start starts the server and waits until it answers.
func (r *testRedis) start() {
	r.t.Helper()
	aof := "no"
	if r.appendonly {
		aof = "yes"
	}
	cmd := exec.Command("redis-server", "--port", r.port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", aof, "--appendfsync", "always", "--daemonize", "no", "--loglevel", "warning")
	require.NoError(r.t, cmd.Start())
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !r.answers() {
		require.True(r.t, time.Now().Before(deadline), "redis-server on port %s does not answer", r.port)
		time.Sleep(5 * time.Millisecond)
	}
}

// answers reports whether the server answers PING.
func (r *testRedis) answers() bool {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+r.port, 100*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// kill kills the server at once (SIGKILL): what it had not written to
// disk is gone.
func (r *testRedis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// signal sends sig to the server.
func (r *testRedis) signal(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NoError(r.t, r.cmd.Process.Signal(sig))
}

// redisTestLoad sends every key, from many senders, until each is
// answered 200, pausing between tries; delivered counts the keys done.
// It fails the test if a key is still not delivered after 30 s.
func redisTestLoad(t *testing.T, url string, keys []string, delivered *atomic.Int64) {
	c := serverTestClient(t)
	next := atomic.Int64{}
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(keys) {
					return
				}
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					resp, err := serverTestPost(ctx, c, url, "Idempotency-Key", keys[k])
					cancel()
					if err == nil && resp.StatusCode == http.StatusOK {
						delivered.Add(1)
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("key %d not delivered after 30 s: %v", k, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// redisTestRestart runs 2,000 keys through a server on r, whose every
// other answer is lost (so that keys are sent again after they were
// processed), kills Redis when a third are delivered and restarts it,
// and returns the server's stats, its log and its events.
func redisTestRestart(t *testing.T, r *testRedis) (ServerStats, []ServerLogLine, *serverTestEvents) {
	store, err := NewRedisStore(context.Background(), r.url(), RedisOptions{Lease: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	sc := serverTestScenario(t, "  service_time: 2ms\n  idempotency: true\n  response_loss: 0.5\n")
	log := &serverTestLog{}
	events := &serverTestEvents{}
	s := serverTestStart(t, sc, ServerOptions{Store: store, Log: log, Events: events.add, StoreCheck: 20 * time.Millisecond})
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = uuid.NewString()
	}
	var delivered atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		redisTestLoad(t, s.URL(), keys, &delivered)
	}()
	// A third delivered, however long the machine's load makes that
	// take: the load's own deadline bounds it, and a failure waits for
	// the load's senders to end (one failing after the test would
	// panic).
	for delivered.Load() < int64(len(keys)/3) {
		select {
		case <-done:
			t.Fatalf("the load ended with %d of %d keys delivered, before a third", delivered.Load(), len(keys))
		case <-time.After(2 * time.Millisecond):
		}
	}
	r.kill()
	r.start()
	<-done
	assert.EqualValues(t, len(keys), delivered.Load(), "every key delivered")
	serverTestIdle(t, s)
	return s.Stats(), log.lines(t), events
}

// redisTestProcessed counts the processings of each key in the log.
func redisTestProcessed(lines []ServerLogLine) (perKey map[string]int, twice int) {
	perKey = map[string]int{}
	for _, l := range lines {
		if l.Reason == "processed" {
			perKey[l.Key]++
			if perKey[l.Key] == 2 {
				twice++
			}
		}
	}
	return perKey, twice
}

func TestRedisKilledAndRestartedWithAppendonly(t *testing.T) {
	serverTestLeaks(t)
	// Redis with appendonly yes (appendfsync always) is killed and
	// restarted during the load: no key is processed twice, and the
	// store is known to have kept its data.
	r := startTestRedis(t, true)
	st, lines, events := redisTestRestart(t, r)
	perKey, twice := redisTestProcessed(lines)
	t.Logf("%d keys processed, %d twice; %d store errors, %d Dones retried; events %v", len(perKey), twice, st.StoreErrors, st.DoneRetried, events.kinds())
	assert.Len(t, perKey, 2000)
	assert.Zero(t, twice, "no key processed twice")
	assert.Zero(t, st.Duplicates)
	assert.Zero(t, st.StoreDataLost)
	assert.Zero(t, st.DoneLost)
	assert.Positive(t, st.StoreErrors, "Redis was down for a while: those requests failed closed")
	assert.False(t, events.has(EventStoreDataLost))
}

func TestRedisRestartedWithoutPersistence(t *testing.T) {
	serverTestLeaks(t)
	// The same Redis without persistence loses every key when it
	// restarts: the keys sent again after that are processed twice, and
	// the server counts each, and says that the store lost its data.
	r := startTestRedis(t, false)
	store, err := NewRedisStore(context.Background(), r.url(), RedisOptions{})
	require.NoError(t, err)
	defer store.Close()
	err = store.CheckPersistence(context.Background())
	require.ErrorIs(t, err, ErrNoPersistence)
	assert.Contains(t, err.Error(), "appendonly no")

	st, lines, events := redisTestRestart(t, r)
	perKey, twice := redisTestProcessed(lines)
	extra := 0
	for _, n := range perKey {
		extra += n - 1
	}
	t.Logf("%d keys processed, %d twice (%d processings beyond the first); events %v", len(perKey), twice, extra, events.kinds())
	assert.Positive(t, twice, "keys processed again after the loss")
	assert.EqualValues(t, extra, st.Duplicates, "every second processing counted")
	assert.Positive(t, st.StoreDataLost)
	serverTestWait(t, "the loss told", func() bool { return events.has(EventStoreDataLost) })
}

func TestRedisHungFailsFast(t *testing.T) {
	serverTestLeaks(t)
	// A Redis stopped (SIGSTOP) answers nothing: each request fails
	// closed after the store's timeout, and the server is itself again
	// when Redis comes back.
	r := startTestRedis(t, true)
	store, err := NewRedisStore(context.Background(), r.url(), RedisOptions{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.CheckPersistence(context.Background()), "appendonly yes, appendfsync always")
	sc := serverTestScenario(t, "  service_time: 1ms\n  idempotency: true\n")
	events := &serverTestEvents{}
	s := serverTestStart(t, sc, ServerOptions{Store: store, StoreTimeout: 100 * time.Millisecond, StoreCheck: 20 * time.Millisecond, Events: events.add})
	c := serverTestClient(t)
	r.signal(syscall.SIGSTOP)
	var worst time.Duration
	for i := range 10 {
		start := time.Now()
		resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", "hung-"+strconv.Itoa(i))
		worst = max(worst, time.Since(start))
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "store_error", resp.Header.Get(ServerReasonHeader))
	}
	t.Logf("slowest answer with Redis stopped: %s", worst)
	assert.Less(t, worst, time.Second, "each store call fails after its 100 ms")
	serverTestWait(t, "the store told down", func() bool { return events.has(EventStoreDown) })
	r.signal(syscall.SIGCONT)
	serverTestWait(t, "the store back", func() bool {
		resp, err := serverTestPost(context.Background(), c, s.URL(), "Idempotency-Key", uuid.NewString())
		return err == nil && resp.StatusCode == http.StatusOK
	})
	serverTestWait(t, "the store told up", func() bool { return events.has(EventStoreUp) })
	assert.Zero(t, s.Stats().Processed-1, "nothing processed while Redis was stopped")

	resp, err := c.Get(s.URL() + "metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), fmt.Sprintf("herdlab_server_store_errors_total %d\n", s.Stats().StoreErrors))
}
