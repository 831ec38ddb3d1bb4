package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// eventsPerAttempt is the fewest events an attempt in a graph takes: it
// reaches its service, is answered (or times out), and is retried or
// decided.
const eventsPerAttempt = 3

// Per key of a look-aside cache (sim.Cache): its place in the held
// array (4 B); per entry held, its key (4 B); per key, with a TTL, its
// expiry (8 B). While a cache is warmed, a random permutation of its
// keys (8 B a key) lives beside it: one cache at a time.
const (
	cacheKeyBytes   = 4
	cacheEntryBytes = 4
	cacheTTLBytes   = 8
	cacheWarmBytes  = 8
)

// estimateGraph counts what a run on a graph of services takes: every
// fleet request's call, and per service the jobs and downstream calls
// that can be live at once (a running job holds its slot while it waits
// for its calls, so a service with limited slots bounds the calls it
// makes), every cache's keys, and the series kept; the rows of
// services.csv; and the events, with no attempt failing (the fan-outs'
// product) and in the worst case, every attempt failing. Every product
// of fan-outs and attempts is counted in float64: they can exceed any
// integer (10^18 attempts and more).
func estimateGraph(sc *scenarios.Scenario, opts Options, n *Needs, reqs, growth float64) {
	callBytes := int64(unsafe.Sizeof(call{})) + callSides(sc, opts) + eventsPerCall*eventBytes
	jobBytes := int64(unsafe.Sizeof(job{})) + int64(unsafe.Sizeof(tally{})) + eventBytes + 8 // + its place in a queue
	n.perRun = append(n.perRun, need{path: "workload.requests", bytes: toBytes(growth * reqs * float64(callBytes)),
		what: fmt.Sprintf("%s requests x %s", bigCount(reqs), results.Bytes(callBytes))})
	buckets := int64((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	maxEvents := opts.MaxEvents
	if maxEvents <= 0 {
		maxEvents = DefaultMaxEvents
	}

	// Each strategy deploys the services its own way (replicas, caches,
	// calls): a run's memory is the largest strategy's, the rows are
	// every strategy's.
	var live, cache, kept need
	var rows float64
	rowsOf := need{path: "bucket"}
	for _, st := range ran(sc, opts.Strategies) {
		deployed := sc.ServicesFor(st)
		sides := jobSideBytes(st.DeadlinePropagation, policiesOf(st, deployed))
		if l := liveJobs(sc, deployed, reqs, jobBytes+sides+callBytes); l.bytes >= live.bytes {
			live = l
		}
		if c := caches(deployed); c.bytes >= cache.bytes {
			cache = c
		}
		series, most := 0, -1
		for i, svc := range deployed {
			series++
			if svc.Replicas > 1 {
				series += svc.Replicas
				if most < 0 || svc.Replicas > deployed[most].Replicas {
					most = i
				}
			}
		}
		if b := mulBytes(int64(series)*buckets, int64(unsafe.Sizeof(results.Bucket{}))); b >= kept.bytes {
			kept.bytes = b
		}
		rows += float64(series) * float64(buckets) * float64(sc.Runs)
		if most >= 0 {
			rowsOf.path = servicePath(sc, st, deployed, most) + ".replicas"
		}
		rowsOf.what = fmt.Sprintf("%s buckets a run x %s series (services and replicas) x %d runs of each strategy", results.Count(float64(buckets)), results.Count(float64(series)), sc.Runs)
		if n.tooMany == nil {
			n.tooMany = tooManyEvents(sc, st, deployed, reqs, maxEvents)
		}
	}
	n.perRun = append(n.perRun, live)
	if cache.bytes > 0 {
		n.perRun = append(n.perRun, cache)
	}
	n.Kept = addBytes(n.Kept, kept.bytes)
	n.ServiceRows = toBytes(rows)
	n.maxRows = &rowsOf
}

// ran returns the strategies of sc named in only (all when it is empty).
func ran(sc *scenarios.Scenario, only []string) []*scenarios.Strategy {
	var out []*scenarios.Strategy
	for i := range sc.Strategies {
		if len(only) == 0 || slices.Contains(only, sc.Strategies[i].Name) {
			out = append(out, &sc.Strategies[i])
		}
	}
	return out
}

// servicePath returns the path of service i as the scenario wrote it:
// in the strategy's services: section when that changes it, else in
// services.
func servicePath(sc *scenarios.Scenario, st *scenarios.Strategy, deployed []scenarios.Service, i int) string {
	if st.Services.ByName[deployed[i].Name] != nil {
		k := slices.IndexFunc(sc.Strategies, func(x scenarios.Strategy) bool { return x.Name == st.Name })
		return fmt.Sprintf("strategies[%d].services.%s", k, deployed[i].Name)
	}
	return fmt.Sprintf("services[%d]", i)
}

// liveJobs counts the jobs and calls live at once at the services, each
// of perJob bytes: live[s], the jobs at s at once; running, those
// holding a slot.
func liveJobs(sc *scenarios.Scenario, deployed []scenarios.Service, reqs float64, perJob int64) need {
	live := make([]float64, len(deployed))
	live[sc.TargetIndex()] = reqs
	var inner float64
	for _, i := range sc.Topological() {
		svc := &deployed[i]
		running := live[i]
		if !svc.Concurrency.Unlimited() {
			running = min(running, float64(svc.Concurrency)*float64(svc.Replicas))
		}
		held := live[i]
		if !svc.Concurrency.Unlimited() && !svc.Queue.Unlimited() && newSampler(sc.Network.Latency).zero() {
			// Without a network delay no attempt is on its way: each is
			// served, queued, or answered (and its job freed) at once.
			held = min(held, float64(int64(svc.Concurrency)+int64(svc.Queue))*float64(svc.Replicas))
		}
		inner += held
		for _, c := range svc.Calls {
			if k := sc.ServiceIndex(c.Service); k >= 0 {
				live[k] += running * float64(c.Fanout)
			}
		}
	}
	return need{path: "services", bytes: toBytes(inner * float64(perJob)),
		what: fmt.Sprintf("up to %s attempts at the services at once x %s", bigCount(inner), results.Bytes(perJob))}
}

// caches counts the keys of every cache of deployed.
func caches(deployed []scenarios.Service) need {
	var bytes, warm float64
	var keys, most int
	for i, svc := range deployed {
		c := svc.Cache
		if c == nil {
			continue
		}
		b := float64(c.Keys)*cacheKeyBytes + float64(c.Entries())*cacheEntryBytes
		if c.TTL > 0 {
			b += float64(c.Keys) * cacheTTLBytes
		}
		bytes += b
		warm = max(warm, float64(c.Keys)*cacheWarmBytes)
		keys += c.Keys
		if deployed[most].Cache == nil || c.Keys > deployed[most].Cache.Keys {
			most = i
		}
	}
	if keys == 0 {
		return need{}
	}
	return need{path: fmt.Sprintf("services[%d].cache.keys", most), bytes: toBytes(bytes + warm),
		what: fmt.Sprintf("caches of %s keys in all", results.Count(float64(keys)))}
}

// tooManyEvents returns why a run of st cannot finish within maxEvents
// events, and the field to change, or nil when it can: with no attempt
// failing, the requests times the fan-outs' products (the expected
// attempts, with each call's probability) already take more than the
// budget; or, in the worst case (every attempt failing, each layer
// making all its attempts), they do. With unlimited attempts at the
// fleet, the worst case of one fleet attempt is counted: it is finite
// when the edges' attempts are.
func tooManyEvents(sc *scenarios.Scenario, st *scenarios.Strategy, deployed []scenarios.Service, reqs float64, maxEvents int64) *need {
	budget := float64(maxEvents)
	// With no failure: each call sends fanout copies, each once.
	attempts := make([]float64, len(deployed))
	chain := make([][]int, len(deployed)) // the fan-outs to each service, along its heaviest path
	target := sc.TargetIndex()
	attempts[target] = reqs
	total := reqs
	for _, i := range sc.Topological() {
		for j, c := range deployed[i].Calls {
			k := sc.ServiceIndex(c.Service)
			if k < 0 {
				continue
			}
			p := c.Probability
			if p == 0 {
				p = 1
			}
			add := attempts[i] * float64(c.Fanout) * p
			if add > attempts[k] {
				chain[k] = append(slices.Clone(chain[i]), c.Fanout)
			}
			attempts[k] += add
			total += add
			if events := total * eventsPerAttempt; events > budget && c.Fanout > 1 {
				fanouts := make([]string, len(chain[k]))
				for x, f := range chain[k] {
					fanouts[x] = results.Count(float64(f))
				}
				return &need{path: fmt.Sprintf("services[%d].calls[%d].fanout", i, j),
					what: fmt.Sprintf("strategy %s: %s requests x fan-outs %s make %s attempts at %s with no attempt failing (%s attempts at all the services, x %d events an attempt = %s events), more than a run's budget of %s (--max-events): lower the fan-outs, or the requests",
						st.Name, bigCount(reqs), strings.Join(fanouts, " x "), bigCount(attempts[k]), c.Service, bigCount(total), eventsPerAttempt, bigCount(events), results.Count(budget))}
			}
		}
	}
	if events := total * eventsPerAttempt; events > budget {
		_, path := requestsOf(sc)
		return &need{path: path, what: fmt.Sprintf("strategy %s: %s requests make %s attempts at the services with no attempt failing, x %d events an attempt = %s events, more than a run's budget of %s (--max-events): lower the requests, or raise --max-events",
			st.Name, bigCount(reqs), bigCount(total), eventsPerAttempt, bigCount(events), results.Count(budget))}
	}

	// The worst case: every attempt failing.
	worst := sc.WorstAttempts(st)
	perFleet := ""
	if st.MaxAttempts == 0 {
		one := *st
		one.MaxAttempts = 1
		worst = sc.WorstAttempts(&one)
		perFleet = " per attempt of the fleet (whose attempts are unlimited)"
	}
	total = 0
	parts := make([]string, len(worst))
	for k, a := range worst {
		total += a
		parts[k] = fmt.Sprintf("%s %s", sc.Services[k].Name, bigCount(a))
	}
	if math.IsInf(total, 1) {
		return nil // unlimited attempts on an edge: the event budget stops the run
	}
	if events := reqs * total * eventsPerAttempt; events > budget {
		_, path := requestsOf(sc)
		return &need{path: path, what: fmt.Sprintf("strategy %s: %s requests x a worst-case amplification of %s attempts each%s (%s) x %d events an attempt = %s events, more than a run's budget of %s (--max-events): lower max_attempts on some layers, or raise --max-events",
			st.Name, bigCount(reqs), bigCount(total), perFleet, strings.Join(parts, ", "), eventsPerAttempt, bigCount(events), results.Count(budget))}
	}
	return nil
}

// bigCount is results.Count for counts that may pass 10^15 (where an
// integer's digits say nothing more): 1.2e+18.
func bigCount(x float64) string {
	if math.Abs(x) < 1e15 {
		return results.Count(math.Round(x))
	}
	return fmt.Sprintf("%.2g", x)
}

// policiesOf returns the policies of strategy st's edges in its graph,
// deployed: the fleet's first.
func policiesOf(st *scenarios.Strategy, deployed []scenarios.Service) []*strategies.Policy {
	policies := []*strategies.Policy{st.Policy()}
	for i := range deployed {
		for k := range deployed[i].Calls {
			policies = append(policies, scenarios.EdgeStrategy(st, deployed[i].Name, &deployed[i].Calls[k]).Policy())
		}
	}
	return policies
}

// callSides returns the bytes a call takes beside it (see sides), in the
// graph of the strategy of sc that needs the most.
func callSides(sc *scenarios.Scenario, opts Options) int64 {
	var most int64
	for _, st := range ran(sc, opts.Strategies) {
		deployed := sc.ServicesFor(st)
		most = max(most, needsOf(deployed, policiesOf(st, deployed), sc.Workload.Workers > 0).bytes())
	}
	return most
}
