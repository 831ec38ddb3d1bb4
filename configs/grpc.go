//go:build !js

package configs

// The gRPC service config reader: the retry and hedging policies of a
// service config (gRFC A6, "gRPC Retry Design",
// https://github.com/grpc/proposal/blob/master/A6-client-retries.md, and
// doc/service_config.md of grpc/grpc), as herdlab strategies.
//
// What gRPC refuses is refused: grpc-go v1.85.0's parseServiceConfig
// (service_config.go) refuses the whole config when any method's policy is
// bad, and so does this reader, whichever method a scenario names. The
// hedging policy, which grpc-go does not implement (A6: "Implemented in:
// Java, .NET, Node, Go except hedging, and C-Core except hedging"), is
// checked as A6 and grpc-java check it.
//
// Field names are the service config's JSON names (the proto's
// lowerCamel names), as grpc-java and gRPC C++ read them. Unknown fields
// are ignored, as every gRPC implementation ignores them, except:
//   - a field written in another case (MaxAttempts): grpc-go's
//     encoding/json matches names without regard to case and reads it,
//     grpc-java and C++ do not: the file means different things in
//     different languages, and is refused;
//   - a field one or two letters from a field of the same object
//     (maxAttempt, retryThrotling): gRPC ignores it, and so does herdlab,
//     but the policy is not what its author wrote: a Hazard
//     (HazardIgnoredField) says so, or, when the field it misses is
//     required, the refusal names it.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/internal/editdist"
)

func init() {
	readers[GRPC] = reader{read: readGRPC, all: allGRPC}
}

// docA6 is the document the gRPC reader's defaults cite.
const docA6 = "gRFC A6"

// grpcMaxAttempts is the most attempts gRPC makes, whatever maxAttempts
// says (gRFC A6, "Limits on Retries and Hedges": maxAttempts has "by
// default, a client-side maximum value of 5", and "higher values will be
// treated as equal to the maximum value"; grpc-go v1.85.0 dialoptions.go
// defaultMaxCallAttempts = 5). A client can raise it (grpc-go
// WithMaxCallAttempts, a channel argument elsewhere); the file cannot.
const grpcMaxAttempts = 5

// grpcMaxTokens bounds retryThrottling.maxTokens (A6 asks only that it be
// greater than zero; grpc-go v1.85.0 parseServiceConfig refuses
// "maxTokens (%v) out of range (0, 1000]").
const grpcMaxTokens = 1000

// grpcHedgeAtOnce is the hedge delay herdlab is given for a hedgingDelay
// of 0 (A6: "Set this to 0 to immediately send all maxAttempts RPCs"):
// herdlab's hedge delay must be > 0, and 1ns apart is all at once at any
// scale a scenario measures.
const grpcHedgeAtOnce = time.Nanosecond

// grpcCodes are the status codes by name (grpc-go v1.85.0 codes/codes.go
// strToCode; the numbers are google.rpc.Code's).
var grpcCodes = []string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// grpcRetryOn maps the status codes that have a herdlab counterpart to
// herdlab's outcomes:
//   - UNAVAILABLE is what herdlab's gRPC mode answers for a 503 (overload,
//     outage), and what a gRPC client reports for a transport failure (a
//     refused connection, a reset stream);
//   - RESOURCE_EXHAUSTED is what it answers for its rate limit's 429.
//
// DEADLINE_EXCEEDED has none: herdlab's timeout outcome is an attempt's
// own timeout, which the reader makes the method's deadline, and a call
// whose deadline has passed is never retried (A6: the deadline covers
// all attempts), whatever retryableStatusCodes says. The other codes
// (ABORTED, INTERNAL, UNKNOWN ...) are answers herdlab's servers never
// give: left out.
var grpcRetryOn = map[string][]string{
	"UNAVAILABLE":        {"refused", "reset", "5xx"},
	"RESOURCE_EXHAUSTED": {"429"},
}

// outcomeOrder is the order herdlab lists outcomes in.
var outcomeOrder = []string{"refused", "timeout", "reset", "5xx", "429", "4xx"}

// grpcFile is a service config, read and checked.
type grpcFile struct {
	// names are the method configs' names ("svc/method", "svc", or ""
	// for the default of every method), in file order, and policies
	// their policies.
	names    []string
	policies map[string]*Policy
	// missed is a top-level key that misses methodConfig by a letter or
	// two, or nil.
	missed *yaml.Node
}

func readGRPC(ref Ref, data []byte) (*Policy, error) {
	f, err := parseGRPC(ref.File, data)
	if err != nil {
		return nil, err
	}
	name := strings.TrimPrefix(ref.Name, "/")
	service, method, _ := strings.Cut(name, "/")
	// gRPC's matching (grpc-go v1.85.0 clientconn.go getMethodConfig): the
	// method, then its service's default, then the default of all.
	for _, key := range []string{service + "/" + method, service, ""} {
		if method == "" && key == service+"/" {
			continue
		}
		if p, ok := f.policies[key]; ok {
			return clonePolicy(p), nil
		}
	}
	msg := fmt.Sprintf("no methodConfig names %q, its service or every method (the names are %s): gRPC would not retry it",
		ref.Name, quoteNames(f.names))
	if m := f.missed; m != nil {
		msg += fmt.Sprintf("; %q at %d:%d is not methodConfig", m.Value, m.Line, m.Column)
	}
	return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1, Path: "methodConfig"}, Msg: msg}
}

func allGRPC(file string, data []byte) (*Fragment, error) {
	f, err := parseGRPC(file, data)
	if err != nil {
		return nil, err
	}
	fr := &Fragment{}
	for _, name := range f.names {
		fr.Policies = append(fr.Policies, clonePolicy(f.policies[name]))
	}
	return fr, nil
}

func clonePolicy(p *Policy) *Policy {
	q := *p
	q.Values = slices.Clone(p.Values)
	q.Hazards = slices.Clone(p.Hazards)
	return &q
}

func quoteNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// grpcReader reads one service config.
type grpcReader struct {
	file string
	e    errs
}

// The fields of each object the reader reads, for the checks of names.
var (
	grpcTopFields        = []string{"loadBalancingPolicy", "loadBalancingConfig", "methodConfig", "retryThrottling", "healthCheckConfig"}
	grpcMethodFields     = []string{"name", "waitForReady", "timeout", "maxRequestMessageBytes", "maxResponseMessageBytes", "retryPolicy", "hedgingPolicy"}
	grpcNameFields       = []string{"service", "method"}
	grpcRetryFields      = []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes", "perAttemptRecvTimeout"}
	grpcHedgeFields      = []string{"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"}
	grpcThrottlingFields = []string{"maxTokens", "tokenRatio"}
)

func parseGRPC(file string, data []byte) (*grpcFile, error) {
	docs, err := documents(file, data)
	if err != nil {
		return nil, err
	}
	r := &grpcReader{file: file}
	top := docs[0]
	if len(docs) > 1 {
		r.e.at(at(file, docs[1], ""), "a service config is one JSON object, and the file holds %d documents", len(docs))
	}
	if top.Kind != yaml.MappingNode {
		r.e.at(at(file, top, ""), "a service config is a JSON object")
		return nil, r.e.err()
	}
	topHazards := r.names(top, "", grpcTopFields)

	// retryThrottling covers every method's retries and hedges.
	var budget []Value
	if k, v := field(top, "retryThrottling"); k != nil {
		budget = r.throttling(k, v)
	}

	f := &grpcFile{policies: map[string]*Policy{}, missed: nearMisses(top, grpcTopFields)["methodConfig"]}
	k, mcs := field(top, "methodConfig")
	if k != nil && mcs.Kind != yaml.SequenceNode {
		r.e.at(at(file, k, "methodConfig"), "methodConfig must be a list")
	}
	if mcs != nil && mcs.Kind == yaml.SequenceNode {
		namePos := map[string]Pos{}
		for i, mc := range mcs.Content {
			path := fmt.Sprintf("methodConfig[%d]", i)
			if mc.Kind != yaml.MappingNode {
				r.e.at(at(file, mc, path), "a methodConfig must be an object")
				continue
			}
			p := r.method(mc, path, budget, topHazards)
			names, hazards := r.methodNames(mc, path, namePos)
			p.Hazards = append(p.Hazards, hazards...)
			for _, name := range names {
				q := clonePolicy(p)
				q.Name = name
				f.names = append(f.names, name)
				f.policies[name] = q
			}
		}
	}
	if err := r.e.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// methodNames reads a methodConfig's names, as grpc-go's generatePath:
// {service, method} is the method, {service} the service's default, {}
// the default of every method; the same name twice is refused.
func (r *grpcReader) methodNames(mc *yaml.Node, path string, seen map[string]Pos) (names []string, hazards []Hazard) {
	k, list := field(mc, "name")
	if k == nil {
		return nil, nil // grpc-go skips a methodConfig without a name
	}
	if list.Kind != yaml.SequenceNode {
		r.e.at(at(r.file, k, path+".name"), "name must be a list of {service, method}")
		return nil, nil
	}
	for j, n := range list.Content {
		npath := fmt.Sprintf("%s.name[%d]", path, j)
		if n.Kind != yaml.MappingNode {
			r.e.at(at(r.file, n, npath), "a name must be an object {service, method}")
			continue
		}
		// A misspelt service or method widens the name (to the service's
		// default, or every method's): a hazard of the policy.
		hazards = append(hazards, r.names(n, npath, grpcNameFields)...)
		service, okS := r.str(n, "service", npath)
		method, okM := r.str(n, "method", npath)
		if !okS || !okM {
			continue
		}
		pos := at(r.file, n, npath)
		if service == "" && method != "" {
			r.e.at(pos, "cannot combine empty 'service' and non-empty 'method' (grpc-go refuses the service config)")
			continue
		}
		name := service
		if method != "" {
			name += "/" + method
		}
		if first, dup := seen[name]; dup {
			r.e.at(pos, "duplicated name %q (first at %d:%d; grpc-go refuses the service config)", name, first.Line, first.Col)
			continue
		}
		seen[name] = pos
		names = append(names, name)
	}
	return names, hazards
}

// method reads one methodConfig's policy (its Name left empty).
func (r *grpcReader) method(mc *yaml.Node, path string, budget []Value, topHazards []Hazard) *Policy {
	p := &Policy{}
	p.Hazards = append(p.Hazards, r.names(mc, path, grpcMethodFields)...)
	// waitForReady and the message sizes have no herdlab counterpart
	// (waitForReady makes a call wait for a connection rather than fail
	// UNAVAILABLE on a refused one; herdlab's attempts fail): only their
	// types are checked, as grpc-go's decoder checks them.
	if k, v := field(mc, "waitForReady"); k != nil && (v.Kind != yaml.ScalarNode || v.Tag != "!!bool") {
		r.e.at(at(r.file, k, path+".waitForReady"), "waitForReady must be true or false, got %s", show(v))
	}
	for _, key := range []string{"maxRequestMessageBytes", "maxResponseMessageBytes"} {
		if k, v := field(mc, key); k != nil {
			if _, ok := intOf(v); !ok {
				r.e.at(at(r.file, k, path+"."+key), "%s must be an integer, got %s", key, show(v))
			}
		}
	}

	kr, rp := field(mc, "retryPolicy")
	kh, hp := field(mc, "hedgingPolicy")
	if kr != nil && kh != nil {
		r.e.at(at(r.file, kh, path+".hedgingPolicy"), "a method has a retryPolicy or a hedgingPolicy, not both (gRFC A6: \"An individual RPC may be governed by a retry policy or a hedge policy, but not both\")")
		return p
	}
	var perTry time.Duration
	var perTryPos Pos
	switch {
	case kr != nil:
		perTry, perTryPos = r.retry(p, kr, rp, path+".retryPolicy")
	case kh != nil:
		r.hedge(p, kh, hp, path+".hedgingPolicy")
	default:
		// Without a policy gRPC makes one attempt (herdlab's default is
		// unlimited).
		p.Set("max_attempts", 1, r.dflt(mc, path, docA6+": a method without retryPolicy or hedgingPolicy is not retried"))
		// herdlab's strategy names a backoff even when it never retries.
		p.Set("backoff.kind", "none", r.dflt(mc, path, docA6+": no retries, no backoff"))
	}

	// The timeout is the call's deadline, over all its attempts (A6:
	// "gRPC's call deadline applies across all attempts for a given
	// RPC"). herdlab has no deadline that cuts an attempt in flight: the
	// deadline becomes the time after which no retry starts
	// (max_elapsed) and each attempt's timeout, so an attempt that starts
	// late in the deadline gets a whole timeout where gRPC would cut it
	// at the deadline. Without a timeout gRPC sets no deadline at all;
	// herdlab's attempts keep its default timeout (30s), which is left as
	// it is. A retry policy's perAttemptRecvTimeout, shorter, is the
	// attempts' timeout instead.
	var deadline time.Duration
	var deadlinePos Pos
	if k, v := field(mc, "timeout"); k != nil {
		if d, ok := r.duration(k, v, path+".timeout"); ok {
			deadlinePos = at(r.file, k, path+".timeout")
			if d <= 0 {
				r.e.at(deadlinePos, "timeout %s: every call would be past its deadline at once (herdlab's timeout must be > 0)", v.Value)
			} else {
				deadline = d
				p.Set("max_elapsed", d, deadlinePos)
			}
		}
	}
	switch {
	case perTry > 0 && deadline > 0 && perTry >= deadline:
		p.Hazards = append(p.Hazards, Hazard{Rule: HazardPerTryTimeout, Pos: perTryPos,
			Msg: fmt.Sprintf("perAttemptRecvTimeout %s is not shorter than the method's timeout %s: an attempt that times out leaves no time for a retry", perTry, deadline)})
		p.Set("timeout", deadline, deadlinePos)
	case perTry > 0:
		p.Set("timeout", perTry, perTryPos)
	case deadline > 0:
		p.Set("timeout", deadline, deadlinePos)
	}
	if kr != nil || kh != nil {
		retries := true
		if v, ok := p.Get("max_attempts"); ok && v.Value == 1 && kr != nil {
			retries = false
		}
		if len(budget) > 0 {
			p.Values = append(p.Values, budget...)
		} else if retries {
			key, what := kr, "retryPolicy"
			if key == nil {
				key, what = kh, "hedgingPolicy"
			}
			p.Hazards = append(p.Hazards, Hazard{Rule: HazardNoBudget, Pos: at(r.file, key, path+"."+what),
				Msg: what + " without retryThrottling: nothing limits the retries when the service fails"})
		}
		// gRPC clients read only the server's pushback
		// (grpc-retry-pushback-ms), never an HTTP Retry-After.
		key := "retryPolicy"
		if kr == nil {
			key = "hedgingPolicy"
		}
		_, obj := field(mc, key)
		p.Set("retry_after.mode", "ignore", r.dflt(obj, path+"."+key, docA6+": the server's only hint is grpc-retry-pushback-ms"))
		p.Set("ignore_pushback", false, r.dflt(obj, path+"."+key, docA6+": clients honour grpc-retry-pushback-ms"))
	}
	p.Hazards = append(p.Hazards, topHazards...)
	sortValues(p)
	return p
}

// fieldOrder is the order a scenario's reader expects a strategy's fields
// in (the order import prints): limits, what is retried, how long to
// wait, what limits retries across requests, then the rest.
var fieldOrder = []string{"max_attempts", "max_elapsed", "timeout", "retry_on", "backoff.", "retry_after.", "budget.", "throttle.", "hedge.", "ignore_pushback"}

// sortValues puts p's values in fieldOrder, keeping the order of the
// fields of one group.
func sortValues(p *Policy) {
	rank := func(field string) int {
		for i, f := range fieldOrder {
			if field == f || strings.HasSuffix(f, ".") && strings.HasPrefix(field, f) {
				return i
			}
		}
		return len(fieldOrder)
	}
	slices.SortStableFunc(p.Values, func(a, b Value) int { return rank(a.Field) - rank(b.Field) })
}

// retry reads a retryPolicy: maxAttempts, the backoff and the codes; it
// returns its perAttemptRecvTimeout, or 0.
func (r *grpcReader) retry(p *Policy, k, rp *yaml.Node, path string) (perTry time.Duration, perTryPos Pos) {
	if rp.Kind != yaml.MappingNode {
		r.e.at(at(r.file, k, path), "retryPolicy must be an object")
		return 0, Pos{}
	}
	near := nearMisses(rp, grpcRetryFields)
	require := func(key string) (*yaml.Node, *yaml.Node) {
		kk, vv := field(rp, key)
		if kk == nil {
			msg := fmt.Sprintf("retryPolicy.%s is required (gRFC A6; grpc-go refuses the service config)", key)
			if m, ok := near[key]; ok {
				msg += fmt.Sprintf(": %q at %d:%d is not it", m.Value, m.Line, m.Column)
			}
			r.e.at(at(r.file, k, path), "%s", msg)
		}
		return kk, vv
	}
	r.caseVariants(rp, path, grpcRetryFields)
	// A misspelt required field is refused as missing, with the key it
	// was written as; a misspelt perAttemptRecvTimeout is a hazard.
	p.Hazards = append(p.Hazards, r.nearHazards(rp, path, grpcRetryFields, grpcRetryFields[:5]...)...)

	attempts, attemptsPos := 0, Pos{}
	if kk, vv := require("maxAttempts"); kk != nil {
		attempts, attemptsPos = r.attempts(p, kk, vv, path+".maxAttempts")
	}
	var initial, maxB time.Duration
	var initialPos, maxPos Pos
	for _, b := range []struct {
		key string
		d   *time.Duration
		pos *Pos
	}{{"initialBackoff", &initial, &initialPos}, {"maxBackoff", &maxB, &maxPos}} {
		if kk, vv := require(b.key); kk != nil {
			if d, ok := r.duration(kk, vv, path+"."+b.key); ok {
				*b.pos = at(r.file, kk, path+"."+b.key)
				if d <= 0 {
					r.e.at(*b.pos, "%s must be > 0 (gRFC A6; grpc-go refuses the service config), got %s", b.key, vv.Value)
				}
				*b.d = d
			}
		}
	}
	mult, multPos := 0.0, Pos{}
	if kk, vv := require("backoffMultiplier"); kk != nil {
		multPos = at(r.file, kk, path+".backoffMultiplier")
		x, ok := floatOf(vv)
		switch {
		case !ok:
			r.e.at(multPos, "backoffMultiplier must be a number, got %s", show(vv))
		case x <= 0:
			r.e.at(multPos, "backoffMultiplier must be > 0 (gRFC A6; grpc-go refuses the service config), got %s", vv.Value)
		case x < 1:
			// gRPC takes it: the waits shrink. herdlab's backoffs only grow.
			r.e.at(multPos, "backoffMultiplier %s < 1 makes the waits shrink: gRPC takes it, but herdlab's backoff cannot (its multiplier is >= 1)", vv.Value)
		}
		mult = x
	}
	var retryOn, codes []string
	codesPos := Pos{}
	if kk, vv := require("retryableStatusCodes"); kk != nil {
		codesPos = at(r.file, kk, path+".retryableStatusCodes")
		codes = r.codes(kk, vv, path+".retryableStatusCodes")
		if vv.Kind == yaml.SequenceNode && len(vv.Content) == 0 {
			r.e.at(codesPos, "retryableStatusCodes must not be empty (gRFC A6; grpc-go refuses the service config; grpc-java takes it beside a perAttemptRecvTimeout)")
		}
		retryOn = outcomesOf(codes)
	}
	// perAttemptRecvTimeout (grpc-java's ServiceConfigUtil; grpc-go and
	// C-core ignore it): an attempt without an answer by then is given up
	// and retried, whatever the codes: herdlab's timeout, and its
	// outcome retried. Java refuses a negative one; herdlab's timeout must
	// be > 0.
	if kt, vt := field(rp, "perAttemptRecvTimeout"); kt != nil {
		if d, ok := r.duration(kt, vt, path+".perAttemptRecvTimeout"); ok {
			perTryPos = at(r.file, kt, path+".perAttemptRecvTimeout")
			switch {
			case d < 0:
				r.e.at(perTryPos, "perAttemptRecvTimeout cannot be negative: %s (grpc-java refuses the service config)", vt.Value)
			case d == 0:
				r.e.at(perTryPos, "perAttemptRecvTimeout 0s: every attempt would time out at once (herdlab's timeout must be > 0)")
			default:
				perTry = d
				retryOn = outcomesOf(codes, "timeout")
			}
		}
	}
	if attempts == 0 || initial <= 0 || maxB <= 0 || mult < 1 || codesPos.Line == 0 {
		return 0, Pos{} // refused above
	}
	if len(retryOn) == 0 {
		// No code the policy retries is an answer herdlab gives: in
		// herdlab the method is never retried. (An empty retry_on would
		// be herdlab's default, which retries.)
		p.Set("max_attempts", 1, codesPos)
	} else {
		p.Set("max_attempts", attempts, attemptsPos)
		p.Set("retry_on", retryOn, codesPos)
	}
	// A6's backoff, "random(0, min(initialBackoff*backoffMultiplier^(n-1),
	// maxBackoff))" for the n-th retry, is herdlab's full-jitter, U(0,
	// min(cap, base*multiplier^k)) for retry k = n-1, exactly. gRPC takes
	// a maxBackoff below initialBackoff (grpc-go clamps each wait to it:
	// every wait is then U(0, maxBackoff)); herdlab wants cap >= base, so
	// the base is lowered to the cap, which draws the same waits.
	base := min(initial, maxB)
	p.Set("backoff.kind", "full-jitter", r.dflt(rp, path, docA6+": random(0, min(initialBackoff*backoffMultiplier^(n-1), maxBackoff))"))
	if initial > maxB {
		p.Set("backoff.base", base, maxPos)
	} else {
		p.Set("backoff.base", base, initialPos)
	}
	p.Set("backoff.cap", maxB, maxPos)
	p.Set("backoff.multiplier", mult, multPos)
	return perTry, perTryPos
}

// hedge reads a hedgingPolicy (A6 "Hedging Policy"; grpc-java's
// ManagedChannelServiceConfig checks it as A6 says).
func (r *grpcReader) hedge(p *Policy, k, hp *yaml.Node, path string) {
	if hp.Kind != yaml.MappingNode {
		r.e.at(at(r.file, k, path), "hedgingPolicy must be an object")
		return
	}
	r.caseVariants(hp, path, grpcHedgeFields)
	p.Hazards = append(p.Hazards, r.nearHazards(hp, path, grpcHedgeFields, "maxAttempts")...)
	ka, va := field(hp, "maxAttempts")
	if ka == nil {
		msg := "hedgingPolicy.maxAttempts is required (gRFC A6)"
		if m, ok := nearMisses(hp, grpcHedgeFields)["maxAttempts"]; ok {
			msg += fmt.Sprintf(": %q at %d:%d is not it", m.Value, m.Line, m.Column)
		}
		r.e.at(at(r.file, k, path), "%s", msg)
		return
	}
	attempts, attemptsPos := r.attempts(p, ka, va, path+".maxAttempts")
	// A hedgingDelay of 0, the default, sends every copy at once. (A6
	// allows it unset; grpc-java refuses a hedgingPolicy without it,
	// "hedgingDelay cannot be empty": write it.)
	delay, delayPos := time.Duration(0), r.dflt(hp, path, docA6+": hedgingDelay \"0s\", or leave unset, to immediately send all maxAttempts RPCs")
	if kd, vd := field(hp, "hedgingDelay"); kd != nil {
		d, ok := r.duration(kd, vd, path+".hedgingDelay")
		delayPos = at(r.file, kd, path+".hedgingDelay")
		if ok && d < 0 {
			r.e.at(delayPos, "hedgingDelay must not be negative, got %s", vd.Value)
		}
		delay = d
	}
	// nonFatalStatusCodes: with a code in it, a failed copy lets the
	// others go on and A6 sends the next copy at once; with any other,
	// gRPC cancels every copy and fails the call. herdlab's hedge
	// (sim/world_hedge.go copyAnswered) has neither: a failed copy waits
	// for the copies still out, the next goes at its delay, and the call
	// fails once every copy sent has failed. The codes are checked, not
	// mapped: a copy that fails fast, before the hedging delay, ends a
	// herdlab call that gRPC would hedge at once (with a non-fatal code).
	if kn, vn := field(hp, "nonFatalStatusCodes"); kn != nil {
		r.codes(kn, vn, path+".nonFatalStatusCodes")
	}
	if attempts == 0 {
		return
	}
	// A hedged call is one herdlab attempt with copies: it is not retried
	// when every copy fails.
	p.Set("max_attempts", 1, r.dflt(hp, path, docA6+": if all instances of a hedged RPC fail, there are no additional retry attempts"))
	p.Set("backoff.kind", "none", r.dflt(hp, path, docA6+": a hedged RPC has no retries, no backoff"))
	if delay == 0 {
		delay = grpcHedgeAtOnce
	}
	p.Set("hedge.delay", delay, delayPos)
	p.Set("hedge.max", attempts-1, attemptsPos)
	p.Set("hedge.cancel", true, r.dflt(hp, path, docA6+": when a non-error response is received, all outstanding hedged requests are canceled"))
}

// attempts reads a maxAttempts: an integer >= 2, clamped to 5.
func (r *grpcReader) attempts(p *Policy, k, v *yaml.Node, path string) (int, Pos) {
	pos := at(r.file, k, path)
	n, ok := intOf(v)
	switch {
	case !ok:
		r.e.at(pos, "maxAttempts must be an integer, got %s", show(v))
		return 0, pos
	case n < 2:
		r.e.at(pos, "maxAttempts must be at least 2 (gRFC A6; grpc-go refuses the service config), got %d", n)
		return 0, pos
	case n > grpcMaxAttempts:
		p.Hazards = append(p.Hazards, Hazard{Rule: HazardClamped, Pos: pos,
			Msg: fmt.Sprintf("maxAttempts %d is treated as %d by gRPC (gRFC A6): the file promises attempts it will not make", n, grpcMaxAttempts)})
		n = grpcMaxAttempts
	}
	return int(n), pos
}

// throttling reads retryThrottling as a tokens budget.
func (r *grpcReader) throttling(k, v *yaml.Node) []Value {
	const path = "retryThrottling"
	if v.Kind != yaml.MappingNode {
		r.e.at(at(r.file, k, path), "retryThrottling must be an object")
		return nil
	}
	r.caseVariants(v, path, grpcThrottlingFields)
	bad := false
	var out []Value
	out = append(out, Value{Field: "budget.kind", Value: "tokens", Pos: at(r.file, k, path)})
	near := nearMisses(v, grpcThrottlingFields)
	hint := func(f string) string {
		if m, ok := near[f]; ok {
			return fmt.Sprintf(": %q at %d:%d is not it", m.Value, m.Line, m.Column)
		}
		return ""
	}
	km, vm := field(v, "maxTokens")
	if km == nil {
		r.e.at(at(r.file, k, path), "retryThrottling.maxTokens is required and must be in (0, %d] (gRFC A6, grpc-go; grpc-go refuses the service config)%s", grpcMaxTokens, hint("maxTokens"))
		bad = true
	} else {
		pos := at(r.file, km, path+".maxTokens")
		x, ok := floatOf(vm)
		switch {
		case !ok:
			r.e.at(pos, "maxTokens must be a number, got %s", show(vm))
			bad = true
		case x <= 0 || x > grpcMaxTokens:
			r.e.at(pos, "maxTokens (%s) out of range (0, %d] (grpc-go refuses the service config)", vm.Value, grpcMaxTokens)
			bad = true
		default:
			out = append(out, Value{Field: "budget.max_tokens", Value: x, Pos: pos})
		}
	}
	kt, vt := field(v, "tokenRatio")
	if kt == nil {
		r.e.at(at(r.file, k, path), "retryThrottling.tokenRatio is required and must be > 0 (gRFC A6; grpc-go refuses the service config)%s", hint("tokenRatio"))
		bad = true
	} else {
		pos := at(r.file, kt, path+".tokenRatio")
		x, ok := floatOf(vt)
		switch {
		case !ok:
			r.e.at(pos, "tokenRatio must be a number, got %s", show(vt))
			bad = true
		case x <= 0:
			r.e.at(pos, "tokenRatio must be > 0 (gRFC A6; grpc-go refuses the service config), got %s", vt.Value)
			bad = true
		default:
			// gRPC keeps 3 decimals (A6: "Up to 3 decimal places are
			// supported"; C-core drops the others, grpc-java truncates
			// tokenRatio*1000). The literal is cut, not the float, which
			// would turn 0.29 into 0.289.
			t := truncate3(vt.Value)
			if t <= 0 {
				r.e.at(pos, "tokenRatio %s keeps no token once cut to gRPC's 3 decimals: successes would never refill the budget, which herdlab cannot express", vt.Value)
				bad = true
			} else {
				out = append(out, Value{Field: "budget.token_ratio", Value: t, Pos: pos})
			}
		}
	}
	if bad {
		return nil
	}
	return out
}

// truncate3 cuts a decimal literal to 3 decimals.
func truncate3(s string) float64 {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		x, _ := strconv.ParseFloat(s, 64)
		return math.Trunc(x*1000+1e-9) / 1000
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > 3 {
		s = s[:i+4]
	}
	x, _ := strconv.ParseFloat(s, 64)
	return x
}

// codes reads a list of status codes, names or numbers, as grpc-go's
// codes.Code.UnmarshalJSON, and returns their names.
func (r *grpcReader) codes(k, v *yaml.Node, path string) []string {
	pos := at(r.file, k, path)
	if v.Kind != yaml.SequenceNode {
		r.e.at(pos, "%s must be a list of status codes", path[strings.LastIndexByte(path, '.')+1:])
		return nil
	}
	var names []string
	for j, c := range v.Content {
		if c.Kind != yaml.ScalarNode {
			r.e.at(at(r.file, c, fmt.Sprintf("%s[%d]", path, j)), "invalid code: %s", show(c))
			continue
		}
		if n, ok := intOf(c); ok {
			if n < 0 || n >= int64(len(grpcCodes)) {
				r.e.at(at(r.file, c, fmt.Sprintf("%s[%d]", path, j)), "invalid code: %d (grpc-go refuses the service config)", n)
				continue
			}
			if n == 0 {
				r.e.at(at(r.file, c, fmt.Sprintf("%s[%d]", path, j)), "%s must not contain OK (grpc-java refuses the service config)", path[strings.LastIndexByte(path, '.')+1:])
				continue
			}
			names = append(names, grpcCodes[n])
			continue
		}
		if c.Value == "OK" {
			// grpc-java ServiceConfigUtil: "%s must not contain OK".
			r.e.at(at(r.file, c, fmt.Sprintf("%s[%d]", path, j)), "%s must not contain OK (grpc-java refuses the service config)", path[strings.LastIndexByte(path, '.')+1:])
			continue
		}
		if c.Tag != "!!str" || !slices.Contains(grpcCodes, c.Value) {
			r.e.at(at(r.file, c, fmt.Sprintf("%s[%d]", path, j)), "invalid code: %q (want a name such as UNAVAILABLE, or a number; grpc-go refuses the service config)", c.Value)
			continue
		}
		names = append(names, c.Value)
	}
	return names
}

// outcomesOf returns the herdlab outcomes of status codes, and the
// outcomes given, in herdlab's order.
func outcomesOf(codes []string, outcomes ...string) []string {
	set := map[string]bool{}
	for _, c := range codes {
		for _, o := range grpcRetryOn[c] {
			set[o] = true
		}
	}
	for _, o := range outcomes {
		set[o] = true
	}
	var out []string
	for _, o := range outcomeOrder {
		if set[o] {
			out = append(out, o)
		}
	}
	return out
}

// duration reads a proto3 JSON duration ("0.1s"), as grpc-go v1.85.0's
// internal/serviceconfig Duration.UnmarshalJSON: a string, seconds with up
// to 9 decimals and the unit s.
func (r *grpcReader) duration(k, v *yaml.Node, path string) (time.Duration, bool) {
	pos := at(r.file, k, path)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		r.e.at(pos, "%s must be a duration string such as \"0.1s\", got %s", path[strings.LastIndexByte(path, '.')+1:], show(v))
		return 0, false
	}
	d, err := protoDuration(v.Value)
	if err != nil {
		r.e.at(pos, "%v", err)
		return 0, false
	}
	return d, true
}

func protoDuration(s string) (time.Duration, error) {
	orig := s
	if !strings.HasSuffix(s, "s") {
		return 0, fmt.Errorf("malformed duration %q: missing seconds unit", orig)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s[:len(s)-1], ".")
	if strings.Contains(frac, ".") {
		return 0, fmt.Errorf("malformed duration %q: too many decimals", orig)
	}
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("malformed duration %q: contains no numbers", orig)
	}
	var sec, ns int64
	var err error
	if whole != "" {
		if sec, err = strconv.ParseInt(whole, 10, 64); err != nil || sec < 0 {
			return 0, fmt.Errorf("malformed duration %q", orig)
		}
		if sec > math.MaxInt64/int64(time.Second)-1 {
			return 0, fmt.Errorf("duration %q is longer than herdlab counts", orig)
		}
	}
	if frac != "" {
		if len(frac) > 9 {
			return 0, fmt.Errorf("malformed duration %q: too many digits after decimal", orig)
		}
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil || ns < 0 {
			return 0, fmt.Errorf("malformed duration %q", orig)
		}
		for i := len(frac); i < 9; i++ {
			ns *= 10
		}
	}
	d := time.Duration(sec)*time.Second + time.Duration(ns)
	if neg {
		d = -d
	}
	return d, nil
}

// str reads an optional string field.
func (r *grpcReader) str(n *yaml.Node, key, path string) (string, bool) {
	k, v := field(n, key)
	if k == nil {
		return "", true
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		r.e.at(at(r.file, k, path+"."+key), "%s must be a string, got %s", key, show(v))
		return "", false
	}
	return v.Value, true
}

// names checks the keys of an object with optional fields: a case variant
// of a field is refused, a near miss is a hazard.
func (r *grpcReader) names(n *yaml.Node, path string, known []string) []Hazard {
	r.caseVariants(n, path, known)
	return r.nearHazards(n, path, known)
}

// caseVariants refuses a key that is a field's name in another case.
func (r *grpcReader) caseVariants(n *yaml.Node, path string, known []string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		for _, f := range known {
			if key.Value != f && strings.EqualFold(key.Value, f) {
				r.e.at(at(r.file, key, join(path, key.Value)),
					"%q is not %q: grpc-go reads it (its JSON decoder ignores case), grpc-java and gRPC C++ ignore it; write %s", key.Value, f, f)
			}
		}
	}
}

// nearHazards reports the keys one or two edits from a field of the
// object, which gRPC ignores; the required fields' misses are left to
// their refusal.
func (r *grpcReader) nearHazards(n *yaml.Node, path string, known []string, required ...string) []Hazard {
	var out []Hazard
	for f, key := range nearMisses(n, known) {
		if slices.Contains(required, f) {
			continue
		}
		out = append(out, Hazard{Rule: HazardIgnoredField, Pos: at(r.file, key, join(path, key.Value)),
			Msg: fmt.Sprintf("%q is not a field, and gRPC ignores it: did you mean %s?", key.Value, f)})
	}
	slices.SortFunc(out, func(a, b Hazard) int { return a.Pos.Line*1000 + a.Pos.Col - b.Pos.Line*1000 - b.Pos.Col })
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// nearMisses maps each field of known that the object n does not have to
// a key of n one or two edits away from it (not merely another case).
func nearMisses(n *yaml.Node, known []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		return out
	}
	for _, f := range known {
		if k, _ := field(n, f); k != nil {
			continue
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if slices.Contains(known, key.Value) || strings.EqualFold(key.Value, f) {
				continue
			}
			if d := editdist.Levenshtein(strings.ToLower(key.Value), strings.ToLower(f)); d <= 2 && len(f) > 4 {
				out[f] = key
				break
			}
		}
	}
	return out
}

// dflt is the position of a default filled in for the object n.
func (r *grpcReader) dflt(n *yaml.Node, path, doc string) Pos {
	p := at(r.file, n, path)
	p.Default = doc
	return p
}

// intOf reads an integer scalar.
func intOf(v *yaml.Node) (int64, bool) {
	if v == nil || v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 0, 64)
	return n, err == nil
}

// floatOf reads a number scalar.
func floatOf(v *yaml.Node) (float64, bool) {
	if v == nil || v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		return 0, false
	}
	x, err := strconv.ParseFloat(v.Value, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// show describes a node for an error.
func show(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	if v.Tag == "!!str" {
		return strconv.Quote(v.Value)
	}
	return v.Value
}
