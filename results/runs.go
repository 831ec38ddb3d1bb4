package results

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// RunsVersion is the version of the format of EncodeRuns.
const RunsVersion = 2

// wireRuns is what EncodeRuns writes: JSON keeps a pointer to a zero
// value apart from a nil one, and a float exact; the latency histogram
// goes as its buckets beside its run (RunRecord's LatencyBuckets), and an unbounded capacity as -1
// (see WireServices).
type wireRuns struct {
	Version int       `json:"version"`
	Runs    []wireRun `json:"runs"`
}

type wireRun struct {
	Run     *Run       `json:"run"`
	Latency [][2]int64 `json:"latency"`
}

// EncodeRuns writes runs whole, time series, services and latency
// histograms included, so that DecodeRuns gives runs equal to them: the
// browser app's workers run some of a scenario's runs each, and one of
// them summarises them all, as sim.Run would have.
func EncodeRuns(w io.Writer, runs []*Run) error {
	out := wireRuns{Version: RunsVersion, Runs: make([]wireRun, len(runs))}
	for i, r := range runs {
		c := *r
		c.Services = cloneServices(r.Services)
		WireServices(c.Services, true)
		out.Runs[i] = wireRun{Run: &c}
		if r.Latency != nil {
			out.Runs[i].Latency = [][2]int64{}
			r.Latency.Buckets(func(v, c int64) bool {
				out.Runs[i].Latency = append(out.Runs[i].Latency, [2]int64{v, c})
				return true
			})
		}
	}
	return json.NewEncoder(w).Encode(out)
}

// DecodeRuns reads runs written by EncodeRuns.
func DecodeRuns(r io.Reader) ([]*Run, error) {
	var in wireRuns
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("results: decoding runs: %w", err)
	}
	if in.Version != RunsVersion {
		return nil, fmt.Errorf("results: runs of format version %d; this build reads version %d", in.Version, RunsVersion)
	}
	runs := make([]*Run, len(in.Runs))
	for i, wr := range in.Runs {
		if wr.Run == nil {
			return nil, fmt.Errorf("results: decoding runs: run %d is missing", i)
		}
		if wr.Latency != nil {
			wr.Run.Latency = NewLatencies()
			for _, vc := range wr.Latency {
				if err := wr.Run.Latency.Add(vc[0], vc[1]); err != nil {
					return nil, fmt.Errorf("results: decoding runs: run %d's latencies: %w", i, err)
				}
			}
		}
		WireServices(wr.Run.Services, false)
		runs[i] = wr.Run
	}
	return runs, nil
}

// WireServices makes the services' capacities (and their replicas')
// fit JSON, which has no number for an unbounded one: to sets +Inf to -1,
// !to sets a negative capacity back to +Inf.
func WireServices(services []*ServiceRun, to bool) {
	for _, s := range services {
		switch {
		case to && math.IsInf(s.Capacity, 1):
			s.Capacity = -1
		case !to && s.Capacity < 0:
			s.Capacity = math.Inf(1)
		}
		WireServices(s.Replicas, to)
	}
}

// cloneServices copies the services and their replicas (not their
// series), for WireServices to change.
func cloneServices(services []*ServiceRun) []*ServiceRun {
	if services == nil {
		return nil
	}
	out := make([]*ServiceRun, len(services))
	for i, s := range services {
		c := *s
		c.Replicas = cloneServices(s.Replicas)
		out[i] = &c
	}
	return out
}
