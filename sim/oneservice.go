package sim

import "github.com/zeontools/herdlab/scenarios"

// oneService returns sc with its server written as a graph of one
// service, named "server": how the engine runs a single server.
func oneService(sc *scenarios.Scenario) *scenarios.Scenario {
	g := *sc
	g.Services = []scenarios.Service{{
		Name:            "server",
		Server:          sc.Server,
		Replicas:        1,
		Balancer:        scenarios.RoundRobin,
		QueueDiscipline: scenarios.FIFO,
	}}
	return &g
}
