package scenarios

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSyntaxErrorPositions parses files with one syntax error each and
// checks that the error names the line and column an editor user must go
// to, and says what to change there.
func TestSyntaxErrorPositions(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // the whole error, FILE:LINE:COL: message
	}{
		{"unclosed flow mapping",
			"name: x\nseed: 1\nruns: 1\nserver:\n  concurrency: 10\nworkload: {requests: 10\nstrategies:\n  - name: a\n",
			"s.yaml:6:11: not valid YAML: this { is never closed: end the mapping with }"},
		{"unclosed flow mapping at the end of the file",
			"name: x\nserver: {concurrency: 10}\nworkload: {requests: 10}\nstrategies: [{name: a, backoff: {kind: none}\n",
			"s.yaml:4:14: not valid YAML: this { is never closed: end the mapping with }"},
		{"unclosed flow sequence",
			"name: x\nserver:\n  concurrency: 10\n  outages: [{start: 1s, duration: 2s}\nworkload:\n  requests: 10\n",
			"s.yaml:4:12: not valid YAML: this [ is never closed: end the list with ]"},
		{"unclosed flow sequence over lines",
			"name: x\nserver:\n  outages: [\n    {start: 1s, duration: 2s},\n    {start: 5s, duration: 2s}\nworkload:\n  requests: 10\n",
			"s.yaml:3:12: not valid YAML: this [ is never closed: end the list with ]"},
		{"a bracket in a quoted string or a comment is no opener",
			"name: x # {\ndescription: \"a [b\"\nserver: {concurrency: 10, queue: 5\nworkload: {requests: 10}\n",
			"s.yaml:3:9: not valid YAML: this { is never closed: end the mapping with }"},
		{"a bracket closed by the other kind",
			"name: x\nserver: {concurrency: 10, queue: 5]\n",
			"s.yaml:2:35: not valid YAML: this ] does not close the { of line 2, column 9: write }"},
		{"over-indented line",
			"name: x\nserver:\n  concurrency: 10\n    queue: 5\nworkload:\n  requests: 10\n",
			"s.yaml:4:5: not valid YAML: this line is indented more than line 3, whose concurrency already has a value: indent it as much as concurrency (2 spaces) to make it a field beside it, or nest it under a key without a value"},
		{"over-indented by one",
			"name: x\nserver:\n  concurrency: 10\n   queue: 5\n",
			"s.yaml:4:4: not valid YAML: this line is indented more than line 3, whose concurrency already has a value: indent it as much as concurrency (2 spaces) to make it a field beside it, or nest it under a key without a value"},
		{"over-indented in a list item",
			"server: {concurrency: 10}\nworkload: {requests: 10}\nstrategies:\n  - name: a\n      backoff: {kind: none}\n",
			"s.yaml:5:7: not valid YAML: this line is indented more than line 4, whose name already has a value: indent it as much as name (4 spaces) to make it a field beside it, or nest it under a key without a value"},
		{"under-indented line",
			"name: x\nserver:\n  concurrency: 10\n queue: 5\nworkload:\n  requests: 10\n",
			"s.yaml:4:2: not valid YAML: this line is indented by 1 space, as no block above it is: indent it by 2 spaces (as line 3) or 0 spaces (as line 2)"},
		{"tab indentation",
			"name: x\nserver:\n  concurrency: 10\n\tqueue: 5\n",
			`s.yaml:4:1: not valid YAML: found character '\t' that cannot start any token: YAML indents with spaces, never tabs`},
		{"unclosed double quote",
			"name: x\ndescription: \"abc\nserver:\n  concurrency: 10\n",
			`s.yaml:2:14: not valid YAML: this " is never closed: end the string with "`},
		{"unclosed single quote",
			"name: x\ndescription: 'abc\nserver:\n  concurrency: 10\n",
			`s.yaml:2:14: not valid YAML: this ' is never closed: end the string with '`},
		{"duplicate key",
			"name: x\nserver:\n  concurrency: 10\n  concurrency: 5\nworkload: {requests: 10}\nstrategies: [{name: a, backoff: {kind: full-jitter}, max_attempts: 3}]\n",
			"s.yaml:4:3: server.concurrency: duplicate field (first set on line 3)"},
		{"a key without colon",
			"name: x\nserver:\n  concurrency 10\n  queue: 5\n",
			"s.yaml:3:3: not valid YAML: concurrency 10 has no colon after its key: write concurrency: 10"},
		{"a key without colon, last in its block",
			"name: x\nserver:\n  queue: 5\n  concurrency 10\n",
			"s.yaml:4:3: not valid YAML: concurrency 10 has no colon after its key: write concurrency: 10"},
		{"a key without colon nor value",
			"name: x\nserver\nworkload: {requests: 10}\n",
			"s.yaml:2:1: not valid YAML: server has no colon after its key: write server:"},
		{"a list item without a space after its dash",
			"strategies:\n  -name: a\n   backoff: {kind: none}\n",
			"s.yaml:2:3: not valid YAML: a list item needs a space after its -: write - name: a"},
		{"a stray ]",
			"name: x\nstrategies: [a, b]]\nserver: {}\n",
			"s.yaml:2:19: not valid YAML: this ] closes nothing: remove it, or open the list it ends with ["},
		{"a stray }",
			"name: x\nworkload: {requests: 10}}\nserver: {}\n",
			"s.yaml:2:25: not valid YAML: this } closes nothing: remove it, or open the mapping it ends with {"},
		{"a ] in a block value is part of the value",
			"name: x\nserver:\n  concurrency: 10]\nworkload: {requests: 10}\nstrategies: [{name: a, backoff: {kind: full-jitter}, max_attempts: 3}]\n",
			`s.yaml:3:16: server.concurrency: want an integer, got "10]"`},
		{"a colon in a value",
			"server:\n  concurrency: 10: 20\n",
			"s.yaml:2:16: not valid YAML: mapping value is not allowed in this context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tt.src))
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.want, err.Error())
		})
	}
}
