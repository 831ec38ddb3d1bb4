package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// lintFairness adds the findings of the rules for fair comparisons:
// HL020 and HL021 about the strategies, HL022 about the server or the
// services.
func (s *Scenario) lintFairness(add func(r LintRule, path, format string, args ...any)) {
	if len(s.Strategies) > 1 {
		s.lintUnequal(add, ruleUnequalTimeouts, func(st *Strategy) (string, bool) {
			return st.Timeout.String(), true
		}, []string{"timeout"}, [2]string{"times out after", "time out after"}, "a strategy that waits longer for an attempt fails fewer of them on a slow or queueing server, "+
			"and one that gives up sooner sends more retries, so the comparison measures the timeouts as much as the retries; "+
			"give every strategy the same timeout")
		s.lintUnequal(add, ruleUnequalLimits, func(st *Strategy) (string, bool) {
			if st.MaxAttempts == 1 {
				return "", false // a baseline without retries: different on purpose
			}
			attempts := "unlimited"
			if st.MaxAttempts > 0 {
				attempts = count(st.MaxAttempts)
			}
			elapsed := "none"
			if st.MaxElapsed > 0 {
				elapsed = st.MaxElapsed.String()
			}
			return "max_attempts " + attempts + ", max_elapsed " + elapsed, true
		}, []string{"max_attempts", "max_elapsed"}, [2]string{"has", "have"}, "the strategy allowed more attempts or more time delivers more of its requests through a long outage "+
			"and sends more load, whatever its backoff; give every strategy the same limits")
	}
	s.lintQueues(add)
}

// lintUnequal reports, for rule r, each strategy whose value (as value
// gives it; false leaves the strategy out) differs from the most common
// one (the first strategy's, on a tie), at the first of fields that the
// strategy writes, or at the strategy when it writes none of them. verb
// joins the other strategies to their value (singular, plural), and why
// says what to do.
func (s *Scenario) lintUnequal(add func(r LintRule, path, format string, args ...any), r LintRule,
	value func(*Strategy) (string, bool), fields []string, verb [2]string, why string) {
	values := make([]string, len(s.Strategies))
	var seen []string // the values, in order of first appearance
	n := map[string]int{}
	for i := range s.Strategies {
		v, ok := value(&s.Strategies[i])
		if !ok {
			continue
		}
		values[i] = v
		if n[v] == 0 {
			seen = append(seen, v)
		}
		n[v]++
	}
	if len(seen) < 2 {
		return
	}
	common := seen[0]
	for _, v := range seen[1:] {
		if n[v] > n[common] {
			common = v
		}
	}
	var others []string
	for i, v := range values {
		if v == common {
			others = append(others, s.Strategies[i].Name)
		}
	}
	for i, v := range values {
		if v == "" || v == common {
			continue
		}
		path := fmt.Sprintf("strategies[%d]", i)
		what := v
		if k := slices.IndexFunc(fields, func(f string) bool { return s.written(path + "." + f) }); k >= 0 {
			path += "." + fields[k]
		} else if f := path + ".timeout"; fields[0] == "timeout" && !s.read(f) {
			what += " (the default: the strategy does not write timeout)"
		}
		v := verb[1]
		if len(others) == 1 {
			v = verb[0]
		}
		add(r, path, "%s %s, while %s %s %s: %s, or say why by silencing %s with a reason",
			s.Strategies[i].Name, what, lintList(others), v, common, why, r.ID)
	}
}

// written reports whether the file wrote the field path itself (in the
// scenario, not read from a configuration file); true for a scenario
// built in Go, whose fields are all its author's.
func (s *Scenario) written(path string) bool {
	if s.src == nil {
		return true
	}
	p, ok := s.src.where[path]
	return ok && p.o == nil
}

// read reports whether the field path was read from a configuration
// file (from:).
func (s *Scenario) read(path string) bool {
	_, ok := s.Origin(path)
	return ok
}

// lintList returns "a", "a and b", or "a, b and c".
func lintList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// lintQueues adds HL022 for the server, or each service of a graph,
// whose queue is unlimited while more than burstFactor times its slots
// of requests can arrive within one mean service time.
func (s *Scenario) lintQueues(add func(r LintRule, path, format string, args ...any)) {
	if !s.Graph() {
		sv := &s.Server
		if sv.Model == ModelOCC || !sv.Queue.Unlimited() || sv.Concurrency.Unlimited() {
			return
		}
		t := sv.ServiceTime.MeanValue()
		if peak, how := s.Workload.arrivalsWithin(t); peak > burstFactor*float64(sv.Concurrency) {
			add(ruleUnboundedQueue, "server.queue", "%s %s arrive within one mean service time (%s) at %s: more than %dx its %s; "+
				"with no queue limit nothing is refused, every request waits its turn, and the strategy that retries slowest "+
				"looks best; set server.queue to what the server holds (a real server answers 503 beyond it), or silence HL022 with a reason",
				lintAmount(peak), how, t, "the server", burstFactor, lintCount(int(sv.Concurrency), "slot"))
		}
		return
	}
	if !s.validGraph() {
		return
	}
	for k := range s.Services {
		svc := &s.Services[k]
		if !svc.Queue.Unlimited() || svc.Concurrency.Unlimited() {
			continue
		}
		slots := int(svc.Concurrency) * max(svc.Replicas, 1)
		t := svc.ServiceTime.MeanValue()
		peak, how := s.demand(k, t)
		if peak > burstFactor*float64(slots) {
			add(ruleUnboundedQueue, fmt.Sprintf("services[%d].queue", k), "%s %s arrive within one mean service time (%s) at %s: more than %dx its %s; "+
				"with no queue limit nothing is refused, every request waits its turn, and the strategy that retries slowest "+
				"looks best; set its queue to what a replica holds (a real server answers 503 beyond it), or silence HL022 with a reason",
				lintAmount(peak), how, t, svc.Name, burstFactor, lintCount(slots, "slot"))
		}
	}
}

// demand returns how many first attempts can arrive at service k within
// t, and how: the workload's arrivals at the target; at a callee, the
// sum over its calls of what its caller can have in service at once (the
// caller's arrivals within t, at most its slots) times the call's
// fan-out. Retries come on top. The graph must be valid.
func (s *Scenario) demand(k int, t time.Duration) (float64, string) {
	if k == s.TargetIndex() {
		return s.Workload.arrivalsWithin(t)
	}
	var total float64
	var from []string
	for i := range s.Services {
		caller := &s.Services[i]
		for _, c := range caller.Calls {
			if c.Service != s.Services[k].Name {
				continue
			}
			in, _ := s.demand(i, t)
			if !caller.Concurrency.Unlimited() {
				in = min(in, float64(int(caller.Concurrency)*max(caller.Replicas, 1)))
			}
			total += in * float64(c.Fanout)
			from = append(from, caller.Name)
		}
	}
	return total, "first attempts from " + lintList(slices.Compact(from))
}

// arrivalsWithin returns the most requests the workload can send within
// a window of t (first attempts, counting no retry), and where they come
// from: a burst's requests; the peak rate of poisson or uniform arrivals
// times t; a closed loop's clients; each bounded by what the fleet can
// have in flight (see inFlight).
func (w Workload) arrivalsWithin(t time.Duration) (float64, string) {
	var n float64
	var how string
	a := w.Arrival
	switch {
	case w.Clients != nil:
		n, how = float64(w.Clients.Count), fmt.Sprintf("requests of a closed loop of %s", lintCount(w.Clients.Count, "client"))
	case a.Kind == Burst:
		n, how = float64(w.Requests), "requests of a burst"
	case a.Kind == Poisson:
		rate := a.Rate
		for _, st := range a.Schedule {
			rate = max(rate, st.Rate)
		}
		n, how = rate*t.Seconds(), fmt.Sprintf("requests of poisson arrivals at up to %s a second", lintAmount(rate))
		if w.Requests > 0 {
			n = min(n, float64(w.Requests))
		}
	case a.Kind == Uniform && a.Until > a.From:
		rate := float64(w.Requests) / (a.Until - a.From).Seconds()
		n, how = min(rate*t.Seconds(), float64(w.Requests)), fmt.Sprintf("requests of uniform arrivals at %s a second", lintAmount(rate))
	default:
		return 0, ""
	}
	if bound, fleet := w.inFlight(); bound > 0 && w.Senders > 0 && float64(bound) < n {
		n, how = float64(bound), "requests in flight at once ("+fleet+")"
	}
	return n, how
}

// lintAmount writes x with thousands separators, rounded down, or with
// two significant digits below 10.
func lintAmount(x float64) string {
	if x < 10 {
		return fmt.Sprintf("%.2g", x)
	}
	if x >= math.MaxInt {
		return "unbounded"
	}
	return count(int(x))
}
