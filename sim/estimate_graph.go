package sim

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// eventsPerAttempt is the fewest events an attempt in a graph takes: it
// reaches its service, is answered (or times out), and is retried or
// decided.
const eventsPerAttempt = 3

// estimateGraph counts what a run on a graph of services takes: every
// fleet request's call, and per service the jobs and downstream calls
// that can be live at once (a running job holds its slot while it waits
// for its calls, so a service with limited slots bounds the calls it
// makes); and the worst case of the events, every attempt failing.
func estimateGraph(sc *scenarios.Scenario, n *Needs, reqs, growth float64, maxEvents int64) {
	callBytes := int64(unsafe.Sizeof(call{})) + eventsPerCall*eventBytes
	jobBytes := int64(unsafe.Sizeof(job{})) + int64(unsafe.Sizeof(tally{})) + eventBytes + 8 // + its place in a queue
	n.perRun = append(n.perRun, need{"workload.requests", int64(growth * reqs * float64(callBytes)),
		fmt.Sprintf("%s requests x %s", results.Count(math.Round(reqs)), results.Bytes(callBytes))})
	// live[s]: the jobs at s at once; running: those holding a slot.
	live := make([]float64, len(sc.Services))
	live[sc.TargetIndex()] = reqs
	var inner float64
	for _, i := range sc.Topological() {
		svc := &sc.Services[i]
		running := live[i]
		if !svc.Concurrency.Unlimited() {
			running = min(running, float64(svc.Concurrency)*float64(svc.Replicas))
		}
		inner += live[i]
		for _, c := range svc.Calls {
			if k := sc.ServiceIndex(c.Service); k >= 0 {
				live[k] += running * float64(c.Fanout)
			}
		}
	}
	n.perRun = append(n.perRun, need{"services", int64(inner * float64(jobBytes+callBytes)),
		fmt.Sprintf("up to %s attempts at the services at once x %s", results.Count(math.Round(inner)), results.Bytes(jobBytes+callBytes))})
	series := 0
	for _, svc := range sc.Services {
		series++
		if svc.Replicas > 1 {
			series += svc.Replicas
		}
	}
	buckets := int64((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	n.Kept += int64(series) * buckets * int64(unsafe.Sizeof(results.Bucket{}))

	if maxEvents <= 0 {
		maxEvents = DefaultMaxEvents
	}
	for i := range sc.Strategies {
		st := &sc.Strategies[i]
		worst := sc.WorstAttempts(st)
		total := 0.0
		parts := make([]string, len(worst))
		for k, a := range worst {
			total += a
			parts[k] = fmt.Sprintf("%s %s", sc.Services[k].Name, results.Count(a))
		}
		if math.IsInf(total, 1) {
			continue // unlimited attempts: the event budget stops the run
		}
		if events := reqs * total * eventsPerAttempt; events > float64(maxEvents) && n.tooMany == "" {
			n.tooMany = fmt.Sprintf("strategy %s: %s requests x a worst-case amplification of %s attempts each (%s) x %d events an attempt = %s events, more than a run's budget of %s (--max-events): lower max_attempts on some layers, or raise --max-events",
				st.Name, results.Count(math.Round(reqs)), results.Count(total), strings.Join(parts, ", "), eventsPerAttempt, results.Count(events), results.Count(float64(maxEvents)))
		}
	}
}
