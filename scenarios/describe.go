package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Describe returns one line saying what the scenario simulates, such as
// "50,000 requests in a burst at 0s from 50,000 senders; server: 200
// slots x 100ms (2,000 req/s), queue 2,000; outages: refuse 0s-30s;
// 15m0s horizon; strategies: fixed-60s, full-jitter".
func (s *Scenario) Describe() string {
	var b strings.Builder
	w := s.Workload
	a := w.Arrival
	switch {
	case w.Clients != nil:
		fmt.Fprintf(&b, "a closed loop of %s clients, each sending its next request %s after its previous one ends", count(w.Clients.Count), w.Clients.ThinkTime)
		if w.Requests > 0 {
			fmt.Fprintf(&b, ", at most %s", count(w.Requests))
		}
	case a.Kind == Burst:
		fmt.Fprintf(&b, "%s requests in a burst at %s", count(w.Requests), a.At)
	case a.Kind == Uniform:
		fmt.Fprintf(&b, "%s requests spread evenly over %s-%s", count(w.Requests), a.From, a.Until)
	case a.Kind == Poisson:
		until := a.Until
		if until == 0 {
			until = s.Duration
		}
		fmt.Fprintf(&b, "poisson arrivals at %s/s over %s-%s", strconv.FormatFloat(a.Rate, 'f', -1, 64), a.From, until)
		if len(a.Schedule) > 0 {
			fmt.Fprintf(&b, " (%d rate changes)", len(a.Schedule))
		}
		if w.Requests > 0 {
			fmt.Fprintf(&b, ", at most %s", count(w.Requests))
		}
	}
	switch {
	case w.Clients != nil:
	case w.Senders > 0:
		fmt.Fprintf(&b, " from %s senders", count(w.Senders))
	default:
		b.WriteString(", one sender each")
	}
	if w.Workers > 0 {
		fmt.Fprintf(&b, " of %d workers", w.Workers)
	}
	if s.Graph() {
		s.describeGraph(&b)
	} else {
		b.WriteString("; server: ")
		describeServer(&b, &s.Server)
	}
	fmt.Fprintf(&b, "; %s horizon", s.Duration)
	if s.Runs > 1 {
		fmt.Fprintf(&b, ", %d runs", s.Runs)
	}
	names := make([]string, len(s.Strategies))
	for i, st := range s.Strategies {
		names[i] = st.Name
		if st.From != nil {
			ref, _ := st.From.ref()
			names[i] += fmt.Sprintf(" (%s %s of %s)", ref.Format, ref.Name, ref.File)
		}
	}
	fmt.Fprintf(&b, "; strategies: %s", strings.Join(names, ", "))
	if sw := s.Sweep; sw != nil {
		points := 1
		axes := make([]string, len(sw.Vary))
		for i, v := range sw.Vary {
			points *= len(v.Values)
			axes[i] = v.Path
			if v.Label != "" {
				axes[i] = v.Label
			}
		}
		fmt.Fprintf(&b, "; sweep: %s points over %s", count(points), strings.Join(axes, " x "))
	}
	return b.String()
}

// count formats n with thousands separators: 50000 -> 50,000.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// describeServer writes a server's capacity, queue and outages.
func describeServer(b *strings.Builder, srv *Server) {
	fmt.Fprintf(b, "%s slots x %s", srv.Concurrency, srv.ServiceTime)
	if c := srv.Capacity(); !math.IsInf(c, 1) {
		fmt.Fprintf(b, " (%s req/s)", count(int(math.Round(c))))
	}
	if !srv.Queue.Unlimited() {
		fmt.Fprintf(b, ", queue %s", count(int(srv.Queue)))
	}
	if len(srv.Outages) > 0 {
		parts := make([]string, len(srv.Outages))
		for i, o := range srv.Outages {
			parts[i] = fmt.Sprintf("%s %s-%s", o.Mode, o.Start, o.End())
			if o.Replicas != nil {
				parts[i] += fmt.Sprintf(" (replicas %v)", o.Replicas)
			}
		}
		fmt.Fprintf(b, "; outages: %s", strings.Join(parts, ", "))
	} else {
		b.WriteString("; no outage")
	}
}

// describeGraph writes the services of a graph, the target first, and
// who calls whom.
func (s *Scenario) describeGraph(b *strings.Builder) {
	fmt.Fprintf(b, "; %d services, the fleet calls %s", len(s.Services), s.Services[s.TargetIndex()].Name)
	for i := range s.Services {
		svc := &s.Services[i]
		b.WriteString("; " + svc.Name + ": ")
		if svc.Replicas > 1 {
			fmt.Fprintf(b, "%d replicas (%s) of ", svc.Replicas, svc.Balancer)
		}
		if len(svc.Calls) > 0 {
			calls := make([]string, len(svc.Calls))
			for k, c := range svc.Calls {
				calls[k] = c.Service
				if c.Fanout > 1 {
					calls[k] += fmt.Sprintf(" x%d", c.Fanout)
				}
			}
			fmt.Fprintf(b, "calls %s; ", strings.Join(calls, ", "))
		}
		describeServer(b, &svc.Server)
	}
}
