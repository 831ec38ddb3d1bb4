package realhttp

import (
	"context"
	"sync"
)

// The states of an idempotency key, as IdempotencyStore.State reports
// them; "" is a key never seen.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyProcessed  = "processed"
)

// IdempotencyStore keeps the state of the Idempotency-Key values the
// test server has seen. Implementations must be safe for concurrent use.
//
// With the scenario's server.idempotency true, the server calls Begin
// when a request of a key starts its service, and processes it only if
// Begin reports the key new; it calls Done when the processing ends; and
// it answers a request whose key State reports processed (200, from the
// cache) or in_progress (503) without processing it. With idempotency
// false, the server processes every request and only calls State, then
// Done, at the end of each processing, to count duplicates.
type IdempotencyStore interface {
	// Begin marks key in progress if it is new, and reports whether it
	// was.
	Begin(ctx context.Context, key string) (bool, error)
	// Done marks key processed.
	Done(ctx context.Context, key string) error
	// State returns "", IdempotencyInProgress or IdempotencyProcessed.
	State(ctx context.Context, key string) (string, error)
}

// NewMemoryStore returns an IdempotencyStore in memory, for one process.
// It keeps every key for its lifetime (about 100 bytes a key).
func NewMemoryStore() IdempotencyStore {
	return &serverMemoryStore{keys: map[string]bool{}}
}

// serverMemoryStore maps each key to whether it is processed.
type serverMemoryStore struct {
	mu   sync.Mutex
	keys map[string]bool
}

var _ IdempotencyStore = (*serverMemoryStore)(nil)

func (m *serverMemoryStore) Begin(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, seen := m.keys[key]; seen {
		return false, nil
	}
	m.keys[key] = false
	return true, nil
}

func (m *serverMemoryStore) Done(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[key] = true
	return nil
}

func (m *serverMemoryStore) State(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	processed, seen := m.keys[key]
	switch {
	case !seen:
		return "", nil
	case processed:
		return IdempotencyProcessed, nil
	}
	return IdempotencyInProgress, nil
}
