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
	// Outages are the server's outage windows, in order.
	Outages    []Window          `json:"outages"`
	Strategies []StrategySummary `json:"strategies"`
	// Partial marks results of an interrupted run.
	Partial bool `json:"partial,omitempty"`
}

// Window is an outage: from StartS to EndS seconds, in a mode (refuse,
// timeout or error).
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Mode   string  `json:"mode"`
}

// StrategySummary is one strategy's figures: those of its run, or with
// several runs the means, with the 95% confidence half-widths in CI95.
type StrategySummary struct {
	Name string `json:"name"`
	Figures
	// RecoveredRuns counts the runs in which the server recovered; with
	// several runs, RecoveryTimeS is the mean over those.
	RecoveredRuns int      `json:"recovered_runs"`
	CI95          *Figures `json:"ci95,omitempty"`
	Engine        Engine   `json:"engine"`
}

// Engine is what running a strategy cost, summed over its runs. WallS is
// the only figure of a summary that changes between identical runs.
type Engine struct {
	Events int64   `json:"events"`
	WallS  float64 `json:"wall_s"`
}
