package scenarios

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zeontools/herdlab/configs"
	"github.com/zeontools/herdlab/strategies"
)

// LintRule is a setting known to cause herds, flagged by Lint.
type LintRule struct {
	ID   string // stable: HL001 ...
	Name string // short, such as fixed-delay
	Doc  string // what the rule flags and why
	// Error marks a rule whose findings are errors, not warnings: `check`
	// fails on them without --strict, and a scenario cannot silence them.
	Error bool
}

// Severity returns "error" or "warning".
func (r LintRule) Severity() string {
	if r.Error {
		return "error"
	}
	return "warning"
}

// The lint rules, by id. Their order in LintRules is their id order.
var (
	ruleFixedDelay = LintRule{ID: "HL001", Name: "fixed-delay", Doc: "A fixed delay (backoff kind fixed, no jitter) in a fleet that can have more than one attempt in " +
		"flight: more than one request, and more than one sender or a sender without a worker limit " +
		"(workload.senders x workload.workers, bounded by workload.requests, above 1). This is the " +
		"article's anti-pattern (section 3): the requests that fail together retry together, so the " +
		"spike keeps its shape and is shifted forward in time intact, again and again."}
	ruleExponentialNoJitter = LintRule{ID: "HL002", Name: "exponential-no-jitter", Doc: "Backoff kind exponential (no jitter) in such a fleet: the waits grow, but requests that failed " +
		"together still wait exactly as long and retry in lockstep (article section 4; the AWS " +
		"Architecture Blog's \"Exponential Backoff And Jitter\")."}
	ruleCapNotAboveBase = LintRule{ID: "HL003", Name: "cap-not-above-base", Doc: "A backoff with base and cap (exponential, full-jitter, equal-jitter, proportional-jitter, " +
		"decorrelated-jitter, decorrelated-jitter-v2, envoy-jitter) whose cap is not above its base: the wait never " +
		"grows past the first, however long the outage lasts, so the backoff does not back off " +
		"(article section 2). Validation already rejects cap < base; this flags cap == base."}
	ruleNoLimit = LintRule{ID: "HL004", Name: "no-limit", Doc: "A strategy without max_attempts, max_elapsed or a retry budget: a request that keeps failing is " +
		"retried forever and never reaches the dead-letter queue (article section 10: algorithms must " +
		"have limits)."}
	ruleRetryAfterUncapped = LintRule{ID: "HL005", Name: "retry-after-uncapped", Doc: "Retry-After honored (mode honor or max) with a cap above 1h: a hostile or mistaken header, " +
		"such as an HTTP-date days ahead, parks a request for as long as the cap allows (article " +
		"section 9). herdlab's default cap is 5m."}
	ruleBeyondMaxElapsed = LintRule{ID: "HL006", Name: "beyond-max-elapsed", Doc: "max_elapsed set with max_attempts > 1, where the worst case of all max_attempts attempts takes " +
		"longer than max_elapsed: N attempt timeouts plus, before each retry k = 0..N-2, the largest " +
		"wait the backoff can draw (fixed: delay; exponential, full-jitter, equal-jitter: " +
		"min(cap, base*multiplier^k); proportional-jitter: min(cap, t*(1+jitter)) with t that value; " +
		"decorrelated-jitter: min(cap, base*3^(k+1)); decorrelated-jitter-v2: cap; envoy-jitter: min(cap, base*(2^(k+1)-1)); none: 0). The later " +
		"attempts then need not happen, so max_attempts is not the real limit and a reader of the " +
		"scenario is misled (article section 10: 8 retries over 24 hours; cenkalti/backoff's " +
		"MaxElapsedTime stops a loop whatever its attempt count)."}
	ruleBreakerShorterThanBackoff = LintRule{ID: "HL007", Name: "breaker-shorter-than-backoff", Doc: "A circuit breaker whose open_for is shorter than one backoff step (the first wait: the fixed " +
		"delay, or base for the kinds with a base): its open period is over before the first retry " +
		"comes back, so the retries find it half-open or closed again and it adds no spacing beyond the " +
		"backoff's; it barely shields the destination (article section 8: open for 15 minutes)."}
	ruleManyAttemptsNoBudget = LintRule{ID: "HL008", Name: "many-attempts-no-budget", Doc: "max_attempts above 5 without a retry budget: under overload every request makes every attempt, " +
		"so each extra attempt multiplies the load on a server that is already failing. gRPC treats " +
		"maxAttempts above 5 as 5 (gRFC A6) and throttles retries with a token budget, as the AWS SDKs " +
		"do with their retry quota."}
	ruleRetrySpin = LintRule{ID: "HL009", Name: "retry-spin", Error: true,
		Doc: "Retries that never really wait: a backoff whose longest wait, with the network's round trip " +
			"(twice the mean latency), is under 1ms (none; fixed with a tiny delay; a cap under 1ms) with no " +
			"retry budget and unlimited attempts or more than 1,000. A " +
			"request that fails fast (refused, 503) is sent again thousands of times a second for as long as " +
			"the outage lasts: no client should do it, and the run takes hours or days (it stops at the event " +
			"budget, --max-events). An error, not a warning."}
)

// The rules for the overload controls.
var (
	ruleHedgeNoBudget = LintRule{ID: "HL013", Name: "hedging-no-budget", Doc: "A strategy that hedges without a retry budget: " +
		"when every request is slow (a queue after a spike, a slow replica) every one is hedged, so the load " +
		"grows by the hedges just when the server is slowest, and a server that a spike pushed past its " +
		"capacity can stay there (scenarios/hedging-latch.yaml). gRPC's retry throttling covers hedges: give " +
		"the strategy a budget, whose denials stop the hedges too."}
	ruleSharedBudgetTooSmall = LintRule{ID: "HL014", Name: "shared-budget-too-small", Doc: "An envoy or finagle budget that allows " +
		"less than one retry a second to the senders that hold it, in an outage where calls fail fast: " +
		"finagle, percent of the group's requests a second plus min_per_second; envoy, its floor of " +
		"min_concurrency retries in flight, each held through its first backoff wait. A short blip " +
		"exhausts it, and every later failure is given up: it protects the server by not retrying at " +
		"all. Raise the floor, or hold the budget by more senders."}
)

// The rules for graphs of services.
var (
	ruleLayeredRetries = LintRule{ID: "HL010", Name: "layered-retries-no-budget", Doc: "Retries at more than one layer of a " +
		"service graph (the fleet and call edges with max_attempts other than 1), where a layer that " +
		"retries has no retry budget: the attempts multiply, layer by layer (3 retries at each of 3 layers " +
		"make up to (3+1)^3 = 64 attempts at the bottom per request), just when the bottom is failing. " +
		"Retry at one layer (usually the edge), or give every retrying layer a budget."}
	ruleAmplification = LintRule{ID: "HL011", Name: "worst-amplification", Doc: "A service of a graph that can receive more " +
		"than 100 attempts per fleet request in the worst case (every attempt failing): the product, along " +
		"each path, of the attempts and fan-outs of its calls. An outage at the bottom then meets a herd " +
		"that many times the fleet's."}
	ruleInnerTimeout = LintRule{ID: "HL012", Name: "inner-timeout-longer", Doc: "A call edge whose attempt timeout is not " +
		"shorter than the timeout of a caller of its caller, without deadline propagation: that caller " +
		"gives up while the inner attempt (and its retries) still wait, so the work below is done for no " +
		"one. Make inner timeouts shorter than outer ones, or set deadline_propagation."}
)

// The rules for what configuration files say (see From).
var (
	ruleConfigClamped = LintRule{ID: "HL015", Name: "config-clamped", Doc: "A value that the configuration's own project " +
		"silently changes: a gRPC retryPolicy or hedgingPolicy maxAttempts above 5, which gRPC treats as 5 (gRFC A6). " +
		"The file says one thing and the system does another; herdlab runs what the system does. Write the value it runs."}
	rulePerTryTimeout = LintRule{ID: "HL016", Name: "per-try-timeout-not-shorter", Doc: "A per-try timeout not shorter " +
		"than the route's own timeout (Envoy per_try_timeout, Istio perTryTimeout, against the route's timeout): the " +
		"first attempt can use the whole deadline, so there is never time for the retries the policy allows, and a slow " +
		"upstream gets no second chance. Make per-try timeouts a fraction of the route's."}
	ruleNonIdempotent = LintRule{ID: "HL017", Name: "non-idempotent-retries", Doc: "Retries of a method that is not idempotent " +
		"(a route matching POST or PATCH, retried on 5xx, reset or timeout): an attempt that timed out or was reset may " +
		"have been done, and the retry does it again (article section 7: make the operation idempotent, with a key, " +
		"before retrying it)."}
	ruleUnreachableBudget = LintRule{ID: "HL018", Name: "budget-never-binds", Doc: "An Envoy retry budget whose floor, " +
		"min_retry_concurrency, is above what the route can ever have in flight: the budget then allows every retry and " +
		"limits nothing, though the file looks protected. Lower the floor below the concurrency the route can reach."}
	ruleIgnoredField = LintRule{ID: "HL019", Name: "config-ignored-field", Doc: "A key of a configuration file one or two " +
		"letters from a field its project reads (retryThrotling, max_attempt): the project ignores keys it does not know, " +
		"so the setting the author meant (a retry budget, an attempt limit) is not deployed, and nothing says so."}
)

// The rules for comparisons that are not fair: strategies that differ in
// more than their retries, and a server that refuses nothing.
var (
	ruleUnequalTimeouts = LintRule{ID: "HL020", Name: "unequal-timeouts", Doc: "Strategies of one scenario with different " +
		"per-attempt timeouts (one left at the default of 30s, another set; or two values): on a slow or queueing server " +
		"the strategy that waits longer for an attempt fails fewer of them, and the one that gives up sooner sends more " +
		"retries, so the comparison measures the timeouts as much as the retry policies. Give every strategy the same " +
		"timeout, or say why they differ by silencing the rule."}
	ruleUnequalLimits = LintRule{ID: "HL021", Name: "unequal-limits", Doc: "Strategies of one scenario with different " +
		"limits (max_attempts, max_elapsed; a strategy of max_attempts 1, which makes no retry, is a baseline and is not " +
		"compared): the strategy allowed more attempts, or more time, delivers more of its requests through a long outage " +
		"and sends more load, whatever its backoff. Give every strategy the same limits, or say why they differ by " +
		"silencing the rule."}
	ruleUnboundedQueue = LintRule{ID: "HL022", Name: "unbounded-queue", Doc: "A server (or a service of a graph) with a " +
		"limited concurrency and no queue limit (queue left out, or unlimited), while more than 10 times its slots " +
		"(concurrency x replicas) of requests can arrive within one mean service time (a burst, or the peak arrival rate " +
		"times the service time): nothing is ever refused, every request waits its turn, and a strategy that retries " +
		"slowly (a long fixed delay) looks best, because the queue it comes back to has drained, while a real server " +
		"answers 503 to what it cannot hold. Set queue to what the server holds, or silence the rule with a reason."}
)

// burstFactor is how many times its slots of requests must arrive at a
// server within one mean service time for HL022: past it, the last of
// them waits at least 10 service times in the queue (ten times what it
// should take: a timeout an order of magnitude above the service time
// is usual), where a server with a bounded queue would have refused most
// of them. Below it, a queue absorbs the burst within a few service
// times, and whether it is bounded changes little.
const burstFactor = 10

// hazardRules maps the hazards of package configs to their rules; a
// hazard of a kind not here is one that other rules see in the values
// (a mesh without budgets: HL010, HL008).
var hazardRules = map[string]LintRule{
	configs.HazardClamped:           ruleConfigClamped,
	configs.HazardPerTryTimeout:     rulePerTryTimeout,
	configs.HazardNonIdempotent:     ruleNonIdempotent,
	configs.HazardUnreachableBudget: ruleUnreachableBudget,
	configs.HazardIgnoredField:      ruleIgnoredField,
}

// lintHazards reports the hazards the readers of from: found, each at its
// place in its file, for the strategy or edge that read it.
func (s *Scenario) lintHazards(add func(r LintRule, path string, at configs.Pos, msg string)) {
	if s.src == nil || s.src.from == nil {
		return
	}
	for _, path := range slices.Sorted(maps.Keys(s.src.from.hazards)) {
		for _, h := range s.src.from.hazards[path] {
			if r, ok := hazardRules[h.Rule]; ok {
				add(r, path, h.Pos, h.Msg)
			}
		}
	}
}

// maxAmplification is the worst-case attempts per fleet request above
// which HL011 warns.
const maxAmplification = 100

// spinWait is the longest wait below which HL009 calls retries a spin,
// and spinAttempts the attempts beyond which it does.
const (
	spinWait     = time.Millisecond
	spinAttempts = 1000
)

// LintRules lists every lint rule, in id order.
var LintRules = []LintRule{
	ruleFixedDelay,
	ruleExponentialNoJitter,
	ruleCapNotAboveBase,
	ruleNoLimit,
	ruleRetryAfterUncapped,
	ruleBeyondMaxElapsed,
	ruleBreakerShorterThanBackoff,
	ruleManyAttemptsNoBudget,
	ruleRetrySpin,
	ruleLayeredRetries,
	ruleAmplification,
	ruleInnerTimeout,
	ruleHedgeNoBudget,
	ruleSharedBudgetTooSmall,
	ruleConfigClamped,
	rulePerTryTimeout,
	ruleNonIdempotent,
	ruleUnreachableBudget,
	ruleIgnoredField,
	ruleUnequalTimeouts,
	ruleUnequalLimits,
	ruleUnboundedQueue,
}

// Finding is one lint finding: a rule that a field of a scenario breaks.
type Finding struct {
	Rule LintRule
	// File is the scenario's file, "" for a scenario built in Go.
	File string
	// Path is the field the finding is about, such as
	// strategies[2].backoff.
	Path string
	// Line and Col are where Path (or the nearest enclosing field) was
	// written, from Scenario.Position; 0, 0 for a scenario built in Go.
	Line, Col int
	// Msg says what is wrong in this scenario, with the values seen, and
	// what to do instead.
	Msg string
	// Silenced is the reason the scenario gave in lint.silence for
	// silencing the rule, "" when it does not silence it.
	Silenced string
}

// String returns "FILE:LINE:COL: PATH: ID name: MSG", followed by
// " (silenced: REASON)" for a silenced finding. The position is left out
// for a scenario built in Go.
func (f Finding) String() string {
	var b strings.Builder
	if f.File != "" || f.Line != 0 {
		fmt.Fprintf(&b, "%s:%d:%d: ", f.File, f.Line, f.Col)
	}
	fmt.Fprintf(&b, "%s: %s %s: %s", f.Path, f.Rule.ID, f.Rule.Name, f.Msg)
	if f.Silenced != "" {
		fmt.Fprintf(&b, " (silenced: %s)", f.Silenced)
	}
	return b.String()
}

// Lint returns every finding of s, in file order (by line, then column,
// then rule id), silenced ones included and marked with the reason the
// scenario gave. It runs nothing: it reads the parameters only. s should
// be valid (see Validate); Lint does not panic on one that is not, but its
// findings may then be beside the point.
func Lint(s *Scenario) []Finding {
	silenced := map[string]string{}
	for _, sl := range s.Lint.Silence {
		silenced[sl.Rule] = sl.Reason
	}
	var out []Finding
	add := func(r LintRule, path, format string, args ...any) {
		f := Finding{Rule: r, File: s.File(), Path: path, Msg: fmt.Sprintf(format, args...), Silenced: silenced[r.ID]}
		f.Line, f.Col = s.Position(path)
		if o, ok := s.Origin(path); ok {
			// Read from a configuration file: the finding is about what
			// that file says, so it is placed there.
			f.File, f.Line, f.Col = o.File, o.Line, o.Col
			f.Msg = o.Path + ": " + f.Msg
		}
		out = append(out, f)
	}
	s.lintHazards(func(r LintRule, path string, at configs.Pos, msg string) {
		out = append(out, Finding{Rule: r, File: at.File, Path: path, Line: at.Line, Col: at.Col,
			Msg: at.Path + ": " + msg, Silenced: silenced[r.ID]})
	})
	inFlight, fleet := s.Workload.inFlight()
	// An attempt takes at least a round trip of the network: retries
	// wait that long whatever their backoff.
	var roundTrip time.Duration
	if l := s.Network.Latency; l != nil {
		roundTrip = 2 * l.MeanValue()
	}
	herd := inFlight != 1
	for i, st := range s.Strategies {
		path := fmt.Sprintf("strategies[%d]", i)
		b := st.Backoff
		switch {
		case b.Kind == BackoffFixed && herd:
			add(ruleFixedDelay, path+".backoff",
				"fixed %s delay, %s: the requests that fail together retry together %s later, the same spike each time; "+
					"use full-jitter or equal-jitter, or silence HL001 with a reason", b.Delay, fleet, b.Delay)
		case b.Kind == BackoffExponential && herd:
			add(ruleExponentialNoJitter, path+".backoff",
				"exponential %s..%s without jitter, %s: the requests that fail together wait %s, %s, %s, ... together "+
					"and come back as one spike each time; use full-jitter, equal-jitter or decorrelated-jitter, "+
					"or silence HL002 with a reason",
				b.Base, b.Cap, fleet, b.largestWait(0), b.largestWait(1), b.largestWait(2))
		}
		if b.hasBase() && b.Cap <= b.Base {
			add(ruleCapNotAboveBase, path+".backoff.cap",
				"%s with cap %s, not above base %s: the wait never grows past the first however long the outage lasts; "+
					"set cap well above base (60s is usual), or silence HL003 with a reason", b.Kind, b.Cap, b.Base)
		}
		if st.MaxAttempts == 0 && st.MaxElapsed == 0 && st.Budget == nil {
			add(ruleNoLimit, path,
				"no max_attempts, no max_elapsed and no budget: a request that keeps failing is retried until the horizon "+
					"(in production, forever) and never dead-lettered; set max_attempts or max_elapsed, or silence HL004 "+
					"with a reason")
		}
		if ra := st.RetryAfter; honorsRetryAfter(ra.Mode) && ra.Cap > time.Hour {
			add(ruleRetryAfterUncapped, path+".retry_after.cap",
				"Retry-After mode %s with cap %s: one hostile or mistaken header parks a request for up to %s; "+
					"cap it at 1h or less (the default is %s), or silence HL005 with a reason",
				ra.Mode, ra.Cap, ra.Cap, strategies.DefaultRetryAfterCap)
		}
		if n := st.MaxAttempts; st.MaxElapsed > 0 && n > 1 {
			if worst := st.worstCase(n); worst > st.MaxElapsed {
				add(ruleBeyondMaxElapsed, path+".max_attempts", "%s", st.beyondMaxElapsed(worst))
			}
		}
		if br := st.Breaker; br != nil && br.Kind != BreakerCumulative {
			if first := b.firstStep(); br.OpenFor < first {
				add(ruleBreakerShorterThanBackoff, path+".breaker.open_for",
					"breaker open for %s, shorter than the first backoff wait (%s %s): it is half-open again before "+
						"the first retry comes back, so it holds back nothing the backoff does not; make open_for "+
						"longer than the backoff's waits (the article's is 15m), or silence HL007 with a reason",
					br.OpenFor, b.Kind, first)
			}
		}
		if longest := b.longestWait() + roundTrip; longest < spinWait && st.Budget == nil && (st.MaxAttempts == 0 || st.MaxAttempts > spinAttempts) {
			attempts := "unlimited attempts"
			if st.MaxAttempts > 0 {
				attempts = "max_attempts " + count(st.MaxAttempts)
			}
			add(ruleRetrySpin, path+".backoff",
				"%s waits at most %s between attempts (with the network's round trip), with %s and no budget: a request that fails fast is sent again "+
					"and again without pause for as long as the outage lasts, and the run may stop at its event budget "+
					"(--max-events); wait at least %s (a backoff with a cap of seconds), or allow at most %s attempts",
				b.Kind, longest, attempts, spinWait, count(spinAttempts))
		}
		if st.MaxAttempts > 5 && st.Budget == nil {
			add(ruleManyAttemptsNoBudget, path+".max_attempts",
				"max_attempts %d without a budget: under overload every failing request makes %d attempts, up to %dx "+
					"the load on a server that is already failing; lower it to 5 (gRPC's ceiling) or add a budget "+
					"(kind tokens or quota), or silence HL008 with a reason", st.MaxAttempts, st.MaxAttempts, st.MaxAttempts)
		}
		if st.Hedge != nil && st.Budget == nil {
			add(ruleHedgeNoBudget, path+".hedge",
				"hedging without a budget: when every request is slow every one is hedged, up to %d copies each, just when the server "+
					"is slowest, and a spike can latch it; give the strategy a budget, or silence HL013 with a reason", 1+st.Hedge.Max)
		}
		if n, who, ok := s.budgetHolders(st); ok && st.Budget.MinConcurrency >= n {
			add(ruleUnreachableBudget, path+".budget.min_concurrency",
				"envoy budget's floor of %d retries in flight is not below the %s attempts %s can have in flight: it allows every retry "+
					"and limits nothing; lower min_concurrency, or silence HL018 with a reason", st.Budget.MinConcurrency, count(n), who)
		}
		if perSecond, who, ok := s.sharedRetryRate(st); ok && perSecond < 1 {
			add(ruleSharedBudgetTooSmall, path+".budget",
				"%s budget allows at most %.2g retries a second to %s in an outage where calls fail fast: a blip exhausts it and "+
					"every later failure is given up; raise its floor, or share it among more senders, or silence HL014 with a reason",
				st.Budget.Kind, perSecond, who)
		}
	}
	if s.Graph() && s.validGraph() {
		s.lintGraph(add)
	}
	s.lintFairness(add)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File { // the scenario's own findings first, then each file's
			return a.File == s.File() || (b.File != s.File() && a.File < b.File)
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Rule.ID < b.Rule.ID
	})
	return out
}

// honorsRetryAfter reports whether a Retry-After mode waits out the
// hint: honor or max.
func honorsRetryAfter(mode string) bool {
	m, err := strategies.ParseRetryAfterMode(mode)
	return err == nil && (m == strategies.RetryAfterHonor || m == strategies.RetryAfterMax)
}

// inFlight returns how many attempts the workload can have in flight at
// once, 0 meaning no bound, and a description of the fleet for findings.
// A sender without a worker limit sends all its requests at once, so it
// is a fleet by itself; with workers, a sender has at most that many in
// flight.
func (w Workload) inFlight() (n int, fleet string) {
	if c := w.Clients; c != nil {
		return c.Count, fmt.Sprintf("a closed loop of %s, one request in flight each", lintCount(c.Count, "client"))
	}
	requests := "uncapped poisson arrivals"
	if w.Requests > 0 {
		requests = count(w.Requests) + " requests"
	}
	switch {
	case w.Senders == 0:
		return w.Requests, requests + ", one sender each"
	case w.Workers == 0:
		return w.Requests, fmt.Sprintf("%s, %s without a worker limit", requests, lintCount(w.Senders, "sender"))
	}
	n = math.MaxInt
	if w.Workers <= math.MaxInt/w.Senders {
		n = w.Senders * w.Workers
	}
	if w.Requests > 0 {
		n = min(n, w.Requests)
	}
	return n, fmt.Sprintf("%s, %s x %s", requests, lintCount(w.Senders, "sender"), lintCount(w.Workers, "worker"))
}

// budgetHolders returns, for an envoy budget, the most attempts the
// senders that hold it can have in flight, and who they are; false for
// other budgets, or when that is not bounded.
func (s *Scenario) budgetHolders(st Strategy) (int, string, bool) {
	b, w := st.Budget, s.Workload
	if b == nil || b.Kind != "envoy" {
		return 0, "", false
	}
	fleet, _ := w.inFlight()
	perSender := w.Workers
	if w.Clients != nil {
		perSender = 1
	}
	switch {
	case b.Scope == ScopeFleet && fleet > 0 && fleet < math.MaxInt:
		return fleet, "the whole fleet", true
	case b.Scope == ScopeGroup && perSender > 0:
		return b.GroupSize * perSender, fmt.Sprintf("each group of %s", lintCount(b.GroupSize, "sender")), true
	case (b.Scope == "" || b.Scope == ScopeSender) && perSender > 0:
		return perSender, "each sender", true
	}
	return 0, "", false
}

// sharedRetryRate returns, for an envoy or finagle budget, the retries a
// second it allows the senders that hold one in an outage where calls
// fail at once, and who they are; false for other budgets, or when the
// workload's rate is not known (a burst, or one sender per request).
func (s *Scenario) sharedRetryRate(st Strategy) (float64, string, bool) {
	b := st.Budget
	if b == nil || (b.Kind != "envoy" && b.Kind != "finagle") {
		return 0, "", false
	}
	w := s.Workload
	share, who := 1.0, "the whole fleet"
	switch {
	case b.Scope == ScopeGroup && w.Senders > 0:
		share, who = float64(b.GroupSize)/float64(w.Senders), fmt.Sprintf("each group of %s", lintCount(b.GroupSize, "sender"))
	case b.Scope != ScopeFleet && b.Scope != ScopeGroup && w.Senders > 0:
		share, who = 1/float64(w.Senders), "each sender"
	case b.Scope != ScopeFleet:
		return 0, "", false
	}
	if b.Kind == "envoy" {
		wait := st.Backoff.firstStep()
		if wait <= 0 {
			return 0, "", false
		}
		return float64(b.MinConcurrency) / wait.Seconds(), who, true
	}
	var rate float64
	switch a := w.Arrival; {
	case w.Clients != nil && w.Clients.ThinkTime > 0:
		rate = float64(w.Clients.Count) / w.Clients.ThinkTime.Seconds()
	case w.Clients != nil:
		return 0, "", false
	case a.Kind == Poisson:
		rate = a.Rate
	case a.Kind == Uniform && a.Until > a.From:
		rate = float64(w.Requests) / (a.Until - a.From).Seconds()
	default:
		return 0, "", false
	}
	return b.Percent/100*rate*share + b.MinPerSecond, who, true
}

// lintCount returns "1 noun" or "N nouns", N with thousands separators.
func lintCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return count(n) + " " + noun + "s"
}

// hasBase reports whether the backoff's kind has a base and a cap.
func (b Backoff) hasBase() bool {
	switch b.Kind {
	case BackoffNone, BackoffFixed:
		return false
	}
	_, known := backoffKeys[b.Kind]
	return known
}

// largestWait returns the longest wait the backoff can draw before retry
// k (k = 0 for the first retry), from the formulas of package strategies:
// the supremum, for the random kinds.
func (b Backoff) largestWait(k int) time.Duration {
	expo := func(base time.Duration, m float64, k int) time.Duration {
		return strategies.Exponential{Base: base, Cap: b.Cap, Multiplier: m}.At(k)
	}
	switch b.Kind {
	case BackoffFixed:
		return b.Delay
	case BackoffExponential, BackoffFullJitter, BackoffEqualJitter:
		return expo(b.Base, b.Multiplier, k)
	case BackoffProportionalJitter:
		w := lintDuration(float64(expo(b.Base, b.Multiplier, k)) * (1 + b.Jitter))
		if b.Cap > 0 {
			w = min(b.Cap, w)
		}
		return w
	case BackoffDecorrelatedJitter:
		return expo(b.Base, 3, k+1)
	case BackoffDecorrelatedJitterV2:
		return b.Cap
	case BackoffEnvoyJitter:
		return strategies.EnvoyJitter{Base: b.Base, Cap: b.Cap}.At(k, 1)
	}
	return 0
}

// steadyFrom reports whether, once the largest wait before a retry is w,
// it stays w for every later retry: the largest waits never shrink, and
// stop growing at the cap, or at once for the kinds that do not grow.
func (b Backoff) steadyFrom(w time.Duration) bool {
	atCap := b.Cap > 0 && w >= b.Cap
	switch b.Kind {
	case BackoffNone, BackoffFixed, BackoffDecorrelatedJitterV2:
		return true
	case BackoffDecorrelatedJitter:
		return atCap
	}
	return atCap || b.multiplier() <= 1
}

// multiplier returns the growth factor of an exponential kind: Multiplier,
// or strategies.DefaultMultiplier when it is 0, as package strategies
// reads it.
func (b Backoff) multiplier() float64 {
	if b.Multiplier == 0 {
		return strategies.DefaultMultiplier
	}
	return b.Multiplier
}

// firstStep returns one backoff step, for HL007: the fixed delay, or the
// base of the kinds with a base; 0 for none.
func (b Backoff) firstStep() time.Duration {
	switch {
	case b.Kind == BackoffFixed:
		return b.Delay
	case b.hasBase():
		return b.Base
	}
	return 0
}

// longestWait returns the longest wait the backoff can ever draw: the
// delay of fixed, the cap of the kinds with a cap, 0 for none.
func (b Backoff) longestWait() time.Duration {
	switch {
	case b.Kind == BackoffFixed:
		return b.Delay
	case b.hasBase():
		return b.Cap
	}
	return 0
}

// lintMaxSteps bounds the waits summed one by one by worstCase; past it (a
// multiplier barely above 1), the rest of the sum is a geometric series.
const lintMaxSteps = 1 << 12

// worstCase returns the longest time n attempts of st can take: n
// timeouts, plus the largest wait before each of the n-1 retries. It
// saturates at the largest Duration.
func (st Strategy) worstCase(n int) time.Duration {
	b := st.Backoff
	total := lintMul(st.Timeout, n)
	for k := 0; k < n-1; k++ {
		w := b.largestWait(k)
		if b.steadyFrom(w) {
			return lintAdd(total, lintMul(w, n-1-k))
		}
		if k == lintMaxSteps {
			return lintAdd(total, b.geometricTail(k, n-1))
		}
		total = lintAdd(total, w)
	}
	return total
}

// geometricTail returns the sum of the largest waits of retries from to
// until-1 of an exponential kind, min(cap, B*m^k) with B the base (times
// 1+jitter for proportional-jitter), in floating point.
func (b Backoff) geometricTail(from, until int) time.Duration {
	base, m, c := float64(b.Base), b.multiplier(), float64(b.Cap)
	if b.Kind == BackoffProportionalJitter {
		base *= 1 + b.Jitter
	}
	if base <= 0 || m <= 1 || c <= 0 {
		return lintMul(b.largestWait(from), until-from)
	}
	// Retry k reaches the cap from k = reach on.
	reach := float64(until)
	if r := math.Ceil(math.Log(c/base) / math.Log(m)); r < reach {
		reach = max(r, float64(from))
	}
	sum := base*(math.Pow(m, reach)-math.Pow(m, float64(from)))/(m-1) + (float64(until)-reach)*c
	return lintDuration(sum)
}

// beyondMaxElapsed says, for HL006, how long the worst case takes and
// how many attempts fit in max_elapsed.
func (st Strategy) beyondMaxElapsed(worst time.Duration) string {
	n := st.MaxAttempts
	// fit is the most attempts whose worst case fits in MaxElapsed: the
	// worst case grows with the attempts, by at least a timeout each.
	fit := sort.Search(n, func(i int) bool { return st.worstCase(i+1) > st.MaxElapsed })
	waits := fmt.Sprintf("%s before the retry", st.Backoff.largestWait(0))
	if n > 2 {
		waits = fmt.Sprintf("%s before the first retry, %s before the last", st.Backoff.largestWait(0), st.Backoff.largestWait(n-2))
	}
	msg := fmt.Sprintf("worst case, with every attempt timing out after %s and every wait at its largest (%s), "+
		"%d attempts take %s, longer than max_elapsed %s: ", st.Timeout, waits, n, worst, st.MaxElapsed)
	switch fit {
	case 0:
		msg += fmt.Sprintf("not even the first attempt's timeout fits, so max_attempts %d is not the real limit; "+
			"raise max_elapsed to %s or shorten the timeout", n, worst)
	default:
		msg += fmt.Sprintf("only %s fit, so max_attempts %d is not the real limit; lower max_attempts to %d or raise "+
			"max_elapsed to %s", lintCount(fit, "attempt"), n, fit, worst)
	}
	return msg + ", or silence HL006 with a reason"
}

// lintDuration converts d nanoseconds to a Duration, saturating at the
// largest one and at 0.
func lintDuration(d float64) time.Duration {
	switch {
	case math.IsNaN(d) || d <= 0:
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}

// lintAdd returns a + b for non-negative a and b, saturating at the
// largest Duration.
func lintAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// lintMul returns d * n for non-negative d and n, saturating at the
// largest Duration.
func lintMul(d time.Duration, n int) time.Duration {
	if n <= 0 || d <= 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// validGraph reports whether the graph's calls all name services and
// make no cycle: what lintGraph needs to walk it.
func (s *Scenario) validGraph() bool {
	var p problems
	names := map[string]int{}
	for i, svc := range s.Services {
		names[svc.Name] = i
	}
	for _, svc := range s.Services {
		for _, c := range svc.Calls {
			if _, ok := names[c.Service]; !ok {
				return false
			}
		}
	}
	s.validateCycles(&p, names)
	return len(p) == 0
}

// lintGraph adds the findings of the rules for graphs.
func (s *Scenario) lintGraph(report func(r LintRule, path, format string, args ...any)) {
	seen := map[string]bool{}
	add := func(r LintRule, path, format string, args ...any) {
		key := r.ID + path + fmt.Sprintf(format, args...)
		if !seen[key] {
			seen[key] = true
			report(r, path, format, args...)
		}
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		path := fmt.Sprintf("strategies[%d]", i)
		// HL010: the layers that retry, and those of them without a budget.
		var retrying, unbudgeted []string
		if st.MaxAttempts != 1 {
			retrying = append(retrying, "the fleet")
			if st.Budget == nil {
				unbudgeted = append(unbudgeted, "the fleet")
			}
		}
		where := path
		for ci := range s.Services {
			caller := &s.Services[ci]
			for j := range caller.Calls {
				c := &caller.Calls[j]
				edge := EdgeStrategy(st, caller.Name, c)
				if edge.MaxAttempts == 1 {
					continue
				}
				key := EdgeKey(caller.Name, c.Service)
				if !slices.Contains(retrying, key) {
					// A policy read from a file says where: Istio's default
					// of 2 retries at every sidecar is written nowhere else.
					if o, ok := s.Origin(s.edgeFieldPath(st, i, ci, j, "max_attempts")); ok {
						key += fmt.Sprintf(" (%d attempts: %s)", edge.MaxAttempts, o)
					}
					retrying = append(retrying, key)
					if edge.Budget == nil {
						unbudgeted = append(unbudgeted, EdgeKey(caller.Name, c.Service))
					}
				}
				if where == path {
					where = s.edgePath(st, i, ci, j)
				}
			}
		}
		if len(retrying) > 1 && len(unbudgeted) > 0 {
			add(ruleLayeredRetries, where,
				"retries in %d places (%s), without a budget at %s: the attempts multiply layer by layer while the bottom fails; "+
					"retry at one layer, or give each a budget, or silence HL010 with a reason",
				len(retrying), strings.Join(retrying, ", "), strings.Join(unbudgeted, ", "))
		}
		// HL011: the worst case per service.
		worst := s.WorstAttempts(st)
		for k, a := range worst {
			if a > maxAmplification {
				amount := "unlimited (some layer above retries without limit)"
				if !math.IsInf(a, 1) {
					amount = count(int(a))
				}
				add(ruleAmplification, path,
					"%s can receive %s attempts per fleet request in the worst case, above %d: an outage there meets a herd that many times the fleet's; "+
						"lower max_attempts on some layers, or silence HL011 with a reason", s.Services[k].Name, amount, maxAmplification)
			}
		}
		// HL012: inner timeouts not shorter than outer ones.
		if st.DeadlinePropagation {
			continue
		}
		_, outer := s.incomingTimeouts(st)
		for ci := range s.Services {
			caller := &s.Services[ci]
			for j := range caller.Calls {
				c := &caller.Calls[j]
				edge := EdgeStrategy(st, caller.Name, c)
				if o := outer[ci]; o > 0 && edge.Timeout >= o {
					add(ruleInnerTimeout, s.edgeFieldPath(st, i, ci, j, "timeout"),
						"%s waits %s an attempt, not shorter than %s, the shortest a caller of %s waits: that caller gives up while the call below still runs; "+
							"shorten it, set deadline_propagation, or silence HL012 with a reason",
						EdgeKey(caller.Name, c.Service), edge.Timeout, o, caller.Name)
				}
			}
		}
	}
}

// edgePath returns the field path of the most specific layer that sets
// strategy st's (number i) policy on call j of service ci: its edge, the
// default, or the call's retry; the call when none does.
func (s *Scenario) edgePath(st *Strategy, i, ci, j int) string {
	ls := edgeLayers(st, s.Services[ci].Name, &s.Services[ci].Calls[j])
	if len(ls) == 0 {
		return fmt.Sprintf("services[%d].calls[%d]", ci, j)
	}
	if l := ls[len(ls)-1]; l.path != "" {
		return fmt.Sprintf("strategies[%d].%s", i, l.path)
	}
	return fmt.Sprintf("services[%d].calls[%d].retry", ci, j)
}

// edgeFieldPath returns the field path of field key of strategy st's
// (number i) policy on call j of service ci: in the most specific layer
// that writes it, else the call.
func (s *Scenario) edgeFieldPath(st *Strategy, i, ci, j int, key string) string {
	ls := edgeLayers(st, s.Services[ci].Name, &s.Services[ci].Calls[j])
	for _, l := range slices.Backward(ls) {
		if !l.policy.Wrote(key) {
			continue
		}
		if l.path != "" {
			return fmt.Sprintf("strategies[%d].%s.%s", i, l.path, key)
		}
		return fmt.Sprintf("services[%d].calls[%d].retry.%s", ci, j, key)
	}
	return fmt.Sprintf("services[%d].calls[%d]", ci, j)
}

// LintErrors returns the findings of s's error rules (HL009 retry-spin)
// about the strategies named in only (every strategy when only is
// empty): settings that no run should be given, as a run of them would
// spin until its event budget. Commands that run a scenario refuse it
// with them, up front.
func LintErrors(s *Scenario, only []string) []Finding {
	var out []Finding
	for _, f := range Lint(s) {
		if !f.Rule.Error {
			continue
		}
		if i, ok := strategyOf(f.Path); ok && len(only) > 0 && i < len(s.Strategies) && !slices.Contains(only, s.Strategies[i].Name) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// strategyOf returns the index i of a path strategies[i]...
func strategyOf(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "strategies[")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	return i, err == nil
}
