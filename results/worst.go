package results

import "cmp"

// WorstService is, in a graph of two or more services, the service a
// strategy hurt most, with the figures that say how (see WorstOf).
type WorstService struct {
	Name string `json:"name"`
	// PeakLoad, PeakLoadRatio and PeakAtS are the service's
	// (ServiceFigures'): its most attempts in a bucket after the outage,
	// that per second over its capacity (nil when unlimited), and when.
	PeakLoad      float64  `json:"peak_load"`
	PeakLoadRatio *float64 `json:"peak_load_ratio"`
	PeakAtS       float64  `json:"peak_at_s"`
	// Amplification is the attempts that reached the service per fleet
	// request.
	Amplification float64 `json:"amplification"`
}

// WorstOf returns the service of a graph that a strategy hurt most: the
// one with the highest peak load after the outage relative to its
// capacity (ServiceFigures.PeakLoadRatio: the most attempts in a bucket,
// per second, over the service's capacity); a service of unlimited
// capacity (no ratio) ranks below every service with one. Ties go to the
// higher amplification (attempts per fleet request), then to the first
// in file order. It returns nil for fewer than two services: a scenario
// of one server, or a graph of one service, whose front figures say it
// all.
func WorstOf(services []ServiceFigures) *WorstService {
	if len(services) < 2 {
		return nil
	}
	worst := &services[0]
	for i := 1; i < len(services); i++ {
		if worse(&services[i], worst) {
			worst = &services[i]
		}
	}
	w := &WorstService{Name: worst.Name, PeakLoad: worst.PeakLoad, PeakAtS: worst.PeakAtS, Amplification: worst.Amplification}
	if worst.PeakLoadRatio != nil {
		w.PeakLoadRatio = ptr(*worst.PeakLoadRatio)
	}
	return w
}

// worse reports whether service a is hurt more than b, by WorstOf's rule
// (strictly: a tie keeps b).
func worse(a, b *ServiceFigures) bool {
	switch {
	case a.PeakLoadRatio != nil && b.PeakLoadRatio == nil:
		return true
	case a.PeakLoadRatio == nil && b.PeakLoadRatio != nil:
		return false
	case a.PeakLoadRatio != nil:
		if c := cmp.Compare(*a.PeakLoadRatio, *b.PeakLoadRatio); c != 0 {
			return c > 0
		}
	}
	return a.Amplification > b.Amplification
}

// Front returns the service the fleet calls in a graph (the callee of
// the fleet's edge), "" for a scenario of one server.
func (st *StrategySummary) Front() string {
	if len(st.Edges) == 0 || st.Edges[0].From != "" {
		return ""
	}
	return st.Edges[0].To
}
