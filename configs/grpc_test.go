//go:build !js

package configs

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// row is a Value as the tables write it: the field, the value, and
// whether the reader filled it in as a default.
type row struct {
	Field   string
	Value   any
	Default bool
}

func rows(p *Policy) []row {
	out := make([]row, len(p.Values))
	for i, v := range p.Values {
		out[i] = row{v.Field, v.Value, v.Pos.Default != ""}
	}
	return out
}

// hazards lists p's hazards as "rule line:col".
func hazards(p *Policy) []string {
	var out []string
	for _, h := range p.Hazards {
		out = append(out, fmt.Sprintf("%s %d:%d", h.Rule, h.Pos.Line, h.Pos.Col))
	}
	return out
}

// grpcRetry is a service config whose one method config, for every
// method, has the retry policy given (written from line 3).
func grpcRetry(policy string) string {
	return "{\"methodConfig\": [{\n  \"name\": [{}],\n  \"retryPolicy\": " + policy + "\n}]}"
}

// problems returns the problems of err, each as "line:col: message".
func problems(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []string
	for _, e := range list {
		var ce *Error
		require.ErrorAs(t, e, &ce)
		require.Equal(t, "f", ce.Pos.File)
		out = append(out, fmt.Sprintf("%d:%d: %s", ce.Pos.Line, ce.Pos.Col, ce.Msg))
	}
	return out
}

func readOne(t *testing.T, format, name, src string) *Policy {
	t.Helper()
	p, err := Read(Ref{Format: format, File: "f", Name: name}, []byte(src))
	require.NoError(t, err)
	return p
}

const stdRetry = `{"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`

func TestGRPCDefaults(t *testing.T) {
	noHint := row{"retry_after.mode", "ignore", true}
	pushback := row{"ignore_pushback", false, true}
	jitter := row{"backoff.kind", "full-jitter", true}
	none := row{"backoff.kind", "none", true}
	tests := []struct {
		name    string
		src     string
		method  string
		want    []row
		hazards []string
	}{{
		name: "a retry policy alone: full jitter, no Retry-After, pushback honoured, no budget",
		src:  grpcRetry(stdRetry),
		want: []row{
			{"max_attempts", 3, false}, {"retry_on", []string{"refused", "reset", "5xx"}, false},
			jitter, {"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, false}, {"backoff.multiplier", 2.0, false},
			noHint, pushback,
		},
		hazards: []string{"no-budget 3:3"},
	}, {
		name: "maxAttempts above 5 is 5, a hazard at the value",
		src:  grpcRetry(`{"maxAttempts": 9, "initialBackoff": "1s", "maxBackoff": "30s", "backoffMultiplier": 1.5, "retryableStatusCodes": ["RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"]}`),
		want: []row{
			{"max_attempts", 5, false}, {"retry_on", []string{"429"}, false},
			jitter, {"backoff.base", time.Second, false}, {"backoff.cap", 30 * time.Second, false}, {"backoff.multiplier", 1.5, false},
			noHint, pushback,
		},
		hazards: []string{"clamped 3:19", "no-budget 3:3"},
	}, {
		name: "maxBackoff below initialBackoff: every wait is U(0, maxBackoff)",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "0.5s", "backoffMultiplier": 2, "retryableStatusCodes": [14, 8]}`),
		want: []row{
			{"max_attempts", 2, false}, {"retry_on", []string{"refused", "reset", "5xx", "429"}, false},
			jitter, {"backoff.base", 500 * time.Millisecond, false}, {"backoff.cap", 500 * time.Millisecond, false}, {"backoff.multiplier", 2.0, false},
			noHint, pushback,
		},
		hazards: []string{"no-budget 3:3"},
	}, {
		name: "codes herdlab never answers: never retried",
		src:  grpcRetry(`{"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["ABORTED", "DEADLINE_EXCEEDED"]}`),
		want: []row{
			{"max_attempts", 1, false},
			jitter, {"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, false}, {"backoff.multiplier", 2.0, false},
			noHint, pushback,
		},
	}, {
		name: "perAttemptRecvTimeout (grpc-java) is the attempts' timeout, and its timeouts are retried",
		src: "{\"methodConfig\": [{\"name\": [{}], \"timeout\": \"5s\",\n  \"retryPolicy\": " +
			`{"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["ABORTED"], "perAttemptRecvTimeout": "0.5s"}}]}`,
		want: []row{
			{"max_attempts", 3, false}, {"max_elapsed", 5 * time.Second, false}, {"timeout", 500 * time.Millisecond, false}, {"retry_on", []string{"timeout"}, false},
			jitter, {"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, false}, {"backoff.multiplier", 2.0, false},
			noHint, pushback,
		},
		hazards: []string{"no-budget 2:3"},
	}, {
		name: "a perAttemptRecvTimeout not shorter than the deadline leaves no time for a retry",
		src: "{\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1s\",\n  \"retryPolicy\": " +
			`{"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"], "perAttemptRecvTimeout": "2s"}}]}`,
		want: []row{
			{"max_attempts", 3, false}, {"max_elapsed", time.Second, false}, {"timeout", time.Second, false}, {"retry_on", []string{"refused", "timeout", "reset", "5xx"}, false},
			jitter, {"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, false}, {"backoff.multiplier", 2.0, false},
			noHint, pushback,
		},
		hazards: []string{"per-try-timeout 2:148", "no-budget 2:3"},
	}, {
		name: "no policy: one attempt; no timeout: herdlab's own",
		src:  `{"methodConfig": [{"name": [{"service": "a.B"}], "waitForReady": true, "maxRequestMessageBytes": 1024}]}`,
		want: []row{{"max_attempts", 1, true}, none},
	}, {
		name: "the timeout is each attempt's and the last start's",
		src:  `{"methodConfig": [{"name": [{}], "timeout": "1.5s"}]}`,
		want: []row{{"max_attempts", 1, true}, {"max_elapsed", 1500 * time.Millisecond, false}, {"timeout", 1500 * time.Millisecond, false}, none},
	}, {
		name: "retryThrottling: a tokens budget, tokenRatio cut to 3 decimals",
		src:  "{\"retryThrottling\": {\"maxTokens\": 100, \"tokenRatio\": 0.1239},\n" + grpcRetry(stdRetry)[1:],
		want: []row{
			{"max_attempts", 3, false}, {"retry_on", []string{"refused", "reset", "5xx"}, false},
			jitter, {"backoff.base", 100 * time.Millisecond, false}, {"backoff.cap", time.Second, false}, {"backoff.multiplier", 2.0, false},
			noHint, {"budget.kind", "tokens", false}, {"budget.max_tokens", 100.0, false}, {"budget.token_ratio", 0.123, false}, pushback,
		},
	}, {
		name: "a decimal the float would lose is kept",
		src:  "{\"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": 0.29},\n\"methodConfig\": [{\"name\": [{}]}]}",
		want: []row{{"max_attempts", 1, true}, none},
	}, {
		name: "hedging: one attempt of copies, cancelled once one wins; delay 0 is all at once",
		src:  `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 7}}]}`,
		want: []row{
			{"max_attempts", 1, true}, none, noHint,
			{"hedge.delay", time.Nanosecond, true}, {"hedge.max", 4, false}, {"hedge.cancel", true, true}, pushback,
		},
		hazards: []string{"clamped 1:52", "no-budget 1:34"},
	}, {
		name: "hedging with a delay and non-fatal codes",
		src:  `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}`,
		want: []row{
			{"max_attempts", 1, true}, none, noHint,
			{"hedge.delay", 50 * time.Millisecond, false}, {"hedge.max", 1, false}, {"hedge.cancel", true, true}, pushback,
		},
		hazards: []string{"no-budget 1:34"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "a.B/C"
			}
			p := readOne(t, GRPC, method, tt.src)
			assert.Equal(t, tt.want, rows(p))
			assert.Equal(t, tt.hazards, hazards(p))
		})
	}
}

func TestGRPCTokenRatioDecimals(t *testing.T) {
	for lit, want := range map[string]float64{"0.29": 0.29, "0.1239": 0.123, "1": 1, "0.0015": 0.001, "2.5e-1": 0.25} {
		p := readOne(t, GRPC, "a.B/C", "{\"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": "+lit+"},\n"+grpcRetry(stdRetry)[1:])
		v, ok := p.Get("budget.token_ratio")
		require.True(t, ok, lit)
		assert.Equal(t, want, v.Value, lit)
	}
}

func TestGRPCRefusals(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // "line:col: text", one per problem
	}{{
		name: "maxAttempts 1",
		src:  grpcRetry(`{"maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{"3:19: maxAttempts must be at least 2"},
	}, {
		name: "maxAttempts written as a string",
		src:  grpcRetry(`{"maxAttempts": "3", "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{`3:19: maxAttempts must be an integer, got "3"`},
	}, {
		name: "durations: Go's units, a number, zero",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "100ms", "maxBackoff": 1, "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{`3:37: malformed duration "100ms"`, `3:64: maxBackoff must be a duration string such as "0.1s", got 1`},
	}, {
		name: "zero backoff",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{"3:37: initialBackoff must be > 0"},
	}, {
		name: "a required field missing, and misspelt",
		src:  grpcRetry(`{"maxAttempt": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{`3:3: retryPolicy.maxAttempts is required (gRFC A6; grpc-go refuses the service config): "maxAttempt" at 3:19 is not it`},
	}, {
		name: "a field in another case: read by grpc-go alone",
		src:  grpcRetry(`{"MaxAttempts": 2, "maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{`3:19: "MaxAttempts" is not "maxAttempts": grpc-go reads it`},
	}, {
		name: "multiplier zero, and below 1",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 0, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{"3:83: backoffMultiplier must be > 0"},
	}, {
		name: "a shrinking backoff herdlab cannot draw",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 0.5, "retryableStatusCodes": ["UNAVAILABLE"]}`),
		want: []string{"3:83: backoffMultiplier 0.5 < 1 makes the waits shrink"},
	}, {
		name: "codes: none, a misspelt name, a number out of range",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILBLE", 17, "14"]}`),
		want: []string{`3:132: invalid code: "UNAVAILBLE"`, "3:146: invalid code: 17", `3:150: invalid code: "14"`},
	}, {
		name: "OK is no failure: grpc-java refuses it, by name or number",
		src:  `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["OK", 0]}}]}`,
		want: []string{"1:94: nonFatalStatusCodes must not contain OK", "1:100: nonFatalStatusCodes must not contain OK"},
	}, {
		name: "perAttemptRecvTimeout negative, and zero",
		src:  `{"methodConfig": [{"name": [{"service": "a"}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14], "perAttemptRecvTimeout": "-1s"}}, {"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14], "perAttemptRecvTimeout": "0s"}}]}`,
		want: []string{"1:182: perAttemptRecvTimeout cannot be negative", "1:365: perAttemptRecvTimeout 0s: every attempt would time out at once"},
	}, {
		name: "an empty code list",
		src:  grpcRetry(`{"maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": []}`),
		want: []string{"3:107: retryableStatusCodes must not be empty"},
	}, {
		name: "retry and hedging together",
		src:  `{"methodConfig": [{"name": [{}], "retryPolicy": ` + stdRetry + `, "hedgingPolicy": {"maxAttempts": 2}}]}`,
		want: []string{"1:180: a method has a retryPolicy or a hedgingPolicy, not both"},
	}, {
		name: "hedging maxAttempts 1",
		src:  `{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 1, "hedgingDelay": "-1s"}}]}`,
		want: []string{"1:52: maxAttempts must be at least 2", "1:70: hedgingDelay must not be negative"},
	}, {
		name: "names: a method without its service, the same name twice",
		src:  "{\"methodConfig\": [\n{\"name\": [{\"method\": \"Get\"}, {\"service\": \"a.B\"}]},\n{\"name\": [{\"service\": \"a.B\"}]}]}",
		want: []string{"2:11: cannot combine empty 'service' and non-empty 'method'", `3:11: duplicated name "a.B" (first at 2:30`},
	}, {
		name: "retryThrottling out of range",
		src:  `{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0}}`,
		want: []string{"1:22: maxTokens (1001) out of range (0, 1000]", "1:41: tokenRatio must be > 0"},
	}, {
		name: "retryThrottling missing a field",
		src:  `{"retryThrottling": {"maxTokens": 10, "tokenRation": 0.1}}`,
		want: []string{`1:2: retryThrottling.tokenRatio is required and must be > 0 (gRFC A6; grpc-go refuses the service config): "tokenRation" at 1:39 is not it`},
	}, {
		name: "a tokenRatio gRPC cuts to 0",
		src:  `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.0004}}`,
		want: []string{"1:39: tokenRatio 0.0004 keeps no token"},
	}, {
		name: "not an object",
		src:  `["methodConfig"]`,
		want: []string{"1:1: a service config is a JSON object"},
	}, {
		name: "a timeout of zero",
		src:  `{"methodConfig": [{"name": [{}], "timeout": "0s", "waitForReady": "yes"}]}`,
		want: []string{"1:51: waitForReady must be true or false", "1:34: timeout 0s: every call would be past its deadline"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(Ref{Format: GRPC, File: "f", Name: "a.B/C"}, []byte(tt.src))
			got := problems(t, err)
			require.Len(t, got, len(tt.want), err.Error())
			for i, w := range tt.want {
				assert.True(t, strings.HasPrefix(got[i], w), "problem %d: got %q, want %q...", i, got[i], w)
			}
			// Import refuses the same file with the same problems.
			_, err2 := Import(GRPC, "f", []byte(tt.src))
			require.Error(t, err2)
			assert.Equal(t, err.Error(), err2.Error())
		})
	}
}

func TestGRPCHazards(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{{
		name: "a misspelt retryThrottling is ignored by gRPC: no budget",
		src:  "{\"retryThrotling\": {\"maxTokens\": 10, \"tokenRatio\": 0.1},\n" + grpcRetry(stdRetry)[1:],
		want: []string{"no-budget 4:3", "ignored-field 1:2"},
	}, {
		name: "a misspelt timeout is ignored: no deadline",
		src:  `{"methodConfig": [{"name": [{}], "timout": "1s"}]}`,
		want: []string{"ignored-field 1:34"},
	}, {
		name: "a misspelt service widens the name to every method",
		src:  `{"methodConfig": [{"name": [{"servce": "a.B"}]}]}`,
		want: []string{"ignored-field 1:30"},
	}, {
		name: "a misspelt hedgingDelay: every copy at once",
		src:  `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}, "methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDely": "1s"}}]}`,
		want: []string{"ignored-field 1:127"},
	}, {
		name: "unknown fields far from any are just ignored",
		src:  `{"_comment": "x", "methodConfig": [{"name": [{}], "owner": "team-a"}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, hazards(readOne(t, GRPC, "a.B/C", tt.src)))
		})
	}
}

// TestGRPCPositions checks that every value of the deploy file is placed
// at its key (a default at its object), exactly.
func TestGRPCPositions(t *testing.T) {
	const file = "testdata/grpc/deploy-shop.json"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	fr, err := Import(GRPC, file, data)
	require.NoError(t, err)
	want := map[string][]string{
		"shop.Cart/GetCart": {
			"max_attempts 13:9 methodConfig[0].retryPolicy.maxAttempts",
			"max_elapsed 11:7 methodConfig[0].timeout",
			"timeout 11:7 methodConfig[0].timeout",
			"retry_on 17:9 methodConfig[0].retryPolicy.retryableStatusCodes",
			"backoff.kind 12:22 methodConfig[0].retryPolicy (default)",
			"backoff.base 14:9 methodConfig[0].retryPolicy.initialBackoff",
			"backoff.cap 15:9 methodConfig[0].retryPolicy.maxBackoff",
			"backoff.multiplier 16:9 methodConfig[0].retryPolicy.backoffMultiplier",
			"retry_after.mode 12:22 methodConfig[0].retryPolicy (default)",
			"budget.kind 49:3 retryThrottling",
			"budget.max_tokens 49:24 retryThrottling.maxTokens",
			"budget.token_ratio 49:41 retryThrottling.tokenRatio",
			"ignore_pushback 12:22 methodConfig[0].retryPolicy (default)",
		},
		"shop.Checkout/PlaceOrder": {
			"max_attempts 20:5 methodConfig[1] (default)",
			"max_elapsed 23:7 methodConfig[1].timeout",
			"timeout 23:7 methodConfig[1].timeout",
			"backoff.kind 20:5 methodConfig[1] (default)",
		},
		"shop.Search": {
			"max_attempts 30:24 methodConfig[2].hedgingPolicy (default)",
			"max_elapsed 29:7 methodConfig[2].timeout",
			"timeout 29:7 methodConfig[2].timeout",
			"backoff.kind 30:24 methodConfig[2].hedgingPolicy (default)",
			"retry_after.mode 30:24 methodConfig[2].hedgingPolicy (default)",
			"budget.kind 49:3 retryThrottling",
			"budget.max_tokens 49:24 retryThrottling.maxTokens",
			"budget.token_ratio 49:41 retryThrottling.tokenRatio",
			"hedge.delay 32:9 methodConfig[2].hedgingPolicy.hedgingDelay",
			"hedge.max 31:9 methodConfig[2].hedgingPolicy.maxAttempts",
			"hedge.cancel 30:24 methodConfig[2].hedgingPolicy (default)",
			"ignore_pushback 30:24 methodConfig[2].hedgingPolicy (default)",
		},
		"": {
			"max_attempts 41:9 methodConfig[3].retryPolicy.maxAttempts",
			"max_elapsed 39:7 methodConfig[3].timeout",
			"timeout 39:7 methodConfig[3].timeout",
			"retry_on 45:9 methodConfig[3].retryPolicy.retryableStatusCodes",
			"backoff.kind 40:22 methodConfig[3].retryPolicy (default)",
			"backoff.base 42:9 methodConfig[3].retryPolicy.initialBackoff",
			"backoff.cap 43:9 methodConfig[3].retryPolicy.maxBackoff",
			"backoff.multiplier 44:9 methodConfig[3].retryPolicy.backoffMultiplier",
			"retry_after.mode 40:22 methodConfig[3].retryPolicy (default)",
			"budget.kind 49:3 retryThrottling",
			"budget.max_tokens 49:24 retryThrottling.maxTokens",
			"budget.token_ratio 49:41 retryThrottling.tokenRatio",
			"ignore_pushback 40:22 methodConfig[3].retryPolicy (default)",
		},
	}
	var names []string
	lines := strings.Split(string(data), "\n")
	for _, p := range fr.Policies {
		names = append(names, p.Name)
		var got []string
		for _, v := range p.Values {
			s := fmt.Sprintf("%s %d:%d %s", v.Field, v.Pos.Line, v.Pos.Col, v.Pos.Path)
			if v.Pos.Default != "" {
				s += " (default)"
			} else {
				// A value read is at its key: the file has "key" there.
				key := v.Pos.Path[strings.LastIndexByte(v.Pos.Path, '.')+1:]
				assert.True(t, strings.HasPrefix(lines[v.Pos.Line-1][v.Pos.Col-1:], `"`+key+`"`), "%s: %s", p.Name, s)
			}
			assert.Equal(t, file, v.Pos.File)
			got = append(got, s)
		}
		if w, ok := want[p.Name]; ok {
			assert.Equal(t, w, got, p.Name)
		}
		assert.Empty(t, p.Hazards, p.Name)
	}
	assert.Equal(t, []string{"shop.Cart/GetCart", "shop.Catalog", "shop.Checkout/PlaceOrder", "shop.Search", ""}, names)
}

// TestGRPCReadMatchesImport: Read(name) is Import's policy of that name,
// and a method takes its own config, else its service's, else every
// method's, as gRPC matches them.
func TestGRPCReadMatchesImport(t *testing.T) {
	const file = "testdata/grpc/deploy-shop.json"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	fr, err := Import(GRPC, file, data)
	require.NoError(t, err)
	byName := map[string]*Policy{}
	for _, p := range fr.Policies {
		got, err := Read(Ref{Format: GRPC, File: file, Name: p.Name}, data)
		require.NoError(t, err, p.Name)
		assert.Equal(t, p, got, p.Name)
		byName[p.Name] = p
	}
	for method, want := range map[string]string{
		"shop.Cart/GetCart":         "shop.Cart/GetCart",
		"/shop.Cart/GetCart":        "shop.Cart/GetCart",
		"shop.Cart/PutCart":         "", // shop.Cart has no default of its own
		"shop.Catalog/ListProducts": "shop.Catalog",
		"shop.Catalog":              "shop.Catalog",
		"shop.Search/Find":          "shop.Search",
		"shop.Checkout/PlaceOrder":  "shop.Checkout/PlaceOrder",
		"shop.Checkout/Refund":      "",
		"other.Svc":                 "",
	} {
		got, err := Read(Ref{Format: GRPC, File: file, Name: method}, data)
		require.NoError(t, err, method)
		assert.Equal(t, byName[want], got, method)
	}

	// Without a default for every method, an unmatched method is refused.
	_, err = Read(Ref{Format: GRPC, File: "f", Name: "a.B/C"}, []byte(`{"methodConfig": [{"name": [{"service": "x.Y"}]}]}`))
	assert.ErrorContains(t, err, `f:1:1: methodConfig: no methodConfig names "a.B/C", its service or every method (the names are "x.Y")`)
	_, err = Read(Ref{Format: GRPC, File: "f", Name: "a.B/C"}, []byte(`{"methodConfigs": [{"name": [{}]}]}`))
	assert.EqualError(t, err, `f:1:1: methodConfig: no methodConfig names "a.B/C", its service or every method (the names are none): gRPC would not retry it; "methodConfigs" at 1:2 is not methodConfig`)
}

// TestGRPCYAML: a service config written as YAML (JSON is YAML; some
// deployments keep it so, with comments) reads the same, at its own
// positions.
func TestGRPCYAML(t *testing.T) {
	src := `# the shop's reads
methodConfig:
  - name: [{service: shop.Cart}]
    timeout: 2s           # a string in YAML too
    retryPolicy:
      maxAttempts: 4
      initialBackoff: 0.1s
      maxBackoff: 1s
      backoffMultiplier: 2
      retryableStatusCodes: [UNAVAILABLE, RESOURCE_EXHAUSTED]
retryThrottling: {maxTokens: 10, tokenRatio: 0.1}
`
	y := readOne(t, GRPC, "shop.Cart/GetCart", src)
	data, err := os.ReadFile("testdata/grpc/deploy-shop.json")
	require.NoError(t, err)
	j := readOne(t, GRPC, "shop.Cart/GetCart", string(data))
	assert.Equal(t, rows(j), rows(y))
	v, _ := y.Get("max_attempts")
	assert.Equal(t, "f:6:7: methodConfig[0].retryPolicy.maxAttempts", v.Pos.String())
}
