package realhttp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is an IdempotencyStore in Redis, as the article's receivers
// keep theirs (section 7): a key per Idempotency-Key, set to in_progress
// with SET NX when processing begins and to processed when it ends, each
// expiring after the TTL. Several test servers can share one. It is safe
// for concurrent use.
type RedisStore struct {
	client *redis.Client
	ttl    time.Duration
	prefix string
}

var _ IdempotencyStore = (*RedisStore)(nil)

// NewRedisStore connects to the Redis at url (redis://HOST:PORT/DB) and
// checks it answers. Keys live for ttl (24h when 0) under the prefix
// "herdlab:idem:".
func NewRedisStore(ctx context.Context, url string, ttl time.Duration) (*RedisStore, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("realhttp: idempotency store %q: %w", url, err)
	}
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	s := &RedisStore{client: redis.NewClient(opts), ttl: ttl, prefix: "herdlab:idem:"}
	if err := s.client.Ping(ctx).Err(); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("realhttp: idempotency store %s: %w", url, err)
	}
	return s, nil
}

// Begin marks key in progress if Redis does not hold it yet.
func (s *RedisStore) Begin(ctx context.Context, key string) (bool, error) {
	return s.client.SetNX(ctx, s.prefix+key, IdempotencyInProgress, s.ttl).Result()
}

// Done marks key processed.
func (s *RedisStore) Done(ctx context.Context, key string) error {
	return s.client.Set(ctx, s.prefix+key, IdempotencyProcessed, s.ttl).Err()
}

// State returns the key's state, "" when Redis does not hold it.
func (s *RedisStore) State(ctx context.Context, key string) (string, error) {
	v, err := s.client.Get(ctx, s.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// Close closes the connections to Redis.
func (s *RedisStore) Close() error { return s.client.Close() }
