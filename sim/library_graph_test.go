package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The claims of the service-graph scenarios of the library.
func init() {
	libraryChecks["layered-retries.yaml"] = checkLayeredRetries
	libraryChecks["cache-flush.yaml"] = checkCacheFlush
	libraryChecks["queue-discipline.yaml"] = checkQueueDiscipline
	libraryChecks["deadline-propagation.yaml"] = checkDeadlinePropagation
	libraryChecks["lb-sinkhole.yaml"] = checkLBSinkhole
	libraryChecks["slow-replica.yaml"] = checkSlowReplica
	libraryChecks["checkout.yaml"] = checkCheckout
	libraryChecks["real-graph.yaml"] = checkRealGraph
}

func checkRealGraph(t *testing.T, l *libraryRun) {
	every, edge := l.strategy(t, "every-layer"), l.strategy(t, "edge-only")
	for _, s := range edge.Services {
		assert.InDelta(t, edge.Amplification, s.Amplification, 1e-9, "edge-only: %s sees each fleet attempt once", s.Name)
	}
	// During the outage each fleet attempt makes 3 at orders and 9 at
	// the database: the database's amplification is at most 9 times the
	// fleet's, and well above the edge's.
	assert.LessOrEqual(t, serviceOf(every, "db").Amplification, 9*every.Amplification)
	assert.Greater(t, serviceOf(every, "db").Amplification, 4*serviceOf(edge, "db").Amplification)
	assert.Greater(t, serviceOf(every, "db").PeakLoadOverall, 1500.0, "the database's peak: 40 times the fleet's 50/s")
	assert.Greater(t, every.DeliveredRatio, edge.DeliveredRatio)
}

func checkLayeredRetries(t *testing.T, l *libraryRun) {
	every, edge, budgets := l.strategy(t, "every-layer"), l.strategy(t, "edge-only"), l.strategy(t, "every-layer-budgets")
	db := func(name string) float64 { return serviceOf(l.strategy(t, name), "db").Amplification }
	assert.Greater(t, db("every-layer"), 6.0, "every-layer: the retries multiply at the database")
	assert.LessOrEqual(t, db("edge-only"), edge.Amplification, "edge-only: the database sees the fleet's attempts, no more")
	assert.Less(t, db("every-layer-budgets"), 1.2, "budgets: the retries stop within a few failures")
	peak := func(s string) float64 { return serviceOf(l.strategy(t, s), "db").PeakLoadOverall }
	assert.Greater(t, peak("every-layer"), 5*peak("edge-only"), "the database's peak during the outage is multiplied")
	assert.Greater(t, every.DeliveredRatio, edge.DeliveredRatio, "the inner retries stretch each attempt past more of the outage")
	assert.Less(t, budgets.DeliveredRatio, edge.DeliveredRatio, "the budgets give up more")
}

func checkCacheFlush(t *testing.T, l *libraryRun) {
	for _, name := range []string{"no-retries", "retries"} {
		s := l.strategy(t, name)
		assert.Zero(t, s.RecoveredRuns, "%s: the cache never warms again after the flush (metastable)", name)
		require.NotNil(t, serviceOf(s, "db").CacheHitRatio)
		assert.Less(t, *serviceOf(s, "db").CacheHitRatio, 0.2, "%s: the cache stays cold", name)
	}
	assert.Greater(t, serviceOf(l.strategy(t, "retries"), "db").Attempts, 2*serviceOf(l.strategy(t, "no-retries"), "db").Attempts, "retries add to the load")
	c := l.strategy(t, "codel-db")
	assert.Equal(t, l.sc.Runs, c.RecoveredRuns, "codel-db: recovers in every run")
	assert.Greater(t, *serviceOf(c, "db").CacheHitRatio, 0.6, "codel-db: the cache warms again")
}

func checkQueueDiscipline(t *testing.T, l *libraryRun) {
	const capacity = 100 * 60 // a minute at capacity
	assert.Less(t, l.strategy(t, "fifo").Delivered, 0.1*capacity, "fifo: goodput under 10% of capacity")
	for _, name := range []string{"lifo", "adaptive-lifo", "codel"} {
		assert.Greater(t, l.strategy(t, name).Delivered, 0.8*capacity, "%s: goodput above 80%% of capacity", name)
	}
	assert.Less(t, serviceOf(l.strategy(t, "codel"), "api").QueueDelayS, 0.05, "codel: the queueing delay stays near its target")
	assert.Greater(t, serviceOf(l.strategy(t, "fifo"), "api").QueueDelayS, 10.0, "fifo: the backlog waits for tens of seconds")
}

func checkDeadlinePropagation(t *testing.T, l *libraryRun) {
	off, on := l.strategy(t, "no-deadlines"), l.strategy(t, "deadline-propagation")
	assert.Greater(t, serviceOf(off, "index").LateWork, 10000.0, "no-deadlines: the index serves work whose clients gave up")
	assert.Zero(t, off.RecoveredRuns, "no-deadlines: the backlog outlasts the slowdown for good")
	for _, s := range on.Services {
		assert.Zero(t, s.LateWork, "deadline-propagation: no work at %s after the client's deadline", s.Name)
	}
	assert.Positive(t, serviceOf(on, "index").DeadlineDropped, "deadline-propagation: expired work is dropped, and counted")
	assert.Equal(t, l.sc.Runs, on.RecoveredRuns, "deadline-propagation: the index recovers in every run")
	assert.Greater(t, on.DeliveredRatio, 0.85)
}

func checkLBSinkhole(t *testing.T, l *libraryRun) {
	failing := func(name string) float64 { return share(l.strategy(t, name), "store", 0) }
	assert.Greater(t, failing("least-outstanding"), 0.6, "least-outstanding: the failing replica draws most attempts")
	assert.InDelta(t, 1.0/3, failing("round-robin"), 0.01, "round-robin: a third")
	assert.Less(t, failing("p2c-health"), 0.15, "p2c-health: outlier detection ejects it")
	assert.Less(t, l.strategy(t, "least-outstanding").DeliveredRatio, 0.8)
	assert.Greater(t, l.strategy(t, "p2c-health").DeliveredRatio, 0.999)
}

func checkSlowReplica(t *testing.T, l *libraryRun) {
	random, p2c := l.strategy(t, "random"), l.strategy(t, "power-of-two")
	assert.InDelta(t, 1.0/3, share(random, "store", 0), 0.01, "random: the slow replica gets a third")
	assert.Less(t, share(p2c, "store", 0), 0.1, "power of two: about 6%")
	assert.Greater(t, random.LatencyS.P99, 10.0)
	assert.Less(t, p2c.LatencyS.P99, 1.0)
}

func checkCheckout(t *testing.T, l *libraryRun) {
	every, edge, safe := l.strategy(t, "retry-everywhere"), l.strategy(t, "edge-only"), l.strategy(t, "budgets-deadlines")
	assert.Greater(t, serviceOf(every, "payments").LateWork, 5000.0, "retry-everywhere: payments done after the client's deadline")
	assert.Greater(t, every.Duplicates, 3000.0, "retry-everywhere: checkouts processed twice at the gateway")
	assert.Greater(t, every.LatencyS.P99, 10.0)
	assert.Less(t, edge.Duplicates, every.Duplicates, "edge-only does less of it")
	assert.Zero(t, serviceOf(safe, "payments").LateWork, "budgets-deadlines: no late work")
	assert.Zero(t, safe.Duplicates, "budgets-deadlines: no duplicate")
	assert.Less(t, safe.LatencyS.P99, 0.2)
	assert.Less(t, safe.DeliveredRatio, every.DeliveredRatio, "the price, shown beside: the budgets give up more checkouts")
}
