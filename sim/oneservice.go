package sim

import "github.com/zeontools/herdlab/scenarios"

// oneService returns sc with its server written as a graph of one
// service, named "server": how the engine runs a single server (see
// scenarios.Scenario.OneService, which real HTTP shares).
func oneService(sc *scenarios.Scenario) *scenarios.Scenario { return sc.OneService() }
