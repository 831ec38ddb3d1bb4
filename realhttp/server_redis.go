package realhttp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisOptions configure a RedisStore. The zero value means the
// defaults.
type RedisOptions struct {
	// TTL is how long a processed key is kept; 0 means 24h.
	TTL time.Duration
	// Lease is how long a key stays in progress without its Done: the
	// processing of a request must end within it (service time, scaled,
	// and the write of Done). A server that dies while processing, or
	// whose Done never lands, leaves the key in progress (answered 503)
	// for the lease only; then a repeat is processed again (and counted
	// as a duplicate). 0 means 30s.
	Lease time.Duration
	// Timeout bounds every call to Redis, the dial included: a hung or
	// unreachable Redis fails a call after Timeout, and the server
	// answers 503 at once (it fails closed). 0 means 250ms.
	Timeout time.Duration
}

// The defaults of RedisOptions.
const (
	redisDefaultTTL     = 24 * time.Hour
	redisDefaultLease   = 30 * time.Second
	redisDefaultTimeout = 250 * time.Millisecond
)

// ErrStoreDataLost is returned by RedisStore.Check when Redis has lost
// the keys it held since the store connected: restarted without
// persistence, or flushed. Keys processed before are then processed
// again when repeated.
var ErrStoreDataLost = errors.New("realhttp: the idempotency store lost its data")

// ErrNoPersistence is returned by RedisStore.CheckPersistence when Redis
// would lose keys in a restart or a crash.
var ErrNoPersistence = errors.New("realhttp: the idempotency store is not durable")

// RedisStore is an IdempotencyStore in Redis, as the article's receivers
// keep theirs (section 7): a key per Idempotency-Key, set to in_progress
// with SET NX and a short lease when processing begins and to processed,
// for the TTL, when it ends. Several test servers can share one.
//
// The promise of idempotency holds only as long as Redis keeps its keys:
// run it with persistence (appendonly yes; appendfsync always, for a
// crash to lose nothing), which CheckPersistence checks. An epoch key
// written when the store connects tells a Redis that lost its data
// (Check). It is safe for concurrent use.
type RedisStore struct {
	client *redis.Client
	url    string
	ttl    time.Duration
	lease  time.Duration
	prefix string

	mu    sync.Mutex
	epoch string // the value of the epoch key this store knows
}

var _ IdempotencyStore = (*RedisStore)(nil)

// redisQuietOnce silences go-redis's own logger (see NewRedisStore).
var redisQuietOnce sync.Once

type redisQuiet struct{}

func (redisQuiet) Printf(context.Context, string, ...any) {}

// NewRedisStore connects to the Redis at url (redis://HOST:PORT/DB),
// checks it answers, and writes the epoch key (herdlab:epoch) if it is
// not there. Keys live under the prefix "herdlab:idem:".
//
// go-redis logs on its own to the standard error (its logger is one for
// the process); NewRedisStore silences it: the store's failures show as
// errors of its calls, counted by the server and told by its events.
func NewRedisStore(ctx context.Context, url string, opts RedisOptions) (*RedisStore, error) {
	ropts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("realhttp: idempotency store %q: %w", url, err)
	}
	if opts.TTL <= 0 {
		opts.TTL = redisDefaultTTL
	}
	if opts.Lease <= 0 {
		opts.Lease = redisDefaultLease
	}
	if opts.Timeout <= 0 {
		opts.Timeout = redisDefaultTimeout
	}
	redisQuietOnce.Do(func() { redis.SetLogger(redisQuiet{}) })
	// Every call fails within the timeout, and once: a retry inside
	// go-redis would hide a failure and, for SET NX, could misread our
	// own first write as another's.
	ropts.DialTimeout = opts.Timeout
	ropts.ReadTimeout = opts.Timeout
	ropts.WriteTimeout = opts.Timeout
	ropts.PoolTimeout = opts.Timeout
	ropts.ContextTimeoutEnabled = true
	ropts.MaxRetries = -1
	ropts.DialerRetries = 1
	ropts.DisableIdentity = true
	ropts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s := &RedisStore{client: redis.NewClient(ropts), url: url, ttl: opts.TTL, lease: opts.Lease, prefix: "herdlab:idem:"}
	cctx, cancel := context.WithTimeout(ctx, max(opts.Timeout, 2*time.Second))
	defer cancel()
	if err := s.client.Ping(cctx).Err(); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("realhttp: idempotency store %s: %w", url, err)
	}
	epoch, err := s.writeEpoch(cctx)
	if err != nil {
		s.client.Close()
		return nil, fmt.Errorf("realhttp: idempotency store %s: writing the epoch key: %w", url, err)
	}
	s.epoch = epoch
	return s, nil
}

// redisEpochKey is the key whose loss tells that Redis lost its data.
const redisEpochKey = "herdlab:epoch"

// writeEpoch writes a new epoch unless one is there, and returns the
// epoch in force.
func (s *RedisStore) writeEpoch(ctx context.Context) (string, error) {
	if err := s.client.SetNX(ctx, redisEpochKey, uuid.NewString(), 0).Err(); err != nil {
		return "", err
	}
	return s.client.Get(ctx, redisEpochKey).Result()
}

// Begin marks key in progress, for the lease, if Redis does not hold it.
func (s *RedisStore) Begin(ctx context.Context, key string) (bool, error) {
	return s.client.SetNX(ctx, s.prefix+key, IdempotencyInProgress, s.lease).Result()
}

// Done marks key processed, for the TTL.
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

// Check reads the epoch key: an error when Redis does not answer, one
// wrapping ErrStoreDataLost when the key is gone or has changed since the
// last Check (another store found the loss first and wrote a new one),
// nil otherwise. After a loss it writes a new epoch, so that a loss is
// reported once.
func (s *RedisStore) Check(ctx context.Context) error {
	v, err := s.client.Get(ctx, redisEpochKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && v == s.epoch {
		return nil
	}
	epoch, werr := s.writeEpoch(ctx)
	if werr != nil {
		return werr
	}
	s.epoch = epoch
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: the epoch key %s is gone from %s (restarted without persistence, or flushed)", ErrStoreDataLost, redisEpochKey, s.url)
	}
	return fmt.Errorf("%w: the epoch key %s of %s has changed (another server found it gone)", ErrStoreDataLost, redisEpochKey, s.url)
}

// CheckPersistence reads Redis's persistence settings and returns an
// error wrapping ErrNoPersistence when appendonly is off (a restart loses
// every key, and repeats of them are processed again) or appendfsync is
// not always (a crash can lose the last second of keys); an error of its
// own when the settings cannot be read (CONFIG may be disabled).
func (s *RedisStore) CheckPersistence(ctx context.Context) error {
	cfg, err := s.client.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("realhttp: idempotency store %s: cannot read its persistence settings (CONFIG GET): %w", s.url, err)
	}
	switch {
	case cfg["appendonly"] != "yes":
		return fmt.Errorf("%w: %s has appendonly %s: a restart of Redis loses every key, and their repeats are processed again (run it with --appendonly yes --appendfsync always)",
			ErrNoPersistence, s.url, cfg["appendonly"])
	case cfg["appendfsync"] != "always":
		return fmt.Errorf("%w: %s has appendfsync %s: a crash of Redis can lose the keys of its last second (appendfsync always loses none)",
			ErrNoPersistence, s.url, cfg["appendfsync"])
	}
	return nil
}

// Close closes the connections to Redis.
func (s *RedisStore) Close() error { return s.client.Close() }
