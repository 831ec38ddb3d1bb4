package strategies_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// FuzzRetryAfter checks ParseRetryAfter, RetryAfter.Capped and
// FormatRetryAfter on any header value, any response date (an offset in ns
// from retryAfterDate), any cap and any wait to format.
func FuzzRetryAfter(f *testing.F) {
	seeds := []string{
		"120", "0", "007", " 5 ", "\t5\t", "9223372036", "9223372037",
		"99999999999999999999999", "-5", "+5", "1.5", "", "abc", "5s", "1 2",
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:45:37 GMT",
		"Mon, 06 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37.5 GMT",
		"Thu, 31 Nov 1994 08:49:37 GMT",
		"Sat, 31 Dec 2016 23:59:60 GMT",
		"Sun, 06 Nov 1994 08:49:37 PST",
		"Sun, 06 Nov 1994 08:49:37 GMT+1",
		"Fri, 31 Dec 9999 23:59:59 GMT",
		"Monday, 29-Feb-00 00:00:00 GMT",
		"Friday, 01-Jan-00 00:00:00 GMT",
	}
	offsets := []int64{0, int64(time.Second), -int64(time.Hour), int64(100 * 365 * 24 * time.Hour), math.MinInt64, math.MaxInt64}
	for i, value := range seeds {
		f.Add(value, offsets[i%len(offsets)], int64(strategies.DefaultRetryAfterCap), int64(1500*time.Millisecond))
	}
	f.Add("120", int64(0), int64(0), int64(-1))
	f.Add("120", int64(0), int64(-1), int64(math.MaxInt64))
	f.Add("99999999999999999999999", int64(0), int64(math.MinInt64), int64(math.MinInt64))

	f.Fuzz(func(t *testing.T, value string, offset, capNs, waitNs int64) {
		date := retryAfterDate.Add(time.Duration(offset))

		wait, ok := strategies.ParseRetryAfter(value, date)
		require.GreaterOrEqual(t, wait, time.Duration(0), "ParseRetryAfter(%q) negative", value)
		if !ok {
			require.Zero(t, wait, "ParseRetryAfter(%q) not ok", value)
		}
		padded, paddedOK := strategies.ParseRetryAfter(" \t"+value+"\t ", date)
		require.Equal(t, ok, paddedOK, "surrounding whitespace changes ok for %q", value)
		require.Equal(t, wait, padded, "surrounding whitespace changes wait for %q", value)

		limit := time.Duration(capNs & math.MaxInt64) // clamp to > 0
		if limit == 0 {
			limit = 1
		}
		capped := strategies.RetryAfter{Mode: strategies.RetryAfterHonor, Cap: limit}.Capped(wait)
		require.GreaterOrEqual(t, capped, time.Duration(0), "Capped(%v) negative", wait)
		require.LessOrEqual(t, capped, limit, "Capped(%v) above cap", wait)
		require.Equal(t, min(wait, limit), capped, "Capped(%v)", wait)

		// A formatted wait parses back to at least itself and less than a
		// second more. The date stays within years 1702 to 2287, so date plus
		// any wait is a four-digit year.
		want := max(time.Duration(waitNs), 0)
		for _, format := range []strategies.RetryAfterFormat{strategies.RetryAfterSeconds, strategies.RetryAfterHTTPDate} {
			formatted := strategies.FormatRetryAfter(time.Duration(waitNs), format, date)
			got, ok := strategies.ParseRetryAfter(formatted, date)
			require.True(t, ok, "ParseRetryAfter(%q) of %v as %s", formatted, want, format)
			require.GreaterOrEqual(t, got, want, "%q of %v as %s comes back early", formatted, want, format)
			require.Less(t, got-want, time.Second, "%q of %v as %s", formatted, want, format)
		}
	})
}
