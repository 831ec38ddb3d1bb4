package sim

import (
	"math/rand/v2"
	"time"

	"github.com/zeontools/herdlab/scenarios"
)

// Cache is a look-aside cache in front of a service (see
// scenarios.Cache): the keys it holds, in a dense array for random
// eviction, and each key's place in it and expiry. The real-HTTP graph
// uses it too, under a lock: a Cache is not safe for concurrent use.
type Cache struct {
	cfg     *scenarios.Cache
	entries int
	held    []int32         // the keys held
	at      []int32         // per key: its index in held, -1 when not held
	expires []time.Duration // per key: when its entry expires (with a TTL)
	flushes []scenarios.Outage
}

// NewCache returns the cache cfg, warm (a random set of keys, of random
// ages with a TTL), whose flush outages are among outages.
func NewCache(cfg *scenarios.Cache, outages []scenarios.Outage, r *rand.Rand) *Cache {
	c := &Cache{cfg: cfg, entries: cfg.Entries(), at: make([]int32, cfg.Keys)}
	for _, o := range outages {
		if o.Mode == scenarios.FlushMode {
			c.flushes = append(c.flushes, o)
		}
	}
	for k := range c.at {
		c.at[k] = -1
	}
	if cfg.TTL > 0 {
		c.expires = make([]time.Duration, cfg.Keys)
	}
	// Warm: a random set of keys, their entries (with a TTL) of random
	// ages, so that they do not all expire at once.
	perm := r.Perm(cfg.Keys)[:c.entries]
	for _, k := range perm {
		c.insert(int32(k))
		if c.expires != nil {
			c.expires[k] = time.Duration(r.Int64N(int64(cfg.TTL))) + 1
		}
	}
	return c
}

// down reports whether a flush is in progress at t.
func (c *Cache) down(t time.Duration) bool {
	for _, o := range c.flushes {
		if t >= o.Start && t < o.End() {
			return true
		}
	}
	return false
}

// Lookup reports whether key k is held at now (a miss during a flush).
func (c *Cache) Lookup(now time.Duration, k int32) bool {
	if c.down(now) || c.at[k] < 0 {
		return false
	}
	if c.expires != nil && now >= c.expires[k] {
		c.remove(k)
		return false
	}
	return true
}

// Fill caches key k at now, evicting a key at random when full; nothing
// during a flush.
func (c *Cache) Fill(now time.Duration, k int32, r *rand.Rand) {
	if c.down(now) {
		return
	}
	if c.at[k] < 0 {
		if len(c.held) >= c.entries {
			c.remove(c.held[r.IntN(len(c.held))])
		}
		c.insert(k)
	}
	if c.expires != nil {
		c.expires[k] = now + c.cfg.TTL
	}
}

// Flush empties the cache: at the start of each of its flush outages.
func (c *Cache) Flush() {
	for _, k := range c.held {
		c.at[k] = -1
	}
	c.held = c.held[:0]
}

func (c *Cache) insert(k int32) {
	c.at[k] = int32(len(c.held))
	c.held = append(c.held, k)
}

func (c *Cache) remove(k int32) {
	i := c.at[k]
	last := c.held[len(c.held)-1]
	c.held[i] = last
	c.at[last] = i
	c.held = c.held[:len(c.held)-1]
	c.at[k] = -1
}
