package scenarios_test

import (
	"os"
	"testing"

	"github.com/zeontools/herdlab/scenarios"
	"github.com/zeontools/herdlab/strategies"
)

// benchScenarios are a single server (aws-occ-10: the AWS study's small
// runs), one with six strategies (thundering-herd), and a graph with
// edges (checkout).
var benchScenarios = []string{"aws-occ-10", "thundering-herd", "checkout"}

// BenchmarkParseScenario reads and validates a shipped scenario: what a
// scenario costs before its first run (Validate makes its policies).
func BenchmarkParseScenario(b *testing.B) {
	for _, name := range benchScenarios {
		data, err := os.ReadFile(name + ".yaml")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("scenario="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := scenarios.Parse(name+".yaml", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var sinkPolicy *strategies.Policy

// BenchmarkRunPolicies takes the policies one run of each strategy of a
// shipped scenario reads (its own, and each edge's): what every run pays
// for them.
func BenchmarkRunPolicies(b *testing.B) {
	for _, name := range benchScenarios {
		sc, err := scenarios.Load(name + ".yaml")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("scenario="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range sc.Strategies {
					st := &sc.Strategies[i]
					sinkPolicy = st.Policy()
					for _, svc := range sc.ServicesFor(st) {
						for k := range svc.Calls {
							e := scenarios.EdgeStrategy(st, svc.Name, &svc.Calls[k])
							sinkPolicy = e.Policy()
						}
					}
				}
			}
		})
	}
}
