package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteComparison writes comparison.md: per strategy, the figures of the
// simulation beside those of the real-HTTP replay, with their relative
// difference ((real - simulated) / simulated), and the chart of both
// load curves when chart names one.
func WriteComparison(w io.Writer, simulated, real *Summary, chart string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s: simulation and real HTTP\n\n", real.Scenario)
	if real.Partial {
		bw.WriteString("**Partial results: the replay was interrupted.**\n\n")
	}
	fmt.Fprintf(bw, "%d simulated run(s), %d real run(s), in scenario time.\n\n", simulated.Runs, real.Runs)
	if chart != "" {
		fmt.Fprintf(bw, "![%s: real and simulated load](%s)\n\n", real.Scenario, chart)
	}
	bw.WriteString("| strategy | figure | simulated | real | difference |\n| --- | --- | --- | --- | --- |\n")
	sims := map[string]*StrategySummary{}
	for i := range simulated.Strategies {
		sims[simulated.Strategies[i].Name] = &simulated.Strategies[i]
	}
	for i := range real.Strategies {
		r := &real.Strategies[i]
		s, ok := sims[r.Name]
		if !ok {
			continue
		}
		for _, row := range comparisonRows(s, r) {
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s |\n", r.Name, row.name, cell(row.sim), cell(row.real), difference(row.sim, row.real))
		}
	}
	bw.WriteString("\n")
	for i := range real.Strategies {
		r := &real.Strategies[i]
		if s, ok := sims[r.Name]; ok {
			fmt.Fprintf(bw, "%s: %s%s\n", r.Name, agreement(s, r), othersAgreement(s, r))
			if l := layersAgreement(s, r); l != "" {
				fmt.Fprintf(bw, "%s: %s\n", r.Name, l)
			}
		}
	}
	bw.WriteString("\nEvery figure that either side has is compared: a count agrees within 15% or 0.1% of the requests (at " +
		"least 1), a time within 15% or 1 s, a ratio within 15%. The p99 latency is over delivered requests only. " +
		"A recovery time of never: the server did not recover within the horizon. The real run's duplicates " +
		"come from the test server (in process, or a herdlab serve named with --control); against a --target without " +
		"--control they are not known (0).\n")
	return bw.Flush()
}

// comparisonRow is one figure of a strategy, simulated and real, and
// how far apart the two may be and still agree: floor, in the figure's
// unit, or AgreementTolerance of the simulated value.
type comparisonRow struct {
	name      string
	sim, real *float64
	floor     float64
	core      bool // peak load or recovery time: judged by agreement
	layer     bool // a service of a graph: judged by layersAgreement
}

// comparisonRows are the figures comparison.md compares for a strategy:
// peak load, recovery time, amplification, delivered and duplicates
// always, then every other figure that either side has (not 0), then
// each service of a graph.
func comparisonRows(s, r *StrategySummary) []comparisonRow {
	count := max(1, 0.001*s.Requests)
	rows := []comparisonRow{
		{"peak load (after the outage)", &s.PeakLoad, &r.PeakLoad, 0, true, false},
		{"recovery time (s)", s.RecoveryTimeS, r.RecoveryTimeS, 1, true, false},
		{"amplification", &s.Amplification, &r.Amplification, 0, false, false},
		{"delivered", &s.Delivered, &r.Delivered, count, false, false},
		{"duplicates", &s.Duplicates, &r.Duplicates, count, false, false},
	}
	if s.Recovery == NoOutage && r.Recovery == NoOutage {
		rows = slices.Delete(rows, 1, 2) // no outage: no recovery time, not "never"
	}
	more := []comparisonRow{
		{"requests", &s.Requests, &r.Requests, count, false, false},
		{"attempts", &s.Attempts, &r.Attempts, count, false, false},
		{"dead-lettered", &s.DeadLettered, &r.DeadLettered, count, false, false},
		{"unfinished", &s.Unfinished, &r.Unfinished, count, false, false},
		{"timed out", &s.TimedOut, &r.TimedOut, count, false, false},
		{"rejected (queue full)", &s.Rejected, &r.Rejected, count, false, false},
		{"throttled (429)", &s.Throttled, &r.Throttled, count, false, false},
		{"short-circuited", &s.ShortCircuited, &r.ShortCircuited, count, false, false},
		{"processed", &s.Processed, &r.Processed, count, false, false},
		{"wasted work", &s.Wasted, &r.Wasted, count, false, false},
		{"responses lost", &s.Lost, &r.Lost, count, false, false},
		{"client rejected", &s.ClientRejected, &r.ClientRejected, count, false, false},
		{"rate limited (client)", &s.RateLimited, &r.RateLimited, count, false, false},
		{"shared budget denied", &s.SharedBudgetDenied, &r.SharedBudgetDenied, count, false, false},
		{"hedges", &s.Hedges, &r.Hedges, count, false, false},
		{"hedge wins", &s.HedgeWins, &r.HedgeWins, count, false, false},
		{"p99 latency, delivered (s)", &s.LatencyS.P99, &r.LatencyS.P99, 1, false, false},
	}
	for _, row := range more {
		if *row.sim != 0 || *row.real != 0 {
			rows = append(rows, row)
		}
	}
	for _, sv := range layers(s, r) {
		rows = append(rows,
			comparisonRow{sv.sim.Name + ": peak load (overall)", &sv.sim.PeakLoadOverall, &sv.real.PeakLoadOverall, 0, false, true},
			comparisonRow{sv.sim.Name + ": amplification", &sv.sim.Amplification, &sv.real.Amplification, 0, false, true})
	}
	return rows
}

// agrees reports whether the row's real figure is within
// AgreementTolerance of the simulated one, or within its floor; two
// missing figures (never recovered) agree, one missing does not.
func (row comparisonRow) agrees() bool {
	if row.sim == nil || row.real == nil {
		return row.sim == nil && row.real == nil
	}
	return math.Abs(*row.sim-*row.real) <= math.Max(AgreementTolerance*math.Abs(*row.sim), row.floor)
}

// othersAgreement continues agreement's sentence: whether every other
// figure of the strategy agrees within AgreementTolerance too, or which
// do not, with both values, so that "agree" is said only when every
// figure does. A graph's services are judged by layersAgreement.
func othersAgreement(s, r *StrategySummary) string {
	core := true
	var off []string
	for _, row := range comparisonRows(s, r) {
		switch {
		case row.core:
			core = core && row.agrees()
		case !row.layer && !row.agrees():
			off = append(off, fmt.Sprintf("%s (%s simulated, %s real)", row.name, cell(row.sim), cell(row.real)))
		}
	}
	switch {
	case core && len(off) == 0:
		return ", and so do the other figures compared"
	case core:
		return ", but these figures do not: " + strings.Join(off, ", ")
	case len(off) == 0:
		return "; the other figures compared agree"
	}
	return "; nor do these figures: " + strings.Join(off, ", ")
}

func cell(x *float64) string {
	if x == nil {
		return "never"
	}
	return Count(*x)
}

// difference is (real - simulated) / simulated as a percentage, or the
// absolute difference when the simulated value is 0.
func difference(sim, real *float64) string {
	switch {
	case sim == nil || real == nil:
		return "-"
	case *sim == 0 && *real == 0:
		return "0%"
	case *sim == 0:
		return fmt.Sprintf("+%s", Count(*real))
	}
	d := 100 * (*real - *sim) / math.Abs(*sim)
	return fmt.Sprintf("%+.1f%%", d)
}

// AgreementTolerance is how far a real figure may be from the simulated
// one, as a fraction, for comparison.md to call them in agreement.
const AgreementTolerance = 0.15

// agreement says whether peak load and recovery time agree within
// AgreementTolerance (a recovery time within one second counts too).
func agreement(sim, real *StrategySummary) string {
	within := func(a, b, floor float64) bool {
		return math.Abs(a-b) <= math.Max(AgreementTolerance*math.Abs(a), floor)
	}
	peak := within(sim.PeakLoad, real.PeakLoad, 0)
	recovery := (sim.RecoveryTimeS == nil) == (real.RecoveryTimeS == nil) &&
		(sim.RecoveryTimeS == nil || within(*sim.RecoveryTimeS, *real.RecoveryTimeS, 1))
	switch {
	case peak && recovery:
		return "peak load and recovery time agree within 15%"
	case peak:
		return "peak load agrees within 15%; recovery time does not"
	case recovery:
		return "recovery time agrees within 15%; peak load does not"
	}
	return "neither peak load nor recovery time agrees within 15%"
}

// layer is one service of a graph, simulated and real.
type layer struct{ sim, real *ServiceFigures }

// layers pairs the services of a graph's strategy, simulated and real,
// by name; nil for a single server.
func layers(sim, real *StrategySummary) []layer {
	var out []layer
	for i := range sim.Services {
		for j := range real.Services {
			if real.Services[j].Name == sim.Services[i].Name {
				out = append(out, layer{&sim.Services[i], &real.Services[j]})
			}
		}
	}
	return out
}

// layersAgreement says whether every service's overall peak load and
// amplification agree within AgreementTolerance, naming those that do
// not; "" for a single server.
func layersAgreement(sim, real *StrategySummary) string {
	ls := layers(sim, real)
	if len(ls) == 0 {
		return ""
	}
	var off []string
	for _, l := range ls {
		if !Agrees(l.sim.PeakLoadOverall, l.real.PeakLoadOverall) || !Agrees(l.sim.Amplification, l.real.Amplification) {
			off = append(off, l.sim.Name)
		}
	}
	if len(off) == 0 {
		return "peak load and amplification agree within 15% at every service"
	}
	return "peak load or amplification does not agree within 15% at " + strings.Join(off, ", ")
}

// Agrees reports whether a real figure is within AgreementTolerance of
// the simulated one.
func Agrees(sim, real float64) bool {
	return math.Abs(sim-real) <= AgreementTolerance*math.Abs(sim)
}
