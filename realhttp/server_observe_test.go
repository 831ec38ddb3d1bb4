package realhttp

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendLogLineIsJSONs holds the log's own encoder to the bytes
// json.Marshal writes, for every field set and unset, floats of every
// magnitude, and keys that need escaping.
func TestAppendLogLineIsJSONs(t *testing.T) {
	request, planned := int64(41), int64(-7)
	lines := []ServerLogLine{
		{},
		{T: 1.5, AtNS: 1796438001643993757, ID: 3, Attempt: 2, Outcome: "success", Reason: "processed"},
		{T: 1e-7, ServiceS: 2.5e-9, Key: "k-1", Request: &request, PlannedNS: &planned, KeyLen: 200, Duplicate: true, Wasted: true},
		{T: 1e21, ServiceS: 123456789.123, Outcome: "5xx", Reason: "in_progress"},
		{T: 1e-6, ServiceS: 0.1 + 0.2},
		{T: 9.999999e-7, ServiceS: 1.2345e-300},
		{T: math.MaxFloat64, ServiceS: math.SmallestNonzeroFloat64},
		{T: -0.5, Key: `a"b\c`},
		{Key: "<script>&amp;</script>"},
		{Key: "tab\tnew\nline\x00\x1f\x7f"},
		{Key: "caf\u00e9 \u2028 \u2029 \U0001F600"},
		{Key: "bad \xff\xfe utf-8"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		key := make([]byte, r.IntN(12))
		for i := range key {
			key[i] = byte(r.IntN(256))
		}
		line := ServerLogLine{
			T:        math.Ldexp(r.Float64(), r.IntN(160)-80),
			AtNS:     r.Int64(),
			ID:       r.Uint64(),
			Key:      string(key),
			Attempt:  r.IntN(10),
			Outcome:  "timeout",
			Reason:   "outage",
			ServiceS: math.Ldexp(r.Float64(), r.IntN(160)-80),
			KeyLen:   r.IntN(2) * 300,
		}
		if r.IntN(2) == 0 {
			line.Request = &request
		}
		lines = append(lines, line)
	}
	for _, line := range lines {
		want, err := json.Marshal(&line)
		require.NoError(t, err)
		assert.Equal(t, string(want)+"\n", string(appendLogLine(nil, &line)))
	}
}

// BenchmarkAppendLogLine measures the log's encoder against json.Marshal
// on a line of the driver's attempts.
func BenchmarkAppendLogLine(b *testing.B) {
	request, planned := int64(12345), int64(987654321)
	line := ServerLogLine{T: 12.345678, AtNS: 1796438001643993757, ID: 136573, Key: "req-12345-7", Attempt: 3,
		Request: &request, Outcome: "success", Reason: "processed", PlannedNS: &planned, ServiceS: 0.0123}
	b.Run("encoder=own", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf = appendLogLine(buf[:0], &line)
		}
	})
	b.Run("encoder=json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
