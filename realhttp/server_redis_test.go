package realhttp

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisStore returns a store on the Redis that HERDLAB_REDIS_URL names
// (.ci/run installs and starts one on loopback); without it the test is
// skipped, saying so.
func redisStore(t *testing.T) *RedisStore {
	t.Helper()
	url := os.Getenv("HERDLAB_REDIS_URL")
	if url == "" {
		t.Skip("HERDLAB_REDIS_URL is not set: start a redis-server on loopback and set it to redis://127.0.0.1:6379/0 (.ci/run does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := NewRedisStore(ctx, url, time.Minute)
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

	require.NoError(t, s.Done(ctx, key))
	state, _ = s.State(ctx, key)
	assert.Equal(t, IdempotencyProcessed, state)
	ttl, err := s.client.TTL(ctx, s.prefix+key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 50*time.Second, "keys expire after the TTL")
	assert.LessOrEqual(t, ttl, time.Minute)
}

func TestServerWithRedisStore(t *testing.T) {
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
