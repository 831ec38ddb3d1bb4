package realhttp

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// deadlineConn records the write deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

func (c *deadlineConn) SetDeadline(t time.Time) error { return c.SetWriteDeadline(t) }

// TestServerConnCoalescesWriteDeadlines: a write deadline later than the
// one set by less than serverWriteCoalesce leaves it, and so does none
// (net/http's clear after each answer); a later one, an earlier one, or
// one after SetDeadline is set.
func TestServerConnCoalescesWriteDeadlines(t *testing.T) {
	inner := &deadlineConn{}
	c := &serverConn{Conn: inner}
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name string
		via  string // SetWriteDeadline, or SetDeadline
		at   time.Time
		set  bool
	}{
		{"none, with none set", "write", time.Time{}, true},
		{"the first", "write", t0, true},
		{"a little later: left", "write", t0.Add(serverWriteCoalesce / 2), false},
		{"just under the coalescing: left", "write", t0.Add(serverWriteCoalesce - 1), false},
		{"none: left", "write", time.Time{}, false},
		{"the coalescing later", "write", t0.Add(serverWriteCoalesce), true},
		{"earlier", "write", t0, true},
		{"SetDeadline", "both", t0.Add(time.Millisecond), true},
		{"after SetDeadline: left", "write", t0.Add(2 * time.Millisecond), false},
		{"SetDeadline none", "both", time.Time{}, true},
		{"after SetDeadline none", "write", t0, true},
	}
	for _, tt := range tests {
		before := len(inner.set)
		if tt.via == "both" {
			_ = c.SetDeadline(tt.at)
		} else {
			_ = c.SetWriteDeadline(tt.at)
		}
		if tt.set {
			if assert.Len(t, inner.set, before+1, tt.name) {
				assert.Equal(t, tt.at, inner.set[before], tt.name)
			}
		} else {
			assert.Len(t, inner.set, before, tt.name)
		}
	}
}
