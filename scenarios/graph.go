package scenarios

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Service is one service of a service graph: a server model (every field
// of Server), its replicas behind a load balancer, and the downstream
// calls it makes to serve one request.
type Service struct {
	// Name is unique in the graph; calls and edges name services by it.
	Name   string `yaml:"name"`
	Server `yaml:",inline"`
	// Replicas is how many copies serve the service, each with the
	// server's capacity; default 1. Each has its rows in services.csv,
	// which is held to 5,000,000 rows (as timeseries.csv is): replicas
	// beyond it are refused here, before the run.
	Replicas int `yaml:"replicas"`
	// Balancer spreads the attempts sent to the service over its
	// replicas: round-robin (the default), random, least-outstanding
	// (the replica with the fewest attempts awaiting an answer) or
	// power-of-two-choices (the better of two replicas drawn at random).
	Balancer string `yaml:"balancer"`
	// QueueDiscipline is the order in which queued requests are served:
	// fifo (the default), lifo (the newest first), adaptive-lifo (FIFO
	// until the queue is congested, then LIFO) or codel (FIFO, answering
	// 503 to requests that waited too long while the queue is standing).
	QueueDiscipline string `yaml:"queue_discipline"`
	// AdaptiveLIFO says when an adaptive-lifo queue is congested.
	AdaptiveLIFO AdaptiveLIFO `yaml:"adaptive_lifo"`
	// CoDel is the codel queue's target and interval.
	CoDel CoDel `yaml:"codel"`
	// Shed, when set, answers 503 to a request taken from the queue after
	// waiting longer than its bound, instead of serving it.
	Shed *Shed `yaml:"shed"`
	// Calls are made, in order, while serving one request; the slot is
	// held meanwhile.
	Calls []Call `yaml:"calls"`
	// Health, when set, is the balancer's outlier detection: a replica
	// that fails Consecutive times in a row is not picked for EjectFor
	// (Envoy's consecutive_5xx ejection).
	Health *Health `yaml:"health"`
	// Cache, when set, is a look-aside cache in front of the service:
	// its callers look a key up first and call the service on a miss.
	Cache *Cache `yaml:"cache"`
}

// Cache is a look-aside cache in front of a service. Each call is for a
// key, drawn uniformly from Keys; a lookup hits when the key is held and
// has not expired; a miss goes to the service, and its success fills the
// key (fill on-success, the only fill: a failed read caches nothing).
// When full, a fill evicts a key at random, which with uniform keys hits
// as often as LRU: Capacity / Keys. The cache starts full (warm).
type Cache struct {
	// HitRatio is the warm cache's hit ratio: Capacity = HitRatio x Keys.
	HitRatio float64 `yaml:"hit_ratio"`
	// Keys is the key population; default 10,000, at most MaxCacheKeys.
	// Every cache's keys count in a run's memory estimate (about 8 B a
	// key): caches beyond --max-memory are refused before the run.
	Keys int `yaml:"keys"`
	// Capacity is how many keys the cache holds; set it or HitRatio.
	Capacity int `yaml:"capacity"`
	// TTL is how long an entry lives; 0 (the default) means until evicted.
	TTL time.Duration `yaml:"ttl"`
	// Fill is when a key is cached: on-success (the default and only
	// value: a read that failed caches nothing).
	Fill string `yaml:"fill"`
}

// Health is a balancer's outlier detection (see Service.Health).
type Health struct {
	// Consecutive is how many failures in a row eject a replica
	// (refused, timed out, reset, 5xx); default 5, as Envoy's.
	Consecutive int `yaml:"consecutive"`
	// EjectFor is how long an ejected replica is left out; default 30s,
	// Envoy's base ejection time.
	EjectFor time.Duration `yaml:"eject_for"`
}

func (h *Health) setDefaults() {
	h.Consecutive = 5
	h.EjectFor = 30 * time.Second
}

// MaxCacheKeys bounds a cache's key population.
const MaxCacheKeys = 10_000_000

// OnSuccess is the cache fill on a successful read.
const OnSuccess = "on-success"

func (c *Cache) setDefaults() {
	c.Keys = 10_000
	c.Fill = OnSuccess
}

// Entries returns how many keys the cache holds when full.
func (c *Cache) Entries() int {
	if c.Capacity > 0 {
		return c.Capacity
	}
	return int(math.Round(c.HitRatio * float64(c.Keys)))
}

func (c *Cache) validate(p *problems, path string) {
	switch {
	case c.HitRatio != 0 && c.Capacity != 0:
		p.add(path+".capacity", "set capacity or hit_ratio, not both (hit_ratio %v means capacity %d of %d keys)", c.HitRatio, int(math.Round(c.HitRatio*float64(c.Keys))), c.Keys)
	case c.HitRatio == 0 && c.Capacity == 0:
		p.add(path, "set hit_ratio (of the warm cache) or capacity (entries out of keys)")
	case c.HitRatio < 0 || c.HitRatio >= 1:
		p.add(path+".hit_ratio", "must be in (0,1), got %v", c.HitRatio)
	}
	switch {
	case c.Keys < 1:
		p.add(path+".keys", "must be >= 1, got %d", c.Keys)
	case c.Keys > MaxCacheKeys:
		p.add(path+".keys", "%d keys is too many (at most %d)", c.Keys, MaxCacheKeys)
	case c.Capacity < 0 || c.Capacity > c.Keys:
		p.add(path+".capacity", "must be between 1 and keys (%d), got %d", c.Keys, c.Capacity)
	case c.HitRatio > 0 && c.Entries() < 1:
		p.add(path+".hit_ratio", "%v of %d keys holds no key: raise it or keys", c.HitRatio, c.Keys)
	}
	p.nonNegative(path+".ttl", c.TTL)
	p.oneOf(path+".fill", c.Fill, OnSuccess)
}

// The load balancers.
const (
	RoundRobin        = "round-robin"
	RandomBalancer    = "random"
	LeastOutstanding  = "least-outstanding"
	PowerOfTwoChoices = "power-of-two-choices"
)

// The queue disciplines.
const (
	FIFO              = "fifo"
	LIFO              = "lifo"
	AdaptiveLIFOQueue = "adaptive-lifo"
	CoDelQueue        = "codel"
)

// AdaptiveLIFO is when an adaptive-lifo queue switches to LIFO: while the
// oldest request in it has waited longer than Congested (default 100ms,
// as Facebook's "Fail at Scale" does with CoDel's interval).
type AdaptiveLIFO struct {
	Congested time.Duration `yaml:"congested"`
}

// CoDel is the controlled-delay queue of RPC servers (folly's Codel, as
// Facebook's "Fail at Scale" describes it): at the end of each Interval
// (default 100ms) the queue is overloaded when the least queueing delay
// seen in it exceeded Target (default 5ms); while it is, a request that
// waited more than twice the target is answered 503 rather than served.
type CoDel struct {
	Target   time.Duration `yaml:"target"`
	Interval time.Duration `yaml:"interval"`
}

// Shed answers 503 to a request that waited in the queue longer than
// QueueDelay, instead of serving it.
type Shed struct {
	QueueDelay time.Duration `yaml:"queue_delay"`
}

// MaxReplicas bounds a service's replicas.
const MaxReplicas = 10_000

func (s *Service) setDefaults() {
	s.Server.setDefaults()
	s.Replicas = 1
	s.Balancer = RoundRobin
	s.QueueDiscipline = FIFO
	s.AdaptiveLIFO.Congested = 100 * time.Millisecond
	s.CoDel = CoDel{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond}
}

// Capacity returns the service's capacity in requests per second, all
// replicas together (+Inf when unlimited).
func (s *Service) Capacity() float64 { return float64(s.Replicas) * s.Server.Capacity() }

// Call is one downstream call a service makes for each request it serves.
type Call struct {
	// Service is the service called.
	Service string `yaml:"service"`
	// Fanout is how many copies are sent in parallel, each to a replica
	// the balancer picks, each retried on its own; default 1. Fan-outs
	// multiply along a path: a graph whose product of fan-outs (times
	// the requests, with no attempt failing) passes a run's event budget
	// is refused at the fanout where it does, naming the product.
	Fanout int `yaml:"fanout"`
	// Quorum is how many copies must succeed; 0 (the default) means all.
	Quorum int `yaml:"quorum"`
	// Probability is the share of requests that make the call; default 1.
	Probability float64 `yaml:"probability"`
	// Parallel starts the call together with the call before it, instead
	// of after it has finished.
	Parallel bool `yaml:"parallel"`
	// When is before (the default: the call is made, then the local work
	// is done) or after the local work.
	When string `yaml:"when"`
	// Retry is the policy deployed on this edge (see Strategy.Edges).
	Retry *EdgePolicy `yaml:"retry"`
}

// The times of a call.
const (
	Before = "before"
	After  = "after"
)

func (c *Call) setDefaults() {
	c.Fanout = 1
	c.Probability = 1
	c.When = Before
}

// Need returns how many copies of the call must succeed.
func (c *Call) Need() int {
	if c.Quorum == 0 {
		return c.Fanout
	}
	return c.Quorum
}

// Edges are a strategy's service-to-service retry policies: Default for
// every call edge, and overrides for named edges (CALLER->CALLEE), field
// by field.
type Edges struct {
	Default *EdgePolicy
	ByEdge  map[string]*EdgePolicy
	order   []string // the named edges, in file order
}

// edgeKey matches a named edge.
var edgeKey = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)->([A-Za-z0-9][A-Za-z0-9._-]*)$`)

// EdgeKey names the edge from service caller to service callee.
func EdgeKey(caller, callee string) string { return caller + "->" + callee }

func (e *Edges) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "want a mapping of edges (default, or CALLER->CALLEE) to policies, got %s", kindName(n))
		return true
	}
	*e = Edges{ByEdge: map[string]*EdgePolicy{}}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		sub := path + "." + key.Value
		if first, dup := seen[key.Value]; dup {
			d.failAt(key, sub, "duplicate edge (first set on line %d)", first)
			continue
		}
		seen[key.Value] = key.Line
		if key.Value != "default" && !edgeKey.MatchString(key.Value) {
			d.failAt(key, sub, "want default or an edge CALLER->CALLEE, such as orders->db, got %q", key.Value)
			continue
		}
		ep := &EdgePolicy{}
		d.decode(val, reflect.ValueOf(ep).Elem(), sub)
		if key.Value == "default" {
			e.Default = ep
		} else {
			e.ByEdge[key.Value] = ep
			e.order = append(e.order, key.Value)
		}
	}
	return true
}

// EdgePolicy is a retry policy written for call edges: any field of a
// strategy but its name, edges and deadline propagation, and which of
// them the file wrote (the others are taken from the layers below).
type EdgePolicy struct {
	Strategy
	written []string // the top-level fields written, in file order
}

// notEdgeFields are the strategy fields an edge policy does not take.
var notEdgeFields = map[string]string{
	"name":                 "an edge's policy takes the strategy's name",
	"edges":                "edges are set once, in the strategy",
	"deadline_propagation": "deadline propagation is the strategy's, for every edge",
}

func (e *EdgePolicy) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "want a mapping of strategy fields, such as {max_attempts: 3}, got %s", kindName(n))
		return true
	}
	e.Strategy = NewStrategy("")
	e.written = d.partial(n, path, reflect.ValueOf(&e.Strategy).Elem(), notEdgeFields, "not an edge field")
	return true
}

// partial decodes the mapping n into v (a struct with its defaults set)
// as a layer over others: the keys in refused are reported with what
// and their reason, and the fields written are returned, in file order.
func (d *decoder) partial(n *yaml.Node, path string, v reflect.Value, refused map[string]string, what string) []string {
	var written []string
	kept := *n
	kept.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if why, bad := refused[key.Value]; bad {
			d.failAt(key, join(path, key.Value), "%s: %s", what, why)
			continue
		}
		kept.Content = append(kept.Content, key, n.Content[i+1])
		if _, known := yamlFields(v.Type())[key.Value]; known && !slices.Contains(written, key.Value) {
			written = append(written, key.Value)
		}
	}
	d.structure(&kept, v, path)
	return written
}

// Wrote reports whether the policy's file set the strategy field key.
func (e *EdgePolicy) Wrote(key string) bool { return e != nil && slices.Contains(e.written, key) }

// ServiceOverrides are a strategy's changes to named services, field by
// field (see Strategy.Services).
type ServiceOverrides struct {
	ByName map[string]*ServiceOverride
	order  []string
}

// ServiceOverride is a strategy's change to one service: the fields
// written, over the service's own.
type ServiceOverride struct {
	Service
	written []string
}

// notOverridable are the service fields a strategy does not change.
var notOverridable = map[string]string{
	"name":  "a strategy changes the service it is listed under",
	"calls": "the graph's shape is the scenario's, the same for every strategy: change the calls' retry policies in edges",
}

func (o *ServiceOverrides) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "want a mapping of service names to the fields this strategy changes, got %s", kindName(n))
		return true
	}
	*o = ServiceOverrides{ByName: map[string]*ServiceOverride{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		sub := path + "." + key.Value
		if _, dup := o.ByName[key.Value]; dup {
			d.failAt(key, sub, "duplicate service")
			continue
		}
		if val.Kind != yaml.MappingNode {
			d.failAt(val, sub, "want a mapping of service fields, such as {queue_discipline: lifo}, got %s", kindName(val))
			continue
		}
		so := &ServiceOverride{}
		so.Service.setDefaults()
		d.where[sub] = d.posOf(val)
		so.written = d.partial(val, sub, reflect.ValueOf(&so.Service).Elem(), notOverridable, "not changed by a strategy")
		o.ByName[key.Value] = so
		o.order = append(o.order, key.Value)
	}
	return true
}

// ServicesFor returns the graph's services as strategy st deploys them:
// each with the fields st's services section changes. They share what
// st does not change (calls, outages) with s.Services.
func (s *Scenario) ServicesFor(st *Strategy) []Service {
	if len(st.Services.ByName) == 0 {
		return s.Services
	}
	out := slices.Clone(s.Services)
	fields := yamlFields(reflect.TypeFor[Service]())
	for i := range out {
		so := st.Services.ByName[out[i].Name]
		if so == nil {
			continue
		}
		dv, sv := reflect.ValueOf(&out[i]).Elem(), reflect.ValueOf(&so.Service).Elem()
		for _, k := range so.written {
			dv.FieldByIndex(fields[k]).Set(sv.FieldByIndex(fields[k]))
		}
	}
	return out
}

// Graph reports whether the scenario describes services rather than one
// server.
func (s *Scenario) Graph() bool { return s.Services != nil }

// OneService returns the scenario with its server written as a graph of
// one service, named "server", of one replica, round-robin and FIFO:
// how the simulator's engine runs a single server, and how a real-HTTP
// Graph serves one. The copy shares everything else with s. s must
// describe a single server (not Graph()).
func (s *Scenario) OneService() *Scenario {
	g := *s
	g.Services = []Service{{
		Name:            "server",
		Server:          s.Server,
		Replicas:        1,
		Balancer:        RoundRobin,
		QueueDiscipline: FIFO,
	}}
	return &g
}

// TargetIndex returns the index in Services of the service the fleet
// calls; 0 for a single server.
func (s *Scenario) TargetIndex() int {
	if !s.Graph() || s.Workload.Target == "" {
		return 0
	}
	return max(s.ServiceIndex(s.Workload.Target), 0)
}

// ServiceIndex returns the index of the service named name, -1 if none.
func (s *Scenario) ServiceIndex(name string) int {
	return slices.IndexFunc(s.Services, func(x Service) bool { return x.Name == name })
}

// Target returns the server model of the service the fleet calls: the
// server, or workload.target's in a graph.
func (s *Scenario) Target() *Server {
	if !s.Graph() {
		return &s.Server
	}
	return &s.Services[s.TargetIndex()].Server
}

// TargetCapacity returns the capacity of the service the fleet calls, all
// its replicas together, in requests per second.
func (s *Scenario) TargetCapacity() float64 {
	if !s.Graph() {
		return s.Server.Capacity()
	}
	return s.Services[s.TargetIndex()].Capacity()
}

// AllOutages returns the outages of every service, in order of their
// end: the server's, or every service's in a graph.
func (s *Scenario) AllOutages() []Outage {
	if !s.Graph() {
		return s.Server.Outages
	}
	var all []Outage
	for _, svc := range s.Services {
		all = append(all, svc.Outages...)
	}
	slices.SortStableFunc(all, func(a, b Outage) int { return cmp.Compare(a.End(), b.End()) })
	return all
}

// EdgeStrategy returns the policy of strategy st on the edge of call c
// made by service caller: field by field, st's edges[CALLER->CALLEE],
// else its edges.default, else the call's retry, else a single attempt
// with the strategy defaults. Its name is st's.
func EdgeStrategy(st *Strategy, caller string, c *Call) Strategy {
	out := edgeBase(st.Name)
	for _, l := range edgeLayers(st, caller, c) {
		copyFields(&out, &l.policy.Strategy, l.policy.written)
	}
	out.typed = st.typed // the edges' policies, made by Validate
	return out
}

// edgeBase is an edge's policy where no layer sets a field: a single
// attempt with the strategy defaults.
func edgeBase(name string) Strategy {
	out := NewStrategy(name)
	out.MaxAttempts = 1
	out.Backoff.Kind = BackoffNone
	return out
}

// layer is one layer of an edge's policy and where it was written.
type layer struct {
	policy *EdgePolicy
	path   string // field path of the layer, without the scenario prefix
}

// edgeLayers lists the layers of the edge of call c by caller, lowest
// first.
func edgeLayers(st *Strategy, caller string, c *Call) []layer {
	var ls []layer
	if c.Retry != nil {
		ls = append(ls, layer{c.Retry, ""})
	}
	if st.Edges.Default != nil {
		ls = append(ls, layer{st.Edges.Default, "edges.default"})
	}
	key := EdgeKey(caller, c.Service)
	if ep := st.Edges.ByEdge[key]; ep != nil {
		ls = append(ls, layer{ep, "edges." + key})
	}
	return ls
}

// copyFields copies the strategy fields named by keys from src to dst.
func copyFields(dst, src *Strategy, keys []string) {
	fields := yamlFields(reflect.TypeFor[Strategy]())
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for _, k := range keys {
		dv.FieldByIndex(fields[k]).Set(sv.FieldByIndex(fields[k]))
	}
}

// validateGraph checks the services, their calls and the strategies'
// edges.
// validate checks service svc's own fields (not its calls) at path,
// over a horizon.
func (svc *Service) validate(p *problems, path string, horizon time.Duration) {
	if svc.Model == ModelOCC {
		p.add(path+".model", "model occ is a single row, not a service of a graph")
	}
	switch {
	case svc.Replicas < 1:
		p.add(path+".replicas", "must be >= 1, got %d", svc.Replicas)
	case svc.Replicas > MaxReplicas:
		p.add(path+".replicas", "%d replicas is too many (at most %d)", svc.Replicas, MaxReplicas)
	}
	svc.Server.validate(p, path, max(svc.Replicas, 1), svc.Cache != nil)
	if c := svc.Cache; c != nil {
		c.validate(p, path+".cache")
	}
	svc.Server.validateHorizon(p, path, horizon)
	p.oneOf(path+".balancer", svc.Balancer, RoundRobin, RandomBalancer, LeastOutstanding, PowerOfTwoChoices)
	if p.oneOf(path+".queue_discipline", svc.QueueDiscipline, FIFO, LIFO, AdaptiveLIFOQueue, CoDelQueue) {
		p.positive(path+".adaptive_lifo.congested", svc.AdaptiveLIFO.Congested)
		p.positive(path+".codel.target", svc.CoDel.Target)
		if svc.CoDel.Interval <= svc.CoDel.Target {
			p.add(path+".codel.interval", "must be longer than the target (%s), got %s", svc.CoDel.Target, svc.CoDel.Interval)
		}
	}
	if svc.Shed != nil {
		p.positive(path+".shed.queue_delay", svc.Shed.QueueDelay)
	}
	if h := svc.Health; h != nil {
		if h.Consecutive < 1 {
			p.add(path+".health.consecutive", "must be >= 1, got %d", h.Consecutive)
		}
		p.positive(path+".health.eject_for", h.EjectFor)
	}
}

func (s *Scenario) validateGraph(p *problems) {
	if len(s.Services) == 0 {
		p.add("services", "at least one service is needed")
		return
	}
	names := map[string]int{}
	for i := range s.Services {
		svc := &s.Services[i]
		path := fmt.Sprintf("services[%d]", i)
		p.name(path+".name", svc.Name, "the service in every output")
		if first, dup := names[svc.Name]; dup {
			p.add(path+".name", "duplicate service name %q (also services[%d])", svc.Name, first)
		} else if svc.Name != "" {
			names[svc.Name] = i
		}
		svc.validate(p, path, s.Duration)
	}
	for i := range s.Services {
		for j := range s.Services[i].Calls {
			s.validateCall(p, i, j, names)
		}
	}
	called := map[string]bool{}
	for _, svc := range s.Services {
		for _, c := range svc.Calls {
			called[c.Service] = true
		}
	}
	for i, svc := range s.Services {
		if svc.Cache != nil && !called[svc.Name] && i != s.TargetIndex() {
			p.add(fmt.Sprintf("services[%d].cache", i), "a cache in front of nothing: neither the fleet nor any service calls %s", svc.Name)
		}
	}
	if t := s.Workload.Target; t != "" {
		if _, ok := names[t]; !ok {
			p.add("workload.target", "unknown service %q (want one of %s)", t, strings.Join(s.serviceNames(), ", "))
		}
	}
	if s.Workload.Workers > 0 {
		p.add("workload.workers", "dispatcher pools are not modelled in a service graph yet: leave workers out")
	}
	if s.DLQ.Replay != nil {
		p.add("dlq.replay", "a dead-letter replay is not modelled in a service graph yet: leave it out")
	}
	s.validateCycles(p, names)
	for i := range s.Strategies {
		s.validateEdges(p, i, names)
		s.validateOverrides(p, i, names)
	}
}

func (s *Scenario) serviceNames() []string {
	out := make([]string, len(s.Services))
	for i, svc := range s.Services {
		out[i] = svc.Name
	}
	return out
}

func (s *Scenario) validateCall(p *problems, i, j int, names map[string]int) {
	svc := &s.Services[i]
	c := &svc.Calls[j]
	path := fmt.Sprintf("services[%d].calls[%d]", i, j)
	if _, ok := names[c.Service]; !ok {
		if c.Service == "" {
			p.add(path+".service", "missing: the name of the service called")
		} else {
			p.add(path+".service", "unknown service %q (want one of %s)", c.Service, strings.Join(s.serviceNames(), ", "))
		}
	}
	switch {
	case c.Fanout < 1:
		p.add(path+".fanout", "must be >= 1 copy, got %d", c.Fanout)
	case c.Fanout > MaxReplicas:
		p.add(path+".fanout", "%d copies is too many (at most %d)", c.Fanout, MaxReplicas)
	}
	switch {
	case c.Quorum < 0:
		p.add(path+".quorum", "must be >= 1, or 0 for all copies, got %d", c.Quorum)
	case c.Quorum > c.Fanout && c.Fanout >= 1:
		p.add(path+".quorum", "%d is above the fanout (%d): the call could never succeed", c.Quorum, c.Fanout)
	}
	if c.Probability <= 0 || c.Probability > 1 {
		p.add(path+".probability", "must be a share of requests in (0,1], got %v", c.Probability)
	}
	p.oneOf(path+".when", c.When, Before, After)
	if c.Parallel && (j == 0 || svc.Calls[j-1].When != c.When) {
		p.add(path+".parallel", "starts with the call before it, and there is none made %s the local work", c.When)
	}
	if c.Retry != nil {
		st := EdgeStrategy(&Strategy{Name: "x"}, svc.Name, c)
		s.validatePolicy(p, &st, []layer{{c.Retry, path + ".retry"}}, path+".retry")
	}
}

// validateOverrides checks strategy i's changes to services: each names a
// service, and the service it makes is valid (its problems placed at the
// strategy's fields).
func (s *Scenario) validateOverrides(p *problems, i int, names map[string]int) {
	st := &s.Strategies[i]
	path := fmt.Sprintf("strategies[%d].services", i)
	if len(st.Services.ByName) == 0 {
		return
	}
	deployed := s.ServicesFor(st)
	for _, name := range st.Services.order {
		k, ok := names[name]
		if !ok {
			p.add(path+"."+name, "unknown service %q (want one of %s)", name, strings.Join(s.serviceNames(), ", "))
			continue
		}
		var sub problems
		from := fmt.Sprintf("services[%d]", k)
		deployed[k].validate(&sub, from, s.Duration)
		for _, err := range sub {
			fe := err.(*FieldError)
			rest := strings.TrimPrefix(fe.Path, from+".")
			key, _, _ := strings.Cut(rest, ".")
			key, _, _ = strings.Cut(key, "[")
			if st.Services.ByName[name].Wrote(key) {
				p.once(path+"."+name+"."+rest, "%s", fe.Msg)
			}
		}
	}
}

// Wrote reports whether the override set the service field key.
func (o *ServiceOverride) Wrote(key string) bool { return o != nil && slices.Contains(o.written, key) }

// validateCycles reports a call cycle, with its path.
func (s *Scenario) validateCycles(p *problems, names map[string]int) {
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(s.Services))
	var stack []string
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = open
		stack = append(stack, s.Services[i].Name)
		for j, c := range s.Services[i].Calls {
			k, ok := names[c.Service]
			if !ok {
				continue
			}
			switch state[k] {
			case open:
				from := slices.Index(stack, c.Service)
				cycle := append(slices.Clone(stack[from:]), c.Service)
				p.add(fmt.Sprintf("services[%d].calls[%d].service", i, j), "a call cycle: %s; a request would call itself forever", strings.Join(cycle, " -> "))
				return true
			case unseen:
				if visit(k) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		return false
	}
	for i := range s.Services {
		if state[i] == unseen && visit(i) {
			return // one cycle at a time: the rest may be the same one
		}
	}
}

// validateEdges checks strategy i's edges and the policies they make.
func (s *Scenario) validateEdges(p *problems, i int, names map[string]int) {
	st := &s.Strategies[i]
	path := fmt.Sprintf("strategies[%d]", i)
	for _, key := range st.Edges.order {
		m := edgeKey.FindStringSubmatch(key)
		caller, ok := names[m[1]]
		if !ok || !slices.ContainsFunc(s.Services[caller].Calls, func(c Call) bool { return c.Service == m[2] }) {
			p.add(path+".edges."+key, "no such edge: %s does not call %s", m[1], m[2])
		}
	}
	if d := st.Edges.Default; d != nil {
		merged := edgeBase(st.Name)
		copyFields(&merged, &d.Strategy, d.written)
		s.validatePolicy(p, &merged, []layer{{d, path + ".edges.default"}}, path+".edges.default")
	}
	timeouts, _ := s.incomingTimeouts(st)
	for ci := range s.Services {
		caller := &s.Services[ci]
		for j := range caller.Calls {
			c := &caller.Calls[j]
			if _, ok := names[c.Service]; !ok {
				continue
			}
			edge := EdgeStrategy(st, caller.Name, c)
			ls := edgeLayers(st, caller.Name, c)
			for k := range ls {
				if ls[k].path == "" {
					ls[k].path = fmt.Sprintf("services[%d].calls[%d].retry", ci, j)
				} else {
					ls[k].path = path + "." + ls[k].path
				}
			}
			at := fmt.Sprintf("services[%d].calls[%d]", ci, j)
			if len(ls) > 0 {
				at = ls[len(ls)-1].path
			}
			s.validatePolicy(p, &edge, ls, at)
			if outer := timeouts[ci]; !st.DeadlinePropagation && outer > 0 && edge.Timeout > outer {
				where := at
				for _, l := range slices.Backward(ls) {
					if l.policy.Wrote("timeout") {
						where = l.path
						break
					}
				}
				p.once(where+".timeout", "%s on %s can never fit inside its caller's: the longest any caller of %s waits is %s (shorten it, or set deadline_propagation)",
					edge.Timeout, EdgeKey(caller.Name, c.Service), caller.Name, outer)
			}
		}
	}
}

// incomingTimeouts returns, for strategy st, the longest and the
// shortest attempt timeout with which each service is called (0: it is
// not called).
func (s *Scenario) incomingTimeouts(st *Strategy) (longest, shortest []time.Duration) {
	longest = make([]time.Duration, len(s.Services))
	shortest = make([]time.Duration, len(s.Services))
	longest[s.TargetIndex()], shortest[s.TargetIndex()] = st.Timeout, st.Timeout
	for _, caller := range s.Services {
		for j := range caller.Calls {
			c := &caller.Calls[j]
			if k := s.ServiceIndex(c.Service); k >= 0 {
				t := EdgeStrategy(st, caller.Name, c).Timeout
				longest[k] = max(longest[k], t)
				if shortest[k] == 0 || t < shortest[k] {
					shortest[k] = t
				}
			}
		}
	}
	return longest, shortest
}

// validatePolicy validates the merged edge policy st, placing each
// problem at the layer that wrote the field (the last layer when none
// did), once.
func (s *Scenario) validatePolicy(p *problems, st *Strategy, ls []layer, fallback string) {
	var sub problems
	const root = "\x00"
	st.validate(&sub, root)
	if st.MaxAttempts == 0 && st.Backoff.Kind == BackoffNone && s.Network.Latency == nil {
		sub.add(root+".max_attempts", "backoff none with unlimited attempts and no network latency retries forever at the same instant: set max_attempts")
	}
	for _, err := range sub {
		fe := err.(*FieldError)
		rest := strings.TrimPrefix(fe.Path, root+".")
		key, _, _ := strings.Cut(rest, ".")
		key, _, _ = strings.Cut(key, "[")
		if key == "name" {
			continue // the strategy's, checked there
		}
		at := fallback
		for _, l := range slices.Backward(ls) {
			if l.policy.Wrote(key) {
				at = l.path
				break
			}
		}
		p.once(at+"."+rest, "%s", fe.Msg)
	}
}

// once adds a problem unless the same one is there already: a layer
// shared by several edges is wrong once.
func (p *problems) once(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !slices.ContainsFunc(*p, func(e error) bool {
		x, ok := e.(*FieldError)
		return ok && x.Path == path && x.Msg == msg
	}) {
		p.add(path, "%s", msg)
	}
}

// WorstAttempts returns, for strategy st, the most attempts each service
// can receive per fleet request, every call failing every attempt: the
// fleet's attempts at the target, and at a callee the sum over its
// callers of the caller's attempts x the edge's attempts x the fan-out.
// It is +Inf where some attempts upstream are unlimited. The graph must
// be valid (no cycle).
func (s *Scenario) WorstAttempts(st *Strategy) []float64 {
	out := make([]float64, len(s.Services))
	attempts := func(n int) float64 {
		if n == 0 {
			return math.Inf(1)
		}
		return float64(n)
	}
	out[s.TargetIndex()] = attempts(st.MaxAttempts)
	for _, i := range s.Topological() {
		caller := &s.Services[i]
		for j := range caller.Calls {
			c := &caller.Calls[j]
			if k := s.ServiceIndex(c.Service); k >= 0 && out[i] > 0 {
				out[k] += out[i] * attempts(EdgeStrategy(st, caller.Name, c).MaxAttempts) * float64(c.Fanout)
			}
		}
	}
	return out
}

// Topological returns the services' indexes, every caller before the
// services it calls.
func (s *Scenario) Topological() []int {
	seen := make([]bool, len(s.Services))
	var order []int
	var visit func(i int)
	visit = func(i int) {
		seen[i] = true
		for _, c := range s.Services[i].Calls {
			if k := s.ServiceIndex(c.Service); k >= 0 && !seen[k] {
				visit(k)
			}
		}
		order = append(order, i)
	}
	for i := range s.Services {
		if !seen[i] {
			visit(i)
		}
	}
	slices.Reverse(order)
	return order
}
