package strategies_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zeontools/herdlab/strategies"
)

// retryAfterDate is when the tests' responses arrive: two minutes before
// the example date of RFC 9110, Sun, 06 Nov 1994 08:49:37 GMT.
var retryAfterDate = time.Date(1994, time.November, 6, 8, 47, 37, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	const maxWait = time.Duration(math.MaxInt64)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		// delta-seconds
		{"seconds", "120", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding spaces", " 5 ", 5 * time.Second, true},
		{"surrounding tabs", "\t5\t", 5 * time.Second, true},
		{"largest exact", "9223372036", 9223372036 * time.Second, true},
		{"first saturated", "9223372037", maxWait, true},
		{"huge saturates", "99999999999999999999999", maxWait, true},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"empty", "", 0, false},
		{"only spaces", "  \t ", 0, false},
		{"letters", "abc", 0, false},
		{"unit suffix", "5s", 0, false},
		{"inner space", "1 2", 0, false},
		{"newline around", "\n5\n", 0, false},
		{"non-ASCII digits", "١٢٠", 0, false},

		// HTTP-date, two minutes after retryAfterDate
		{"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 2 * time.Minute, true},
		{"RFC 850", "Sunday, 06-Nov-94 08:49:37 GMT", 2 * time.Minute, true},
		{"asctime", "Sun Nov  6 08:49:37 1994", 2 * time.Minute, true},
		{"asctime zero-padded day", "Sun Nov 06 08:49:37 1994", 2 * time.Minute, true},
		{"date with surrounding spaces", "  Sun, 06 Nov 1994 08:49:37 GMT\t", 2 * time.Minute, true},
		{"one second later", "Sun, 06 Nov 1994 08:47:38 GMT", time.Second, true},
		{"date equal", "Sun, 06 Nov 1994 08:47:37 GMT", 0, true},
		{"date in the past", "Sun, 06 Nov 1994 08:45:37 GMT", 0, true},
		{"date long past", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"far future is not capped", "Fri, 31 Dec 9999 23:59:59 GMT", time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC).Sub(retryAfterDate), true},
		// Decided: like net/http.ParseTime, the weekday is checked for
		// spelling only; the rest of the date fixes the instant.
		{"wrong weekday accepted", "Mon, 06 Nov 1994 08:49:37 GMT", 2 * time.Minute, true},
		{"lowercase names accepted", "sun, 06 nov 1994 08:49:37 GMT", 2 * time.Minute, true},
		{"fractional second accepted", "Sun, 06 Nov 1994 08:49:37.5 GMT", 2*time.Minute + 500*time.Millisecond, true},
		{"misspelled weekday", "Sux, 06 Nov 1994 08:49:37 GMT", 0, false},
		{"unknown month", "Sun, 06 Foo 1994 08:49:37 GMT", 0, false},
		{"day out of range", "Thu, 31 Nov 1994 08:49:37 GMT", 0, false},
		{"hour out of range", "Mon, 07 Nov 1994 24:00:00 GMT", 0, false},
		{"leap second", "Sat, 31 Dec 2016 23:59:60 GMT", 0, false},
		{"single-digit day", "Sun, 6 Nov 1994 08:49:37 GMT", 0, false},
		{"four-digit RFC 850 year", "Sunday, 06-Nov-1994 08:49:37 GMT", 0, false},
		{"non-GMT zone", "Sun, 06 Nov 1994 08:49:37 PST", 0, false},
		{"UTC zone", "Sun, 06 Nov 1994 08:49:37 UTC", 0, false},
		{"numeric offset", "Sun, 06 Nov 1994 08:49:37 +0000", 0, false},
		{"GMT with offset", "Sun, 06 Nov 1994 08:49:37 GMT+1", 0, false},
		{"lowercase gmt", "Sun, 06 Nov 1994 08:49:37 gmt", 0, false},
		{"missing zone", "Sun, 06 Nov 1994 08:49:37", 0, false},
		{"RFC 850 non-GMT zone", "Sunday, 06-Nov-94 08:49:37 EST", 0, false},
		{"asctime with zone", "Sun Nov  6 08:49:37 GMT 1994", 0, false},
		{"trailing garbage", "Sun, 06 Nov 1994 08:49:37 GMT x", 0, false},
		{"ISO 8601", "1994-11-06T08:49:37Z", 0, false},
		{"two values", "120, 120", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := strategies.ParseRetryAfter(tt.value, retryAfterDate)
			assert.Equal(t, tt.wantOK, ok, "ok")
			assert.Equal(t, tt.want, got, "wait")
		})
	}
}

// TestParseRetryAfterRFC850Year checks that a two-digit year is resolved
// against the response's date (RFC 9110 section 5.6.7), not against
// time.Parse's fixed 1969–2068 window.
func TestParseRetryAfterRFC850Year(t *testing.T) {
	at := func(year int, month time.Month, day int) time.Time {
		return time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
	}
	tests := []struct {
		name   string
		date   time.Time
		value  string
		want   time.Time // the instant the value names; zero when !wantOK
		wantOK bool
	}{
		{"same century", at(2026, time.June, 1), "Tuesday, 01-Jun-27 00:00:00 GMT", at(2027, time.June, 1), true},
		{"49 years ahead stays ahead", at(2026, time.June, 1), "Wednesday, 01-Jan-76 00:00:00 GMT", at(2076, time.January, 1), true},
		{"over 50 years ahead is the past", at(2026, time.June, 1), "Thursday, 01-Jul-76 00:00:00 GMT", at(1976, time.July, 1), true},
		{"exactly 50 years ahead stays ahead", at(2026, time.June, 1), "Monday, 01-Jun-76 00:00:00 GMT", at(2076, time.June, 1), true},
		{"next century", at(2099, time.December, 31), "Friday, 01-Jan-00 00:00:00 GMT", at(2100, time.January, 1), true},
		{"previous century", at(2101, time.January, 1), "Thursday, 31-Dec-99 00:00:00 GMT", at(2099, time.December, 31), true},
		{"29 Feb 2000", at(1999, time.December, 31), "Tuesday, 29-Feb-00 00:00:00 GMT", at(2000, time.February, 29), true},
		{"29 Feb 2100 does not exist", at(2099, time.December, 31), "Monday, 29-Feb-00 00:00:00 GMT", time.Time{}, false},
		{"29 Feb 2001 does not exist", at(2000, time.December, 31), "Thursday, 29-Feb-01 00:00:00 GMT", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := strategies.ParseRetryAfter(tt.value, tt.date)
			require.Equal(t, tt.wantOK, ok, "ok")
			if !ok {
				assert.Zero(t, got)
				return
			}
			assert.Equal(t, max(tt.want.Sub(tt.date), 0), got)
		})
	}
}

func TestFormatRetryAfter(t *testing.T) {
	est := time.FixedZone("EST", -5*60*60)
	tests := []struct {
		name   string
		wait   time.Duration
		format strategies.RetryAfterFormat
		date   time.Time
		want   string
	}{
		{"seconds zero", 0, strategies.RetryAfterSeconds, retryAfterDate, "0"},
		{"seconds 1ns rounds up", time.Nanosecond, strategies.RetryAfterSeconds, retryAfterDate, "1"},
		{"seconds 999ms rounds up", 999 * time.Millisecond, strategies.RetryAfterSeconds, retryAfterDate, "1"},
		{"seconds whole", time.Second, strategies.RetryAfterSeconds, retryAfterDate, "1"},
		{"seconds 1500ms rounds up", 1500 * time.Millisecond, strategies.RetryAfterSeconds, retryAfterDate, "2"},
		{"seconds 2h", 2 * time.Hour, strategies.RetryAfterSeconds, retryAfterDate, "7200"},
		{"seconds negative is zero", -5 * time.Second, strategies.RetryAfterSeconds, retryAfterDate, "0"},
		{"seconds largest duration", time.Duration(math.MaxInt64), strategies.RetryAfterSeconds, retryAfterDate, "9223372037"},
		{"unknown format writes seconds", 1500 * time.Millisecond, strategies.RetryAfterFormat(9), retryAfterDate, "2"},
		{"http-date", 2 * time.Minute, strategies.RetryAfterHTTPDate, retryAfterDate, "Sun, 06 Nov 1994 08:49:37 GMT"},
		{"http-date zero", 0, strategies.RetryAfterHTTPDate, retryAfterDate, "Sun, 06 Nov 1994 08:47:37 GMT"},
		{"http-date negative is zero", -time.Hour, strategies.RetryAfterHTTPDate, retryAfterDate, "Sun, 06 Nov 1994 08:47:37 GMT"},
		{"http-date 1ns rounds up", time.Nanosecond, strategies.RetryAfterHTTPDate, retryAfterDate, "Sun, 06 Nov 1994 08:47:38 GMT"},
		{"http-date fractional date rounds up", 0, strategies.RetryAfterHTTPDate, retryAfterDate.Add(time.Millisecond), "Sun, 06 Nov 1994 08:47:38 GMT"},
		{"http-date fractions add up", 600 * time.Millisecond, strategies.RetryAfterHTTPDate, retryAfterDate.Add(600 * time.Millisecond), "Sun, 06 Nov 1994 08:47:39 GMT"},
		{"http-date written in GMT", 2 * time.Minute, strategies.RetryAfterHTTPDate, retryAfterDate.In(est), "Sun, 06 Nov 1994 08:49:37 GMT"},
		{"http-date crosses midnight", 2 * time.Hour, strategies.RetryAfterHTTPDate, time.Date(1999, time.December, 31, 23, 0, 0, 0, time.UTC), "Sat, 01 Jan 2000 01:00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, strategies.FormatRetryAfter(tt.wait, tt.format, tt.date))
		})
	}
}

// TestRetryAfterRoundTrip checks that a client never comes back early: the
// parsed wait is at least the formatted one and less than a second more.
func TestRetryAfterRoundTrip(t *testing.T) {
	waits := []time.Duration{0, time.Nanosecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Hour, -time.Second}
	dates := []struct {
		name string
		date time.Time
	}{
		{"whole date", retryAfterDate},
		{"fractional date", time.Date(2026, time.March, 14, 15, 9, 26, 535897932, time.UTC)},
	}
	for _, format := range []strategies.RetryAfterFormat{strategies.RetryAfterSeconds, strategies.RetryAfterHTTPDate} {
		for _, d := range dates {
			for _, wait := range waits {
				t.Run(fmt.Sprintf("%s/%s/%v", format, d.name, wait), func(t *testing.T) {
					value := strategies.FormatRetryAfter(wait, format, d.date)
					got, ok := strategies.ParseRetryAfter(value, d.date)
					require.True(t, ok, "ParseRetryAfter(%q)", value)
					want := max(wait, 0)
					assert.GreaterOrEqual(t, got, want, "value %q", value)
					assert.Less(t, got, want+time.Second, "value %q", value)
				})
			}
		}
	}
}

func TestRetryAfterFormatString(t *testing.T) {
	tests := []struct {
		format strategies.RetryAfterFormat
		want   string
	}{
		{strategies.RetryAfterSeconds, "seconds"},
		{strategies.RetryAfterHTTPDate, "http-date"},
		{strategies.RetryAfterFormat(9), "RetryAfterFormat(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.format.String())
		})
	}
	var zero strategies.RetryAfterFormat
	assert.Equal(t, strategies.RetryAfterSeconds, zero, "zero value")
}

func TestParseRetryAfterFormat(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		want    strategies.RetryAfterFormat
		wantErr bool
	}{
		{"seconds", "seconds", strategies.RetryAfterSeconds, false},
		{"http-date", "http-date", strategies.RetryAfterHTTPDate, false},
		{"empty", "", 0, true},
		{"unknown", "date", 0, true},
		{"case-sensitive", "Seconds", 0, true},
		{"Go name", "RetryAfterHTTPDate", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strategies.ParseRetryAfterFormat(tt.s)
			if tt.wantErr {
				require.Error(t, err)
				assert.ErrorContains(t, err, "strategies: ")
				assert.ErrorContains(t, err, fmt.Sprintf("%q", tt.s))
				assert.ErrorContains(t, err, "seconds, http-date")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.s, got.String(), "round trip")
		})
	}
}

func TestRetryAfterModeString(t *testing.T) {
	tests := []struct {
		mode strategies.RetryAfterMode
		want string
	}{
		{strategies.RetryAfterHonor, "honor"},
		{strategies.RetryAfterIgnore, "ignore"},
		{strategies.RetryAfterMax, "max"},
		{strategies.RetryAfterMode(7), "RetryAfterMode(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.mode.String())
		})
	}
	var zero strategies.RetryAfterMode
	assert.Equal(t, strategies.RetryAfterHonor, zero, "zero value")
}

func TestParseRetryAfterMode(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		want    strategies.RetryAfterMode
		wantErr bool
	}{
		{"honor", "honor", strategies.RetryAfterHonor, false},
		{"ignore", "ignore", strategies.RetryAfterIgnore, false},
		{"max", "max", strategies.RetryAfterMax, false},
		{"empty", "", 0, true},
		{"unknown", "min", 0, true},
		{"case-sensitive", "Honor", 0, true},
		{"surrounding space", " max", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strategies.ParseRetryAfterMode(tt.s)
			if tt.wantErr {
				require.Error(t, err)
				assert.ErrorContains(t, err, "strategies: ")
				assert.ErrorContains(t, err, fmt.Sprintf("%q", tt.s))
				assert.ErrorContains(t, err, "honor, ignore, max")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.s, got.String(), "round trip")
		})
	}
}

func TestRetryAfterCapped(t *testing.T) {
	tests := []struct {
		name   string
		policy strategies.RetryAfter
		hint   time.Duration
		want   time.Duration
	}{
		{"zero value below default cap", strategies.RetryAfter{}, time.Minute, time.Minute},
		{"zero value at default cap", strategies.RetryAfter{}, strategies.DefaultRetryAfterCap, strategies.DefaultRetryAfterCap},
		{"zero value above default cap", strategies.RetryAfter{}, 10 * time.Minute, strategies.DefaultRetryAfterCap},
		{"zero value saturated hint", strategies.RetryAfter{}, time.Duration(math.MaxInt64), strategies.DefaultRetryAfterCap},
		{"zero hint", strategies.RetryAfter{}, 0, 0},
		{"negative hint", strategies.RetryAfter{}, -time.Second, 0},
		{"most negative hint", strategies.RetryAfter{}, time.Duration(math.MinInt64), 0},
		{"explicit cap below", strategies.RetryAfter{Cap: 30 * time.Second}, 20 * time.Second, 20 * time.Second},
		{"explicit cap above", strategies.RetryAfter{Cap: 30 * time.Second}, 45 * time.Second, 30 * time.Second},
		{"cap above default", strategies.RetryAfter{Cap: time.Hour}, 10 * time.Minute, 10 * time.Minute},
		{"one nanosecond cap", strategies.RetryAfter{Cap: time.Nanosecond}, time.Second, time.Nanosecond},
		{"negative cap means default", strategies.RetryAfter{Cap: -time.Second}, time.Hour, strategies.DefaultRetryAfterCap},
		{"mode does not matter", strategies.RetryAfter{Mode: strategies.RetryAfterIgnore, Cap: time.Second}, time.Hour, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.policy.Capped(tt.hint))
		})
	}
}

func ExampleParseRetryAfter() {
	// The response arrived two minutes before the HTTP-dates below.
	date := time.Date(1994, time.November, 6, 8, 47, 37, 0, time.UTC)
	for _, value := range []string{
		"120",
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:00:00 GMT",
		"soon",
	} {
		wait, ok := strategies.ParseRetryAfter(value, date)
		fmt.Printf("%-34q %v %v\n", value, wait, ok)
	}
	// Output:
	// "120"                              2m0s true
	// "Sun, 06 Nov 1994 08:49:37 GMT"    2m0s true
	// "Sunday, 06-Nov-94 08:49:37 GMT"   2m0s true
	// "Sun Nov  6 08:49:37 1994"         2m0s true
	// "Sun, 06 Nov 1994 08:00:00 GMT"    0s true
	// "soon"                             0s false
}

func ExampleFormatRetryAfter() {
	date := time.Date(1994, time.November, 6, 8, 47, 37, 0, time.UTC)
	wait := 119*time.Second + 250*time.Millisecond // rounded up, never down
	fmt.Println(strategies.FormatRetryAfter(wait, strategies.RetryAfterSeconds, date))
	fmt.Println(strategies.FormatRetryAfter(wait, strategies.RetryAfterHTTPDate, date))
	// Output:
	// 120
	// Sun, 06 Nov 1994 08:49:37 GMT
}
