package results

// Summary is summary.json: the figures of every strategy of a scenario.
type Summary struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	Seed        uint64 `json:"seed"`
	Runs        int    `json:"runs"`
	// BucketS is the histogram bucket width in seconds.
	BucketS float64 `json:"bucket_s"`
	// HorizonS is the length of a run in seconds.
	HorizonS float64 `json:"horizon_s"`
	// CapacityPerS is the server's capacity in requests per second; nil
	// when unlimited.
	CapacityPerS *float64 `json:"capacity_per_s"`
	// QueueLimit is the most requests the server's queue holds (beyond
	// it, attempts are rejected with 503); nil when unlimited.
	QueueLimit *int64 `json:"queue_limit"`
	// Outages are the server's outage windows, in order; in a graph of
	// services, every service's, in the order of their ends (the
	// recovery counts from the last), each naming its service.
	Outages    []Window          `json:"outages"`
	Strategies []StrategySummary `json:"strategies"`
	// Partial marks results of an interrupted run.
	Partial bool `json:"partial,omitempty"`
	// ReadFrom lists the scenario's fields read from configuration files
	// (a strategy's or an edge's from:), each with where it came from;
	// absent when there is none.
	ReadFrom []ReadField `json:"read_from,omitempty"`
}

// Window is an outage: from StartS to EndS seconds, in a mode (refuse,
// timeout or error).
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Mode   string  `json:"mode"`
	// Service, in a graph of services, is the service the outage hits,
	// and Replicas the replicas (none: all of them).
	Service  string `json:"service,omitempty"`
	Replicas []int  `json:"replicas,omitempty"`
}

// StrategySummary is one strategy's figures: those of its run, or with
// several runs the means, with the 95% confidence half-widths in CI95.
type StrategySummary struct {
	Name string `json:"name"`
	// Index is the strategy's place in the scenario file, from 0, also
	// when only some strategies ran: charts give a strategy the colour
	// of its index, so that it keeps it whatever else ran.
	Index int `json:"index"`
	Figures
	// RecoveredRuns counts the runs in which the server recovered from a
	// backlog: runs that left nothing to recover are not among them. With
	// several runs, RecoveryTimeS is the mean over those of them that had
	// something to recover (over all of them when none had).
	RecoveredRuns int `json:"recovered_runs"`
	// NothingLeftRuns counts the runs that left nothing to recover at the
	// end of the outage (see Figures.BacklogAtOutageEnd): their recovery
	// is no speed.
	NothingLeftRuns int `json:"nothing_left_runs"`
	// Recovery says what RecoveryTimeS means: "recovered" (in every run,
	// from a backlog), "nothing_left" (every run gave up or delivered
	// everything before the outage ended: there was nothing to do),
	// "never" (in no run), "mixed" (runs differ: see RecoveredRuns and
	// NothingLeftRuns) or "no_outage" (the scenario has no outage, so
	// nothing to recover from and no recovery figure).
	Recovery string `json:"recovery"`
	// RunsWithout counts, for each figure that some runs have and others
	// lack (recovery_time_s where some runs never recovered, or left
	// nothing; drain_time_s, completion_time_s; latency_s where a run
	// delivered nothing), the runs that lack it: its mean is over the
	// others, so a check on it fails. Left out when every run has every
	// figure.
	RunsWithout map[string]int `json:"runs_without,omitempty"`
	CI95        *Figures       `json:"ci95,omitempty"`
	Engine      Engine         `json:"engine"`
	// Services are a service graph's services, in file order, each with
	// the means over runs of its figures; none for one server.
	Services []ServiceFigures `json:"services,omitempty"`
	// Edges are a graph's call edges with the attempts sent along each:
	// the fleet's first (from ""), then each service's calls in file
	// order.
	Edges []EdgeFigures `json:"edges,omitempty"`
	// Worst is, in a graph of two or more services, the service the
	// strategy hurt most (see WorstOf); the figures above are the front's
	// (the service the fleet calls). Absent for one server.
	Worst *WorstService `json:"worst_service,omitempty"`
	// Client, for a strategy played by the user's own client code
	// (herdtest) rather than simulated, says so.
	Client *ClientCode `json:"client,omitempty"`
}

// ClientCode describes a strategy played by the user's own client code.
type ClientCode struct {
	// Runner is what ran it: "herdtest".
	Runner string `json:"runner"`
	// Deterministic says whether its first run gave the same results
	// twice: false for a client that draws randomness herdlab does not
	// seed (math/rand's global source, the clock), whose figures are
	// then worth their confidence intervals over several runs. Absent
	// when not checked.
	Deterministic *bool `json:"deterministic,omitempty"`
}

// The values of StrategySummary.Recovery.
const (
	Recovered   = "recovered"
	NothingLeft = "nothing_left"
	Never       = "never"
	Mixed       = "mixed"
	NoOutage    = "no_outage"
)

// RecoveryOf says what the recovery of runs means, from how many of them
// recovered from a backlog (nothing-left runs are not among them) and
// how many left nothing to recover.
func RecoveryOf(runs, recovered, nothingLeft int) string {
	switch {
	case nothingLeft == runs:
		return NothingLeft
	case recovered == runs:
		return Recovered
	case recovered == 0 && nothingLeft == 0:
		return Never
	}
	return Mixed
}

// Engine is what running a strategy cost, summed over its runs. WallS is
// the only figure of a summary that changes between identical runs.
type Engine struct {
	Events int64   `json:"events"`
	WallS  float64 `json:"wall_s"`
}

// ReadField is a scenario field read from a configuration file.
type ReadField struct {
	// Field is the scenario's field path, such as
	// strategies[1].max_attempts.
	Field string `json:"field"`
	// At is where it was read: FILE:LINE:COL: PATH, and for a default the
	// reader filled in, the document that sets it.
	At string `json:"at"`
}
