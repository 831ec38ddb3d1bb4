package realhttp

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
)

// The states of an idempotency key, as IdempotencyStore.State reports
// them; "" is a key never seen.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyProcessed  = "processed"
)

// ServerMaxKeyLen is the longest Idempotency-Key the server takes, in
// bytes; a longer one is answered 400 and is not an attempt.
const ServerMaxKeyLen = 256

// ErrStoreFull is returned by a memory store's Begin when it holds as
// many keys (or bytes) as it may and none can be forgotten: every key it
// holds is in progress. The server answers 503 (store_error): it fails
// closed.
var ErrStoreFull = errors.New("realhttp: the idempotency store is full of keys in progress")

// IdempotencyStore keeps the state of the Idempotency-Key values the
// test server has seen. Implementations must be safe for concurrent use.
//
// With the scenario's server.idempotency true, the server calls Begin
// when a request of a key starts its service, and processes it only if
// Begin reports the key new; it calls Done when the processing ends
// (again, in the background, while Done fails); and it answers a request
// whose key State reports processed (200, from the cache) or in_progress
// (503) without processing it. Every call has a short deadline
// (ServerOptions.StoreTimeout); an error fails the request closed (503,
// store_error), never open. With idempotency false the store is not
// used: duplicates are counted by the server's own bounded detector (see
// ServerOptions.DuplicateWindow).
type IdempotencyStore interface {
	// Begin marks key in progress if it is new, and reports whether it
	// was.
	Begin(ctx context.Context, key string) (bool, error)
	// Done marks key processed.
	Done(ctx context.Context, key string) error
	// State returns "", IdempotencyInProgress or IdempotencyProcessed.
	State(ctx context.Context, key string) (string, error)
}

// MemoryLimits bound a MemoryStore. The zero value means the defaults.
type MemoryLimits struct {
	// Keys is the most keys the store holds; 0 means 1,000,000.
	Keys int
	// Bytes is the most memory the keys may take, each counted as its
	// length plus memoryKeyOverhead (100) bytes; 0 means 256 MiB.
	Bytes int64
}

// The defaults of MemoryLimits.
const (
	memoryDefaultKeys  = 1_000_000
	memoryDefaultBytes = 256 << 20
	// memoryKeyOverhead is what a key costs beyond its bytes: its map
	// entry, its string header and its place in the eviction queue.
	memoryKeyOverhead = 100
)

// MemoryStore is an IdempotencyStore in memory, for one process, of
// bounded size: when a new key would take it past its limits, it forgets
// its oldest processed keys first (a repeat of a forgotten key is
// processed again, and the server counts the duplicate); keys in
// progress are never forgotten, and when only they are left, Begin fails
// with ErrStoreFull. It is safe for concurrent use.
type MemoryStore struct {
	maxKeys  int
	maxBytes int64

	mu        sync.Mutex
	keys      map[string]bool // key -> processed
	bytes     int64
	done      []string // processed keys, oldest first, from head
	head      int
	forgotten int64
}

var _ IdempotencyStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty memory store bounded by limits.
func NewMemoryStore(limits MemoryLimits) *MemoryStore {
	m := &MemoryStore{maxKeys: limits.Keys, maxBytes: limits.Bytes, keys: map[string]bool{}}
	if m.maxKeys <= 0 {
		m.maxKeys = memoryDefaultKeys
	}
	if m.maxBytes <= 0 {
		m.maxBytes = memoryDefaultBytes
	}
	return m
}

func memoryKeyCost(key string) int64 { return int64(len(key)) + memoryKeyOverhead }

// Begin marks key in progress if the store does not hold it, forgetting
// old processed keys to make room.
func (m *MemoryStore) Begin(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, seen := m.keys[key]; seen {
		return false, nil
	}
	cost := memoryKeyCost(key)
	for len(m.keys)+1 > m.maxKeys || m.bytes+cost > m.maxBytes {
		if m.head == len(m.done) {
			return false, ErrStoreFull
		}
		old := m.done[m.head]
		m.done[m.head] = ""
		m.head++
		delete(m.keys, old)
		m.bytes -= memoryKeyCost(old)
		m.forgotten++
	}
	if m.head > 1024 && m.head > len(m.done)/2 {
		m.done = append(m.done[:0], m.done[m.head:]...)
		m.head = 0
	}
	m.keys[key] = false
	m.bytes += cost
	return true, nil
}

// Done marks key processed (and holds it, if it did not).
func (m *MemoryStore) Done(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	processed, seen := m.keys[key]
	if processed {
		return nil
	}
	if !seen {
		m.bytes += memoryKeyCost(key)
	}
	m.keys[key] = true
	m.done = append(m.done, key)
	return nil
}

// State returns the key's state, "" when the store does not hold it.
func (m *MemoryStore) State(_ context.Context, key string) (string, error) {
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

// MemoryStats are a memory store's sizes now.
type MemoryStats struct {
	Keys      int   // keys held
	Bytes     int64 // what they cost, as MemoryLimits counts it
	Forgotten int64 // processed keys forgotten to make room, since the start
}

// Stats returns the store's sizes now.
func (m *MemoryStore) Stats() MemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemoryStats{Keys: len(m.keys), Bytes: m.bytes, Forgotten: m.forgotten}
}

// serverDefaultDuplicateWindow is ServerOptions.DuplicateWindow's
// default.
const serverDefaultDuplicateWindow = 1_000_000

// serverSeen is the server's duplicate detector: it remembers the last
// max keys processed, as 128-bit hashes (so that a key's length costs
// nothing; two keys collide with a chance of about n^2 / 2^129), to tell
// a second processing of a key, whatever the idempotency store says or
// forgets. Beyond max, the oldest key is forgotten: a duplicate of it
// goes uncounted, and forgotten says how many were. It is safe for
// concurrent use.
type serverSeen struct {
	max int

	mu        sync.Mutex
	set       map[[2]uint64]struct{}
	ring      [][2]uint64 // the keys in order of processing, up to max; the oldest at next once full
	next      int
	forgotten int64
}

// serverSeenSeeds hash keys for serverSeen.
var serverSeenSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func newServerSeen(max int) *serverSeen {
	return &serverSeen{max: max, set: map[[2]uint64]struct{}{}}
}

// processed records that key has been processed, and reports whether it
// had been before (as far as the window remembers).
func (d *serverSeen) processed(key string) (again bool) {
	h := [2]uint64{maphash.String(serverSeenSeeds[0], key), maphash.String(serverSeenSeeds[1], key)}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, again = d.set[h]; again {
		return true
	}
	d.set[h] = struct{}{}
	if len(d.ring) < d.max {
		d.ring = append(d.ring, h)
		return false
	}
	delete(d.set, d.ring[d.next])
	d.ring[d.next] = h
	d.next = (d.next + 1) % d.max
	d.forgotten++
	return false
}

// stats returns the keys remembered and forgotten.
func (d *serverSeen) stats() (remembered int, forgotten int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.set), d.forgotten
}
