package scenarios

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxAttemptsUnlimited checks that no limit on the attempts is
// written `unlimited`, in a strategy, an edge's policy, a sweep and a
// policy read from a configuration file, and that a written 0 is refused
// at its place with the word to write instead.
func TestMaxAttemptsUnlimited(t *testing.T) {
	const head = "server: {concurrency: 10}\nworkload: {requests: 10}\nstrategies:\n"
	tests := []struct {
		name, strategies string
		want             int    // the strategy's MaxAttempts, when valid
		err              string // the error's text, when not
	}{
		{"unlimited", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: unlimited, max_elapsed: 1m}\n", 0, ""},
		{"a number", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: 3}\n", 3, ""},
		{"left out", "  - {name: a, backoff: {kind: full-jitter}, max_elapsed: 1m}\n", 0, ""},
		{"null keeps the default", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: ~, max_elapsed: 1m}\n", 0, ""},
		{"through an alias", "  - {name: &u unlimited, backoff: {kind: full-jitter}, max_attempts: *u, max_elapsed: 1m}\n", 0, ""},
		{"zero", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: 0}\n", 0,
			"s.yaml:4:59: strategies[0].max_attempts: 0 is not a limit: write unlimited for no limit on the attempts, or a number >= 1 (1: no retry)"},
		{"zero as 0x0", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: 0x0}\n", 0,
			"s.yaml:4:59: strategies[0].max_attempts: 0 is not a limit: write unlimited for no limit on the attempts, or a number >= 1 (1: no retry)"},
		{"quoted", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: \"3\"}\n", 0,
			"s.yaml:4:59: strategies[0].max_attempts: want an integer, got the quoted string \"3\": write it without quotes"},
		{"another word", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: infinite}\n", 0,
			"s.yaml:4:59: strategies[0].max_attempts: want an integer, got \"infinite\""},
		{"negative", "  - {name: a, backoff: {kind: full-jitter}, max_attempts: -1}\n", 0,
			"s.yaml:4:59: strategies[0].max_attempts: must be >= 1, or unlimited, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("s.yaml", []byte(head+tt.strategies))
			if tt.err != "" {
				require.Error(t, err)
				assert.Equal(t, tt.err, err.Error())
				var e *Error
				assert.True(t, errors.As(err, &e))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.Strategies[len(s.Strategies)-1].MaxAttempts)
		})
	}
}

func TestMaxAttemptsUnlimitedOnAnEdge(t *testing.T) {
	src := "services:\n  - {name: front, concurrency: 10, calls: [{service: db}]}\n  - {name: db, concurrency: 10}\n" +
		"workload: {requests: 10}\nstrategies:\n" +
		"  - name: a\n    max_attempts: 2\n    backoff: {kind: full-jitter}\n    edges:\n      front->db: {backoff: {kind: full-jitter}, max_elapsed: 1m, max_attempts: unlimited}\n"
	s, err := Parse("s.yaml", []byte(src))
	require.NoError(t, err)
	edge := EdgeStrategy(&s.Strategies[0], "front", &s.Services[0].Calls[0])
	assert.Equal(t, 0, edge.MaxAttempts)

	_, err = Parse("s.yaml", []byte(src[:len(src)-len("unlimited}\n")]+"0}\n"))
	require.Error(t, err)
	assert.Equal(t, "s.yaml:10:80: strategies[0].edges.front->db.max_attempts: 0 is not a limit: write unlimited for no limit on the attempts, or a number >= 1 (1: no retry)", err.Error())
}

func TestMaxAttemptsUnlimitedInASweep(t *testing.T) {
	src := "server: {concurrency: 10}\nworkload: {requests: 10}\nstrategies:\n  - {name: a, backoff: {kind: full-jitter}, max_attempts: 3, max_elapsed: 1m}\n"
	s, err := Parse("s.yaml", []byte(src))
	require.NoError(t, err)
	u, err := s.With(Setting{"strategies[*].max_attempts", "unlimited"})
	require.NoError(t, err)
	assert.Equal(t, 0, u.Strategies[0].MaxAttempts)
	_, err = s.With(Setting{"strategies[*].max_attempts", "0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "strategies[0].max_attempts: 0 is not a limit: write unlimited")
}

// TestLinkerdProfileIsUnlimited checks that a ServiceProfile route that
// is retryable, which Linkerd retries without an attempt limit, reads as
// max_attempts unlimited.
func TestLinkerdProfileIsUnlimited(t *testing.T) {
	s, err := Load("configs/linkerd-retries.yaml")
	require.NoError(t, err)
	assert.Equal(t, "profile-budget", s.Strategies[0].Name)
	assert.Equal(t, 0, s.Strategies[0].MaxAttempts)
	assert.Equal(t, 3, s.Strategies[1].MaxAttempts)
}
