//go:build !js

package configs

// The Linkerd reader: format "linkerd". A file is Kubernetes YAML, one or
// more documents, read two ways:
//
//   - ServiceProfiles (linkerd.io/v1alpha2): each of spec.routes is a
//     policy named by its name; the profile's retryBudget (or Linkerd's
//     default budget) limits its retries, a Finagle budget held by each
//     calling proxy.
//   - Linkerd 2.16+ retry and timeout annotations (retry.linkerd.io/http,
//     /grpc, /limit, /timeout; timeout.linkerd.io/request, /response) on
//     an HTTPRoute or GRPCRoute (a policy named by its metadata.name) or
//     on a Service (likewise): a route without retry annotations takes its
//     parent Service's, and the same for timeouts (Linkerd docs:
//     reference/retries, reference/timeouts). Linkerd ignores them for a
//     Service that has a ServiceProfile; the reader reads both.
//
// The reader is a strict decoder of the documented fields (the linkerd2
// module is far too heavy to import): a ServiceProfile is refused as
// Linkerd's validating webhook refuses it (pkg/profiles/profiles.go,
// Validate: unknown fields, a route without name or condition, a bad
// timeout, a retry budget without ttl ...) with its words; an annotation
// is refused as the policy controller refuses it when it builds the
// route (policy-controller k8s/index outbound, parse_http_retry,
// parse_grpc_retry: "invalid retry condition"), which leaves the route
// unserved. Annotations of other names are Linkerd's to ignore, and are
// ignored.
//
// Not read, with no counterpart in herdlab: a profile's dstOverrides and
// opaquePorts, the request conditions (which requests a route matches),
// timeout.linkerd.io/idle, and the 64 KiB body limit past which Linkerd
// does not retry.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func init() {
	readers[Linkerd] = reader{read: readLinkerd, all: allLinkerd}
}

// Linkerd's defaults, each where Linkerd sets it.
const (
	// linkerdDefaultRouteTimeout: a profile route without timeout
	// (linkerd2 pkg/profiles/profiles.go, DefaultRouteTimeout). It covers
	// the request and its retries (Linkerd docs: reference/service-profiles,
	// "timeout ... (including retries)").
	linkerdDefaultRouteTimeout = 10 * time.Second
	// The budget of a profile without retryBudget (profiles.go,
	// DefaultRetryBudget): retries may add 20% to the requests, plus 10
	// a second, over a 10s window.
	linkerdDefaultRetryRatio   = 0.2
	linkerdDefaultMinPerSecond = 10
	linkerdDefaultTTL          = 10 * time.Second
	// linkerdDefaultLimit: retry.linkerd.io/limit unset or 0 (Linkerd
	// docs: reference/retries, "If unspecified, the default is 1";
	// parse_http_retry: limit.unwrap_or(1), a 0 filtered out).
	linkerdDefaultLimit = 1
	// The annotation retries' back-off (policy-controller
	// grpc/src/outbound/http.rs, convert_retry: ExponentialBackoff
	// min_backoff 25ms, max_backoff 250ms, jitter_ratio 1.0). The proxy's
	// ExponentialBackoff (linkerd-exp-backoff) waits
	// min(max, b + U*b) with b = min(max, min*2^k): herdlab's
	// equal-jitter, t/2 + U*t/2 with t = min(cap, base*2^k), with base
	// 2*min and cap 2*max, waits the same for the first three retries
	// (25-50, 50-100, 100-200 ms); after, Linkerd's waits stay at 250 ms
	// and equal-jitter's reach 250-500 ms.
	linkerdBackoffMin = 25 * time.Millisecond
	linkerdBackoffMax = 250 * time.Millisecond
)

const (
	linkerdDocProfile     = "Linkerd 2.16+ docs: reference/service-profiles"
	linkerdDocProfileCode = "linkerd2: pkg/profiles/profiles.go"
	linkerdDocRetries     = "Linkerd 2.16+ docs: reference/retries"
	linkerdDocBackoff     = "linkerd2: policy-controller grpc/src/outbound/http.rs convert_retry (25ms-250ms, jitter 1.0)"
	linkerdDocNoBackoff   = "Linkerd: a profile's retries are sent at once, with no back-off (Gateway API GEP-1731, linkerd2-proxy)"
	linkerdDocHints       = "Linkerd 2.16+ docs: reference/retries (no Retry-After or gRPC pushback handling)"
	linkerdDocProxy       = "Linkerd: one proxy per calling pod holds the budget"
)

// The keys of a ServiceProfile (linkerd2 controller/gen/apis/serviceprofile/v1alpha2).
var (
	linkerdKeysObject   = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	linkerdKeysSpec     = []string{"routes", "retryBudget", "dstOverrides", "opaquePorts"}
	linkerdKeysRoute    = []string{"name", "condition", "responseClasses", "isRetryable", "timeout"}
	linkerdKeysReqMatch = []string{"all", "not", "any", "pathRegex", "method"}
	linkerdKeysRspClass = []string{"condition", "isFailure"}
	linkerdKeysRspMatch = []string{"all", "not", "any", "status"}
	linkerdKeysRange    = []string{"min", "max"}
	linkerdKeysBudget   = []string{"retryRatio", "minRetriesPerSecond", "ttl"}
)

// The API versions read.
var (
	linkerdProfileVersions = []string{"linkerd.io/v1alpha2"}
	linkerdRouteVersions   = []string{"gateway.networking.k8s.io/v1", "gateway.networking.k8s.io/v1beta1", "gateway.networking.k8s.io/v1alpha2",
		"policy.linkerd.io/v1beta1", "policy.linkerd.io/v1beta2", "policy.linkerd.io/v1beta3"}
)

// linkerdGRPCConditions are retry.linkerd.io/grpc's words
// (parse_grpc_retry).
var linkerdGRPCConditions = []string{"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// linkerdFile is a file's routes, checked.
type linkerdFile struct {
	file     string
	e        errs
	routes   []*linkerdRoute
	services map[string]*yaml.Node // Service documents by name
}

// linkerdRoute is one policy of the file: a profile's route, or an
// annotated HTTPRoute, GRPCRoute or Service.
type linkerdRoute struct {
	name string
	kind string // ServiceProfile, HTTPRoute, GRPCRoute, Service
	id   string // KIND/NAME, the prefix of paths
	doc  *yaml.Node
	// A profile's route: its node, index and the profile's spec.
	route *yaml.Node
	index int
	spec  *yaml.Node
	// The upstream: the profile's service, the route's parent Service.
	service string
}

func parseLinkerd(file string, data []byte) (*linkerdFile, error) {
	docs, err := documents(file, data)
	if err != nil {
		return nil, err
	}
	f := &linkerdFile{file: file, services: map[string]*yaml.Node{}}
	for _, doc := range docs {
		kind := meshScalar(get(doc, "kind"))
		version := meshScalar(get(doc, "apiVersion"))
		name := meshScalar(get(doc, "metadata", "name"))
		id := kind + "/" + name
		switch {
		case kind == "ServiceProfile" && slices.Contains(linkerdProfileVersions, version):
			f.profile(doc, id, name)
		case kind == "ServiceProfile" && strings.HasPrefix(version, "linkerd.io/"):
			k, _ := field(doc, "apiVersion")
			f.e.at(at(file, k, id+" apiVersion"), "ServiceProfile version %q is not read (want %s)", version, strings.Join(linkerdProfileVersions, ", "))
		case (kind == "HTTPRoute" || kind == "GRPCRoute") && slices.Contains(linkerdRouteVersions, version):
			r := &linkerdRoute{name: name, kind: kind, id: id, doc: doc}
			if refs := get(doc, "spec", "parentRefs"); refs != nil && refs.Kind == yaml.SequenceNode && len(refs.Content) > 0 {
				r.service = meshScalar(get(refs.Content[0], "name"))
			}
			f.annotations(r)
			f.routes = append(f.routes, r)
		case kind == "Service" && version == "v1":
			f.services[name] = doc
			r := &linkerdRoute{name: name, kind: kind, id: id, doc: doc, service: name}
			if len(linkerdAnnotations(doc, "retry.linkerd.io/", "timeout.linkerd.io/")) > 0 {
				f.annotations(r)
				f.routes = append(f.routes, r)
			}
		}
	}
	if err := f.e.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// linkerdDNS1123Subdomain is Kubernetes' IsDNS1123Subdomain.
var linkerdDNS1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// profile checks a ServiceProfile as Validate does, and adds its routes.
func (f *linkerdFile) profile(doc *yaml.Node, id, name string) {
	file := f.file
	sp := fmt.Sprintf("ServiceProfile %q", name)
	f.keys(doc, id, linkerdKeysObject)
	if len(name) > 253 || !linkerdDNS1123Subdomain.MatchString(name) {
		f.e.at(at(file, doc, id+" metadata.name"), "%s has invalid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", sp)
	}
	spec := get(doc, "spec")
	f.keys(spec, id+" spec", linkerdKeysSpec)
	rk, routes := field(spec, "routes")
	if routes == nil || routes.Kind != yaml.SequenceNode || len(routes.Content) == 0 {
		where := doc
		if rk != nil {
			where = rk
		}
		f.e.at(at(file, where, id+" spec.routes"), "%s has no routes", sp)
	} else {
		for i, r := range routes.Content {
			path := fmt.Sprintf("%s spec.routes[%d]", id, i)
			f.keys(r, path, linkerdKeysRoute)
			rname := meshScalar(get(r, "name"))
			if rname == "" {
				f.e.at(at(file, r, path+".name"), "%s has a route with no name", sp)
			}
			if k, v := field(r, "timeout"); k != nil {
				if _, err := time.ParseDuration(v.Value); err != nil || v.Kind != yaml.ScalarNode {
					f.e.at(at(file, k, path+".timeout"), "%s has a route with an invalid timeout: time: invalid duration %q", sp, v.Value)
				}
			}
			if k, v := field(r, "isRetryable"); k != nil && (v.Kind != yaml.ScalarNode || v.Tag != "!!bool") {
				f.e.at(at(file, k, path+".isRetryable"), "failed to validate ServiceProfile: cannot unmarshal %q into a boolean", v.Value)
			}
			if k, cond := field(r, "condition"); k == nil {
				f.e.at(at(file, r, path+".condition"), "%s has a route with no condition", sp)
			} else if msg := f.requestMatch(cond, path+".condition"); msg != "" {
				f.e.at(at(file, k, path+".condition"), "%s has a route with an invalid condition: %s", sp, msg)
			}
			if k, classes := field(r, "responseClasses"); k != nil && classes.Kind == yaml.SequenceNode {
				for j, c := range classes.Content {
					cpath := fmt.Sprintf("%s.responseClasses[%d]", path, j)
					f.keys(c, cpath, linkerdKeysRspClass)
					if ck, cond := field(c, "condition"); ck == nil {
						f.e.at(at(file, c, cpath+".condition"), "%s has a response class with no condition", sp)
					} else if msg := f.responseMatch(cond, cpath+".condition"); msg != "" {
						f.e.at(at(file, ck, cpath+".condition"), "%s has a response class with an invalid condition: %s", sp, msg)
					}
					if k, v := field(c, "isFailure"); k != nil && (v.Kind != yaml.ScalarNode || v.Tag != "!!bool") {
						f.e.at(at(file, k, cpath+".isFailure"), "failed to validate ServiceProfile: cannot unmarshal %q into a boolean", v.Value)
					}
				}
			}
			f.routes = append(f.routes, &linkerdRoute{name: rname, kind: "ServiceProfile", id: id, doc: doc, route: r, index: i, spec: spec, service: istioShort(name)})
		}
	}
	if bk, rb := field(spec, "retryBudget"); bk != nil {
		bpath := id + " spec.retryBudget"
		f.keys(rb, bpath, linkerdKeysBudget)
		// Required by the CRD schema (linkerd-crds, ServiceProfile
		// v1alpha2: retryBudget.required).
		for _, key := range []string{"retryRatio", "minRetriesPerSecond"} {
			if k, _ := field(rb, key); k == nil {
				f.e.at(at(file, bk, bpath+"."+key), "spec.retryBudget.%s: Required value", key)
			}
		}
		if k, v := field(rb, "retryRatio"); k != nil {
			x, err := strconv.ParseFloat(v.Value, 64)
			switch {
			case v.Kind != yaml.ScalarNode || (v.Tag != "!!float" && v.Tag != "!!int") || err != nil:
				f.e.at(at(file, k, bpath+".retryRatio"), "failed to validate ServiceProfile: cannot unmarshal %q into a number", v.Value)
			case x < 0:
				f.e.at(at(file, k, bpath+".retryRatio"), "%s RetryBudget RetryRatio must be non-negative: %f", sp, x)
			}
		}
		if k, v := field(rb, "minRetriesPerSecond"); k != nil {
			if _, err := strconv.ParseUint(v.Value, 10, 32); v.Tag != "!!int" || err != nil {
				f.e.at(at(file, k, bpath+".minRetriesPerSecond"), "failed to validate ServiceProfile: cannot unmarshal %q into a uint32", v.Value)
			}
		}
		if k, v := field(rb, "ttl"); k == nil || v.Value == "" {
			f.e.at(at(file, bk, bpath+".ttl"), "%s RetryBudget missing TTL field", sp)
		} else if _, err := time.ParseDuration(v.Value); err != nil {
			f.e.at(at(file, k, bpath+".ttl"), "%s RetryBudget: time: invalid duration %q", sp, v.Value)
		}
	}
}

// allAny checks the all and any lists of the match n with match, and
// reports whether either is set, and the first error.
func (f *linkerdFile) allAny(n *yaml.Node, path string, match func(*yaml.Node, string) string) (set bool, msg string) {
	for _, key := range []string{"all", "any"} {
		if _, v := field(n, key); v != nil {
			set = true
			if v.Kind == yaml.SequenceNode {
				for i, c := range v.Content {
					if msg := match(c, fmt.Sprintf("%s.%s[%d]", path, key, i)); msg != "" {
						return set, msg
					}
				}
			}
		}
	}
	return set, ""
}

// requestMatch is ValidateRequestMatch's error, or "".
func (f *linkerdFile) requestMatch(n *yaml.Node, path string) string {
	f.keys(n, path, linkerdKeysReqMatch)
	set, msg := f.allAny(n, path, f.requestMatch)
	if msg != "" {
		return msg
	}
	if _, v := field(n, "not"); v != nil {
		set = true
		if msg := f.requestMatch(v, path+".not"); msg != "" {
			return msg
		}
	}
	if meshScalar(get(n, "method")) != "" || meshScalar(get(n, "pathRegex")) != "" {
		set = true
	}
	if !set {
		return "A request match must have a field set"
	}
	return ""
}

// responseMatch is ValidateResponseMatch's error, or "".
func (f *linkerdFile) responseMatch(n *yaml.Node, path string) string {
	f.keys(n, path, linkerdKeysRspMatch)
	set, msg := f.allAny(n, path, f.responseMatch)
	if msg != "" {
		return msg
	}
	if _, st := field(n, "status"); st != nil {
		set = true
		f.keys(st, path+".status", linkerdKeysRange)
		lo, _ := strconv.Atoi(meshScalar(get(st, "min")))
		hi, _ := strconv.Atoi(meshScalar(get(st, "max")))
		switch {
		case lo != 0 && (lo < 100 || lo > 599):
			return "Range minimum must be between 100 and 599, inclusive"
		case hi != 0 && (hi < 100 || hi > 599):
			return "Range maximum must be between 100 and 599, inclusive"
		case hi != 0 && lo != 0 && hi < lo:
			return "Range maximum cannot be smaller than minimum"
		}
	}
	if _, v := field(n, "not"); v != nil {
		set = true
		if msg := f.responseMatch(v, path+".not"); msg != "" {
			return msg
		}
	}
	if !set {
		return "A response match must have a field set"
	}
	return ""
}

// keys refuses the keys of the mapping n not in known, at each key: the
// webhook decodes with yaml.UnmarshalStrict.
func (f *linkerdFile) keys(n *yaml.Node, path string, known []string) {
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		f.e.at(at(f.file, n, path), "failed to validate ServiceProfile: %s must be an object", path)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(known, k.Value) {
			f.e.at(at(f.file, k, path+"."+k.Value), "failed to validate ServiceProfile: unknown field %q", k.Value)
		}
	}
}

// linkerdAnnotations returns the key and value nodes of the document's
// annotations whose names start with one of prefixes, in file order.
func linkerdAnnotations(doc *yaml.Node, prefixes ...string) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	ann := get(doc, "metadata", "annotations")
	if ann == nil || ann.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(ann.Content); i += 2 {
		for _, p := range prefixes {
			if strings.HasPrefix(ann.Content[i].Value, p) {
				out = append(out, [2]*yaml.Node{ann.Content[i], ann.Content[i+1]})
			}
		}
	}
	return out
}

// annotations checks a document's retry and timeout annotations as the
// policy controller parses them.
func (f *linkerdFile) annotations(r *linkerdRoute) {
	for _, kv := range linkerdAnnotations(r.doc, "retry.linkerd.io/", "timeout.linkerd.io/") {
		k, v := kv[0], kv[1]
		path := r.id + " metadata.annotations." + k.Value
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			// Kubernetes refuses an annotation that is not a string.
			f.e.at(at(f.file, k, path), "annotation values must be strings, got %q (quote it)", v.Value)
			continue
		}
		switch k.Value {
		case "retry.linkerd.io/http":
			if r.kind == "GRPCRoute" {
				f.e.at(at(f.file, k, path), "retry.linkerd.io/http is not valid on a GRPCRoute")
			} else if _, err := linkerdHTTPConditions(v.Value); err != nil {
				f.e.at(at(f.file, k, path), "%v", err)
			}
		case "retry.linkerd.io/grpc":
			if r.kind == "HTTPRoute" {
				f.e.at(at(f.file, k, path), "retry.linkerd.io/grpc is not valid on an HTTPRoute")
			} else {
				for _, c := range strings.Split(v.Value, ",") {
					if !slices.Contains(linkerdGRPCConditions, strings.ToLower(c)) {
						f.e.at(at(f.file, k, path), "invalid retry condition: %s", v.Value)
						break
					}
				}
			}
		case "retry.linkerd.io/limit":
			if _, err := strconv.ParseUint(v.Value, 10, 16); err != nil {
				f.e.at(at(f.file, k, path), "invalid retry limit %q: want an integer from 0 to 65535", v.Value)
			}
		case "retry.linkerd.io/timeout", "timeout.linkerd.io/request", "timeout.linkerd.io/response", "timeout.linkerd.io/idle":
			if _, err := linkerdDuration(v.Value); err != nil {
				f.e.at(at(f.file, k, path), "%v", err)
			}
		}
	}
}

// linkerdDuration parses a duration as the annotations write them: a
// number with its unit (5s, 200ms; Linkerd docs: "Units must be
// specified").
func linkerdDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q: write a number and its unit (5s, 200ms)", s)
	}
	return d, nil
}

// linkerdHTTPConditions parses retry.linkerd.io/http into status ranges
// (parse_http_retry: 5xx, gateway-error (502-504), a code or a range
// xxx-yyy of codes from 100 to 599).
func linkerdHTTPConditions(s string) ([][2]int, error) {
	code := func(s string) (int, bool) {
		n, err := strconv.ParseUint(s, 10, 32)
		return int(n), err == nil && n >= 100 && n < 600
	}
	var out [][2]int
	for _, c := range strings.Split(s, ",") {
		switch {
		case strings.EqualFold(c, "5xx"):
			out = append(out, [2]int{500, 599})
		case strings.EqualFold(c, "gateway-error"):
			out = append(out, [2]int{502, 504})
		default:
			if n, ok := code(c); ok {
				out = append(out, [2]int{n, n})
				continue
			}
			lo, hi, found := strings.Cut(c, "-")
			a, okA := code(lo)
			b, okB := code(hi)
			if !found || !okA || !okB || a > b {
				return nil, fmt.Errorf("invalid retry condition: %s", s)
			}
			out = append(out, [2]int{a, b})
		}
	}
	return out, nil
}

func readLinkerd(ref Ref, data []byte) (*Policy, error) {
	f, err := parseLinkerd(ref.File, data)
	if err != nil {
		return nil, err
	}
	var found *linkerdRoute
	var names []string
	for _, r := range f.routes {
		names = append(names, r.name)
		if r.name != ref.Name {
			continue
		}
		if found != nil {
			return nil, &Error{Pos: at(ref.File, r.doc, r.id), Msg: fmt.Sprintf("two routes are named %q (%s and %s): rename one", ref.Name, found.id, r.id)}
		}
		found = r
	}
	if found == nil {
		return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("no Linkerd route %q in the file (it has: %s)", ref.Name, strings.Join(names, ", "))}
	}
	return f.policy(found), nil
}

func allLinkerd(file string, data []byte) (*Fragment, error) {
	f, err := parseLinkerd(file, data)
	if err != nil {
		return nil, err
	}
	out := &Fragment{}
	seen := map[string]bool{}
	for _, r := range f.routes {
		out.Policies = append(out.Policies, f.policy(r))
		if r.service != "" && !seen[r.service] {
			seen[r.service] = true
			out.Services = append(out.Services, Service{Name: r.service})
		}
	}
	return out, nil
}

func (f *linkerdFile) policy(r *linkerdRoute) *Policy {
	if r.kind == "ServiceProfile" {
		return f.profilePolicy(r)
	}
	return f.annotationPolicy(r)
}

// profilePolicy is a profile route's strategy. A retryable route retries
// any failure, at once, as often as the budget lets it within the
// route's timeout: no attempt limit.
func (f *linkerdFile) profilePolicy(r *linkerdRoute) *Policy {
	file := f.file
	path := fmt.Sprintf("%s spec.routes[%d]", r.id, r.index)
	p := &Policy{Name: r.name, Service: r.service}
	retryable := false
	if k, v := field(r.route, "isRetryable"); k != nil {
		retryable = v.Value == "true"
		var attempts any = 1
		if retryable {
			attempts = UnlimitedAttempts // the budget and the timeout limit them
		}
		p.Set("max_attempts", attempts, at(file, k, path+".isRetryable"))
	} else {
		pos := at(file, r.route, path+".isRetryable")
		pos.Default = linkerdDocProfile + " (isRetryable unset: not retried)"
		p.Set("max_attempts", 1, pos)
	}
	// The timeout covers the request and its retries: it bounds each
	// attempt as well. A timed-out request is not retried (linkerd/linkerd
	// issue 2358): retry_on leaves timeout out.
	if k, v := field(r.route, "timeout"); k != nil {
		d, _ := time.ParseDuration(v.Value)
		pos := at(file, k, path+".timeout")
		p.Set("timeout", d, pos)
		p.Set("max_elapsed", d, pos)
	} else {
		pos := at(file, r.route, path+".timeout")
		pos.Default = linkerdDocProfileCode + " DefaultRouteTimeout"
		p.Set("timeout", linkerdDefaultRouteTimeout, pos)
		p.Set("max_elapsed", linkerdDefaultRouteTimeout, pos)
	}
	if !retryable {
		return p
	}
	if k, classes := field(r.route, "responseClasses"); k != nil {
		on := linkerdFailures(classes)
		if len(on) == 0 {
			// No answer herdlab's server gives is a failure: nothing is
			// retried (an empty retry_on would read as herdlab's default).
			p.Values[0] = Value{Field: "max_attempts", Value: 1, Pos: at(file, k, path+".responseClasses")}
			return p
		}
		p.Set("retry_on", on, at(file, k, path+".responseClasses"))
	} else {
		pos := at(file, r.route, path+".responseClasses")
		pos.Default = linkerdDocProfile + " (a 5xx is a failure; transport errors are not retried)"
		p.Set("retry_on", []string{"5xx"}, pos)
	}
	def := func(doc string) Pos {
		pos := at(file, r.route, path)
		pos.Default = doc
		return pos
	}
	p.Set("backoff.kind", "none", def(linkerdDocNoBackoff))
	p.Set("retry_after.mode", "ignore", def(linkerdDocHints))
	p.Set("ignore_pushback", true, def(linkerdDocHints))

	bpath := r.id + " spec.retryBudget"
	bk, rb := field(r.spec, "retryBudget")
	if bk == nil {
		pos := at(file, r.spec, bpath)
		pos.Default = linkerdDocProfileCode + " DefaultRetryBudget"
		p.Set("budget.kind", "finagle", pos)
		p.Set("budget.percent", linkerdDefaultRetryRatio*100, pos)
		p.Set("budget.min_per_second", float64(linkerdDefaultMinPerSecond), pos)
		p.Set("budget.ttl", linkerdDefaultTTL, pos)
	} else {
		// A written budget's fields are as written: the defaults stand
		// only for a profile without retryBudget (profiles.go,
		// ToServiceProfile).
		p.Set("budget.kind", "finagle", at(file, bk, bpath))
		k, v := field(rb, "retryRatio")
		ratio, _ := strconv.ParseFloat(v.Value, 64)
		p.Set("budget.percent", math.Round(ratio*100*1e9)/1e9, at(file, k, bpath+".retryRatio"))
		k, v = field(rb, "minRetriesPerSecond")
		n, _ := strconv.ParseFloat(v.Value, 64)
		p.Set("budget.min_per_second", n, at(file, k, bpath+".minRetriesPerSecond"))
		k, v = field(rb, "ttl")
		ttl, _ := time.ParseDuration(v.Value)
		p.Set("budget.ttl", ttl, at(file, k, bpath+".ttl"))
	}
	pos := at(file, r.spec, bpath)
	if bk != nil {
		pos = at(file, bk, bpath)
	}
	pos.Default = linkerdDocProxy
	p.Set("budget.scope", "sender", pos)
	return p
}

// linkerdFailures are the outcomes of herdlab's server that a route's
// response classes call failures: its 503 (5xx), its 429, and a 4xx
// (400 stands for it). The first class whose condition matches decides;
// an answer no class matches is a failure when it is a 5xx (Linkerd docs:
// reference/service-profiles, responseClasses).
func linkerdFailures(classes *yaml.Node) []string {
	out := []string{}
	for _, c := range []struct {
		outcome string
		status  int
	}{{"5xx", 503}, {"429", 429}, {"4xx", 400}} {
		failure := c.status >= 500
		if classes.Kind == yaml.SequenceNode {
			for _, rc := range classes.Content {
				if linkerdMatches(get(rc, "condition"), c.status) {
					failure = meshScalar(get(rc, "isFailure")) == "true"
					break
				}
			}
		}
		if failure {
			out = append(out, c.outcome)
		}
	}
	return out
}

// linkerdMatches reports whether a response condition matches status.
func linkerdMatches(n *yaml.Node, status int) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	ok := true
	if all := get(n, "all"); all != nil && all.Kind == yaml.SequenceNode {
		for _, c := range all.Content {
			ok = ok && linkerdMatches(c, status)
		}
	}
	if anyOf := get(n, "any"); anyOf != nil && anyOf.Kind == yaml.SequenceNode {
		matched := false
		for _, c := range anyOf.Content {
			matched = matched || linkerdMatches(c, status)
		}
		ok = ok && matched
	}
	if st := get(n, "status"); st != nil {
		lo, _ := strconv.Atoi(meshScalar(get(st, "min")))
		hi, _ := strconv.Atoi(meshScalar(get(st, "max")))
		ok = ok && (lo == 0 || status >= lo) && (hi == 0 || status <= hi)
	}
	if not := get(n, "not"); not != nil {
		ok = ok && !linkerdMatches(not, status)
	}
	return ok
}

// annotationPolicy is the strategy of an annotated route or Service.
func (f *linkerdFile) annotationPolicy(r *linkerdRoute) *Policy {
	file := f.file
	p := &Policy{Name: r.name, Service: r.service}
	retry, rid := f.pick(r, "retry.linkerd.io/")
	timeouts, tid := f.pick(r, "timeout.linkerd.io/")
	keyAt := func(m map[string][2]*yaml.Node, id, key string) Pos {
		return at(file, m[key][0], id+" metadata.annotations."+key)
	}
	defaultAt := func(doc string) Pos {
		n := get(r.doc, "metadata", "annotations")
		if n == nil {
			n = get(r.doc, "metadata")
		}
		pos := at(file, n, r.id+" metadata.annotations")
		pos.Default = doc
		return pos
	}

	// The statuses retried.
	set := map[string]bool{}
	var onPos Pos
	if kv, ok := retry["retry.linkerd.io/http"]; ok {
		ranges, _ := linkerdHTTPConditions(kv[1].Value)
		for _, o := range linkerdStatuses(ranges) {
			set[o] = true
		}
		onPos = keyAt(retry, rid, "retry.linkerd.io/http")
	}
	if kv, ok := retry["retry.linkerd.io/grpc"]; ok {
		// For a gRPC upstream: UNAVAILABLE is herdlab's 503,
		// RESOURCE_EXHAUSTED its 429; cancelled, deadline-exceeded and
		// internal have no counterpart.
		for _, c := range strings.Split(kv[1].Value, ",") {
			switch strings.ToLower(c) {
			case "unavailable":
				set["5xx"] = true
			case "resource-exhausted":
				set["429"] = true
			}
		}
		onPos = keyAt(retry, rid, "retry.linkerd.io/grpc")
	}

	// Timeouts: the retry timeout ends an attempt and retries it (Linkerd
	// docs: reference/retries, "cancelled and retried"); the response
	// timeout ends an attempt, not retried; the request timeout ends the
	// request, retries included (reference/timeouts). The shortest bounds
	// each attempt. A 0 is no timeout (parse_http_retry filters it out).
	type bound struct {
		d     time.Duration
		pos   Pos
		retry bool
	}
	var attempt *bound
	var request *bound
	consider := func(b bound) {
		if attempt == nil || b.d < attempt.d {
			attempt = &b
		}
	}
	if kv, ok := retry["retry.linkerd.io/timeout"]; ok {
		if d, _ := linkerdDuration(kv[1].Value); d > 0 {
			consider(bound{d, keyAt(retry, rid, "retry.linkerd.io/timeout"), true})
		}
	}
	if kv, ok := timeouts["timeout.linkerd.io/response"]; ok {
		if d, _ := linkerdDuration(kv[1].Value); d > 0 {
			consider(bound{d, keyAt(timeouts, tid, "timeout.linkerd.io/response"), false})
		}
	}
	if kv, ok := timeouts["timeout.linkerd.io/request"]; ok {
		if d, _ := linkerdDuration(kv[1].Value); d > 0 {
			request = &bound{d, keyAt(timeouts, tid, "timeout.linkerd.io/request"), false}
			consider(*request)
		}
	}
	if attempt != nil && attempt.retry {
		set["timeout"] = true
		if len(set) == 1 {
			onPos = attempt.pos
		}
	}
	var on []string
	for _, o := range []string{"refused", "timeout", "reset", "5xx", "429", "4xx"} {
		if set[o] {
			on = append(on, o)
		}
	}

	limit, limitPos := linkerdDefaultLimit, defaultAt(linkerdDocRetries+" (retry.linkerd.io/limit unset or 0: 1)")
	if kv, ok := retry["retry.linkerd.io/limit"]; ok && kv[1].Value != "0" {
		limit, _ = strconv.Atoi(kv[1].Value)
		limitPos = keyAt(retry, rid, "retry.linkerd.io/limit")
	}
	// Only the four retry annotations make a retry policy
	// (parse_http_retry: none set, no retry).
	configured := false
	for _, key := range []string{"retry.linkerd.io/http", "retry.linkerd.io/grpc", "retry.linkerd.io/limit", "retry.linkerd.io/timeout"} {
		_, ok := retry[key]
		configured = configured || ok
	}
	switch {
	case !configured:
		p.Set("max_attempts", 1, defaultAt(linkerdDocRetries+" (no retry annotation: no retries)"))
	case len(on) == 0:
		// Retry annotations that retry nothing herdlab's server gives
		// (an empty retry_on would read as herdlab's default).
		pos := limitPos
		if onPos.File != "" {
			pos = onPos
		}
		p.Set("max_attempts", 1, pos)
	default:
		p.Set("max_attempts", limit+1, limitPos)
	}
	if attempt != nil {
		p.Set("timeout", attempt.d, attempt.pos)
	}
	if request != nil {
		p.Set("max_elapsed", request.d, request.pos)
	}
	if !configured || len(on) == 0 {
		return p
	}
	p.Set("retry_on", on, onPos)
	p.Set("backoff.kind", "equal-jitter", defaultAt(linkerdDocBackoff))
	p.Set("backoff.base", 2*linkerdBackoffMin, defaultAt(linkerdDocBackoff))
	p.Set("backoff.cap", 2*linkerdBackoffMax, defaultAt(linkerdDocBackoff))
	p.Set("retry_after.mode", "ignore", defaultAt(linkerdDocHints))
	p.Set("ignore_pushback", true, defaultAt(linkerdDocHints))
	p.Hazards = append(p.Hazards, Hazard{Rule: HazardNoBudget, Pos: limitPos,
		Msg: fmt.Sprintf("Linkerd's retry annotations have no retry budget: each request is retried up to %d times, whatever the share of retries; a mesh of such hops multiplies (%d attempts per hop)", limit, limit+1)})
	return p
}

// pick returns the retry or timeout annotations (by prefix) that apply
// to r, and the id of the document they are read from: r's own, or, for
// a route that writes none, its parent Service's.
func (f *linkerdFile) pick(r *linkerdRoute, prefix string) (map[string][2]*yaml.Node, string) {
	own := linkerdAnnotations(r.doc, prefix)
	id := r.id
	if len(own) == 0 && r.kind != "Service" {
		if svc := f.services[r.service]; svc != nil {
			own = linkerdAnnotations(svc, prefix)
			id = "Service/" + r.service
		}
	}
	m := map[string][2]*yaml.Node{}
	for _, kv := range own {
		m[kv[0].Value] = kv
	}
	return m, id
}

// linkerdStatuses are herdlab's outcomes among status ranges: its 503
// (5xx), its 429, and a 4xx (400 stands for it).
func linkerdStatuses(ranges [][2]int) []string {
	var out []string
	for _, c := range []struct {
		outcome string
		status  int
	}{{"5xx", 503}, {"429", 429}, {"4xx", 400}} {
		for _, r := range ranges {
			if c.status >= r[0] && c.status <= r[1] {
				out = append(out, c.outcome)
				break
			}
		}
	}
	return out
}
