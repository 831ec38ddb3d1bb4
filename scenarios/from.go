package scenarios

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/configs"
)

// From names the configuration file a strategy's policy, or an edge's,
// is read from (see package configs): one format key with the file, and
// what selects the policy in it. The file is read when the scenario is
// loaded, relative to the scenario file; the fields written beside from
// override what it says.
type From struct {
	// GRPCServiceConfig is a gRPC service config (JSON); Method selects
	// the method config: pkg.Service/Method, or pkg.Service.
	GRPCServiceConfig string `yaml:"grpc_service_config"`
	Method            string `yaml:"method"`
	// Envoy is an Envoy v3 bootstrap (YAML or JSON); Route names the route.
	Envoy string `yaml:"envoy"`
	// Route names an Envoy route, a Linkerd route, or one of an Istio
	// virtual service's http routes (default: its first).
	Route string `yaml:"route"`
	// Istio holds VirtualServices and DestinationRules; VirtualService
	// names one.
	Istio          string `yaml:"istio"`
	VirtualService string `yaml:"virtual_service"`
	// Linkerd holds a ServiceProfile or HTTPRoutes; Route names the route.
	Linkerd string `yaml:"linkerd"`
	// AWS is an AWS shared config file; Profile names the profile
	// (default: default).
	AWS     string `yaml:"aws"`
	Profile string `yaml:"profile"`
}

// fromFormats are the keys of from that name a file, by format, and the
// key that selects the policy in it.
var fromFormats = []struct{ key, format, selector string }{
	{"grpc_service_config", configs.GRPC, "method"},
	{"envoy", configs.Envoy, "route"},
	{"istio", configs.Istio, "virtual_service"},
	{"linkerd", configs.Linkerd, "route"},
	{"aws", configs.AWS, "profile"},
}

// ref returns what f names, as configs reads it, and the key that
// names its format.
func (f *From) ref() (configs.Ref, string) {
	switch {
	case f.GRPCServiceConfig != "":
		return configs.Ref{Format: configs.GRPC, File: f.GRPCServiceConfig, Name: f.Method}, "grpc_service_config"
	case f.Envoy != "":
		return configs.Ref{Format: configs.Envoy, File: f.Envoy, Name: f.Route}, "envoy"
	case f.Istio != "":
		return configs.Ref{Format: configs.Istio, File: f.Istio, Name: f.VirtualService, Route: f.Route}, "istio"
	case f.Linkerd != "":
		return configs.Ref{Format: configs.Linkerd, File: f.Linkerd, Name: f.Route}, "linkerd"
	case f.AWS != "":
		name := f.Profile
		if name == "" {
			name = "default"
		}
		return configs.Ref{Format: configs.AWS, File: f.AWS, Name: name}, "aws"
	}
	return configs.Ref{}, ""
}

// readFile reads a configuration file that a scenario names; nil when
// the scenario is not on disk (the browser lab, a scenario posted to a
// server), where from: is refused.
type readFile func(path string) ([]byte, error)

// readNear returns a readFile that reads paths relative to the directory
// of the scenario file, at most configs.MaxFileSize bytes.
func readNear(scenario string) readFile {
	dir := filepath.Dir(scenario)
	return func(path string) ([]byte, error) {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, errors.Unwrap(err)
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, configs.MaxFileSize+1))
	}
}

// resolved is what resolveFrom read: where each node it made came from,
// and the hazards the readers found, by the field path of the strategy
// or edge policy that read them.
type resolved struct {
	origin  map[*yaml.Node]configs.Pos
	hazards map[string][]configs.Hazard
}

// resolveFrom replaces, in the scenario's tree doc, every strategy, edge
// policy and call retry policy that writes from: by the policy its file
// gives, with the fields written beside from: over it. The nodes it makes
// are recorded with their source positions. It returns nil when the
// scenario reads no file.
func (d *decoder) resolveFrom(doc *yaml.Node, read readFile) *resolved {
	r := &resolved{origin: map[*yaml.Node]configs.Pos{}, hazards: map[string][]configs.Hazard{}}
	_, services := field(doc, "services")
	names := map[string]bool{}
	for _, svc := range seqItems(services) {
		if _, name := field(svc, "name"); name != nil {
			names[name.Value] = true
		}
	}
	_, strategies := field(doc, "strategies")
	for i, st := range seqItems(strategies) {
		path := fmt.Sprintf("strategies[%d]", i)
		var upstream []*configs.Policy
		upstream = append(upstream, d.resolveOne(st, path, read, r))
		_, edges := field(st, "edges")
		if edges != nil && edges.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(edges.Content); j += 2 {
				upstream = append(upstream, d.resolveOne(edges.Content[j+1], path+".edges."+edges.Content[j].Value, read, r))
			}
		}
		r.upstreams(st, upstream, names)
	}
	for i, svc := range seqItems(services) {
		_, calls := field(svc, "calls")
		for j, call := range seqItems(calls) {
			_, retry := field(call, "retry")
			d.resolveOne(retry, fmt.Sprintf("services[%d].calls[%d].retry", i, j), read, r)
		}
	}
	if len(r.origin) == 0 {
		return nil
	}
	return r
}

// upstreams gives the strategy st the fields the files read of the
// services its policies call (an Envoy cluster's outlier detection), as
// its services: overrides, for the services of the graph named so; the
// fields the strategy writes itself win.
func (r *resolved) upstreams(st *yaml.Node, read []*configs.Policy, names map[string]bool) {
	for _, p := range read {
		if p == nil || len(p.ServiceValues) == 0 || !names[p.Service] {
			continue
		}
		values := make([]configs.Value, len(p.ServiceValues))
		for i, v := range p.ServiceValues {
			v.Field = "services." + p.Service + "." + v.Field
			values[i] = v
		}
		synth := r.node(values, st)
		merge(synth, st, nil)
		st.Content = synth.Content
	}
}

// resolveOne resolves the from: of the policy mapping n, if it has one,
// and returns the policy read (nil if none, or on error).
func (d *decoder) resolveOne(n *yaml.Node, path string, read readFile, r *resolved) *configs.Policy {
	key, val := field(n, "from")
	if key == nil {
		return nil
	}
	fpath := path + ".from"
	var f From
	errs := len(d.errs)
	d.decodeInto(val, &f, fpath)
	if len(d.errs) > errs {
		return nil
	}
	var set []string
	for _, ff := range fromFormats {
		if k, _ := field(val, ff.key); k != nil {
			set = append(set, ff.key)
		}
	}
	if len(set) != 1 {
		keys := make([]string, len(fromFormats))
		for i, ff := range fromFormats {
			keys[i] = ff.key
		}
		d.failAt(val, fpath, "want exactly one file, named by one of %s; got %d", strings.Join(keys, ", "), len(set))
		return nil
	}
	ref, formatKey := f.ref()
	for _, ff := range fromFormats {
		if ff.key == formatKey && ff.selector != "profile" && ff.selector != "method" {
			if k, _ := field(val, ff.selector); k == nil {
				d.failAt(val, fpath, "%s needs %s: the %s in the file to read", formatKey, ff.selector, strings.ReplaceAll(ff.selector, "_", " "))
				return nil
			}
		}
	}
	if ref.Format == configs.GRPC && ref.Name == "" {
		d.failAt(val, fpath, "grpc_service_config needs method: pkg.Service/Method, or pkg.Service for the service's default")
		return nil
	}
	if read == nil {
		d.failAt(key, fpath, "from: reads a configuration file, so the scenario must be read from disk (herdlab run FILE): here it has no directory to read %s from", ref.File)
		return nil
	}
	data, err := read(ref.File)
	if err != nil {
		k, _ := field(val, formatKey)
		d.failAt(k, fpath+"."+formatKey, "cannot read %s: %v", ref.File, err)
		return nil
	}
	shown := ref.File
	if !filepath.IsAbs(shown) && d.file != "" {
		shown = filepath.Join(filepath.Dir(d.file), ref.File)
	}
	ref.File = shown
	p, err := configs.Read(ref, data)
	if err != nil {
		d.configError(err, val, fpath)
		return nil
	}
	synth := r.node(p.Values, key)
	merge(synth, n, key)
	n.Content = synth.Content
	if len(p.Hazards) > 0 {
		r.hazards[path] = append(r.hazards[path], p.Hazards...)
	}
	return p
}

// configError records the problems a reader found, each at its place in
// the configuration file.
func (d *decoder) configError(err error, at *yaml.Node, path string) {
	for _, e := range unjoin(err) {
		var ce *configs.Error
		if errors.As(e, &ce) {
			d.add(&Error{File: ce.Pos.File, Line: ce.Pos.Line, Col: ce.Pos.Col, Path: path, Origin: ce.Pos.Path, Msg: ce.Msg})
			continue
		}
		d.failAt(at, path, "%v", e)
	}
}

// node makes the mapping of strategy fields that values set, nested by
// their dotted paths, each node placed where from was written (for the
// messages that do not know about origins) and recorded with its origin.
func (r *resolved) node(values []configs.Value, at *yaml.Node) *yaml.Node {
	top := &yaml.Node{Kind: yaml.MappingNode, Line: at.Line, Column: at.Column}
	for _, v := range values {
		m := top
		parts := strings.Split(v.Field, ".")
		for _, part := range parts[:len(parts)-1] {
			_, sub := field(m, part)
			if sub == nil {
				k := &yaml.Node{Kind: yaml.ScalarNode, Value: part, Line: at.Line, Column: at.Column}
				sub = &yaml.Node{Kind: yaml.MappingNode, Line: at.Line, Column: at.Column}
				r.origin[k], r.origin[sub] = v.Pos, v.Pos
				m.Content = append(m.Content, k, sub)
			}
			m = sub
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: parts[len(parts)-1], Line: at.Line, Column: at.Column}
		val := valueNode(v.Value, at)
		r.origin[k], r.origin[val] = v.Pos, v.Pos
		for _, c := range val.Content {
			r.origin[c] = v.Pos
		}
		m.Content = append(m.Content, k, val)
	}
	return top
}

// valueNode writes v as the node a scenario file would have.
func valueNode(v any, at *yaml.Node) *yaml.Node {
	if list, ok := v.([]string); ok {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Line: at.Line, Column: at.Column}
		for _, s := range list {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Line: at.Line, Column: at.Column})
		}
		return n
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: configs.FormatValue(v), Line: at.Line, Column: at.Column}
	if s, ok := v.(string); ok {
		n.Tag, n.Value = "!!str", s
	}
	return n
}

// merge writes the fields of the written mapping n (but from) over the
// mapping synth: a mapping over a mapping field by field, unless it names
// its own kind (or preset), which replaces the whole; anything else
// replaces.
func merge(synth, n, from *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k == from {
			synth.Content = append([]*yaml.Node{k, v}, synth.Content...)
			continue
		}
		j := keyIndex(synth, k.Value)
		switch {
		case j < 0:
			synth.Content = append(synth.Content, k, v)
		case v.Kind == yaml.MappingNode && synth.Content[j+1].Kind == yaml.MappingNode && !namesKind(v):
			under := &yaml.Node{Kind: yaml.MappingNode, Content: slices.Clone(synth.Content[j+1].Content), Line: v.Line, Column: v.Column}
			merge(under, v, nil)
			synth.Content[j], synth.Content[j+1] = k, under
		default:
			synth.Content[j], synth.Content[j+1] = k, v
		}
	}
}

// keyIndex returns the index of key's key node in the mapping n, or -1.
func keyIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// namesKind reports whether the mapping n names a kind or a preset: a
// policy of its own, not a change to the file's.
func namesKind(n *yaml.Node) bool {
	k, _ := field(n, "kind")
	p, _ := field(n, "preset")
	return k != nil || p != nil
}

// field returns the key and value nodes of key in the mapping n, or nils.
func field(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// seqItems returns the items of the sequence n, or none.
func seqItems(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}
