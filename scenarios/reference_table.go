package scenarios

import (
	"maps"
	"slices"
	"strconv"
)

// The values of the string fields with a fixed set, where the decoder's
// types do not list them.
var (
	outcomeNames    = []string{"refused", "timeout", "reset", "5xx", "429", "4xx"}
	retryAfterModes = []string{"honor", "ignore", "max"}
	maxCount        = strconv.Itoa(MaxCount)
)

// lintRuleIDs lists the ids of LintRules.
func lintRuleIDs() []string {
	ids := make([]string, len(LintRules))
	for i, r := range LintRules {
		ids[i] = r.ID
	}
	return ids
}

// table is what reflection cannot see of each field of the scenario
// format, by the Go type that declares it and the field's key: its
// meaning, the default where setDefaults does not give it, its bounds and
// the strings it takes. TestReferenceTableMatchesTypes fails when a field
// of the types is missing here, or an entry here names no field.
var table = map[string]info{
	"Scenario.name":        {doc: "Names the output folder. Letters, digits, '.', '_' and '-'.", def: "the file's name without its extension", bounds: "at most " + strconv.Itoa(MaxNameLen) + " characters"},
	"Scenario.description": {doc: "Free text shown in reports."},
	"Scenario.seed":        {doc: "Seeds every random draw of the run: the same seed gives the same figures.", bounds: ">= 0"},
	"Scenario.runs":        {doc: "Independent replications, with seeds derived from seed; figures are their mean.", bounds: "[1," + strconv.Itoa(MaxRuns) + "]"},
	"Scenario.duration":    {doc: "The simulated horizon.", bounds: "> 0"},
	"Scenario.bucket":      {doc: "Width of a time bucket of the charts and timeseries.csv.", bounds: "> 0, at most duration, at most " + strconv.Itoa(MaxBuckets) + " buckets"},
	"Scenario.server":      {doc: "The one server under load (a scenario has server or services, not both)."},
	"Scenario.services":    {doc: "Instead of server, a graph of services: the fleet calls workload.target, which calls others."},
	"Scenario.network":     {doc: "The path between senders and server."},
	"Scenario.workload":    {doc: "The requests the senders make."},
	"Scenario.dlq":         {doc: "The dead-letter queue, where requests that are given up go."},
	"Scenario.strategies":  {doc: "The retry strategies compared: each runs alone against the same server, outages and workload.", bounds: "at least 1"},
	"Scenario.checks":      {doc: "What `herdlab check` holds the results to: bounds on a strategy's figures, or comparisons."},
	"Scenario.lint":        {doc: "Lint rules this scenario silences, each with a reason."},
	"Scenario.sweep":       {doc: "What `herdlab sweep` varies: the scenario runs once for every combination of values."},

	"Server.model":               {doc: "queue: slots, a waiting room, outages and the rest below; occ: one database row written with optimistic concurrency control (AWS's \"Exponential Backoff And Jitter\"), where every other server field is refused.", values: []string{ModelQueue, ModelOCC}},
	"Server.concurrency":         {doc: "Requests served at once.", bounds: ">= 1, or unlimited"},
	"Server.service_time":        {doc: "Time to serve one request: a duration (constant) or a distribution. Capacity is concurrency / mean service time."},
	"Server.queue":               {doc: "Waiting room when every slot is busy; overflow is answered 503. Omitted means unlimited: see Pitfalls.", bounds: ">= 0, or unlimited"},
	"Server.outages":             {doc: "Windows in which the server does not serve, in order, without overlap."},
	"Server.failure_probability": {doc: "Chance that an attempt fails with a 503 on its own (a flaky dependency).", typ: "probability", bounds: "[0,1]"},
	"Server.failure_pushback":    {doc: "gRPC's grpc-retry-pushback-ms hint sent with every failure that failure_probability makes (needs failure_probability)."},
	"Server.slowdown":            {doc: "Added to the service time for each request already in service when one starts.", bounds: ">= 0"},
	"Server.drop_expired":        {doc: "Skips work whose sender has already timed out, instead of serving it to no one."},
	"Server.warmup":              {doc: "Capacity ramp after each outage."},
	"Server.rate_limit":          {doc: "A token bucket in front of the server: a request without a token is answered 429 with a Retry-After hint."},
	"Server.response_loss":       {doc: "Chance that a processed request's answer is lost: the sender sees a reset.", typ: "probability", bounds: "[0,1]"},
	"Server.idempotency":         {doc: "Keeps every request's key and never processes a request twice: a repeat is answered from the stored result (503 while it is still in progress)."},

	"Outage.start":    {doc: "When the outage begins.", bounds: ">= 0, before the horizon"},
	"Outage.duration": {doc: "How long it lasts.", bounds: "> 0"},
	"Outage.mode":     {doc: "refuse: connections refused, the attempt fails at once; timeout: no answer until the sender gives up; error: a fast 503; for a service of services only: flush (empties its cache) and slow (service time x factor).", values: []string{Refuse, TimeoutMode, ErrorMode, FlushMode, SlowMode}},
	"Outage.replicas": {doc: "The replicas of a service the outage hits, numbered from 0; omitted means every replica."},
	"Outage.factor":   {doc: "For mode slow: multiplies the service time.", bounds: "> 1"},

	"Warmup.duration": {doc: "How long capacity takes to grow back to full after an outage.", bounds: "> 0"},
	"Warmup.from":     {doc: "Capacity at the end of the outage, as a fraction of full.", bounds: "(0,1]"},

	"RateLimit.rate":        {doc: "Tokens a second.", bounds: "> 0"},
	"RateLimit.burst":       {doc: "Most tokens saved up.", bounds: ">= 1"},
	"RateLimit.retry_after": {doc: "The hint sent with a 429: a duration, or auto for the time until a token is free.", def: "auto"},
	"RateLimit.format":      {doc: "How the hint is written: delta-seconds or an HTTP-date.", values: []string{"seconds", "http-date"}},
	"RateLimit.pushback":    {doc: "gRPC's grpc-retry-pushback-ms hint sent with every 429: the wait before the retry, or, negative, do not retry."},

	"Network.latency": {doc: "Delay of each hop, request and response.", def: "none"},

	"Dist.dist":   {doc: "The distribution: constant and exponential take mean; uniform takes min and max; lognormal and normal take mean and stddev (normal's negative draws are reflected)."},
	"Dist.mean":   {doc: "The mean.", bounds: "> 0 (>= 0 for normal)"},
	"Dist.stddev": {doc: "The standard deviation.", bounds: "> 0"},
	"Dist.min":    {doc: "The least value.", bounds: ">= 0"},
	"Dist.max":    {doc: "The greatest value.", bounds: "> min"},

	"Workload.target":   {doc: "In a graph, the service the fleet calls.", def: "the first service"},
	"Workload.requests": {doc: "How many requests are made: required for burst and uniform arrivals; for poisson and clients a cap, 0 for none.", bounds: "[0," + maxCount + "]"},
	"Workload.arrival":  {doc: "When requests are created (not with clients)."},
	"Workload.senders":  {doc: "Independent senders, each with its own breaker, budget and throttle, requests dealt to them in turn.", def: "0: one sender per request", bounds: "[0," + maxCount + "]"},
	"Workload.workers":  {doc: "Each sender's dispatcher pool: at most this many attempts in flight a sender (not with clients, nor in a graph).", def: "0: unlimited", bounds: "[0," + maxCount + "]"},
	"Workload.dispatch": {doc: "How a worker waits out a backoff: delay-queue hands the request to a delay queue and takes the next one; blocking sleeps through it, holding its slot (needs workers).", values: []string{DispatchDelayQueue, DispatchBlocking}},
	"Workload.clients":  {doc: "Instead of arrival, a closed loop: each client sends its next request when its previous one ends, think_time later."},

	"Arrival.kind":       {doc: "burst: every request at `at`; poisson: at rate a second from `from` to `until`; uniform: requests spread evenly from `from` to `until`."},
	"Arrival.at":         {doc: "When the burst comes.", bounds: ">= 0, before the horizon"},
	"Arrival.rate":       {doc: "Requests a second.", bounds: ">= 0 (> 0 without a schedule)"},
	"Arrival.from":       {doc: "When arrivals start.", bounds: ">= 0, before the horizon"},
	"Arrival.until":      {doc: "When arrivals end.", def: "0: the horizon (poisson)", bounds: "> from"},
	"Arrival.schedule":   {doc: "Windows in which another rate replaces rate."},
	"Arrival.per_sender": {doc: "Gives each sender a Poisson stream of its own at rate/senders (needs workload.senders), as Brooker's simulator's clients have."},

	"RateStep.from":  {doc: "Start of the window.", bounds: ">= 0"},
	"RateStep.until": {doc: "End of the window.", bounds: "> from"},
	"RateStep.rate":  {doc: "Requests a second in the window.", bounds: ">= 0"},

	"Clients.count":      {doc: "Clients in the loop, each a sender.", bounds: "[1," + maxCount + "]"},
	"Clients.think_time": {doc: "Wait between a request's end and the client's next; the first goes at think_time x U(0,1).", bounds: ">= 0"},

	"DLQ.replay":  {doc: "Sends every dead letter back, with fresh attempt counts (not with clients, nor in a graph)."},
	"Replay.at":   {doc: "When the replay starts.", bounds: ">= 0"},
	"Replay.rate": {doc: "Requests a second replayed.", bounds: "> 0"},

	"Strategy.name":                 {doc: "Names the strategy in every output; unique in the scenario. Letters, digits, '.', '_' and '-'.", bounds: "at most " + strconv.Itoa(MaxNameLen) + " characters"},
	"Strategy.backoff":              {doc: "The wait before each retry: a kind and its parameters, or a retry library's preset."},
	"Strategy.max_attempts":         {doc: "Attempts of a request, counting the first (1: no retry). Write unlimited for no limit: see Pitfalls.", def: "unlimited", bounds: "[1," + maxCount + "], or unlimited", unlimited: true},
	"Strategy.max_elapsed":          {doc: "Longest time from a request's first attempt to its last.", def: "0: unlimited", bounds: ">= 0"},
	"Strategy.timeout":              {doc: "Per-attempt timeout.", bounds: "> 0"},
	"Strategy.retry_on":             {doc: "The outcomes retried.", def: "all but 4xx", values: outcomeNames},
	"Strategy.retry_after":          {doc: "How Retry-After hints are treated."},
	"Strategy.breaker":              {doc: "A circuit breaker per sender."},
	"Strategy.budget":               {doc: "A retry budget, per sender or shared."},
	"Strategy.throttle":             {doc: "A client-side throttle in front of every attempt."},
	"Strategy.hedge":                {doc: "Hedged copies of an attempt that has no answer yet."},
	"Strategy.ignore_pushback":      {doc: "Ignores the server's gRPC pushback hints (by default a hint is the wait before the next retry, a negative one means do not retry)."},
	"Strategy.edges":                {doc: "In a graph, the strategy's policies on call edges: default for every edge, CALLER->CALLEE for one, field by field over the call's retry."},
	"Strategy.deadline_propagation": {doc: "In a graph, bounds every downstream attempt's timeout by the call's remaining deadline, and drops (counted) work whose deadline has passed."},
	"Strategy.services":             {doc: "In a graph, changes fields of named services for this strategy only (a queue discipline, a balancer, replicas), so that it compares deployments."},
	"Strategy.from":                 {doc: "Reads the policy from a configuration file (gRPC service config, Envoy, Istio, Linkerd, AWS config), relative to the scenario; fields written beside from override the file's."},

	"Edges.<edge>":               {doc: "default, or an edge CALLER->CALLEE such as orders->db: an edge policy, any field of strategies[] but name, edges and deadline_propagation."},
	"ServiceOverrides.<service>": {doc: "A service's name: any field of services[] but name and calls, for this strategy."},

	"Backoff.kind":          {doc: "none: retry at once; fixed: delay; exponential: min(cap, base x multiplier^k); full-jitter: U(0, that); equal-jitter: half of it plus U(0, half); proportional-jitter: it x (1 ± jitter); decorrelated-jitter and decorrelated-jitter-v2 (Polly's); envoy-jitter: U(0, min(cap, base x (2^(k+1)-1))). Required unless preset is given."},
	"Backoff.delay":         {doc: "The fixed wait.", bounds: "> 0"},
	"Backoff.base":          {doc: "The first wait.", bounds: "> 0"},
	"Backoff.cap":           {doc: "The longest wait.", bounds: ">= base"},
	"Backoff.multiplier":    {doc: "Growth of the wait at each retry.", bounds: ">= 1"},
	"Backoff.jitter":        {doc: "Proportional jitter: each wait is moved by up to this fraction of itself.", bounds: "(0,1]"},
	"Backoff.throttle_base": {doc: "Base of the waits after a 429 (on the same sequence).", def: "0: base", bounds: ">= 0, <= cap"},
	"Backoff.preset":        {doc: "Instead of kind, a retry library's defaults: its backoff and, unless written, its max_attempts, max_elapsed and retry_after; no other backoff field beside it.", values: slices.Sorted(maps.Keys(Presets))},

	"RetryAfter.mode": {doc: "honor: wait exactly the hint; ignore; max: the larger of hint and backoff.", values: retryAfterModes},
	"RetryAfter.cap":  {doc: "Longest hint obeyed: a larger one is cut to it.", bounds: "> 0"},

	"Breaker.kind":              {doc: "standard: trips on consecutive failures or a failure ratio, stays open open_for, then lets canaries through; cumulative: Brooker's 2022 retry breaker, retries only while failed attempts over first tries are at most failure_ratio."},
	"Breaker.consecutive":       {doc: "Failures in a row (within window, when set) that trip it; set it, failure_ratio or both.", bounds: ">= 0"},
	"Breaker.failure_ratio":     {doc: "Share of failed calls over window that trips it (once min_calls were made); for cumulative, the most failed attempts per first try.", bounds: "[0,1]"},
	"Breaker.window":            {doc: "The window the failures are counted over (needed with failure_ratio).", bounds: ">= 0"},
	"Breaker.min_calls":         {doc: "Calls in the window before the ratio counts.", bounds: ">= 1"},
	"Breaker.open_for":          {doc: "How long it stays open.", bounds: "> 0"},
	"Breaker.open_jitter":       {doc: "open_for moved by up to this fraction, at random.", bounds: "[0,1)"},
	"Breaker.canaries":          {doc: "Attempts let through when half-open.", bounds: ">= 1"},
	"Breaker.on":                {doc: "The outcomes counted as failures.", def: "refused, timeout, reset, 5xx", values: outcomeNames},
	"Breaker.counts_as_attempt": {doc: "Makes a short-circuited request use up an attempt."},
	"Breaker.retries_only":      {doc: "A retry circuit breaker: first attempts always go, only retries wait for it."},

	"Budget.kind":               {doc: "tokens: gRPC retry throttling; quota: the AWS SDK's retry quota; bucket: Brooker's 2022 token bucket; envoy: Envoy's retry budget; finagle: Finagle's RetryBudget."},
	"Budget.max_tokens":         {doc: "Tokens of the gRPC throttle; retries stop below half.", bounds: "> 0"},
	"Budget.token_ratio":        {doc: "Tokens a success gives back.", bounds: "> 0"},
	"Budget.capacity":           {doc: "Size of the quota or bucket.", def: "500 (quota), 5 (bucket)", bounds: "> 0"},
	"Budget.retry_cost":         {doc: "Quota taken by a retry.", bounds: "> 0"},
	"Budget.timeout_cost":       {doc: "Quota taken by a retry after a timeout.", bounds: "> 0"},
	"Budget.no_retry_increment": {doc: "Quota given back by a success at the first attempt.", bounds: ">= 0"},
	"Budget.deposit":            {doc: "Tokens a first try puts in the bucket.", bounds: "> 0"},
	"Budget.cost":               {doc: "Tokens a retry takes from the bucket.", bounds: "> 0"},
	"Budget.threshold":          {doc: "A retry goes only while the bucket holds more than this.", bounds: ">= 0, < capacity"},
	"Budget.throttling_cost":    {doc: "Quota taken by a retry after a 429.", def: "0: retry_cost", bounds: ">= 0"},
	"Budget.percent":            {doc: "Retries allowed as a percentage of requests in flight (envoy) or of requests (finagle); envoy's 0 leaves only min_concurrency.", bounds: "[0,100]"},
	"Budget.min_concurrency":    {doc: "Envoy: retries always allowed in flight.", bounds: ">= 1"},
	"Budget.ttl":                {doc: "Finagle: how long a deposit lasts.", bounds: "> 0"},
	"Budget.min_per_second":     {doc: "Finagle: retries a second always allowed.", bounds: ">= 0"},
	"Budget.scope":              {doc: "Who holds the budget: each sender, the whole fleet, or groups of group_size senders (a proxy's).", values: []string{ScopeSender, ScopeFleet, ScopeGroup}},
	"Budget.group_size":         {doc: "Senders a group, with scope group.", bounds: ">= 1"},

	"Throttle.kind":              {doc: "sre: Google's SRE book client throttling; failsafe: failsafe-go's adaptive throttler; aws-adaptive: the AWS SDKs' CUBIC rate limiter."},
	"Throttle.k":                 {doc: "SRE: requests accepted x k is what may be sent.", bounds: ">= 1"},
	"Throttle.success_threshold": {doc: "failsafe: rejects below this share of successes.", bounds: "(0,1]"},
	"Throttle.window":            {doc: "Window the requests are counted over.", def: "2m (sre), 1m (failsafe)", bounds: "> 0"},
	"Throttle.max_rejection":     {doc: "Highest share of requests rejected.", def: "1 (sre), 0.9 (failsafe)", bounds: "(0,1]"},
	"Throttle.on":                {doc: "aws-adaptive: the outcomes that count as throttles.", def: "429", values: outcomeNames},
	"Throttle.beta":              {doc: "aws-adaptive: the rate is cut to beta x the measured rate on a throttle.", bounds: "(0,1)"},

	"Hedge.delay":  {doc: "Wait without an answer before a copy goes: a duration, or a percentile of the latencies the sender has seen (p95).", bounds: "> 0; a percentile in (0,100)"},
	"Hedge.max":    {doc: "Hedged copies at most.", bounds: "[1,4]"},
	"Hedge.cancel": {doc: "The first answer cancels the other copies."},

	"From.grpc_service_config": {doc: "A gRPC service config (JSON)."},
	"From.method":              {doc: "The method config in it: pkg.Service/Method or pkg.Service."},
	"From.envoy":               {doc: "An Envoy v3 bootstrap (YAML or JSON)."},
	"From.route":               {doc: "An Envoy route, a Linkerd route, or one of an Istio virtual service's http routes (default: its first)."},
	"From.istio":               {doc: "A file of Istio VirtualServices and DestinationRules."},
	"From.virtual_service":     {doc: "The Istio VirtualService."},
	"From.linkerd":             {doc: "A Linkerd ServiceProfile or HTTPRoutes."},
	"From.aws":                 {doc: "An AWS shared config file."},
	"From.profile":             {doc: "The AWS profile.", def: "default"},

	"Service.name":             {doc: "Unique in the graph; calls, edges and workload.target name the service by it."},
	"Service.replicas":         {doc: "Copies serving the service, each with the server's capacity, behind the balancer.", bounds: "[1," + strconv.Itoa(MaxReplicas) + "]"},
	"Service.balancer":         {doc: "How attempts are spread over replicas.", values: []string{RoundRobin, RandomBalancer, LeastOutstanding, PowerOfTwoChoices}},
	"Service.queue_discipline": {doc: "Order in which queued requests are served: fifo; lifo (newest first); adaptive-lifo (FIFO until congested, then LIFO); codel (FIFO, answering 503 to requests that waited too long while the queue stands).", values: []string{FIFO, LIFO, AdaptiveLIFOQueue, CoDelQueue}},
	"Service.adaptive_lifo":    {doc: "When an adaptive-lifo queue is congested."},
	"Service.codel":            {doc: "The codel queue's target and interval."},
	"Service.shed":             {doc: "Answers 503 to a request taken from the queue after waiting longer than queue_delay."},
	"Service.calls":            {doc: "Downstream calls made, in order, while serving one request; the slot is held meanwhile."},
	"Service.health":           {doc: "The balancer's outlier detection (Envoy's consecutive_5xx ejection)."},
	"Service.cache":            {doc: "A look-aside cache in front of the service: callers look a key up first and call the service on a miss."},

	"AdaptiveLIFO.congested": {doc: "The queue is congested while its oldest request has waited longer than this.", bounds: "> 0"},
	"CoDel.target":           {doc: "Overloaded when the least queueing delay of an interval exceeds it.", bounds: "> 0"},
	"CoDel.interval":         {doc: "The interval.", bounds: "> target"},
	"Shed.queue_delay":       {doc: "Longest wait in the queue before a request is shed.", bounds: "> 0"},
	"Health.consecutive":     {doc: "Failures in a row that eject a replica.", bounds: ">= 1"},
	"Health.eject_for":       {doc: "How long an ejected replica is left out.", bounds: "> 0"},

	"Cache.hit_ratio": {doc: "The warm cache's hit ratio: capacity = hit_ratio x keys. Set it or capacity.", bounds: "(0,1)"},
	"Cache.keys":      {doc: "The key population, drawn uniformly.", bounds: "[1," + strconv.Itoa(MaxCacheKeys) + "]"},
	"Cache.capacity":  {doc: "Keys the cache holds. Set it or hit_ratio.", bounds: "[1,keys]"},
	"Cache.ttl":       {doc: "How long an entry lives.", def: "0: until evicted", bounds: ">= 0"},
	"Cache.fill":      {doc: "When a key is cached: on a successful read (the only fill).", values: []string{OnSuccess}},

	"Call.service":     {doc: "The service called."},
	"Call.fanout":      {doc: "Copies sent in parallel, each to a replica, each retried on its own.", bounds: "[1," + strconv.Itoa(MaxReplicas) + "]"},
	"Call.quorum":      {doc: "Copies that must succeed.", def: "0: all", bounds: "[0,fanout]"},
	"Call.probability": {doc: "Share of requests that make the call.", typ: "probability", bounds: "(0,1]"},
	"Call.parallel":    {doc: "Starts the call together with the call before it."},
	"Call.when":        {doc: "Whether the call is made before or after the service's own work.", values: []string{Before, After}},
	"Call.retry":       {doc: "The policy deployed on this edge: any field of strategies[] but name, edges and deadline_propagation; a strategy's edges override it field by field.", def: "one attempt"},

	"Check.strategy": {doc: "The strategy whose figures are bounded, or * for every strategy."},
	"Check.compare":  {doc: "Instead of strategy, a comparison: A.FIGURE OP [k *] B.FIGURE, OP one of <=, <, >=, >, such as full-jitter.peak_load <= 0.5 * fixed.peak_load."},
	"Check.why":      {doc: "What the check shows, for people reading its result."},
	"Check.<figure>": {doc: "A figure of summary.json (such as peak_load_ratio or latency_s.p99, or services.NAME.FIGURE in a graph) and the interval it must lie in."},
	"Bound.min":      {doc: "The least value allowed."},
	"Bound.max":      {doc: "The greatest value allowed.", bounds: ">= min"},

	"LintSettings.silence": {doc: "The rules silenced."},
	"Silence.rule":         {doc: "A warning rule's id (errors cannot be silenced).", values: lintRuleIDs()},
	"Silence.reason":       {doc: "Why the setting is wanted: required."},

	"Sweep.vary":   {doc: "The fields varied: the first is the outermost loop, the last the innermost."},
	"Sweep.metric": {doc: "The figure charted against the values.", values: Figures},
	"Vary.path":    {doc: "The field varied, such as server.outages[0].duration (quote it inside { })."},
	"Vary.label":   {doc: "Names the field in reports.", def: "the path"},
	"Vary.values":  {doc: "The values, in order: a list such as [10s, 30s, 2m], or one string: a comma list, a range A..B:N or a log range A..B:log:N (such as 10s..5m:8)."},
}
