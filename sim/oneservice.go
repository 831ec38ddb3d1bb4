package sim

import "github.com/zeontools/herdlab/scenarios"

// oneService returns sc with its server written as a graph of one
// service, named "server": the same model, run by the graph engine.
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
