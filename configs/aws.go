//go:build !js

package configs

// The AWS shared config reader: a profile's retry_mode and max_attempts
// (~/.aws/config; "Retry behavior", AWS SDKs and Tools Reference Guide),
// as herdlab strategies.
//
// The SDKs differ in what a mode does; the reader follows:
//   - standard and adaptive: aws-sdk-go-v2 v1.48.0 (aws/retry), the SDK
//     of the language herdlab is written in, whose standard mode is the
//     2026 revision ("Retry Behavior 2.1", its default since v1.48.0,
//     CHANGELOG 2026-11-10: a 50 ms base, 1 s after a throttle, a retry
//     costs 14 tokens and a throttled one 5; the Reference Guide says
//     other SDKs may still need AWS_NEW_RETRIES_2026=true for it);
//     scenarios/overload-controls.yaml models the same SDK. The SDK's
//     defaults for a few services (DynamoDB: 4 attempts, a 25 ms base)
//     are not applied: a profile does not say which service it calls;
//     write max_attempts and backoff beside from: for those;
//   - legacy: botocore (boto3, the AWS CLI v1), where legacy is the
//     default mode and which defines it in botocore/data/_retry.json and
//     retryhandler.py. aws-sdk-go-v2 has no legacy mode and refuses
//     retry_mode = legacy (aws/retryer.go ParseRetryMode).
//
// Only the file is read: the SDKs let AWS_RETRY_MODE and AWS_MAX_ATTEMPTS
// in the environment, and the code's own options, override it.
//
// A profile without retry_mode is read as standard, aws-sdk-go-v2's
// default (and the AWS CLI v2's); botocore and the AWS CLI v1 default to
// legacy, other SDKs to modes of their own: write retry_mode in the
// profile to choose.
//
// The file is parsed as botocore parses it (Python's configparser,
// RawConfigParser with its defaults, in botocore/configloader.py
// raw_config_parse): sections in brackets, "key = value" or "key: value",
// keys without regard to case, comments on lines of their own that start
// with # or ; (a # after a value is part of the value), indented lines
// continuing the value above, and a section or a key written twice
// refused. Keys other than retry_mode and max_attempts are the profile's
// business (region, output, role_arn ...) and ignored; one a letter or
// two from retry_mode or max_attempts is a HazardIgnoredField.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeontools/herdlab/internal/editdist"
)

func init() {
	readers[AWS] = reader{read: readAWS, all: allAWS}
}

// The documents the AWS reader cites.
const (
	docAWSGo      = "aws-sdk-go-v2 v1.48.0"
	docAWSGuide   = "AWS SDKs and Tools Reference Guide: Retry behavior"
	docBotocore   = "botocore"
	awsModeKey    = "retry_mode"
	awsAttemptKey = "max_attempts"
)

// The retry modes.
const (
	awsLegacy   = "legacy"
	awsStandard = "standard"
	awsAdaptive = "adaptive"
)

// The standard mode's defaults (aws-sdk-go-v2 v1.48.0 aws/retry/standard.go
// and jitter_backoff.go).
const (
	awsStdAttempts       = 3                     // DefaultMaxAttempts
	awsStdBase           = 50 * time.Millisecond // NewStandard: BaseDelay "Defaults to 50ms if zero"
	awsStdThrottleBase   = time.Second           // backoffDelay2026: "the base delay is 1s" after a throttle
	awsStdCap            = 20 * time.Second      // DefaultMaxBackoff
	awsQuotaCapacity     = 500.0                 // DefaultRetryRateTokens
	awsRetryCost         = 14.0                  // defaultRetryCost: "timeouts included"
	awsThrottlingCost    = 5.0                   // DefaultThrottlingRetryCost
	awsNoRetryIncrement  = 1.0                   // DefaultNoRetryIncrement
	awsLegacyAttempts    = 5                     // botocore/data/_retry.json "max_attempts": 5 (boto3 guide: "A default value of 5 for maximum attempts (including the initial request)")
	awsLegacyBase        = time.Second           // botocore retryhandler.py delay_exponential: base "rand", random() seconds
	awsLegacyMaxCapShift = 28                    // 2^28 s, 8.5 years: past any run, within the 10 years a scenario's durations take
	awsMultiplier        = 2.0                   // both modes: growth factor 2
)

// awsRetryOn is what every mode retries, in herdlab's terms: refused and
// reset connections and timeouts (aws-sdk-go-v2 RetryableConnectionError;
// botocore's general_socket_errors), 500, 502, 503 and 504
// (DefaultRetryableHTTPStatusCodes; botocore adds 509, which herdlab never
// answers) and 429 (retryableUnmodeledTooManyRequests and the throttling
// codes). A 4xx other than 429 is not retried.
var awsRetryOn = []string{"refused", "timeout", "reset", "5xx", "429"}

// iniSection is a [section] of the file.
type iniSection struct {
	header    string // between the brackets, trimmed
	line, col int
	keys      []iniKey
}

// iniKey is a key = value line (with the lines that continue it).
type iniKey struct {
	key       string // lower case, as configparser keeps it
	written   string // as written
	value     string
	line, col int
}

// profile returns the profile the section is, or false: [default],
// [profile NAME].
func (s *iniSection) profile() (string, bool) {
	if s.header == "default" {
		return "default", true
	}
	// botocore splits "profile NAME" on white space; aws-sdk-go-v2 cuts
	// the prefix "profile ".
	if rest, ok := strings.CutPrefix(s.header, "profile"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		if name := strings.TrimSpace(rest); name != "" {
			return name, true
		}
	}
	return "", false
}

func (s *iniSection) get(key string) (iniKey, bool) {
	for _, k := range s.keys {
		if k.key == key {
			return k, true
		}
	}
	return iniKey{}, false
}

// parseINI parses a shared config file as botocore's configparser does.
func parseINI(file string, data []byte) ([]*iniSection, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	var e errs
	var sections []*iniSection
	var cur *iniSection
	var last *iniKey
	seen := map[string]int{}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(raw, "\r")
		n := i + 1
		trimmed := strings.TrimLeft(line, " \t")
		col := len(line) - len(trimmed) + 1
		trimmed = strings.TrimRight(trimmed, " \t")
		switch {
		case trimmed == "":
			last = nil
		case trimmed[0] == '#' || trimmed[0] == ';':
		case last != nil && col > last.col:
			// A line indented more than the key above continues its value
			// (configparser); a nested setting (s3 =\n
			// max_concurrent_requests = 20, indented) is one.
			last.value += "\n" + trimmed
		case trimmed[0] == '[':
			end := strings.LastIndexByte(trimmed, ']')
			if end < 0 {
				e.at(Pos{File: file, Line: n, Col: col}, "a section header must end with ] (botocore refuses the file)")
				cur, last = nil, nil
				continue
			}
			header := strings.Join(strings.Fields(trimmed[1:end]), " ")
			if first, dup := seen[header]; dup {
				e.at(Pos{File: file, Line: n, Col: col, Path: "[" + header + "]"}, "section [%s] is written twice (first on line %d): botocore refuses the file", header, first)
			}
			seen[header] = n
			cur = &iniSection{header: header, line: n, col: col}
			sections = append(sections, cur)
			last = nil
		default:
			d := strings.IndexAny(trimmed, "=:")
			if d <= 0 {
				e.at(Pos{File: file, Line: n, Col: col}, "a line must be [section], key = value or a comment, got %q (botocore refuses the file)", trimmed)
				continue
			}
			if cur == nil {
				e.at(Pos{File: file, Line: n, Col: col}, "%q comes before any [section] (botocore refuses the file)", trimmed)
				continue
			}
			written := strings.TrimSpace(trimmed[:d])
			k := iniKey{key: strings.ToLower(written), written: written, value: strings.TrimSpace(trimmed[d+1:]), line: n, col: col}
			if first, dup := cur.get(k.key); dup {
				e.at(Pos{File: file, Line: n, Col: col, Path: "[" + cur.header + "] " + k.key},
					"%s is written twice in [%s] (first on line %d): botocore refuses the file", k.key, cur.header, first.line)
			}
			cur.keys = append(cur.keys, k)
			last = &cur.keys[len(cur.keys)-1]
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	return sections, nil
}

// awsProfiles returns the profiles of the file by name, in file order,
// refusing a profile written twice ([default] and [profile default]: the
// SDKs disagree on which wins).
func awsProfiles(file string, sections []*iniSection) (names []string, byName map[string]*iniSection, err error) {
	var e errs
	byName = map[string]*iniSection{}
	for _, s := range sections {
		name, ok := s.profile()
		if !ok {
			continue
		}
		if first, dup := byName[name]; dup {
			e.at(Pos{File: file, Line: s.line, Col: s.col, Path: "[" + s.header + "]"},
				"profile %s is written twice ([%s] on line %d): aws-sdk-go-v2 takes [profile %s], botocore the later one", name, first.header, first.line, name)
			continue
		}
		byName[name] = s
		names = append(names, name)
	}
	return names, byName, e.err()
}

func readAWS(ref Ref, data []byte) (*Policy, error) {
	sections, err := parseINI(ref.File, data)
	if err != nil {
		return nil, err
	}
	names, byName, err := awsProfiles(ref.File, sections)
	if err != nil {
		return nil, err
	}
	s, ok := byName[ref.Name]
	if !ok {
		msg := fmt.Sprintf("no profile %q (the profiles are %s)", ref.Name, quoteNames(names))
		for _, o := range sections {
			if o.header == ref.Name {
				msg = fmt.Sprintf("[%s] on line %d is a credentials file's section: in a config file the SDKs ignore it; write [profile %s]", o.header, o.line, ref.Name)
			}
		}
		return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1, Path: "[profile " + ref.Name + "]"}, Msg: msg}
	}
	return awsPolicy(ref.File, ref.Name, s)
}

func allAWS(file string, data []byte) (*Fragment, error) {
	sections, err := parseINI(file, data)
	if err != nil {
		return nil, err
	}
	names, byName, err := awsProfiles(file, sections)
	if err != nil {
		return nil, err
	}
	f := &Fragment{}
	var e errs
	for _, name := range names {
		p, err := awsPolicy(file, name, byName[name])
		if err != nil {
			e = append(e, err)
			continue
		}
		f.Policies = append(f.Policies, p)
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// awsPolicy reads one profile's retry settings.
func awsPolicy(file, name string, s *iniSection) (*Policy, error) {
	var e errs
	p := &Policy{Name: name}
	section := Pos{File: file, Line: s.line, Col: s.col, Path: "[" + s.header + "]"}
	keyPos := func(k iniKey) Pos {
		return Pos{File: file, Line: k.line, Col: k.col, Path: "[" + s.header + "] " + k.key}
	}
	dflt := func(doc string) Pos {
		p := section
		p.Default = doc
		return p
	}

	mode, modePos := awsStandard, dflt(docAWSGuide+": standard, the default of "+docAWSGo+" (botocore's is legacy)")
	if k, ok := s.get(awsModeKey); ok {
		modePos = keyPos(k)
		switch k.value {
		case awsLegacy, awsStandard, awsAdaptive:
			mode = k.value
		default:
			// botocore: InvalidRetryModeError; aws-sdk-go-v2: ParseRetryMode.
			e.at(modePos, "Invalid value provided to \"mode\": %q must be one of: legacy, standard, adaptive (botocore refuses it)", k.value)
		}
	}
	attempts, attemptsPos := awsStdAttempts, dflt(docAWSGuide+": standard and adaptive make 3 attempts; "+docAWSGo+" aws/retry DefaultMaxAttempts")
	if mode == awsLegacy {
		attempts, attemptsPos = awsLegacyAttempts, dflt(docBotocore+" data/_retry.json: max_attempts 5, the first included")
	}
	if k, ok := s.get(awsAttemptKey); ok {
		attemptsPos = keyPos(k)
		// botocore reads it with int() (surrounding spaces and a sign
		// allowed) and refuses below 1: InvalidMaxRetryAttemptsError.
		n, err := strconv.Atoi(strings.TrimPrefix(k.value, "+"))
		switch {
		case err != nil:
			e.at(attemptsPos, "max_attempts must be an integer, got %q (botocore refuses it)", k.value)
		case n < 1:
			e.at(attemptsPos, "Value provided to \"max_attempts\": %d must be an integer greater than or equal to 1 (botocore refuses it)", n)
		default:
			attempts = n
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}

	p.Set("max_attempts", attempts, attemptsPos)
	p.Set("retry_on", slices.Clone(awsRetryOn), dflt(docAWSGo+" aws/retry DefaultRetryables; "+docBotocore+" data/_retry.json"))
	// Neither retryer reads an HTTP Retry-After: aws-sdk-go-v2 reads
	// only x-amz-retry-after (aws/retry/middleware.go
	// adjustForRetryAfterHeader), botocore none.
	noHint := docAWSGo + " aws/retry: only x-amz-retry-after is read, never Retry-After"
	switch mode {
	case awsLegacy:
		// botocore's legacy wait before retry n (n from 1) is random() *
		// 2^(n-1) seconds, uncapped (retryhandler.py delay_exponential):
		// U(0, 2^k s) for herdlab's k = n-1, herdlab's full-jitter with a
		// 1 s base, exactly. herdlab's backoff has a cap; the one given
		// is the longest wait the attempts allow, 2^(attempts-2) s, so it
		// never binds (at most 2^28 s, past any run). No quota: a
		// HazardNoBudget.
		shift := min(max(attempts-2, 0), awsLegacyMaxCapShift)
		legacy := docBotocore + " retryhandler.py delay_exponential: random() * 2^(attempts-1) s"
		p.Set("backoff.kind", "full-jitter", modePos)
		p.Set("backoff.base", awsLegacyBase, dflt(legacy))
		p.Set("backoff.cap", time.Duration(math.Ldexp(float64(time.Second), shift)), dflt(legacy+", uncapped: the longest wait "+strconv.Itoa(attempts)+" attempts allow"))
		p.Set("backoff.multiplier", awsMultiplier, dflt(legacy))
		p.Set("retry_after.mode", "ignore", dflt(docBotocore+": legacy reads no Retry-After"))
		if attempts > 1 {
			p.Hazards = append(p.Hazards, Hazard{Rule: HazardNoBudget, Pos: modePos,
				Msg: "retry_mode legacy has no retry quota: nothing limits the retries when the service fails"})
		}
	default:
		// Retry Behavior 2.1 (backoffDelay2026): t_i = b * min(x * 2^i,
		// 20 s) with b = U(0,1), x = 50 ms, or 1 s after a throttle:
		// herdlab's full-jitter, U(0, min(cap, base*2^k)) with k = i,
		// and throttle_base for the waits after a 429, exactly. (The
		// older standard mode drew b * 2^i s and waited a fixed 20 s once
		// 2^i passed 20 s, a different law beyond the fifth retry; that
		// is not what this SDK version does.)
		backoff := docAWSGo + " aws/retry/jitter_backoff.go backoffDelay2026: b * min(x * 2^i, MAX_BACKOFF)"
		p.Set("backoff.kind", "full-jitter", dflt(backoff))
		p.Set("backoff.base", awsStdBase, dflt(docAWSGo+" aws/retry/standard.go NewStandard: BaseDelay 50ms"))
		p.Set("backoff.cap", awsStdCap, dflt(docAWSGo+" aws/retry/standard.go DefaultMaxBackoff"))
		p.Set("backoff.multiplier", awsMultiplier, dflt(backoff))
		p.Set("backoff.throttle_base", awsStdThrottleBase, dflt(backoff+": x = 1s after a throttle"))
		p.Set("retry_after.mode", "ignore", dflt(noHint))
		quota := docAWSGo + " aws/retry/standard.go"
		p.Set("budget.kind", "quota", dflt(quota+": RateLimiter ratelimit.NewTokenRateLimit"))
		p.Set("budget.capacity", awsQuotaCapacity, dflt(quota+" DefaultRetryRateTokens"))
		p.Set("budget.retry_cost", awsRetryCost, dflt(quota+" defaultRetryCost"))
		p.Set("budget.timeout_cost", awsRetryCost, dflt(quota+" defaultRetryCost: timeouts cost what other retries cost"))
		p.Set("budget.throttling_cost", awsThrottlingCost, dflt(quota+" DefaultThrottlingRetryCost"))
		p.Set("budget.no_retry_increment", awsNoRetryIncrement, dflt(quota+" DefaultNoRetryIncrement"))
		if mode == awsAdaptive {
			// NewAdaptiveMode: the standard retryer, and the CUBIC rate
			// limiter in front of every attempt.
			p.Set("throttle.kind", "aws-adaptive", modePos)
		}
	}
	// The SDKs read no gRPC pushback (grpc-retry-pushback-ms); herdlab's
	// senders honour it by default.
	p.Set("ignore_pushback", true, dflt(docAWSGo+" aws/retry: no gRPC pushback is read"))
	p.Hazards = append(p.Hazards, awsNearMisses(file, s)...)
	return p, nil
}

// awsNearMisses reports the keys a letter or two from retry_mode or
// max_attempts, which the SDKs ignore.
func awsNearMisses(file string, s *iniSection) []Hazard {
	var out []Hazard
	for _, k := range s.keys {
		for _, f := range []string{awsModeKey, awsAttemptKey} {
			if k.key == f {
				break
			}
			if _, ok := s.get(f); ok {
				continue
			}
			if editdist.Levenshtein(k.key, f) <= 2 || strings.ReplaceAll(k.key, "-", "_") == f {
				out = append(out, Hazard{Rule: HazardIgnoredField, Pos: Pos{File: file, Line: k.line, Col: k.col, Path: "[" + s.header + "] " + k.key},
					Msg: fmt.Sprintf("%q is not a setting, and the SDKs ignore it: did you mean %s?", k.written, f)})
			}
		}
	}
	return out
}
