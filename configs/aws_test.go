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

// awsStandardRows are the standard mode's values after max_attempts.
func awsStandardRows() []row {
	return []row{
		{"retry_on", []string{"refused", "timeout", "reset", "5xx", "429"}, true},
		{"backoff.kind", "full-jitter", true},
		{"backoff.base", 50 * time.Millisecond, true},
		{"backoff.cap", 20 * time.Second, true},
		{"backoff.multiplier", 2.0, true},
		{"backoff.throttle_base", time.Second, true},
		{"retry_after.mode", "ignore", true},
		{"budget.kind", "quota", true},
		{"budget.capacity", 500.0, true},
		{"budget.retry_cost", 14.0, true},
		{"budget.timeout_cost", 14.0, true},
		{"budget.throttling_cost", 5.0, true},
		{"budget.no_retry_increment", 1.0, true},
	}
}

func awsLegacyRows(cap time.Duration) []row {
	return []row{
		{"retry_on", []string{"refused", "timeout", "reset", "5xx", "429"}, true},
		{"backoff.kind", "full-jitter", false},
		{"backoff.base", time.Second, true},
		{"backoff.cap", cap, true},
		{"backoff.multiplier", 2.0, true},
		{"retry_after.mode", "ignore", true},
	}
}

func TestAWSDefaults(t *testing.T) {
	pushback := row{"ignore_pushback", true, true}
	join := func(first row, rest []row, tail ...row) []row {
		return append(append([]row{first}, rest...), tail...)
	}
	tests := []struct {
		name    string
		src     string
		profile string
		want    []row
		hazards []string
	}{{
		name:    "no retry settings: standard, 3 attempts, the 2026 backoff and quota",
		src:     "[default]\nregion = us-east-1\n",
		profile: "default",
		want:    join(row{"max_attempts", 3, true}, awsStandardRows(), pushback),
	}, {
		name:    "standard with max_attempts",
		src:     "[profile a]\nretry_mode = standard\nmax_attempts = 7\n",
		profile: "a",
		want:    join(row{"max_attempts", 7, false}, awsStandardRows(), pushback),
	}, {
		name:    "adaptive: standard and the CUBIC rate limiter",
		src:     "[profile a]\nretry_mode = adaptive\n",
		profile: "a",
		want:    join(row{"max_attempts", 3, true}, awsStandardRows(), row{"throttle.kind", "aws-adaptive", false}, pushback),
	}, {
		name:    "legacy: botocore's 5 attempts, U(0, 2^k s), no quota",
		src:     "[profile a]\nretry_mode = legacy\n",
		profile: "a",
		want:    join(row{"max_attempts", 5, true}, awsLegacyRows(8*time.Second), pushback),
		hazards: []string{"no-budget 2:1"},
	}, {
		name:    "legacy's cap is the longest wait the attempts allow",
		src:     "[profile a]\nretry_mode = legacy\nmax_attempts = 2\n",
		profile: "a",
		want:    join(row{"max_attempts", 2, false}, awsLegacyRows(time.Second), pushback),
		hazards: []string{"no-budget 2:1"},
	}, {
		name:    "legacy's cap stops at 2^28 s",
		src:     "[profile a]\nretry_mode = legacy\nmax_attempts = 40\n",
		profile: "a",
		want:    join(row{"max_attempts", 40, false}, awsLegacyRows(time.Duration(1<<28)*time.Second), pushback),
		hazards: []string{"no-budget 2:1"},
	}, {
		name:    "legacy without retries has nothing to budget",
		src:     "[profile a]\nretry_mode = legacy\nmax_attempts = 1\n",
		profile: "a",
		want:    join(row{"max_attempts", 1, false}, awsLegacyRows(time.Second), pushback),
	}, {
		name:    "keys indented alike are keys, a line indented more continues the one above",
		src:     "[profile a]\n  s3 =\n    retry_mode = legacy\n  retry_mode = adaptive\n",
		profile: "a",
		want:    join(row{"max_attempts", 3, true}, awsStandardRows(), row{"throttle.kind", "aws-adaptive", false}, pushback),
	}, {
		name:    "configparser: keys in any case, ':' as delimiter, spaces, CRLF, a BOM",
		src:     "\ufeff[profile  a ]\r\n  ; a comment\r\nRetry_Mode: adaptive\r\nMAX_ATTEMPTS=+2 \r\n",
		profile: "a",
		want:    join(row{"max_attempts", 2, false}, awsStandardRows(), row{"throttle.kind", "aws-adaptive", false}, pushback),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := readOne(t, AWS, tt.profile, tt.src)
			assert.Equal(t, tt.want, rows(p))
			assert.Equal(t, tt.hazards, hazards(p))
		})
	}
}

func TestAWSRefusals(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		profile string
		want    []string
	}{{
		name: "a mode the SDKs do not know, in another case",
		src:  "[default]\nretry_mode = Standard\n",
		want: []string{`2:1: Invalid value provided to "mode": "Standard" must be one of: legacy, standard, adaptive`},
	}, {
		name: "max_attempts 0, and not a number",
		src:  "[default]\nmax_attempts = 0\n[profile b]\nmax_attempts = three\n",
		want: []string{`2:1: Value provided to "max_attempts": 0 must be an integer greater than or equal to 1`},
	}, {
		name:    "a comment after the value is the value",
		src:     "[profile b]\n  max_attempts = 3 # retries\n",
		profile: "b",
		want:    []string{`2:3: max_attempts must be an integer, got "3 # retries"`},
	}, {
		name: "a value continued on the next line",
		src:  "[default]\nretry_mode =\n  standard\n",
		want: []string{`2:1: Invalid value provided to "mode": "\nstandard"`},
	}, {
		name: "the file: a key twice, a section twice, a line that is nothing, a key before any section, an open header",
		src:  "region = x\n[default]\nmax_attempts = 2\nmax_attempts = 3\nnonsense\n[default]\n[profile b\n",
		want: []string{
			`1:1: "region = x" comes before any [section]`,
			"4:1: max_attempts is written twice in [default] (first on line 3)",
			`5:1: a line must be [section], key = value or a comment, got "nonsense"`,
			"6:1: section [default] is written twice (first on line 2)",
			"7:1: a section header must end with ]",
		},
	}, {
		name: "default written twice",
		src:  "[default]\n[profile default]\n",
		want: []string{"2:1: profile default is written twice ([default] on line 1)"},
	}, {
		name:    "no such profile",
		src:     "[default]\n[profile a]\n",
		profile: "b",
		want:    []string{`1:1: no profile "b" (the profiles are "default", "a")`},
	}, {
		name:    "a credentials file's section",
		src:     "[default]\n[b]\nretry_mode = standard\n",
		profile: "b",
		want:    []string{"1:1: [b] on line 2 is a credentials file's section: in a config file the SDKs ignore it; write [profile b]"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := tt.profile
			if profile == "" {
				profile = "default"
			}
			_, err := Read(Ref{Format: AWS, File: "f", Name: profile}, []byte(tt.src))
			got := problems(t, err)
			require.Len(t, got, len(tt.want), err.Error())
			for i, w := range tt.want {
				assert.True(t, strings.HasPrefix(got[i], w), "problem %d: got %q, want %q...", i, got[i], w)
			}
		})
	}
	// Import refuses a file with a bad profile, whichever profile it is.
	_, err := Import(AWS, "f", []byte("[default]\n[profile b]\nmax_attempts = three\n"))
	assert.Equal(t, []string{`3:1: max_attempts must be an integer, got "three" (botocore refuses it)`}, problems(t, err))
}

func TestAWSHazards(t *testing.T) {
	p := readOne(t, AWS, "a", "[profile a]\nretry-mode = adaptive\nmax_attempt = 10\nregion = x\n")
	assert.Equal(t, []string{"ignored-field 2:1", "ignored-field 3:1"}, hazards(p))
	assert.Contains(t, p.Hazards[0].Msg, `"retry-mode" is not a setting, and the SDKs ignore it: did you mean retry_mode?`)
	// What the SDKs make of it: the defaults, as if nothing were written.
	v, _ := p.Get("max_attempts")
	assert.Equal(t, 3, v.Value)
	_, adaptive := p.Get("throttle.kind")
	assert.False(t, adaptive)

	// Written right, nothing is reported.
	p = readOne(t, AWS, "a", "[profile a]\nretry_mode = adaptive\nmax_attempts = 10\n")
	assert.Empty(t, p.Hazards)
}

// TestAWSPositions checks that every value of the deploy file is placed
// at its key, or, for a default, at its profile's header.
func TestAWSPositions(t *testing.T) {
	const file = "testdata/aws/deploy-config.ini"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	fr, err := Import(AWS, file, data)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	want := map[string][]string{
		"default":  {"max_attempts 4:1 [default] (default)"},
		"orders":   {"max_attempts 13:1 [profile orders] max_attempts"},
		"importer": {"max_attempts 20:1 [profile importer] max_attempts", "throttle.kind 19:1 [profile importer] retry_mode"},
		"reports":  {"max_attempts 25:1 [profile reports] (default)", "backoff.kind 26:1 [profile reports] retry_mode"},
	}
	var names []string
	for _, p := range fr.Policies {
		names = append(names, p.Name)
		header := map[string]int{"default": 4, "orders": 10, "importer": 17, "reports": 25}[p.Name]
		var got []string
		for _, v := range p.Values {
			assert.Equal(t, file, v.Pos.File)
			if v.Pos.Default != "" {
				assert.Equal(t, header, v.Pos.Line, "%s %s: a default is at its profile", p.Name, v.Field)
				assert.Equal(t, 1, v.Pos.Col)
				if v.Field == "max_attempts" {
					got = append(got, fmt.Sprintf("%s %d:%d %s (default)", v.Field, v.Pos.Line, v.Pos.Col, v.Pos.Path))
				}
				continue
			}
			key := v.Pos.Path[strings.LastIndexByte(v.Pos.Path, ' ')+1:]
			assert.True(t, strings.HasPrefix(lines[v.Pos.Line-1][v.Pos.Col-1:], key+" ="), "%s: %s at %d:%d", p.Name, v.Field, v.Pos.Line, v.Pos.Col)
			got = append(got, fmt.Sprintf("%s %d:%d %s", v.Field, v.Pos.Line, v.Pos.Col, v.Pos.Path))
		}
		assert.Equal(t, want[p.Name], got, p.Name)
	}
	assert.Equal(t, []string{"default", "orders", "importer", "reports"}, names)
	assert.Equal(t, []string{"no-budget 26:1"}, hazards(fr.Policies[3]))
}

func TestAWSReadMatchesImport(t *testing.T) {
	const file = "testdata/aws/deploy-config.ini"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	fr, err := Import(AWS, file, data)
	require.NoError(t, err)
	require.Len(t, fr.Policies, 4)
	for _, p := range fr.Policies {
		got, err := Read(Ref{Format: AWS, File: file, Name: p.Name}, data)
		require.NoError(t, err, p.Name)
		assert.Equal(t, p, got, p.Name)
	}
	// [sso-session shop] is not a profile.
	_, err = Read(Ref{Format: AWS, File: file, Name: "shop"}, data)
	assert.ErrorContains(t, err, `no profile "shop"`)
}
