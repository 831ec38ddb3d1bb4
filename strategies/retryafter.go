package strategies

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultRetryAfterCap is the longest Retry-After hint a RetryAfter policy
// honors when its Cap is zero: 5 minutes.
const DefaultRetryAfterCap = 5 * time.Minute

// maxRetryAfter is where a delta-seconds value saturates: the largest
// time.Duration, math.MaxInt64 ns (about 292 years).
const maxRetryAfter = time.Duration(math.MaxInt64)

// The HTTP-date layouts of RFC 9110 section 5.6.7. The zone is the literal
// GMT, so time.Parse rejects any other zone instead of guessing its offset.
const (
	imfFixdate  = "Mon, 02 Jan 2006 15:04:05 GMT"  // preferred, and the only one a sender generates
	rfc850Date  = "Monday, 02-Jan-06 15:04:05 GMT" // obsolete, with a two-digit year
	asctimeDate = time.ANSIC                       // obsolete, "Mon Jan _2 15:04:05 2006", always GMT
)

// ParseRetryAfter parses the value of an HTTP Retry-After header (RFC 9110
// section 10.2.3) into the wait it asks for, measured from date: the moment
// the response was received (its Date header or the driver's clock; the
// simulator passes its virtual epoch plus now).
//
// The value, with optional surrounding spaces and tabs, is either
//
//   - delta-seconds, one or more ASCII digits n: wait = n × 1s. A sign, a
//     fraction or a unit makes the value invalid. An n too large for a
//     time.Duration saturates at math.MaxInt64 ns (about 292 years) instead
//     of overflowing; or
//   - an HTTP-date in any of the three formats of RFC 9110 section 5.6.7:
//     IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", the obsolete RFC 850
//     form "Sunday, 06-Nov-94 08:49:37 GMT" or the obsolete asctime form
//     "Sun Nov  6 08:49:37 1994" (always GMT): wait = max(httpDate − date, 0),
//     so a date at or before date means retry now. The zone must be the
//     literal GMT. A two-digit RFC 850 year is resolved against date as
//     RFC 9110 requires: the year with those last two digits that puts the
//     timestamp no more than 50 years after date.
//
// Dates are read with time.Parse, as net/http.ParseTime reads them: the
// weekday and month names match case-insensitively, the weekday is not
// checked against the date (day, month, year and time alone fix the
// instant), runs of spaces between fields count as one, and a fraction
// after the seconds is accepted. An impossible date (31 Nov, 24:00:00) or a
// leap second (:60) is invalid.
//
// Anything else returns (0, false), and the caller falls back to its
// backoff. The wait is never negative and never capped: bound it with
// RetryAfter.Capped before use.
func ParseRetryAfter(value string, date time.Time) (wait time.Duration, ok bool) {
	value = strings.Trim(value, " \t")
	if value == "" {
		return 0, false
	}
	if wait, ok := parseDeltaSeconds(value); ok {
		return wait, true
	}
	at, ok := parseHTTPDate(value, date)
	if !ok {
		return 0, false
	}
	// Time.Sub saturates instead of overflowing.
	return max(at.Sub(date), 0), true
}

// parseDeltaSeconds parses 1*DIGIT as a number of seconds, saturating at
// maxRetryAfter.
func parseDeltaSeconds(value string) (time.Duration, bool) {
	const maxSeconds = int64(maxRetryAfter / time.Second)
	var n int64
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= maxSeconds { // past maxSeconds, keep only checking the digits
			n = n*10 + int64(c-'0')
		}
	}
	if n > maxSeconds {
		return maxRetryAfter, true
	}
	return time.Duration(n) * time.Second, true
}

// parseHTTPDate parses value in any of the three HTTP-date formats.
func parseHTTPDate(value string, date time.Time) (time.Time, bool) {
	if t, err := time.Parse(imfFixdate, value); err == nil {
		return t, true
	}
	if t, err := time.Parse(rfc850Date, value); err == nil {
		return resolveTwoDigitYear(t, date)
	}
	if t, err := time.Parse(asctimeDate, value); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// resolveTwoDigitYear moves t, parsed from an RFC 850 date, to the year
// with the same last two digits that lies in the 100-year window
// (date − 50y, date + 50y]. RFC 9110 section 5.6.7 asks a recipient to read
// a timestamp "more than 50 years in the future" as the most recent year in
// the past with those digits; time.Parse alone would pin the years to
// 1969–2068. It reports false when the new year lacks the day (29 Feb 2100).
func resolveTwoDigitYear(t, date time.Time) (time.Time, bool) {
	date = date.UTC()
	latest := date.AddDate(50, 0, 0)
	earliest := date.AddDate(-50, 0, 0) // exclusive
	ref := date.Year()
	century := ref - ((ref%100)+100)%100 // floor to a multiple of 100, also for negative years
	year := century + t.Year()%100       // t.Year() is in 1969..2068
	at := withYear(t, year)
	switch {
	case at.After(latest):
		at = withYear(t, year-100)
	case !at.After(earliest):
		at = withYear(t, year+100)
	}
	return at, at.Day() == t.Day()
}

// withYear returns t in year, normalized by time.Date (29 Feb becomes
// 1 Mar in a common year).
func withYear(t time.Time, year int) time.Time {
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// FormatRetryAfter writes wait as a Retry-After header value, for servers
// and the simulator; it is the inverse of ParseRetryAfter. It rounds up to
// a whole second, because a server must never tell a client to come back
// too early. A negative wait counts as 0.
//
//   - RetryAfterSeconds writes delta-seconds ⌈wait / 1s⌉: "120"; 0 stays "0".
//   - RetryAfterHTTPDate writes the IMF-fixdate of date + wait, rounded up
//     to the next whole second, in GMT: "Sun, 06 Nov 1994 08:49:37 GMT".
//     date is the response's Date.
//
// Any other format is written as RetryAfterSeconds. For every wait w ≥ 0,
// ParseRetryAfter(FormatRetryAfter(w, format, date), date) returns a wait
// in [w, w + 1s), as long as an HTTP-date falls in years 1 to 9999.
func FormatRetryAfter(wait time.Duration, format RetryAfterFormat, date time.Time) string {
	wait = max(wait, 0)
	if format == RetryAfterHTTPDate {
		at := date.Add(wait)
		if ns := at.Nanosecond(); ns != 0 {
			at = at.Add(time.Second - time.Duration(ns))
		}
		return at.UTC().Format(imfFixdate)
	}
	seconds := int64(wait / time.Second)
	if wait%time.Second != 0 {
		seconds++ // cannot overflow: maxRetryAfter is about 9.2e9 s
	}
	return strconv.FormatInt(seconds, 10)
}

// RetryAfterFormat is how FormatRetryAfter writes a Retry-After value. The
// zero value is RetryAfterSeconds.
type RetryAfterFormat uint8

// The formats of a Retry-After value (RFC 9110 section 10.2.3).
const (
	// RetryAfterSeconds is delta-seconds, the wait in whole seconds,
	// rounded up: "120".
	RetryAfterSeconds RetryAfterFormat = iota
	// RetryAfterHTTPDate is an IMF-fixdate, the response's date plus the
	// wait, rounded up to a whole second: "Sun, 06 Nov 1994 08:49:37 GMT".
	RetryAfterHTTPDate
	numRetryAfterFormats
)

var retryAfterFormatNames = [numRetryAfterFormats]string{"seconds", "http-date"}

// String returns the format's name as written in scenario files: seconds
// or http-date.
func (f RetryAfterFormat) String() string {
	if f < numRetryAfterFormats {
		return retryAfterFormatNames[f]
	}
	return fmt.Sprintf("RetryAfterFormat(%d)", uint8(f))
}

// ParseRetryAfterFormat returns the format named s (see
// RetryAfterFormat.String). Names are case-sensitive.
func ParseRetryAfterFormat(s string) (RetryAfterFormat, error) {
	for i, name := range retryAfterFormatNames {
		if name == s {
			return RetryAfterFormat(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown Retry-After format %q (want one of %s)", s, strings.Join(retryAfterFormatNames[:], ", "))
}

// RetryAfterMode is what a sender does with a server's Retry-After hint.
// Without a hint it always waits its backoff. The zero value is
// RetryAfterHonor.
type RetryAfterMode uint8

// The ways to treat a Retry-After hint. Hint means the hint bounded by
// RetryAfter.Capped.
const (
	// RetryAfterHonor waits exactly the hint: wait = hint. The backoff is
	// not computed, so its sequence does not advance.
	RetryAfterHonor RetryAfterMode = iota
	// RetryAfterIgnore waits the backoff and never the hint:
	// wait = backoff.
	RetryAfterIgnore
	// RetryAfterMax waits the larger of the two: wait = max(hint, backoff).
	RetryAfterMax
	numRetryAfterModes
)

var retryAfterModeNames = [numRetryAfterModes]string{"honor", "ignore", "max"}

// String returns the mode's name as written in scenario files: honor,
// ignore or max.
func (m RetryAfterMode) String() string {
	if m < numRetryAfterModes {
		return retryAfterModeNames[m]
	}
	return fmt.Sprintf("RetryAfterMode(%d)", uint8(m))
}

// ParseRetryAfterMode returns the mode named s (see RetryAfterMode.String).
// Names are case-sensitive.
func ParseRetryAfterMode(s string) (RetryAfterMode, error) {
	for i, name := range retryAfterModeNames {
		if name == s {
			return RetryAfterMode(i), nil
		}
	}
	return 0, fmt.Errorf("strategies: unknown Retry-After mode %q (want one of %s)", s, strings.Join(retryAfterModeNames[:], ", "))
}

// RetryAfter is the policy for servers' Retry-After hints, shared by every
// sender of a strategy. The zero value honors hints, capped at
// DefaultRetryAfterCap. It is a plain value, safe for concurrent use.
type RetryAfter struct {
	// Mode is what to do with a hint; the zero value is RetryAfterHonor.
	Mode RetryAfterMode
	// Cap is the longest hint taken at its word; a longer one counts as
	// Cap. It guards against a confused or hostile server asking for hours.
	// Zero (or negative) means DefaultRetryAfterCap.
	Cap time.Duration
}

// Capped returns hint bounded to [0, cap]: min(max(hint, 0), cap), where
// cap is p.Cap, or DefaultRetryAfterCap when p.Cap ≤ 0. It ignores Mode.
func (p RetryAfter) Capped(hint time.Duration) time.Duration {
	limit := p.Cap
	if limit <= 0 {
		limit = DefaultRetryAfterCap
	}
	return min(max(hint, 0), limit)
}
