// Package scenarios is the scenario file: its Go types, strict YAML
// loading with file:line:column errors, validation and defaults. The
// scenario files shipped with herdlab live in this folder too.
//
// Loading is strict: unknown keys, duplicate keys, wrong types, bad
// durations and values out of range are all errors, and every problem in
// a file is reported, each as FILE:LINE:COL: field.path: what is wrong.
//
//	s, err := scenarios.Load("scenarios/thundering-herd.yaml")
//	if err != nil {
//		// err joins one *scenarios.Error per problem.
//	}
//	for _, st := range s.Strategies {
//		policy := st.Policy() // a *strategies.Policy
//	}
//
// A scenario's sweep: section lists fields to vary and their values,
// such as server.outages[0].duration over 10s..5m:8 (see Sweep and
// ParseValues). Scenario.With returns the scenario with fields set to
// other values, and Scenario.Points every point of a sweep; Parse builds
// every point of a file's sweep, so a sweep that loads runs.
//
// A strategy, an edge's policy or a call's retry policy may be read
// from a deployed configuration file (from:, see From and package
// configs): Load reads it, relative to the scenario file, and every
// value read keeps its source position (Scenario.Origin,
// Scenario.ReadFrom) for errors, lint findings and the report.
//
// The format's reference (ScenarioReference, WriteReference) and its
// JSON Schema (Schema) are generated from these types, with a table of
// what reflection cannot see (reference_table.go): the meaning, bounds
// and values of each field. Their tests fail when the table, the schema
// and the decoder disagree, and when docs/scenario-reference.md or
// docs/scenario.schema.json is stale.
//
// A scenario value is plain data: it is safe to read from several
// goroutines once loaded.
package scenarios
