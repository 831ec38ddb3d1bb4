//go:build !js

package configs

// The Envoy reader: a v3 bootstrap (YAML or JSON), parsed with Envoy's own
// Go types (go-control-plane) and protojson, and checked with their
// generated validation (protoc-gen-validate), so that what Envoy refuses
// is refused here with Envoy's reason, placed at the user's key.
//
// A policy is a named route of an http_connection_manager's inline
// route_config (static_resources.listeners[].filter_chains[].filters[]):
// its retry_policy (or its virtual host's), hedge_policy, timeout, and the
// circuit breakers and outlier detection of the cluster it routes to.
//
// Documents cited below: the proto comments of Envoy's v3 API as shipped
// in github.com/envoyproxy/go-control-plane/envoy v1.40.0 ("Envoy v1.40
// API"), the router filter's documentation and source
// (docs/root/configuration/http/http_filters/router_filter.rst,
// source/common/router/retry_state_impl.cc, retry_policy_impl.cc,
// router.cc of envoyproxy/envoy, "Envoy router").

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/zeontools/herdlab/strategies"

	// The typed_config types a usual bootstrap holds, registered for
	// protojson's Any: an @type not among them is refused by name.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

func init() { readers[Envoy] = reader{read: readEnvoy, all: allEnvoy} }

// Envoy's defaults, each with the document that sets it.
const (
	// docRetryOn: "By default, Envoy will *not* perform retries unless
	// you've configured them" (router filter, x-envoy-retry-on); a route
	// without a retry policy, or whose retry_on names no condition, is
	// sent once (retry_state_impl.cc creates no retry state).
	docRetryOn = "Envoy v1.40 docs: router filter, x-envoy-retry-on"
	// envoyNumRetries: RetryPolicy.num_retries "defaults to 1".
	envoyNumRetries = 1
	docNumRetries   = "Envoy v1.40 API: config.route.v3.RetryPolicy.num_retries"
	// envoyRouteTimeout: RouteAction.timeout "If not specified, the
	// default is 15s ... A value of 0 will disable the route's timeout.
	// This timeout includes all retries."
	envoyRouteTimeout = 15 * time.Second
	docRouteTimeout   = "Envoy v1.40 API: config.route.v3.RouteAction.timeout"
	// docPerTryTimeout: RetryPolicy.per_try_timeout "If left
	// unspecified, Envoy will use the global route timeout".
	docPerTryTimeout = "Envoy v1.40 API: config.route.v3.RetryPolicy.per_try_timeout"
	// envoyBaseInterval, envoyMaxIntervalFactor: RetryPolicy.retry_back_off
	// "the default base interval is 25 milliseconds ... The default
	// maximum interval is 10 times the base interval" (the runtime key
	// upstream.base_retry_backoff_ms can change the 25ms; a file does not
	// say, so the reader takes the documented default).
	envoyBaseInterval      = 25 * time.Millisecond
	envoyMaxIntervalFactor = 10
	docRetryBackOff        = "Envoy v1.40 API: config.route.v3.RetryPolicy.retry_back_off"
	// envoyResetMaxInterval: RateLimitedRetryBackOff.max_interval
	// "Defaults to 300 seconds."
	envoyResetMaxInterval = 300 * time.Second
	docRateLimited        = "Envoy v1.40 API: config.route.v3.RetryPolicy.rate_limited_retry_back_off"
	// envoyMaxRetries, envoyMaxRequests: CircuitBreakers.Thresholds
	// max_retries "If not specified, the default is 3"; max_requests
	// "If not specified, the default is 1024".
	envoyMaxRetries  = 3
	envoyMaxRequests = 1024
	docThresholds    = "Envoy v1.40 API: config.cluster.v3.CircuitBreakers.Thresholds"
	// envoyBudgetPercent, envoyMinRetryConcurrency: RetryBudget
	// budget_percent "Defaults to 20%", min_retry_concurrency "Defaults
	// to 3".
	envoyBudgetPercent       = 20.0
	envoyMinRetryConcurrency = 3
	docRetryBudget           = "Envoy v1.40 API: config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget"
	// docBreakerScope: circuit breakers are "per upstream cluster" and
	// shared by every request this Envoy sends to it; the reader takes
	// the file as a front proxy in front of the whole fleet of senders,
	// so the budget's scope is fleet (a sidecar per sender would be
	// scope sender: write it beside from:).
	docBreakerScope = "Envoy v1.40 docs: circuit breaking, limits per upstream cluster"
	// envoyConsecutive5xx, envoyBaseEjection: OutlierDetection
	// consecutive_5xx "Defaults to 5", base_ejection_time "Defaults to
	// 30000ms or 30s".
	envoyConsecutive5xx = 5
	envoyBaseEjection   = 30 * time.Second
	docOutlier          = "Envoy v1.40 API: config.cluster.v3.OutlierDetection"
	// envoyChoiceCount: LeastRequestLbConfig.choice_count "Defaults to 2
	// so that we perform two-choice selection".
	envoyChoiceCount = 2
)

// envoyFile is a parsed, valid bootstrap with its YAML nodes.
type envoyFile struct {
	file     string
	routes   []*envoyRoute
	clusters []*envoyCluster
}

// envoyRoute is a route of an inline route_config, with the nodes it and
// its virtual host were read from.
type envoyRoute struct {
	name         string
	r            *routev3.Route
	n            *yaml.Node // the route's mapping
	path         string
	vh           *routev3.VirtualHost
	vhN          *yaml.Node
	vhPath       string
	noValidation bool // the route_config's validate_clusters is false
}

type envoyCluster struct {
	c    *clusterv3.Cluster
	n    *yaml.Node
	path string
}

func (f *envoyFile) cluster(name string) *envoyCluster {
	for _, c := range f.clusters {
		if c.c.GetName() == name {
			return c
		}
	}
	return nil
}

func readEnvoy(ref Ref, data []byte) (*Policy, error) {
	f, err := parseEnvoy(ref.File, data)
	if err != nil {
		return nil, err
	}
	var found []*envoyRoute
	for _, r := range f.routes {
		if r.name == ref.Name {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		var names []string
		for _, r := range f.routes {
			if r.name != "" {
				names = append(names, r.name)
			}
		}
		return nil, &Error{Pos: Pos{File: ref.File, Line: 1, Col: 1, Path: "routes"},
			Msg: fmt.Sprintf("no route named %q (the named routes: %s)", ref.Name, strings.Join(names, ", "))}
	case 1:
		p, err := f.policy(found[0])
		if err != nil {
			return nil, err
		}
		shorten(p)
		return p, nil
	}
	return nil, ambiguous(f.file, found)
}

// shorten writes the paths of the values read from the nearest object a
// reader recognises: routes[1].route.retry_policy.num_retries, not the
// listener, filter chain, filter, route config and virtual host above
// it; clusters[0].outlier_detection, not static_resources.clusters[0].
// Errors keep the whole path.
func shorten(p *Policy) {
	short := func(path string) string {
		if i := strings.LastIndex(path, "virtual_hosts["); i >= 0 {
			path = path[i:]
			if j := strings.Index(path, ".routes["); j >= 0 {
				path = path[j+1:]
			}
			return path
		}
		return strings.TrimPrefix(path, "static_resources.")
	}
	for i := range p.Values {
		p.Values[i].Pos.Path = short(p.Values[i].Pos.Path)
	}
	for i := range p.ServiceValues {
		p.ServiceValues[i].Pos.Path = short(p.ServiceValues[i].Pos.Path)
	}
	for i := range p.Hazards {
		p.Hazards[i].Pos.Path = short(p.Hazards[i].Pos.Path)
	}
}

// ambiguous refuses a route name written more than once: herdlab selects
// a route by its name alone (Envoy allows the same name in two virtual
// hosts).
func ambiguous(file string, rs []*envoyRoute) error {
	var e errs
	first, _ := field(rs[0].n, "name")
	for _, r := range rs[1:] {
		k, _ := field(r.n, "name")
		e.at(at(file, k, r.path+".name"), "route name %q is also at line %d:%d: herdlab selects a route by its name, which must be unique in the file", r.name, first.Line, first.Column)
	}
	return e.err()
}

func allEnvoy(file string, data []byte) (*Fragment, error) {
	f, err := parseEnvoy(file, data)
	if err != nil {
		return nil, err
	}
	frag := &Fragment{}
	seen := map[string][]*envoyRoute{}
	var e errs
	for _, r := range f.routes {
		// An unnamed route cannot be selected, and a route that does not
		// forward (a redirect, a direct response) never retries.
		if r.name == "" || r.r.GetRoute() == nil {
			continue
		}
		seen[r.name] = append(seen[r.name], r)
		if len(seen[r.name]) > 1 {
			continue
		}
		p, err := f.policy(r)
		if err != nil {
			return nil, err
		}
		shorten(p)
		frag.Policies = append(frag.Policies, p)
	}
	for _, r := range frag.Policies {
		if rs := seen[r.Name]; len(rs) > 1 {
			e = append(e, ambiguous(file, rs))
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	for _, c := range f.clusters {
		svc := &Policy{ServiceValues: f.serviceValues(c, true)}
		shorten(svc)
		frag.Services = append(frag.Services, Service{Name: c.c.GetName(), Values: svc.ServiceValues})
	}
	return frag, nil
}

// parseEnvoy parses and validates a bootstrap, and finds its routes and
// clusters.
func parseEnvoy(file string, data []byte) (*envoyFile, error) {
	docs, err := documents(file, data)
	if err != nil {
		return nil, err
	}
	if len(docs) > 1 {
		return nil, &Error{Pos: at(file, docs[1], ""), Msg: "an Envoy bootstrap is one document; this file holds more"}
	}
	root := docs[0]
	j := &nodeJSON{file: file}
	j.write(root, root, "")
	if err := j.e.err(); err != nil {
		return nil, err
	}
	var bs bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j.buf.Bytes(), &bs); err != nil {
		pos, msg := j.place(err)
		if m := unresolved.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown @type %s: herdlab's Envoy reader knows the types a usual bootstrap holds (the HTTP connection manager; the router, buffer, CORS, fault, gRPC-Web, health check and local rate limit HTTP filters; the TCP proxy; file and stream access logs; TLS transport sockets; HTTP protocol options; the round-robin, random and least-request balancers), and cannot check an extension it does not know", m[1])
		}
		return nil, &Error{Pos: pos, Msg: msg}
	}
	var e errs
	validateTree(&e, file, bs.ProtoReflect(), root, root, "")
	if err := e.err(); err != nil {
		return nil, err
	}
	f := &envoyFile{file: file}
	f.find(&e, &bs, root)
	return f, e.err()
}

// unresolved matches protojson's error for an Any whose @type is not
// registered.
var unresolved = regexp.MustCompile(`^unable to resolve ("[^"]*")`)

// find collects the clusters and the routes of every inline route_config,
// and refuses what Envoy refuses beyond its protos' own validation.
func (f *envoyFile) find(e *errs, bs *bootstrapv3.Bootstrap, root *yaml.Node) {
	_, srN := protoField(root, "static_resources")
	_, clN := protoField(srN, "clusters")
	for i, c := range bs.GetStaticResources().GetClusters() {
		n := item(clN, i)
		path := fmt.Sprintf("static_resources.clusters[%d]", i)
		if prev := f.cluster(c.GetName()); prev != nil {
			k, _ := field(n, "name")
			e.at(at(f.file, k, path+".name"), "cluster manager: duplicate cluster '%s' (also at line %d)", c.GetName(), prev.n.Line)
			continue
		}
		f.clusters = append(f.clusters, &envoyCluster{c: c, n: n, path: path})
	}
	_, lsN := protoField(srN, "listeners")
	for li, l := range bs.GetStaticResources().GetListeners() {
		lN := item(lsN, li)
		lPath := fmt.Sprintf("static_resources.listeners[%d]", li)
		_, fcsN := protoField(lN, "filter_chains")
		chains := l.GetFilterChains()
		for ci, fc := range chains {
			f.findChain(e, fc, item(fcsN, ci), fmt.Sprintf("%s.filter_chains[%d]", lPath, ci))
		}
		if fc := l.GetDefaultFilterChain(); fc != nil {
			_, n := protoField(lN, "default_filter_chain")
			f.findChain(e, fc, n, lPath+".default_filter_chain")
		}
	}
}

func (f *envoyFile) findChain(e *errs, fc *listenerv3.FilterChain, chainN *yaml.Node, path string) {
	_, fsN := protoField(chainN, "filters")
	for fi, flt := range fc.GetFilters() {
		fN := item(fsN, fi)
		fPath := fmt.Sprintf("%s.filters[%d]", path, fi)
		a := flt.GetTypedConfig()
		if a == nil {
			continue
		}
		var hcm hcmv3.HttpConnectionManager
		if !a.MessageIs(&hcm) {
			continue
		}
		if err := a.UnmarshalTo(&hcm); err != nil {
			continue // validateTree has refused it
		}
		rc := hcm.GetRouteConfig()
		if rc == nil {
			continue // routes from RDS: not in the file
		}
		tcK, tcN := protoField(fN, "typed_config")
		rcK, rcN := protoField(tcN, "route_config")
		rcPath := joinPath(joinPath(fPath, keyOr(tcK, "typed_config")), keyOr(rcK, "route_config"))
		noValidation := rc.GetValidateClusters() != nil && !rc.GetValidateClusters().GetValue()
		_, vhsN := protoField(rcN, "virtual_hosts")
		for vi, vh := range rc.GetVirtualHosts() {
			vhN := item(vhsN, vi)
			vhPath := fmt.Sprintf("%s.virtual_hosts[%d]", rcPath, vi)
			f.checkBackOff(e, vh.GetRetryPolicy(), vhN, vhPath)
			_, rsN := protoField(vhN, "routes")
			for ri, r := range vh.GetRoutes() {
				rN := item(rsN, ri)
				rPath := fmt.Sprintf("%s.routes[%d]", vhPath, ri)
				er := &envoyRoute{name: r.GetName(), r: r, n: rN, path: rPath, vh: vh, vhN: vhN, vhPath: vhPath, noValidation: noValidation}
				f.routes = append(f.routes, er)
				_, raN := protoField(rN, "route")
				f.checkBackOff(e, r.GetRoute().GetRetryPolicy(), raN, rPath+".route")
				if !noValidation {
					f.checkClusters(e, r.GetRoute(), raN, rPath+".route")
				}
			}
		}
	}
}

// checkClusters refuses a route to a cluster the file does not define,
// as Envoy refuses it for a static route_config, whose validate_clusters
// defaults to true (config_impl.cc: "route: unknown cluster '%s'").
func (f *envoyFile) checkClusters(e *errs, ra *routev3.RouteAction, raN *yaml.Node, path string) {
	const why = ": Envoy checks the clusters of a static route_config (validate_clusters: false lets one come from CDS)"
	if c := ra.GetCluster(); c != "" && f.cluster(c) == nil {
		k, _ := protoField(raN, "cluster")
		e.at(at(f.file, k, joinPath(path, keyOr(k, "cluster"))), "route: unknown cluster '%s'%s", c, why)
	}
	_, wcN := protoField(raN, "weighted_clusters")
	_, csN := protoField(wcN, "clusters")
	for i, w := range ra.GetWeightedClusters().GetClusters() {
		if f.cluster(w.GetName()) == nil {
			k, _ := protoField(item(csN, i), "name")
			e.at(at(f.file, k, fmt.Sprintf("%s.weighted_clusters.clusters[%d].name", path, i)), "route: unknown cluster '%s'%s", w.GetName(), why)
		}
	}
}

// checkBackOff refuses what RetryPolicyImpl refuses: a max_interval
// shorter than the base_interval, both rounded up to 1ms
// (retry_policy_impl.cc: "retry_policy.max_interval must greater than or
// equal to the base_interval").
func (f *envoyFile) checkBackOff(e *errs, rp *routev3.RetryPolicy, owner *yaml.Node, path string) {
	bo := rp.GetRetryBackOff()
	if bo == nil || bo.GetMaxInterval() == nil {
		return
	}
	base, maxI := envoyMillis(bo.GetBaseInterval().AsDuration()), envoyMillis(bo.GetMaxInterval().AsDuration())
	if maxI < base {
		rpK, rpN := protoField(owner, "retry_policy")
		boK, boN := protoField(rpN, "retry_back_off")
		k, _ := protoField(boN, "max_interval")
		p := joinPath(joinPath(joinPath(path, keyOr(rpK, "retry_policy")), keyOr(boK, "retry_back_off")), keyOr(k, "max_interval"))
		e.at(at(f.file, k, p), "max_interval %v is shorter than base_interval %v: Envoy refuses it (max_interval must be greater than or equal to the base_interval)", maxI, base)
	}
}

// envoyMillis is a back-off interval as Envoy keeps it: whole
// milliseconds, at least 1 (retry_policy_impl.cc: "Values less than 1
// ms are rounded up to 1 ms").
func envoyMillis(d time.Duration) time.Duration {
	return max(d.Truncate(time.Millisecond), time.Millisecond)
}

// at places a value read from the key k of the file, at path.
func (f *envoyFile) at(k *yaml.Node, path string) Pos { return at(f.file, k, path) }

// dflt places a default filled in for the field path, missing from the
// object whose key (or node) is owner.
func (f *envoyFile) dflt(owner *yaml.Node, path, doc string) Pos {
	p := at(f.file, owner, path)
	p.Default = doc
	return p
}

// policy reads the route r as herdlab strategy fields.
func (f *envoyFile) policy(r *envoyRoute) (*Policy, error) {
	ra := r.r.GetRoute()
	if ra == nil {
		kind := "non-forwarding"
		switch r.r.GetAction().(type) {
		case *routev3.Route_Redirect:
			kind = "redirect"
		case *routev3.Route_DirectResponse:
			kind = "direct_response"
		}
		k, _ := field(r.n, "name")
		return nil, &Error{Pos: f.at(k, r.path+".name"), Msg: fmt.Sprintf("route %q does not forward (it is a %s): it has no retry policy", r.name, kind)}
	}
	p := &Policy{Name: r.name, Service: ra.GetCluster()}
	raK, raN := protoField(r.n, "route")
	raPath := joinPath(r.path, keyOr(raK, "route"))

	// The route timeout covers the first attempt and every retry with
	// its back-off; Envoy stops the request when it passes. herdlab's
	// max_elapsed stops starting retries after it, and lets an attempt
	// under way run on to its own timeout: the two agree when the
	// per-try timeout is well under the route's.
	routeTimeout := envoyRouteTimeout
	rtPos := f.dflt(raK, raPath+".timeout", docRouteTimeout)
	if t := ra.GetTimeout(); t != nil {
		k, _ := protoField(raN, "timeout")
		routeTimeout, rtPos = t.AsDuration(), f.at(k, joinPath(raPath, k.Value))
	}

	// The retry policy is the route's, else its virtual host's: "it'll
	// take precedence over the virtual host level retry policy entirely"
	// (RouteAction.retry_policy). Likewise the hedge policy.
	rp, rpOwner, rpPath := ra.GetRetryPolicy(), raN, raPath
	if rp == nil && r.vh.GetRetryPolicy() != nil {
		rp, rpOwner, rpPath = r.vh.GetRetryPolicy(), r.vhN, r.vhPath
	}
	hp, hpOwner, hpPath := ra.GetHedgePolicy(), raN, raPath
	if hp == nil && r.vh.GetHedgePolicy() != nil {
		hp, hpOwner, hpPath = r.vh.GetHedgePolicy(), r.vhN, r.vhPath
	}
	cl := f.cluster(ra.GetCluster())

	if rp == nil {
		p.Set("max_attempts", 1, f.dflt(raK, raPath+".retry_policy", docRetryOn))
		if routeTimeout > 0 {
			p.Set("timeout", routeTimeout, rtPos)
		}
		f.setService(p, cl)
		return p, nil
	}
	rpK, rpN := protoField(rpOwner, "retry_policy")
	rpPath = joinPath(rpPath, rpK.Value)
	key := func(n *yaml.Node, name, path string) (*yaml.Node, *yaml.Node, string) {
		k, v := protoField(n, name)
		if k == nil {
			return nil, nil, joinPath(path, name)
		}
		return k, v, joinPath(path, k.Value)
	}

	// retry_on.
	roK, _, roPath := key(rpN, "retry_on", rpPath)
	var envoyConds int
	set := map[string]bool{}
	for _, tok := range strings.Split(rp.GetRetryOn(), ",") {
		tok = strings.TrimSpace(tok)
		outs, ok := envoyRetryOn[tok]
		if !ok {
			continue
		}
		envoyConds++
		if tok == "retriable-status-codes" {
			outs = envoyStatusCodes(rp.GetRetriableStatusCodes())
		}
		for _, o := range outs {
			set[o] = true
		}
	}
	retryOn := ordered(set)

	numRetries, nrPos := uint32(envoyNumRetries), f.dflt(rpK, rpPath+".num_retries", docNumRetries)
	if n := rp.GetNumRetries(); n != nil {
		k, _, path := key(rpN, "num_retries", rpPath)
		numRetries, nrPos = n.GetValue(), f.at(k, path)
	}

	// The cluster's retry limit: a retry budget, else max_retries
	// concurrent retries (default 3). max_retries 0 lets no retry go.
	budget, hazards, noRetries := f.budget(cl, ra.GetPriority(), rpK, rpPath)

	switch {
	case envoyConds == 0:
		// No condition Envoy knows: it does not retry.
		pos := f.dflt(rpK, roPath, docRetryOn)
		if roK != nil {
			pos = f.at(roK, roPath)
		}
		p.Set("max_attempts", 1, pos)
		numRetries = 0
	case len(retryOn) == 0:
		// Envoy retries only on outcomes herdlab never produces (an
		// empty retry_on would be herdlab's default set, not none).
		p.Set("max_attempts", 1, f.at(roK, roPath))
		numRetries = 0
	case noRetries != nil:
		p.Set("max_attempts", 1, *noRetries)
		numRetries = 0
	default:
		p.Set("max_attempts", int(numRetries)+1, nrPos)
	}

	// Per-try timeout: "If left unspecified, Envoy will use the global
	// route timeout"; one not shorter than the route's is ignored
	// (router.cc finalTimeout: per_try_timeout_ >= global_timeout_ and
	// global_timeout_ != 0 sets it to 0).
	pt := rp.GetPerTryTimeout().AsDuration()
	ptK, _, ptPath := key(rpN, "per_try_timeout", rpPath)
	perTry := rp.GetPerTryTimeout() != nil && (routeTimeout == 0 || pt < routeTimeout)
	if rp.GetPerTryTimeout() != nil && !perTry {
		p.Hazards = append(p.Hazards, Hazard{Rule: HazardPerTryTimeout, Pos: f.at(ptK, ptPath),
			Msg: fmt.Sprintf("per_try_timeout %v is not shorter than the route timeout %v: Envoy ignores it, and the first attempt uses the whole route timeout, leaving no time for a retry", pt, routeTimeout)})
	}

	// Hedging: Envoy hedges only on the per-try timeout
	// (HedgePolicy.hedge_on_per_try_timeout; initial_requests and
	// additional_request_chance are "not-implemented-hide" and left out):
	// when it fires a retry goes without resetting the attempt under way,
	// the first good answer wins and the others are reset. In herdlab
	// that is a hedge every per_try_timeout, as many as retries, with
	// cancel; the attempt is then bounded by the route timeout, not the
	// per-try one. Envoy counts hedges and retries of errors against the
	// one num_retries; herdlab counts them apart (max_attempts bounds the
	// attempts, hedge.max the copies of each), so herdlab may send more
	// copies than Envoy would when errors and slow answers mix.
	hedge := hp.GetHedgeOnPerTryTimeout() && perTry && numRetries > 0
	switch {
	case hedge:
		if routeTimeout > 0 {
			p.Set("timeout", routeTimeout, rtPos)
		}
	case perTry:
		p.Set("timeout", pt, f.at(ptK, ptPath))
	case routeTimeout > 0:
		// Unwritten, or ignored: the route timeout. (With the route
		// timeout 0 and no per-try timeout an attempt has no timeout,
		// which herdlab cannot say: timeout is left out.)
		pos := rtPos
		if rp.GetPerTryTimeout() == nil {
			pos = f.dflt(rpK, ptPath, docPerTryTimeout)
		}
		p.Set("timeout", routeTimeout, pos)
	}
	if numRetries == 0 {
		f.setService(p, cl)
		return p, nil
	}
	if routeTimeout > 0 {
		p.Set("max_elapsed", routeTimeout, rtPos)
	}
	p.Set("retry_on", retryOn, f.at(roK, roPath))

	// Back-off: Envoy's fully jittered exponential back-off, herdlab's
	// envoy-jitter: U(0, min(cap, base*(2^(k+1)-1))).
	boK, boN, boPath := key(rpN, "retry_back_off", rpPath)
	base, maxI := envoyBaseInterval, envoyBaseInterval*envoyMaxIntervalFactor
	if boK == nil {
		p.Set("backoff.kind", "envoy-jitter", f.dflt(rpK, boPath, docRetryBackOff))
		p.Set("backoff.base", base, f.dflt(rpK, boPath+".base_interval", docRetryBackOff))
		p.Set("backoff.cap", maxI, f.dflt(rpK, boPath+".max_interval", docRetryBackOff))
	} else {
		bo := rp.GetRetryBackOff()
		p.Set("backoff.kind", "envoy-jitter", f.at(boK, boPath))
		bk, _, bPath := key(boN, "base_interval", boPath)
		base = envoyMillis(bo.GetBaseInterval().AsDuration())
		p.Set("backoff.base", base, f.at(bk, bPath))
		mk, _, mPath := key(boN, "max_interval", boPath)
		if mk == nil {
			p.Set("backoff.cap", base*envoyMaxIntervalFactor, f.dflt(boK, mPath, docRetryBackOff))
		} else {
			p.Set("backoff.cap", envoyMillis(bo.GetMaxInterval().AsDuration()), f.at(mk, mPath))
		}
	}

	// Retry-After: read only with rate_limited_retry_back_off, and only
	// from its reset_headers. Envoy waits the hint jittered up to 1.5
	// times (JitteredLowerBoundBackOffStrategy) and discards a hint above
	// max_interval, falling back to its back-off; herdlab's honor waits
	// the hint, and takes a longer one as its cap.
	rlK, rlN, rlPath := key(rpN, "rate_limited_retry_back_off", rpPath)
	if rl := rp.GetRateLimitedRetryBackOff(); rl == nil {
		p.Set("retry_after.mode", "ignore", f.dflt(rpK, rlPath, docRateLimited))
	} else {
		retryAfter := slices.ContainsFunc(rl.GetResetHeaders(), func(h *routev3.RetryPolicy_ResetHeader) bool {
			return strings.EqualFold(h.GetName(), "retry-after")
		})
		if !retryAfter {
			// herdlab's server sends Retry-After alone.
			hk, _, hPath := key(rlN, "reset_headers", rlPath)
			p.Set("retry_after.mode", "ignore", f.at(hk, hPath))
		} else {
			p.Set("retry_after.mode", "honor", f.at(rlK, rlPath))
			mk, _, mPath := key(rlN, "max_interval", rlPath)
			if mk == nil {
				p.Set("retry_after.cap", envoyResetMaxInterval, f.dflt(rlK, mPath, docRateLimited))
			} else {
				p.Set("retry_after.cap", max(rl.GetMaxInterval().AsDuration().Truncate(time.Millisecond), time.Millisecond), f.at(mk, mPath))
			}
		}
	}

	if hedge {
		hpK, hpN := protoField(hpOwner, "hedge_policy")
		hPath := joinPath(hpPath, hpK.Value)
		hk, _, hkPath := key(hpN, "hedge_on_per_try_timeout", hPath)
		p.Set("hedge.delay", pt, f.at(ptK, ptPath))
		// herdlab sends at most strategies.MaxHedges hedges an attempt.
		p.Set("hedge.max", min(int(numRetries), strategies.MaxHedges), nrPos)
		p.Set("hedge.cancel", true, f.at(hk, hkPath))
	}

	p.Values = append(p.Values, budget...)
	p.Hazards = append(p.Hazards, hazards...)
	f.nonIdempotent(p, r, retryOn, roK, roPath)
	f.setService(p, cl)
	return p, nil
}

// budget reads the retry limit of the cluster's circuit breakers at the
// route's priority ("If no Thresholds is defined for a given
// RoutingPriority, the default values are used"; the first of a priority
// counts). It returns the budget's values and hazards, or, when
// max_retries is 0, the position of the rule that lets no retry go.
func (f *envoyFile) budget(cl *envoyCluster, prio corev3.RoutingPriority, rpK *yaml.Node, rpPath string) ([]Value, []Hazard, *Pos) {
	if cl == nil {
		// A cluster from CDS (its breakers are not in the file), or
		// weighted clusters (a budget each): no budget is written.
		return nil, nil, nil
	}
	var out []Value
	var hazards []Hazard
	set := func(field string, v any, pos Pos) { out = append(out, Value{Field: field, Value: v, Pos: pos}) }
	cbK, cbN := protoField(cl.n, "circuit_breakers")
	_, thsN := protoField(cbN, "thresholds")
	var th *clusterv3.CircuitBreakers_Thresholds
	var thN *yaml.Node
	thPath := cl.path + ".circuit_breakers.thresholds"
	for i, t := range cl.c.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority() == prio {
			th, thN, thPath = t, item(thsN, i), fmt.Sprintf("%s[%d]", thPath, i)
			break
		}
	}
	owner := cl.n // where a missing threshold's default is placed
	if thN != nil {
		owner = thN
	} else if cbK != nil {
		owner = cbK
	}
	maxRequests := uint32(envoyMaxRequests)
	if v := th.GetMaxRequests(); v != nil {
		maxRequests = v.GetValue()
	}
	if rb := th.GetRetryBudget(); rb != nil {
		rbK, rbN := protoField(thN, "retry_budget")
		rbPath := joinPath(thPath, rbK.Value)
		percent, pPos := envoyBudgetPercent, f.dflt(rbK, rbPath+".budget_percent", docRetryBudget)
		if v := rb.GetBudgetPercent(); v != nil {
			k, _ := protoField(rbN, "budget_percent")
			percent, pPos = v.GetValue(), f.at(k, joinPath(rbPath, k.Value))
		}
		floor, fPos := uint32(envoyMinRetryConcurrency), f.dflt(rbK, rbPath+".min_retry_concurrency", docRetryBudget)
		if v := rb.GetMinRetryConcurrency(); v != nil {
			k, _ := protoField(rbN, "min_retry_concurrency")
			floor, fPos = v.GetValue(), f.at(k, joinPath(rbPath, k.Value))
		}
		if floor == 0 {
			// herdlab's envoy budget keeps a floor of at least 1: a
			// floor of 0 has no counterpart, and the budget is left out.
			return nil, nil, nil
		}
		set("budget.kind", "envoy", f.at(rbK, rbPath))
		set("budget.percent", percent, pPos)
		set("budget.min_concurrency", int(floor), fPos)
		set("budget.scope", "fleet", f.dflt(rbK, rbPath, docBreakerScope))
		// Every retry in flight is one of the cluster's requests, which
		// max_requests bounds: a floor at or above it lets retries take
		// the whole cluster, and the budget never limits anything.
		if floor >= maxRequests {
			hazards = append(hazards, Hazard{Rule: HazardUnreachableBudget, Pos: fPos,
				Msg: fmt.Sprintf("min_retry_concurrency %d is not below the cluster's max_requests %d: the retry budget's floor is never reached, so it never limits retries", floor, maxRequests)})
		}
		return out, hazards, nil
	}
	maxRetries, mPos := uint32(envoyMaxRetries), f.dflt(owner, thPath+".max_retries", docThresholds)
	written := false
	if v := th.GetMaxRetries(); v != nil {
		k, _ := protoField(thN, "max_retries")
		maxRetries, mPos, written = v.GetValue(), f.at(k, joinPath(thPath, k.Value)), true
	}
	if maxRetries == 0 {
		return nil, nil, &mPos
	}
	if !written {
		hazards = append(hazards, Hazard{Rule: HazardNoBudget, Pos: f.at(rpK, rpPath),
			Msg: fmt.Sprintf("the route retries, and cluster %q has neither a retry_budget nor max_retries: only Envoy's default of %d concurrent retries caps them", cl.c.GetName(), envoyMaxRetries)})
	}
	// percent 0: the floor alone, max_retries retries in flight.
	set("budget.kind", "envoy", mPos)
	set("budget.percent", 0.0, mPos)
	set("budget.min_concurrency", int(maxRetries), mPos)
	set("budget.scope", "fleet", f.dflt(owner, thPath, docBreakerScope))
	return out, hazards, nil
}

// nonIdempotent reports retries of failures that may have reached the
// upstream (5xx, reset, timeout) on a route that matches a POST or PATCH.
// (retriable_request_headers, which can restrict retries to some
// requests, is not considered.)
func (f *envoyFile) nonIdempotent(p *Policy, r *envoyRoute, retryOn []string, roK *yaml.Node, roPath string) {
	if !slices.ContainsFunc(retryOn, func(o string) bool { return o == "5xx" || o == "reset" || o == "timeout" }) {
		return
	}
	for _, h := range r.r.GetMatch().GetHeaders() {
		if h.GetName() != ":method" || h.GetInvertMatch() {
			continue
		}
		m := h.GetExactMatch()
		if sm := h.GetStringMatch(); sm != nil {
			m = sm.GetExact()
		}
		if strings.EqualFold(m, "POST") || strings.EqualFold(m, "PATCH") {
			p.Hazards = append(p.Hazards, Hazard{Rule: HazardNonIdempotent, Pos: f.at(roK, roPath),
				Msg: fmt.Sprintf("route %q matches %s requests and retries %s: a retried %s may be applied twice", r.name, strings.ToUpper(m), strings.Join(retryOn, ", "), strings.ToUpper(m))})
			return
		}
	}
}

func (f *envoyFile) setService(p *Policy, cl *envoyCluster) {
	if cl != nil {
		p.ServiceValues = f.serviceValues(cl, false)
	}
}

// serviceValues reads a cluster as a service of a graph: its outlier
// detection, and, with all, its replicas and balancer.
func (f *envoyFile) serviceValues(cl *envoyCluster, all bool) []Value {
	var out []Value
	set := func(field string, v any, pos Pos) { out = append(out, Value{Field: field, Value: v, Pos: pos}) }
	c := cl.c
	if all {
		// replicas: the endpoints of load_assignment (an EDS cluster's
		// are not in the file).
		n := 0
		for _, le := range c.GetLoadAssignment().GetEndpoints() {
			n += len(le.GetLbEndpoints())
		}
		if n > 0 {
			k, _ := protoField(cl.n, "load_assignment")
			set("replicas", n, f.at(k, joinPath(cl.path, k.Value)))
		}
		// balancer: written lb_policy only (ROUND_ROBIN, Envoy's default,
		// is herdlab's too). RING_HASH, MAGLEV, CLUSTER_PROVIDED,
		// load_balancing_policy and a least-request choice_count other
		// than 2 have no herdlab counterpart and are left out.
		if k, _ := protoField(cl.n, "lb_policy"); k != nil {
			pos := f.at(k, joinPath(cl.path, k.Value))
			switch c.GetLbPolicy() {
			case clusterv3.Cluster_ROUND_ROBIN:
				set("balancer", "round-robin", pos)
			case clusterv3.Cluster_RANDOM:
				set("balancer", "random", pos)
			case clusterv3.Cluster_LEAST_REQUEST:
				// "The number of random healthy hosts from which the
				// host with the fewest active requests will be chosen.
				// Defaults to 2": power of two choices.
				if cc := c.GetLeastRequestLbConfig().GetChoiceCount(); cc == nil || cc.GetValue() == envoyChoiceCount {
					set("balancer", "power-of-two-choices", pos)
				}
			}
		}
	}
	// Outlier detection: consecutive_5xx ejection for base_ejection_time.
	// Envoy's ejection time grows with each ejection (capped by
	// max_ejection_time), its sweeps run every interval, and
	// max_ejection_percent bounds the hosts out: herdlab's health has no
	// counterpart of these, and ejects for eject_for every time. A
	// consecutive_5xx of 0 disables that ejection: no health is written.
	odK, odN := protoField(cl.n, "outlier_detection")
	od := c.GetOutlierDetection()
	if od == nil {
		return out
	}
	odPath := joinPath(cl.path, odK.Value)
	consecutive, cPos := uint32(envoyConsecutive5xx), f.dflt(odK, odPath+".consecutive_5xx", docOutlier)
	if v := od.GetConsecutive_5Xx(); v != nil {
		k, _ := protoField(odN, "consecutive_5xx")
		consecutive, cPos = v.GetValue(), f.at(k, joinPath(odPath, k.Value))
	}
	if consecutive == 0 {
		return out
	}
	set("health.consecutive", int(consecutive), cPos)
	eject, ePos := envoyBaseEjection, f.dflt(odK, odPath+".base_ejection_time", docOutlier)
	if v := od.GetBaseEjectionTime(); v != nil {
		k, _ := protoField(odN, "base_ejection_time")
		eject, ePos = v.AsDuration(), f.at(k, joinPath(odPath, k.Value))
	}
	set("health.eject_for", eject, ePos)
	return out
}

// protoField returns the key and value nodes of a proto field in the
// mapping n, written with its proto name (retry_policy) or its JSON name
// (retryPolicy), as protojson takes both.
func protoField(n *yaml.Node, name string) (k, v *yaml.Node) {
	n = deref(n)
	if k, v = field(n, name); k != nil {
		return k, deref(v)
	}
	k, v = field(n, jsonName(name))
	return k, deref(v)
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// jsonName is protobuf's JSON name of a field: retry_policy, retryPolicy.
func jsonName(name string) string {
	var b strings.Builder
	up := false
	for _, c := range name {
		switch {
		case c == '_':
			up = true
		case up && 'a' <= c && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
			up = false
		default:
			b.WriteRune(c)
			up = false
		}
	}
	return b.String()
}

// item returns the i-th element of the sequence n, or nil.
func item(n *yaml.Node, i int) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return nil
	}
	return deref(n.Content[i])
}

func keyOr(k *yaml.Node, name string) string {
	if k == nil {
		return name
	}
	return k.Value
}

// The validation errors protoc-gen-validate generates: each names a
// field (Go-cased, with [index] or [key]) and a reason, and wraps the
// error of an embedded message as its cause; ValidateAll joins them.
type pgvError interface {
	Field() string
	Reason() string
	Cause() error
	Key() bool
}

type pgvMulti interface{ AllErrors() []error }

// validateTree runs Envoy's validation of m, whose YAML mapping is n, and
// of every message packed in an Any below it (a typed_config), which the
// generated validation does not open.
func validateTree(e *errs, file string, m protoreflect.Message, n, key *yaml.Node, path string) {
	if v, ok := m.Interface().(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			placeInvalid(e, file, err, m.Descriptor(), n, key, path)
		}
	}
	walkAnys(e, file, m, n, path)
}

func walkAnys(e *errs, file string, m protoreflect.Message, n *yaml.Node, path string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		k, vn := protoField(n, string(fd.Name()))
		if k == nil {
			return true
		}
		p := joinPath(path, k.Value)
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				it := item(vn, i)
				visitAny(e, file, l.Get(i).Message(), it, it, fmt.Sprintf("%s[%d]", p, i))
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(mk protoreflect.MapKey, mv protoreflect.Value) bool {
				kk, vv := field(vn, mk.String())
				visitAny(e, file, mv.Message(), deref(vv), kk, p+"."+mk.String())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			visitAny(e, file, v.Message(), vn, k, p)
		}
		return true
	})
}

func visitAny(e *errs, file string, m protoreflect.Message, n, key *yaml.Node, path string) {
	if m.Descriptor().FullName() != "google.protobuf.Any" {
		walkAnys(e, file, m, n, path)
		return
	}
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		e.at(at(file, key, path), "%v", err)
		return
	}
	validateTree(e, file, inner.ProtoReflect(), n, key, path)
}

// placeInvalid places each error of Envoy's validation at its key: the
// error's field chain is followed from the message md, whose mapping is
// n, through the YAML nodes; a missing field is placed at its parent.
func placeInvalid(e *errs, file string, err error, md protoreflect.MessageDescriptor, n, key *yaml.Node, path string) {
	if m, ok := err.(pgvMulti); ok {
		for _, x := range m.AllErrors() {
			placeInvalid(e, file, x, md, n, key, path)
		}
		return
	}
	var v pgvError
	if !errors.As(err, &v) {
		e.at(at(file, key, path), "%v", err)
		return
	}
	name, index, indexed := strings.Cut(v.Field(), "[")
	index = strings.TrimSuffix(index, "]")
	ck, cn, cpath := key, (*yaml.Node)(nil), joinPath(path, name)
	fd := findField(md, name)
	if fd != nil {
		cpath = joinPath(path, string(fd.Name()))
		if k, vn := protoField(n, string(fd.Name())); k != nil {
			ck, cn, cpath = k, vn, joinPath(path, k.Value)
			if indexed {
				if i, err := strconv.Atoi(index); err == nil && vn.Kind == yaml.SequenceNode {
					if it := item(vn, i); it != nil {
						ck, cn = it, it
					}
					cpath = fmt.Sprintf("%s[%d]", cpath, i)
				} else if kk, vv := field(vn, index); kk != nil {
					ck, cn, cpath = kk, deref(vv), cpath+"."+index
				}
			}
		}
	} else if od := findOneof(md, name); od != nil {
		cpath = joinPath(path, string(od.Name()))
	}
	cause := v.Cause()
	var sub pgvError
	var multi pgvMulti
	nested := cause != nil && (errors.As(cause, &sub) || errors.As(cause, &multi))
	if nested && fd != nil {
		cmd := fd.Message()
		if fd.IsMap() {
			cmd = fd.MapValue().Message()
		}
		if cmd != nil {
			placeInvalid(e, file, cause, cmd, cn, ck, cpath)
			return
		}
	}
	msg := v.Reason()
	if cause != nil && !nested {
		msg += ": " + cause.Error()
	}
	e.at(at(file, ck, cpath), "%s", msg)
}

// normalName folds a Go-cased or proto field name to compare them:
// Consecutive_5Xx and consecutive_5xx are both consecutive5xx.
func normalName(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

func findField(md protoreflect.MessageDescriptor, goName string) protoreflect.FieldDescriptor {
	want := normalName(goName)
	fs := md.Fields()
	for i := range fs.Len() {
		if normalName(string(fs.Get(i).Name())) == want {
			return fs.Get(i)
		}
	}
	return nil
}

func findOneof(md protoreflect.MessageDescriptor, goName string) protoreflect.OneofDescriptor {
	want := normalName(goName)
	os := md.Oneofs()
	for i := range os.Len() {
		if normalName(string(os.Get(i).Name())) == want {
			return os.Get(i)
		}
	}
	return nil
}
