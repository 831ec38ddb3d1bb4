//go:build !js

package configs

// The Istio reader: format "istio". A file is Kubernetes YAML, one or
// more documents; VirtualServices and DestinationRules
// (networking.istio.io v1, v1beta1 or v1alpha3) are read, other kinds
// are passed over. A policy is one http route of a VirtualService
// (Ref.Name, the service's metadata.name; Ref.Route, the route's name,
// default the first), with the DestinationRule of the route's first
// destination host.
//
// The reader is a strict decoder of the documented fields of the objects
// it walks (from the .proto files of istio.io/api v1.32.0), not
// istio.io/api itself: that module and its protobuf runtime add 6.1 MB to
// the browser lab's WebAssembly (9.10 MB to 15.19 MB, measured with
// GOOS=js GOARCH=wasm go build ./web/wasm), which imports package
// configs through package scenarios. The objects it does not interpret
// (match, rewrite, fault, headers, tls, loadBalancer ...) are not checked
// below their own key.
//
// What Istio refuses is refused with Istio's words, from
// pkg/config/validation (validateHTTPRetry, validateHTTPRoute,
// validateConnectionPool, validateOutlierDetection, agent.ValidateDuration)
// and from the CRD schema the API server applies (required fields,
// unknown fields under kubectl's strict field validation, the
// kubebuilder bounds written in the .proto files).
//
// Not read, with no counterpart in herdlab: retryRemoteLocalities and
// retryIgnorePreviousHosts (which host a retry goes to; herdlab's
// balancer picks), budgetInterval (Envoy's retry budget over a window of
// past requests; herdlab's counts the requests in flight), the outlier
// detection's interval, maxEjectionPercent, minHealthPercent and
// failurePercentageThreshold, and the mesh-wide
// MeshConfig.defaultHttpRetryPolicy, which a MeshConfig (not this file)
// may set in place of Istio's default policy: the reader assumes it
// unset.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func init() {
	readers[Istio] = reader{read: readIstio, all: allIstio}
}

// Istio's defaults, each where Istio or Envoy sets it.
const (
	// istioDefaultRetries: a route without retries gets Istio's default
	// policy, NumRetries 2 (istio/istio
	// pilot/pkg/networking/core/route/retry/retry.go, defaultPolicy).
	istioDefaultRetries = 2
	// istioDefaultRetryOn is that policy's RetryOn, with
	// RetriableStatusCodes [503] unless the istiod feature
	// EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY is set (retry.go,
	// defaultPolicy). ConvertPolicy starts from it, so it is also the
	// retryOn of a retries block that does not write one.
	istioDefaultRetryOn = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes,503"
	// istioEnvoyBackoffBase: Istio writes no retry_back_off unless
	// retries.backoff is set, and Envoy's base_interval default is 25 ms
	// (Envoy v1.36 docs: config.route.v3.RetryPolicy.RetryBackOff); the
	// HTTPRetry.backoff doc of istio.io/api v1.32.0 says the same.
	istioEnvoyBackoffBase = 25 * time.Millisecond
	// istioEnvoyBackoffCapFactor: Envoy's max_interval default is 10
	// times base_interval (same doc); Istio sets only the base
	// (retry.go, ConvertPolicy: RetryBackOff{BaseInterval: in.Backoff}).
	istioEnvoyBackoffCapFactor = 10
	// The DestinationRule's retryBudget: percent 20, minRetryConcurrency
	// 3 when unset (istio.io/api v1.32.0 destination_rule.proto,
	// TrafficPolicy.RetryBudget).
	istioDefaultBudgetPercent       = 20.0
	istioDefaultMinRetryConcurrency = 3
	// Outlier detection: consecutive5xxErrors 5, baseEjectionTime 30s
	// (destination_rule.proto, OutlierDetection).
	istioDefaultConsecutive5xx = 5
	istioDefaultBaseEjection   = 30 * time.Second
)

// The documents the defaults above are cited from, as Pos.Default names
// them.
const (
	istioDocDefaultPolicy = "Istio: pilot/pkg/networking/core/route/retry/retry.go DefaultPolicy"
	istioDocConvert       = "Istio: pilot/pkg/networking/core/route/retry/retry.go ConvertPolicy"
	istioDocRetry         = "Istio v1.32 docs: networking.v1alpha3.HTTPRetry"
	istioDocEnvoyBackoff  = "Envoy v1.36 docs: config.route.v3.RetryPolicy.RetryBackOff"
	istioDocEnvoyRetry    = "Envoy v1.36 docs: config.route.v3.RetryPolicy (rate_limited_retry_back_off unset by Istio; no gRPC pushback)"
	istioDocBudget        = "Istio v1.32 docs: networking.v1alpha3.TrafficPolicy.RetryBudget"
	istioDocOutlier       = "Istio v1.32 docs: networking.v1alpha3.OutlierDetection"
	istioDocSidecar       = "Istio v1.32 docs: DestinationRule connectionPool (each sidecar, one per calling pod, holds its own limits)"
)

// istioAPIVersions are the versions of networking.istio.io read.
var istioAPIVersions = []string{"networking.istio.io/v1", "networking.istio.io/v1beta1", "networking.istio.io/v1alpha3"}

// The keys of the objects the reader walks, from the .proto files of
// istio.io/api v1.32.0 (JSON names, as the CRD schema has them).
var (
	istioKeysObject      = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	istioKeysVS          = []string{"hosts", "gateways", "http", "tls", "tcp", "exportTo"}
	istioKeysHTTPRoute   = []string{"name", "match", "route", "redirect", "directResponse", "delegate", "rewrite", "timeout", "retries", "fault", "mirror", "mirrors", "mirrorPercent", "mirrorPercentage", "corsPolicy", "headers"}
	istioKeysRouteDest   = []string{"destination", "weight", "headers"}
	istioKeysDestination = []string{"host", "subset", "port"}
	istioKeysRetry       = []string{"attempts", "perTryTimeout", "retryOn", "retryRemoteLocalities", "retryIgnorePreviousHosts", "backoff"}
	istioKeysDR          = []string{"host", "trafficPolicy", "subsets", "exportTo", "workloadSelector"}
	istioKeysTraffic     = []string{"loadBalancer", "connectionPool", "outlierDetection", "tls", "portLevelSettings", "tunnel", "proxyProtocol", "retryBudget"}
	istioKeysSubset      = []string{"name", "labels", "trafficPolicy"}
	istioKeysPool        = []string{"tcp", "http"}
	istioKeysPoolHTTP    = []string{"http1MaxPendingRequests", "http2MaxRequests", "maxRequestsPerConnection", "maxRetries", "idleTimeout", "h2UpgradePolicy", "useClientProtocol", "maxConcurrentStreams", "http2KeepAlive"}
	istioKeysOutlier     = []string{"consecutiveErrors", "splitExternalLocalOriginErrors", "consecutiveLocalOriginFailures", "consecutiveGatewayErrors", "consecutive5xxErrors", "interval", "baseEjectionTime", "maxEjectionPercent", "minHealthPercent", "outlierDetectionHttpErrorCodes", "failurePercentageThreshold"}
	istioKeysBudget      = []string{"percent", "minRetryConcurrency", "budgetInterval"}
)

// istioRetryOnPolicies are the retryOn words Istio accepts besides HTTP
// status codes (pkg/config/validation/validation.go,
// supportedRetryOnPolicies: Envoy's x-envoy-retry-on and
// x-envoy-retry-grpc-on values).
var istioRetryOnPolicies = []string{
	"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "retriable-4xx",
	"refused-stream", "retriable-status-codes", "retriable-headers", "envoy-ratelimited",
	"http3-post-connect-failure",
	"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable",
}

// istioStatusCodes are the HTTP status codes Istio takes in a retryOn:
// those Go's net/http names (validateHTTPRetry and parseRetryOn test
// http.StatusText(code) != ""), as of Go 1.26. Written out: net/http
// would add 2 MB to the browser lab's WebAssembly.
var istioStatusCodes = []int{
	100, 101, 102, 103,
	200, 201, 202, 203, 204, 205, 206, 207, 208, 226,
	300, 301, 302, 303, 304, 305, 307, 308,
	400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418,
	421, 422, 423, 424, 425, 426, 428, 429, 431, 451,
	500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
}

// istioFile is a file's VirtualServices and DestinationRules, checked.
type istioFile struct {
	file string
	e    errs
	vss  []*istioVS
	drs  []*istioDR
}

// istioVS is a VirtualService: its name and its http routes.
type istioVS struct {
	name   string
	id     string // VirtualService/NAME, the prefix of paths
	routes []istioRoute
}

// istioRoute is one http route: its node, its index and name.
type istioRoute struct {
	node  *yaml.Node
	index int
	name  string
}

// istioDR is a DestinationRule: its host and spec.
type istioDR struct {
	id   string
	host string
	spec *yaml.Node
}

// parseIstio reads and checks the file's VirtualServices and
// DestinationRules.
func parseIstio(file string, data []byte) (*istioFile, error) {
	docs, err := documents(file, data)
	if err != nil {
		return nil, err
	}
	f := &istioFile{file: file}
	for _, doc := range docs {
		kind := meshScalar(get(doc, "kind"))
		if kind != "VirtualService" && kind != "DestinationRule" {
			continue // other kinds are not retry policies
		}
		version := meshScalar(get(doc, "apiVersion"))
		if !slices.Contains(istioAPIVersions, version) {
			if strings.HasPrefix(version, "networking.istio.io/") {
				k, _ := field(doc, "apiVersion")
				f.e.at(at(file, k, "apiVersion"), "no %s in version %q (want %s)", kind, version, strings.Join(istioAPIVersions, ", "))
			}
			continue // a kind of the same name from another API group
		}
		name := meshScalar(get(doc, "metadata", "name"))
		id := kind + "/" + name
		f.keys(doc, id, istioKeysObject)
		if name == "" {
			f.e.at(at(file, doc, id+" metadata.name"), "metadata.name: Required value")
		}
		spec := get(doc, "spec")
		if spec == nil || spec.Kind != yaml.MappingNode {
			f.e.at(at(file, doc, id+" spec"), "spec: Required value")
			continue
		}
		if kind == "VirtualService" {
			f.vss = append(f.vss, f.virtualService(id, name, spec))
		} else {
			f.drs = append(f.drs, f.destinationRule(id, spec))
		}
	}
	if err := f.e.err(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *istioFile) virtualService(id, name string, spec *yaml.Node) *istioVS {
	vs := &istioVS{name: name, id: id}
	f.keys(spec, id+" spec", istioKeysVS)
	httpKey, routes := field(spec, "http")
	if routes == nil {
		return vs
	}
	if routes.Kind != yaml.SequenceNode {
		f.e.at(at(f.file, httpKey, id+" spec.http"), "must be a list")
		return vs
	}
	for i, r := range routes.Content {
		path := fmt.Sprintf("%s spec.http[%d]", id, i)
		if r.Kind != yaml.MappingNode {
			f.e.at(at(f.file, r, path), "must be an object")
			continue
		}
		f.keys(r, path, istioKeysHTTPRoute)
		vs.routes = append(vs.routes, istioRoute{node: r, index: i, name: meshScalar(get(r, "name"))})
		f.httpRoute(r, path)
	}
	return vs
}

// httpRoute checks the fields of an http route that the reader reads
// (validateHTTPRoute's, for these fields).
func (f *istioFile) httpRoute(r *yaml.Node, path string) {
	if k, v := field(r, "timeout"); k != nil {
		f.duration(k, v, path+".timeout")
	}
	if k, dests := field(r, "route"); k != nil {
		if dests.Kind != yaml.SequenceNode {
			f.e.at(at(f.file, k, path+".route"), "must be a list")
		} else {
			for i, d := range dests.Content {
				dpath := fmt.Sprintf("%s.route[%d]", path, i)
				f.keys(d, dpath, istioKeysRouteDest)
				dk, dest := field(d, "destination")
				if dk == nil {
					f.e.at(at(f.file, d, dpath), "destination is required")
					continue
				}
				f.keys(dest, dpath+".destination", istioKeysDestination)
				if meshScalar(get(dest, "host")) == "" {
					f.e.at(at(f.file, dk, dpath+".destination.host"), "destination.host: Required value")
				}
			}
		}
	}
	rk, retries := field(r, "retries")
	if rk == nil {
		return
	}
	rpath := path + ".retries"
	if retries.Kind != yaml.MappingNode {
		f.e.at(at(f.file, rk, rpath), "must be an object")
		return
	}
	f.keys(retries, rpath, istioKeysRetry)
	attempts := 0
	if k, v := field(retries, "attempts"); k != nil {
		n, ok := f.integer(k, v, rpath+".attempts")
		if ok && n < 0 {
			f.e.at(at(f.file, k, rpath+".attempts"), "attempts cannot be negative")
		}
		attempts = n
	}
	ptk, ptv := field(retries, "perTryTimeout")
	onk, onv := field(retries, "retryOn")
	rlk, rlv := field(retries, "retryRemoteLocalities")
	if attempts == 0 && (ptk != nil || onk != nil || rlk != nil) {
		f.e.at(at(f.file, rk, rpath), "http retry policy configured when attempts are set to 0 (disabled)")
	}
	if ptk != nil {
		f.duration(ptk, ptv, rpath+".perTryTimeout")
	}
	if onk != nil {
		if s, ok := f.str(onk, onv, rpath+".retryOn"); ok {
			// Istio splits on commas and checks each part as it is,
			// spaces included (validateHTTPRetry).
			for _, p := range strings.Split(s, ",") {
				code, _ := strconv.Atoi(p)
				if !slices.Contains(istioStatusCodes, code) && !slices.Contains(istioRetryOnPolicies, p) {
					f.e.at(at(f.file, onk, rpath+".retryOn"), "%q is not a valid retryOn policy", p)
				}
			}
		}
	}
	if rlk != nil {
		f.boolean(rlk, rlv, rpath+".retryRemoteLocalities")
	}
	if k, v := field(retries, "retryIgnorePreviousHosts"); k != nil {
		f.boolean(k, v, rpath+".retryIgnorePreviousHosts")
	}
	if k, v := field(retries, "backoff"); k != nil {
		f.duration(k, v, rpath+".backoff")
	}
}

func (f *istioFile) destinationRule(id string, spec *yaml.Node) *istioDR {
	dr := &istioDR{id: id, spec: spec}
	f.keys(spec, id+" spec", istioKeysDR)
	dr.host = meshScalar(get(spec, "host"))
	if dr.host == "" {
		f.e.at(at(f.file, spec, id+" spec.host"), "spec.host: Required value")
	}
	if k, tp := field(spec, "trafficPolicy"); k != nil {
		f.trafficPolicy(k, tp, id+" spec.trafficPolicy")
	}
	if k, subsets := field(spec, "subsets"); k != nil {
		if subsets.Kind != yaml.SequenceNode {
			f.e.at(at(f.file, k, id+" spec.subsets"), "must be a list")
		} else {
			for i, s := range subsets.Content {
				path := fmt.Sprintf("%s spec.subsets[%d]", id, i)
				f.keys(s, path, istioKeysSubset)
				if k, tp := field(s, "trafficPolicy"); k != nil {
					f.trafficPolicy(k, tp, path+".trafficPolicy")
				}
			}
		}
	}
	return dr
}

// trafficPolicy checks the fields of a traffic policy that the reader
// reads (validateTrafficPolicy's, for these fields, and the CRD's
// bounds).
func (f *istioFile) trafficPolicy(key, tp *yaml.Node, path string) {
	if tp.Kind != yaml.MappingNode {
		f.e.at(at(f.file, key, path), "must be an object")
		return
	}
	f.keys(tp, path, istioKeysTraffic)
	if k, pool := field(tp, "connectionPool"); k != nil {
		f.keys(pool, path+".connectionPool", istioKeysPool)
		if k, h := field(pool, "http"); k != nil {
			hpath := path + ".connectionPool.http"
			f.keys(h, hpath, istioKeysPoolHTTP)
			if k, v := field(h, "maxRetries"); k != nil {
				if n, ok := f.integer(k, v, hpath+".maxRetries"); ok && n < 0 {
					f.e.at(at(f.file, k, hpath+".maxRetries"), "max retries must be non-negative")
				}
			}
		}
	}
	if k, od := field(tp, "outlierDetection"); k != nil {
		opath := path + ".outlierDetection"
		f.keys(od, opath, istioKeysOutlier)
		for _, key := range []string{"consecutive5xxErrors", "consecutiveGatewayErrors"} {
			if k, v := field(od, key); k != nil {
				// UInt32Value: the CRD's minimum is 0.
				if n, ok := f.integer(k, v, opath+"."+key); ok && n < 0 {
					f.e.at(at(f.file, k, opath+"."+key), "should be greater than or equal to 0")
				}
			}
		}
		for _, key := range []string{"baseEjectionTime", "interval"} {
			if k, v := field(od, key); k != nil {
				f.duration(k, v, opath+"."+key)
			}
		}
	}
	if k, rb := field(tp, "retryBudget"); k != nil {
		bpath := path + ".retryBudget"
		f.keys(rb, bpath, istioKeysBudget)
		if k, v := field(rb, "percent"); k != nil {
			// +kubebuilder:validation:Minimum=0, Maximum=100
			if p, ok := f.number(k, v, bpath+".percent"); ok && (p < 0 || p > 100) {
				f.e.at(at(f.file, k, bpath+".percent"), "should be between 0 and 100, got %v", p)
			}
		}
		if k, v := field(rb, "minRetryConcurrency"); k != nil {
			if n, ok := f.integer(k, v, bpath+".minRetryConcurrency"); ok && n < 0 {
				f.e.at(at(f.file, k, bpath+".minRetryConcurrency"), "should be greater than or equal to 0")
			}
		}
		if k, v := field(rb, "budgetInterval"); k != nil {
			// +protoc-gen-crd:duration-validation:none: any duration.
			if s, ok := f.str(k, v, bpath+".budgetInterval"); ok {
				if _, err := time.ParseDuration(s); err != nil {
					f.e.at(at(f.file, k, bpath+".budgetInterval"), "invalid duration %q", s)
				}
			}
		}
	}
}

// keys refuses the keys of the mapping n that are not in known, at each
// key: the CRD schema has no such field, and kubectl's strict field
// validation refuses it.
func (f *istioFile) keys(n *yaml.Node, path string, known []string) {
	if n == nil || n.Kind != yaml.MappingNode {
		if n != nil {
			f.e.at(at(f.file, n, path), "must be an object")
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(known, k.Value) {
			f.e.at(at(f.file, k, path+"."+k.Value), "unknown field %q", k.Value)
		}
	}
}

func (f *istioFile) integer(k, v *yaml.Node, path string) (int, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		f.e.at(at(f.file, k, path), "must be an integer, got %q", v.Value)
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 0, 64)
	if err != nil || n > 1<<32-1 || n < -(1<<31) {
		f.e.at(at(f.file, k, path), "integer out of range: %s", v.Value)
		return 0, false
	}
	return int(n), true
}

func (f *istioFile) number(k, v *yaml.Node, path string) (float64, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		f.e.at(at(f.file, k, path), "must be a number, got %q", v.Value)
		return 0, false
	}
	x, err := strconv.ParseFloat(v.Value, 64)
	if err != nil {
		f.e.at(at(f.file, k, path), "must be a number, got %q", v.Value)
		return 0, false
	}
	return x, true
}

func (f *istioFile) str(k, v *yaml.Node, path string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		f.e.at(at(f.file, k, path), "must be a string, got %q", v.Value)
		return "", false
	}
	return v.Value, true
}

func (f *istioFile) boolean(k, v *yaml.Node, path string) (bool, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		f.e.at(at(f.file, k, path), "must be a boolean, got %q", v.Value)
		return false, false
	}
	return v.Value == "true", true
}

// duration reads a duration as Istio writes them (1h, 1m, 1s, 1ms) and
// refuses what agent.ValidateDuration refuses: less than 1 ms, or finer
// than 1 ms.
func (f *istioFile) duration(k, v *yaml.Node, path string) (time.Duration, bool) {
	s, ok := f.str(k, v, path)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		f.e.at(at(f.file, k, path), "invalid duration %q", s)
	case d < time.Millisecond:
		f.e.at(at(f.file, k, path), "duration must be greater than 1ms")
	case d%time.Millisecond != 0:
		f.e.at(at(f.file, k, path), "only durations to ms precision are supported")
	default:
		return d, true
	}
	return 0, false
}

// meshScalar is the value of a scalar node, or "".
func meshScalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// istioShort is a host's short name, its first label: the scenario's
// service name (orders.shop.svc.cluster.local -> orders).
func istioShort(host string) string {
	short, _, _ := strings.Cut(host, ".")
	return short
}

// rule returns the DestinationRule for host: the one whose host is host,
// or else one whose short name is host's (a rule in the route's
// namespace written with the short name; Istio resolves short names in
// the rule's namespace, which the reader assumes to be the route's).
func (f *istioFile) rule(host string) *istioDR {
	for _, dr := range f.drs {
		if dr.host == host {
			return dr
		}
	}
	for _, dr := range f.drs {
		if istioShort(dr.host) == istioShort(host) {
			return dr
		}
	}
	return nil
}

func readIstio(ref Ref, data []byte) (*Policy, error) {
	f, err := parseIstio(ref.File, data)
	if err != nil {
		return nil, err
	}
	name, route := ref.Name, ref.Route
	if route == "" {
		// all() names a virtual service's later routes NAME/ROUTE.
		name, route, _ = strings.Cut(ref.Name, "/")
	}
	var found *istioVS
	for _, vs := range f.vss {
		if vs.name == name {
			if found != nil {
				return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("two VirtualServices are named %q (in two namespaces?): keep one in the file", name)}
			}
			found = vs
		}
	}
	if found == nil {
		var names []string
		for _, vs := range f.vss {
			names = append(names, vs.name)
		}
		return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("no VirtualService %q in the file (it has: %s)", name, strings.Join(names, ", "))}
	}
	if len(found.routes) == 0 {
		return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("VirtualService %q has no http route", name)}
	}
	r := found.routes[0]
	if route != "" {
		ok := false
		for _, x := range found.routes {
			if x.name == route || fmt.Sprintf("http[%d]", x.index) == route {
				r, ok = x, true
				break
			}
		}
		if !ok {
			return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("VirtualService %q has no http route %q", name, route)}
		}
	}
	return f.policy(found, r), nil
}

func allIstio(file string, data []byte) (*Fragment, error) {
	f, err := parseIstio(file, data)
	if err != nil {
		return nil, err
	}
	out := &Fragment{}
	seen := map[string]bool{}
	for _, vs := range f.vss {
		for _, r := range vs.routes {
			p := f.policy(vs, r)
			out.Policies = append(out.Policies, p)
			if p.Service != "" && !seen[p.Service] {
				seen[p.Service] = true
				out.Services = append(out.Services, Service{Name: p.Service, Values: p.ServiceValues})
			}
		}
	}
	return out, nil
}

// policy is the herdlab strategy of one http route.
func (f *istioFile) policy(vs *istioVS, r istioRoute) *Policy {
	p := &Policy{Name: vs.name}
	if r.index != vs.routes[0].index {
		// The first route is the virtual service's name alone (Read's
		// default); the others add the route's name, or its index when
		// it has none.
		sel := r.name
		if sel == "" {
			sel = fmt.Sprintf("http[%d]", r.index)
		}
		p.Name = vs.name + "/" + sel
	}
	path := fmt.Sprintf("%s spec.http[%d]", vs.id, r.index)
	file := f.file

	// The route's first destination is the upstream; a weighted split's
	// other destinations are left out.
	var dr *istioDR
	subset := ""
	if dests := get(r.node, "route"); dests != nil && dests.Kind == yaml.SequenceNode && len(dests.Content) > 0 {
		dest := get(dests.Content[0], "destination")
		host := meshScalar(get(dest, "host"))
		p.Service = istioShort(host)
		dr = f.rule(host)
		subset = meshScalar(get(dest, "subset"))
	}

	// The route's timeout covers the request and all its retries; with
	// none, Istio sets none (HTTPRoute.timeout: "default is disabled").
	tk, tv := field(r.node, "timeout")
	var routeTimeout time.Duration
	if tk != nil {
		routeTimeout, _ = time.ParseDuration(tv.Value)
	}

	rk, retries := field(r.node, "retries")
	retrying := true
	switch {
	case rk == nil:
		// No retries: Istio's default policy, 2 retries.
		def := at(file, r.node, path+".retries")
		def.Default = istioDocDefaultPolicy
		p.Set("max_attempts", istioDefaultRetries+1, def)
	default:
		ak, av := field(retries, "attempts")
		if ak == nil {
			// retries without attempts: 0, which disables retries
			// (ConvertPolicy: in.Attempts <= 0 returns nil).
			pos := at(file, rk, path+".retries.attempts")
			pos.Default = istioDocConvert
			p.Set("max_attempts", 1, pos)
			retrying = false
			break
		}
		n, _ := strconv.Atoi(av.Value)
		p.Set("max_attempts", n+1, at(file, ak, path+".retries.attempts"))
		retrying = n > 0
	}

	// The per-try timeout: perTryTimeout, else the route's timeout (its
	// documented default); with neither Istio has no per-try timeout,
	// which herdlab cannot say (a strategy's timeout must be > 0): its
	// default, 30s, stands.
	var perTry time.Duration
	if k, v := field(retries, "perTryTimeout"); retrying && k != nil {
		perTry, _ = time.ParseDuration(v.Value)
		p.Set("timeout", perTry, at(file, k, path+".retries.perTryTimeout"))
	} else if tk != nil {
		pos := at(file, tk, path+".timeout")
		pos.Default = istioDocRetry + ".perTryTimeout (default: the route's timeout)"
		p.Set("timeout", routeTimeout, pos)
	}
	// herdlab's max_elapsed starts no retry after it; Envoy's route
	// timeout also ends the attempt in flight (504): the closest
	// counterpart.
	if tk != nil {
		p.Set("max_elapsed", routeTimeout, at(file, tk, path+".timeout"))
	}
	if !retrying {
		return f.service(p, dr, subset)
	}

	// retry_on: retryOn, or the default policy's.
	if k, v := field(retries, "retryOn"); k != nil {
		on := istioRetryOn(v.Value)
		if len(on) == 0 {
			// Only conditions herdlab's server never produces: the route
			// never retries here (an empty retry_on would read as
			// herdlab's default).
			p.Values[0] = Value{Field: "max_attempts", Value: 1, Pos: at(file, k, path+".retries.retryOn")}
			return f.service(p, dr, subset)
		}
		p.Set("retry_on", on, at(file, k, path+".retries.retryOn"))
	} else {
		pos := at(file, r.node, path+".retries.retryOn")
		if rk != nil {
			pos = at(file, rk, path+".retries.retryOn")
		}
		pos.Default = istioDocDefaultPolicy
		p.Set("retry_on", istioRetryOn(istioDefaultRetryOn), pos)
	}

	// The back-off: Envoy's, with retries.backoff its base.
	p.Set("backoff.kind", "envoy-jitter", istioDefaultAt(file, r.node, rk, path+".retries.backoff", istioDocEnvoyBackoff))
	if k, v := field(retries, "backoff"); k != nil {
		base, _ := time.ParseDuration(v.Value)
		pos := at(file, k, path+".retries.backoff")
		p.Set("backoff.base", base, pos)
		pos.Default = istioDocEnvoyBackoff + " (max_interval: 10 x base_interval)"
		p.Set("backoff.cap", istioEnvoyBackoffCapFactor*base, pos)
	} else {
		p.Set("backoff.base", istioEnvoyBackoffBase, istioDefaultAt(file, r.node, rk, path+".retries.backoff", istioDocEnvoyBackoff))
		p.Set("backoff.cap", istioEnvoyBackoffCapFactor*istioEnvoyBackoffBase, istioDefaultAt(file, r.node, rk, path+".retries.backoff", istioDocEnvoyBackoff+" (max_interval: 10 x base_interval)"))
	}
	// Envoy waits for a Retry-After only with rate_limited_retry_back_off,
	// which Istio never writes, and reads no gRPC pushback: herdlab's
	// defaults (honour both) differ.
	p.Set("retry_after.mode", "ignore", istioDefaultAt(file, r.node, rk, path+".retries", istioDocEnvoyRetry))
	p.Set("ignore_pushback", true, istioDefaultAt(file, r.node, rk, path+".retries", istioDocEnvoyRetry))

	budgeted := f.budget(p, dr, subset)
	if !budgeted {
		where := at(file, r.node, path)
		msg := "the route retries with Istio's default policy (2 retries on connect-failure, refused-stream, unavailable, cancelled, 503) and no retry budget: every hop of a mesh retries, 3 attempts per hop, 3^L at the bottom of L hops; set retries deliberately and a DestinationRule retryBudget or connectionPool.http.maxRetries"
		if rk != nil {
			where = at(file, rk, path+".retries")
			msg = "the route retries without a retry budget: Istio's default connectionPool.http.maxRetries is 2^32-1, no limit; set a DestinationRule retryBudget or connectionPool.http.maxRetries"
		}
		if dr == nil {
			msg += fmt.Sprintf(" (no DestinationRule for %q in the file)", p.Service)
		}
		p.Hazards = append(p.Hazards, Hazard{Rule: HazardNoBudget, Pos: where, Msg: msg})
	}
	if k, _ := field(retries, "perTryTimeout"); k != nil && tk != nil && perTry >= routeTimeout {
		p.Hazards = append(p.Hazards, Hazard{Rule: HazardPerTryTimeout, Pos: at(file, k, path+".retries.perTryTimeout"),
			Msg: fmt.Sprintf("perTryTimeout %s is not shorter than the route's timeout %s: a try that times out leaves no time for a retry", perTry, routeTimeout)})
	}
	return f.service(p, dr, subset)
}

// istioDefaultAt is the position of a default the reader fills in: the
// retries block when written, else the route.
func istioDefaultAt(file string, route, retries *yaml.Node, path, doc string) Pos {
	n := route
	if retries != nil {
		n = retries
	}
	p := at(file, n, path)
	p.Default = doc
	return p
}

// istioTraffic returns the DestinationRule's traffic policy field key
// for subset: the subset's when it writes one (port-level settings are
// not read), else the rule's.
func istioTraffic(dr *istioDR, subset, key string) (k, v *yaml.Node, path string) {
	if dr == nil {
		return nil, nil, ""
	}
	if subset != "" {
		if subsets := get(dr.spec, "subsets"); subsets != nil && subsets.Kind == yaml.SequenceNode {
			for i, s := range subsets.Content {
				if meshScalar(get(s, "name")) == subset {
					if k, v := field(get(s, "trafficPolicy"), key); k != nil {
						return k, v, fmt.Sprintf("%s spec.subsets[%d].trafficPolicy.%s", dr.id, i, key)
					}
				}
			}
		}
	}
	k, v = field(get(dr.spec, "trafficPolicy"), key)
	return k, v, dr.id + " spec.trafficPolicy." + key
}

// budget sets the route's budget from its DestinationRule, and says
// whether there is one. Envoy's circuit breakers are per Envoy, and
// Istio runs one sidecar per calling pod: the budget is each sender's
// (scope sender).
func (f *istioFile) budget(p *Policy, dr *istioDR, subset string) bool {
	file := f.file
	if k, rb, path := istioTraffic(dr, subset, "retryBudget"); k != nil {
		// A retry budget overrides max_retries (Envoy v1.36 docs:
		// config.cluster.v3.CircuitBreakers.Thresholds.retry_budget).
		p.Set("budget.kind", "envoy", at(file, k, path))
		if pk, pv := field(rb, "percent"); pk != nil {
			x, _ := strconv.ParseFloat(pv.Value, 64)
			p.Set("budget.percent", x, at(file, pk, path+".percent"))
		} else {
			pos := at(file, k, path+".percent")
			pos.Default = istioDocBudget
			p.Set("budget.percent", istioDefaultBudgetPercent, pos)
		}
		// minRetryConcurrency is a plain uint32: 0 is unset, Envoy's
		// default 3.
		if mk, mv := field(rb, "minRetryConcurrency"); mk != nil && mv.Value != "0" {
			n, _ := strconv.Atoi(mv.Value)
			p.Set("budget.min_concurrency", n, at(file, mk, path+".minRetryConcurrency"))
		} else {
			pos := at(file, k, path+".minRetryConcurrency")
			pos.Default = istioDocBudget
			p.Set("budget.min_concurrency", istioDefaultMinRetryConcurrency, pos)
		}
		pos := at(file, k, path)
		pos.Default = istioDocSidecar
		p.Set("budget.scope", "sender", pos)
		return true
	}
	if k, pool, path := istioTraffic(dr, subset, "connectionPool"); k != nil {
		mk, mv := field(get(pool, "http"), "maxRetries")
		// 0 is unset: Istio's default, 2^32-1, no limit
		// (cluster_traffic_policy.go, getDefaultCircuitBreakerThresholds).
		if mk != nil && mv.Value != "0" {
			n, _ := strconv.Atoi(mv.Value)
			pos := at(file, mk, path+".http.maxRetries")
			p.Set("budget.kind", "envoy", pos)
			p.Set("budget.percent", 0.0, pos) // the floor alone: max_retries in flight
			p.Set("budget.min_concurrency", n, pos)
			pos.Default = istioDocSidecar
			p.Set("budget.scope", "sender", pos)
			return true
		}
	}
	return false
}

// service sets the upstream's outlier detection from its
// DestinationRule.
func (f *istioFile) service(p *Policy, dr *istioDR, subset string) *Policy {
	k, od, path := istioTraffic(dr, subset, "outlierDetection")
	if k == nil {
		return p
	}
	file := f.file
	set := func(field string, v any, pos Pos) {
		p.ServiceValues = append(p.ServiceValues, Value{Field: field, Value: v, Pos: pos})
	}
	// consecutive5xxErrors, default 5; 0 disables it, and then
	// consecutiveGatewayErrors (502, 503, 504 and connect failures:
	// herdlab's server answers 503) is the count, if set.
	ck, cv := field(od, "consecutive5xxErrors")
	gk, gv := field(od, "consecutiveGatewayErrors")
	switch {
	case ck != nil && cv.Value != "0":
		n, _ := strconv.Atoi(cv.Value)
		set("health.consecutive", n, at(file, ck, path+".consecutive5xxErrors"))
	case ck == nil && (gk == nil || gv.Value == "0"):
		pos := at(file, k, path+".consecutive5xxErrors")
		pos.Default = istioDocOutlier
		set("health.consecutive", istioDefaultConsecutive5xx, pos)
	case gk != nil && gv.Value != "0":
		// The smaller count ejects first: gateway errors are 5xx too.
		n, _ := strconv.Atoi(gv.Value)
		if ck == nil && n >= istioDefaultConsecutive5xx {
			pos := at(file, k, path+".consecutive5xxErrors")
			pos.Default = istioDocOutlier
			set("health.consecutive", istioDefaultConsecutive5xx, pos)
			break
		}
		set("health.consecutive", n, at(file, gk, path+".consecutiveGatewayErrors"))
	default:
		return p // both counts 0: no ejection
	}
	if bk, bv := field(od, "baseEjectionTime"); bk != nil {
		d, _ := time.ParseDuration(bv.Value)
		set("health.eject_for", d, at(file, bk, path+".baseEjectionTime"))
	} else {
		pos := at(file, k, path+".baseEjectionTime")
		pos.Default = istioDocOutlier
		set("health.eject_for", istioDefaultBaseEjection, pos)
	}
	return p
}

// istioRetryOn maps an Istio retryOn (Envoy's retry_on conditions, and
// HTTP status codes, which Istio turns into retriable-status-codes) to
// herdlab's outcomes, in herdlab's order. From Envoy v1.36 docs
// (x-envoy-retry-on, x-envoy-retry-grpc-on):
//
//   - 5xx, gateway-error: a 5xx (a 502, 503 or 504) answer, or no answer
//     at all (connect failure, reset, per-try timeout): refused,
//     timeout, reset, 5xx (herdlab's server answers 503);
//   - reset: no answer: refused, timeout, reset;
//   - connect-failure, reset-before-request: refused;
//   - unavailable, resource-exhausted (gRPC upstreams): 5xx, 429;
//   - status codes: 503 is 5xx, 429 is 429, another 4xx is 4xx.
//
// Without a counterpart, left out: refused-stream (HTTP/2
// REFUSED_STREAM), retriable-4xx (409 only), envoy-ratelimited,
// retriable-headers, http3-post-connect-failure, the gRPC cancelled,
// deadline-exceeded and internal, and status codes herdlab's server
// never answers (500, 502, 504 ...).
func istioRetryOn(retryOn string) []string {
	set := map[string]bool{}
	for _, part := range strings.Split(retryOn, ",") {
		part = strings.TrimSpace(part)
		outs := envoyRetryOn[part]
		if code, err := strconv.Atoi(part); err == nil && code > 0 {
			outs = envoyStatusCodes([]uint32{uint32(code)}) // a bare number is a retriable status code
		}
		for _, o := range outs {
			set[o] = true
		}
	}
	if out := ordered(set); out != nil {
		return out
	}
	return []string{}
}
