package configs

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteYAML writes f as a scenario fragment: a strategies: list with one
// strategy per policy, and, when the file describes them, a services:
// list; every field with its source in a comment. Read back by the
// scenarios loader, each strategy is the one a from: naming the same
// policy gives.
func (f *Fragment) WriteYAML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# herdlab import %s %s\n", f.Format, f.File)
	bw.WriteString("# Every field says where it was read (FILE:LINE:COL: PATH); \"default\" marks a value\n")
	bw.WriteString("# the file leaves out, filled in as its project documents it. Paste the strategies\n")
	bw.WriteString("# into a scenario, or keep the link with from: (it reads the file at every run).\n")
	if len(f.Policies) == 0 {
		bw.WriteString("# The file holds no retry policy.\nstrategies: []\n")
	} else {
		bw.WriteString("strategies:\n")
	}
	for _, p := range f.Policies {
		fmt.Fprintf(bw, "  - name: %s  # from: %s\n", StrategyName(p.Name), FromYAML(f.Format, f.File, p.Name))
		writeValues(bw, "    ", p.Values)
		for _, h := range p.Hazards {
			fmt.Fprintf(bw, "    # hazard (%s): %s: %s\n", h.Rule, h.Pos, h.Msg)
		}
	}
	var edges []string
	for _, p := range f.Policies {
		if p.Service != "" {
			edges = append(edges, fmt.Sprintf("#     CALLER->%s: {from: %s}\n", p.Service, FromYAML(f.Format, f.File, p.Name)))
		}
	}
	if len(edges) > 0 {
		bw.WriteString("# In a graph, a route is the policy of the calls to its service: an edge of a\n")
		bw.WriteString("# strategy, with CALLER the service that makes the calls:\n#   edges:\n")
		for _, e := range edges {
			bw.WriteString(e)
		}
	}
	if len(f.Services) > 0 {
		bw.WriteString("# The upstreams the file describes: give each its server model (concurrency,\n")
		bw.WriteString("# service_time, queue) and its calls to make a graph.\n")
		bw.WriteString("services:\n")
		for _, s := range f.Services {
			fmt.Fprintf(bw, "  - name: %s\n", FormatValue(s.Name))
			writeValues(bw, "    ", s.Values)
		}
	}
	return bw.Flush()
}

// writeValues writes values as YAML fields at indent, nesting the dotted
// paths under their common parents in the order they first appear.
func writeValues(bw *bufio.Writer, indent string, values []Value) {
	var done []string // the parents written
	for i, v := range values {
		parent, _, nested := strings.Cut(v.Field, ".")
		if !nested {
			fmt.Fprintf(bw, "%s%s: %s  # %s\n", indent, v.Field, FormatValue(v.Value), v.Pos)
			continue
		}
		if slices.Contains(done, parent) {
			continue
		}
		done = append(done, parent)
		fmt.Fprintf(bw, "%s%s:\n", indent, parent)
		var under []Value
		for _, x := range values[i:] {
			if p, l, ok := strings.Cut(x.Field, "."); ok && p == parent {
				x.Field = l
				under = append(under, x)
			}
		}
		writeValues(bw, indent+"  ", under)
	}
}

// StrategyName turns a policy's name in its file (shop.Orders/Get) into a
// herdlab strategy name (shop.Orders-Get; GET /orders/{id} is
// GET-orders-id): letters, digits, '.', '_' and '-', starting and ending
// with a letter or digit.
func StrategyName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), ".-_")
	if out == "" {
		return "policy"
	}
	return out
}

// FromYAML writes the from: that reads the policy named name of a file
// of the format, in flow style.
func FromYAML(format, file, name string) string {
	f, n := FormatValue(file), FormatValue(name)
	switch format {
	case GRPC:
		return fmt.Sprintf("{grpc_service_config: %s, method: %s}", f, n)
	case Istio:
		if vs, route, ok := strings.Cut(name, "/"); ok {
			return fmt.Sprintf("{istio: %s, virtual_service: %s, route: %s}", f, FormatValue(vs), FormatValue(route))
		}
		return fmt.Sprintf("{istio: %s, virtual_service: %s}", f, n)
	case AWS:
		return fmt.Sprintf("{aws: %s, profile: %s}", f, n)
	}
	return fmt.Sprintf("{%s: %s, route: %s}", format, f, n) // envoy, linkerd
}
