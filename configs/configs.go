// Package configs reads the retry policies of real configuration files
// (a gRPC service config, an Envoy bootstrap, Istio VirtualServices and
// DestinationRules, Linkerd ServiceProfiles and HTTPRoutes, an AWS shared
// config profile) as herdlab strategy fields, each placed at the line and
// column of the file it was read from, or, for a default the reader filled
// in, at the object it stands in and with the document that sets it.
//
// A reader returns a Policy: the strategy fields in scenario terms
// (max_attempts, backoff.kind, budget.percent ...). The scenarios loader
// turns a Policy into the strategy a `from:` names, and `herdlab import`
// prints it as YAML with each field's source beside it: both read the same
// values, so an import run gives the same outputs as the from: it stands
// for.
//
// The package imports the projects' own Go types where a format has them
// (Envoy's go-control-plane, istio.io/api), so that what those projects
// refuse is refused here, with the same reason.
package configs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The formats, as a scenario's from: and `herdlab import` name them.
const (
	GRPC    = "grpc"
	Envoy   = "envoy"
	Istio   = "istio"
	Linkerd = "linkerd"
	AWS     = "aws"
)

// Formats lists the formats in the order the docs give them.
var Formats = []string{GRPC, Envoy, Istio, Linkerd, AWS}

// Pos is where a value came from: the file, the line and column (1-based)
// and the value's path in the file's own terms (route.retry_policy.num_retries).
// For a default the reader filled in, the position is the object the field
// is missing from, and Default names the document that sets the default.
type Pos struct {
	File      string
	Line, Col int
	Path      string
	Default   string
}

// String formats p as FILE:LINE:COL: PATH (FILE:LINE:COL without a
// path), with "(default: DOC)" for a default.
func (p Pos) String() string {
	s := fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	if p.Path != "" {
		s += ": " + p.Path
	}
	if p.Default != "" {
		s += " (default: " + p.Default + ")"
	}
	return s
}

// Value is one strategy field read from a file.
type Value struct {
	// Field is the strategy field's path in scenario terms, relative to
	// the strategy: max_attempts, backoff.base, budget.kind, retry_on.
	Field string
	// Value is a string, bool, int, float64, time.Duration or []string.
	Value any
	Pos   Pos
}

// UnlimitedAttempts is the value of max_attempts for a policy without an
// attempt limit, as a scenario writes it (a scenario refuses 0).
const UnlimitedAttempts = "unlimited"

// Policy is a retry policy read from a file, as herdlab strategy fields.
type Policy struct {
	// Name is what the policy is called in its file: a method, a route, a
	// virtual service, a profile.
	Name string
	// Values are the fields, in the order a reader of the scenario
	// expects them (the order import prints).
	Values []Value
	// Hazards are what the reader found dangerous in the file (see
	// Hazard); the scenario's lint reports them.
	Hazards []Hazard
	// Service names the upstream the policy's calls go to (an Envoy
	// route's cluster, an Istio route's destination host), when the file
	// says; ServiceValues are that upstream's fields read from the file,
	// relative to a scenario service (health.consecutive,
	// health.eject_for): a graph's service of that name takes them.
	Service       string
	ServiceValues []Value
}

// Set appends a field's value read at pos.
func (p *Policy) Set(field string, v any, pos Pos) {
	p.Values = append(p.Values, Value{Field: field, Value: v, Pos: pos})
}

// Get returns the value of field, and whether the policy sets it.
func (p *Policy) Get(field string) (Value, bool) {
	for _, v := range p.Values {
		if v.Field == field {
			return v, true
		}
	}
	return Value{}, false
}

// Hazard is a setting of a configuration file that is known to make
// herds, with where it is written.
type Hazard struct {
	// Rule names the hazard; the scenario's lint maps it to its rule.
	Rule string
	Pos  Pos
	Msg  string
}

// The hazards readers report.
const (
	// HazardClamped: a value the source project silently lowers (gRPC's
	// maxAttempts above 5).
	HazardClamped = "clamped"
	// HazardPerTryTimeout: a per-try timeout not shorter than the
	// route's, so there is never time for a retry.
	HazardPerTryTimeout = "per-try-timeout"
	// HazardNonIdempotent: retries of a method that is not idempotent.
	HazardNonIdempotent = "non-idempotent"
	// HazardUnreachableBudget: a retry budget's floor above what the
	// route can have in flight, so the budget never limits anything.
	HazardUnreachableBudget = "unreachable-budget"
	// HazardNoBudget: a hop that retries without any retry budget (or
	// only with a default nobody chose); a mesh of such hops multiplies.
	HazardNoBudget = "no-budget"
	// HazardIgnoredField: a key one or two letters from a field of its
	// object (maxAttempt, retry_mod), which the source project ignores
	// as unknown: the policy read is not what its author wrote.
	HazardIgnoredField = "ignored-field"
)

// Error is a problem in a configuration file, placed at its position.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Ref names a policy in a configuration file: a scenario's from:.
type Ref struct {
	Format string
	File   string // the path as the scenario wrote it
	// Name selects the policy in the file: the gRPC method
	// (pkg.Service/Method, or pkg.Service for the service's default), the
	// Envoy route, the Istio virtual service, the Linkerd route, the AWS
	// profile.
	Name string
	// Route selects one of an Istio virtual service's http routes by name;
	// empty means its first.
	Route string
}

// Read reads the policy that ref names from data, the file's bytes; file
// names the file in positions.
func Read(ref Ref, data []byte) (*Policy, error) {
	r, ok := readers[ref.Format]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (want %s)", ref.Format, strings.Join(Formats, ", "))
	}
	return r.read(ref, data)
}

// Fragment is what `herdlab import` prints: every policy in a file, and,
// for the formats that describe them, services and the calls between
// them.
type Fragment struct {
	Format   string
	File     string
	Policies []*Policy
	// Services are the upstreams the file describes (Envoy clusters,
	// Istio hosts), with the fields read of each (replicas, balancer,
	// health) in scenario terms, relative to the service.
	Services []Service
}

// Service is a service of a graph, read from a file.
type Service struct {
	Name   string
	Values []Value
}

// Import reads every policy of a file.
func Import(format, file string, data []byte) (*Fragment, error) {
	r, ok := readers[format]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	f, err := r.all(file, data)
	if err != nil {
		return nil, err
	}
	f.Format, f.File = format, file
	return f, nil
}

// reader is one format's reader.
type reader struct {
	read func(ref Ref, data []byte) (*Policy, error)
	all  func(file string, data []byte) (*Fragment, error)
}

// readers are the formats' readers, registered by each format's file.
var readers = map[string]reader{}

// errs collects the problems of one file, in order.
type errs []error

func (e *errs) at(pos Pos, format string, args ...any) {
	*e = append(*e, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (e errs) err() error {
	if len(e) == 0 {
		return nil
	}
	return errors.Join(e...)
}

// FormatValue writes v as a scenario file writes it: durations as Go
// durations (1.5s), lists in flow style, strings quoted only where YAML
// needs it.
func FormatValue(v any) string {
	switch v := v.(type) {
	case time.Duration:
		if v == 0 {
			return "0s"
		}
		return v.String()
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = FormatValue(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case string:
		if _, err := strconv.ParseFloat(v, 64); err == nil || v == "" || strings.ContainsAny(v, ":#{}[],&*!|>'\"%@`") || slices.Contains([]string{"true", "false", "null", "yes", "no", "on", "off", "~"}, strings.ToLower(v)) {
			return fmt.Sprintf("%q", v)
		}
		return v
	case float64:
		return fmt.Sprint(v)
	default:
		return fmt.Sprint(v)
	}
}
