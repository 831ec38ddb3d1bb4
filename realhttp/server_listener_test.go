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
// one set by less than serverWriteCoalesce leaves it; a later one, an
// earlier one, none, or one after SetDeadline is set.
func TestServerConnCoalescesWriteDeadlines(t *testing.T) {
	inner := &deadlineConn{}
	c := &serverConn{Conn: inner}
	t0 := time.Unix(1000, 0)
	tests := []struct {
		at   time.Time
		set  bool
		via  string
		name string
	}{
		{t0, true, "write", "the first"},
		{t0.Add(serverWriteCoalesce / 2), false, "write", "a little later: left"},
		{t0.Add(serverWriteCoalesce - 1), false, "write", "just under the coalescing: left"},
		{t0.Add(serverWriteCoalesce), true, "write", "the coalescing later"},
		{t0, true, "write", "earlier"},
		{time.Time{}, true, "write", "none"},
		{t0, true, "write", "after none"},
		{t0.Add(time.Millisecond), true, "both", "SetDeadline"},
		{t0.Add(2 * time.Millisecond), false, "write", "after SetDeadline: left"},
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
