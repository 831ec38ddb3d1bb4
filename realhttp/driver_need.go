package realhttp

import (
	"fmt"
	"math"
	"time"

	"github.com/zeontools/herdlab/results"
	"github.com/zeontools/herdlab/scenarios"
)

// DriverNeed is how many connections a replay of a scenario needs to
// send its attempts when the simulation sends them (see the connection
// model of DriverOptions), and where the simulation needs the most.
type DriverNeed struct {
	// Held bounds from above the attempts the simulated server holds at
	// once (in service, queued, or held by a timeout outage); Conns is
	// Held and a quarter more, for the attempts answered at once
	// (refusals, rejections) and network time: the connections to ask
	// for.
	Held, Conns int
	// Strategy, Run and At are where Held is reached: a strategy's name,
	// the run, the start of the bucket.
	Strategy string
	Run      int
	At       time.Duration
}

// String says it as a replay refusing to start would.
func (n DriverNeed) String() string {
	return fmt.Sprintf("the simulation holds up to %d attempts at the server at once (%s, run %d, at t=%s): a replay needs %d connections to send them as simulated",
		n.Held, n.Strategy, n.Run+1, n.At, n.Conns)
}

// DriverConnsNeeded returns the connections a replay of sc needs, from
// its simulated runs (the strategies to replay, every run). In bucket b
// of a run the server holds at most what it held at the end of bucket
// b-1 (in service and queued) plus the attempts sent in b (none of them
// when a refuse or error outage covers the whole bucket: they are
// answered at once), and never more than its concurrency plus its queue
// when both are bounded; during a timeout outage it also holds every
// attempt sent within the strategy's timeout (or the server's hold,
// without one).
func DriverConnsNeeded(sc *scenarios.Scenario, simulated []*results.Run) DriverNeed {
	sc = driverView(sc)
	capacity := int64(math.MaxInt64)
	if c, q := sc.Server.Concurrency, sc.Server.Queue; !c.Unlimited() && !q.Unlimited() {
		capacity = int64(c) + int64(q)
	}
	var need DriverNeed
	for _, r := range simulated {
		hold := serverHoldCap(sc)
		for i := range sc.Strategies {
			if st := &sc.Strategies[i]; st.Name == r.Strategy && st.Timeout > 0 {
				hold = st.Timeout
			}
		}
		window := int((hold + sc.Bucket - 1) / sc.Bucket)
		var before int64 // held at the end of the bucket before
		for b, bk := range r.Series {
			from := time.Duration(b) * sc.Bucket
			held := min(capacity, before+bk.Attempts)
			if driverAnsweredAtOnce(sc, from, sc.Bucket) {
				held = before // every attempt of the bucket refused, or answered 503 at once
			}
			if driverTimeoutOutage(sc, from, sc.Bucket) {
				for j := max(b-window, 0); j <= b; j++ {
					if driverTimeoutOutage(sc, time.Duration(j)*sc.Bucket, sc.Bucket) {
						held += r.Series[j].Attempts
					}
				}
			}
			if int(held) > need.Held {
				need = DriverNeed{Held: int(held), Strategy: r.Strategy, Run: r.Run, At: time.Duration(b) * sc.Bucket}
			}
			before = bk.InFlight + bk.Queue
		}
	}
	need.Conns = need.Held + (need.Held+3)/4
	return need
}

// driverAnsweredAtOnce reports whether a refuse or error outage covers
// the whole bucket [from, from+width).
func driverAnsweredAtOnce(sc *scenarios.Scenario, from, width time.Duration) bool {
	for _, o := range sc.Server.Outages {
		if o.Mode != scenarios.TimeoutMode && o.Start <= from && o.End() >= from+width {
			return true
		}
	}
	return false
}

// driverTimeoutOutage reports whether a timeout outage overlaps the
// bucket [from, from+width).
func driverTimeoutOutage(sc *scenarios.Scenario, from, width time.Duration) bool {
	for _, o := range sc.Server.Outages {
		if o.Mode == scenarios.TimeoutMode && o.Start < from+width && o.End() > from {
			return true
		}
	}
	return false
}

// driverView is the scenario as the fleet sees its server: for a graph,
// the target service, its replicas' slots and queues together, and the
// outages that hit all of them.
func driverView(sc *scenarios.Scenario) *scenarios.Scenario {
	if !sc.Graph() {
		return sc
	}
	v := *sc
	t := sc.Services[sc.TargetIndex()]
	v.Server = t.Server
	n := scenarios.Limit(t.Replicas)
	if !v.Server.Concurrency.Unlimited() {
		v.Server.Concurrency *= n
	}
	if !v.Server.Queue.Unlimited() {
		v.Server.Queue *= n
	}
	v.Server.Outages = nil
	for _, o := range t.Outages {
		if o.Replicas == nil {
			v.Server.Outages = append(v.Server.Outages, o)
		}
	}
	return &v
}
