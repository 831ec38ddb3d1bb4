package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Control is a number people vary that the file sets as a plain scalar,
// and where its text is: the page changes it by replacing Len characters
// from Line and Col (from 1), so the YAML stays the one source of truth.
type Control struct {
	Path  string `json:"path"`
	Label string `json:"label"`
	// Kind is int, number or duration.
	Kind  string `json:"kind"`
	Value string `json:"value"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Len   int    `json:"len"`
}

// controlFields are the fields offered as controls, by path: their label,
// in which %s is the name of the strategy or service the field is in (or
// the outage: "outage 1", "db outage 2"), and their kind.
var controlFields = []struct {
	path        *regexp.Regexp
	label, kind string
}{
	{regexp.MustCompile(`^seed$`), "seed", "int"},
	{regexp.MustCompile(`^runs$`), "runs", "int"},
	{regexp.MustCompile(`^duration$`), "horizon", "duration"},
	{regexp.MustCompile(`^workload\.requests$`), "requests", "int"},
	{regexp.MustCompile(`^workload\.clients\.count$`), "clients", "int"},
	{regexp.MustCompile(`^workload\.clients\.think_time$`), "think time", "duration"},
	{regexp.MustCompile(`^server\.concurrency$`), "server concurrency", "int"},
	{regexp.MustCompile(`^server\.queue$`), "server queue", "int"},
	{regexp.MustCompile(`^server\.outages\[\d+\]\.start$`), "%s: start", "duration"},
	{regexp.MustCompile(`^server\.outages\[\d+\]\.duration$`), "%s: length", "duration"},
	{regexp.MustCompile(`^services\[\d+\]\.concurrency$`), "%s: concurrency", "int"},
	{regexp.MustCompile(`^services\[\d+\]\.replicas$`), "%s: replicas", "int"},
	{regexp.MustCompile(`^services\[\d+\]\.outages\[\d+\]\.start$`), "%s: start", "duration"},
	{regexp.MustCompile(`^services\[\d+\]\.outages\[\d+\]\.duration$`), "%s: length", "duration"},
	{regexp.MustCompile(`^strategies\[\d+\]\.max_attempts$`), "%s: attempts", "int"},
	{regexp.MustCompile(`^strategies\[\d+\]\.backoff\.base$`), "%s: base", "duration"},
	{regexp.MustCompile(`^strategies\[\d+\]\.backoff\.cap$`), "%s: cap", "duration"},
	{regexp.MustCompile(`^strategies\[\d+\]\.backoff\.delay$`), "%s: delay", "duration"},
	{regexp.MustCompile(`^strategies\[\d+\]\.timeout$`), "%s: timeout", "duration"},
}

// Controls returns the controls of the scenario src, in file order; none
// for text that is not YAML. A control is offered only where the file
// writes the field as a plain scalar (not quoted, not an anchor's alias).
func Controls(src string) []Control {
	out := []Control{}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil || len(root.Content) == 0 {
		return out
	}
	walk(root.Content[0], "", "", func(path, owner string, n *yaml.Node) {
		if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Tag == "!!null" {
			return
		}
		for _, f := range controlFields {
			if !f.path.MatchString(path) {
				continue
			}
			label := f.label
			if strings.Contains(label, "%s") {
				label = fmt.Sprintf(label, owner)
			}
			out = append(out, Control{Path: path, Label: label, Kind: f.kind, Value: n.Value,
				Line: n.Line, Col: n.Column, Len: utf8.RuneCountInString(n.Value)})
			return
		}
	})
	return out
}

// walk calls visit for every value under n, with its field path (as
// scenarios writes it: strategies[2].backoff.base) and the name of the
// strategy or service it is in ("" outside them; the index when the item
// has no name), or of the outage.
func walk(n *yaml.Node, path, owner string, visit func(path, owner string, n *yaml.Node)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i].Value, n.Content[i+1]
			p := key
			if path != "" {
				p = path + "." + key
			}
			walk(value, p, owner, visit)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			o := owner
			switch {
			case path == "strategies" || path == "services":
				o = nameOf(item, i)
			case strings.HasSuffix(path, "outages"):
				o = strings.TrimSpace(owner + " outage " + strconv.Itoa(i+1))
			}
			walk(item, path+"["+strconv.Itoa(i)+"]", o, visit)
		}
	default:
		visit(path, owner, n)
	}
}

// nameOf returns the name field of a strategy or service, or its index.
func nameOf(item *yaml.Node, i int) string {
	if item.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(item.Content); j += 2 {
			if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode {
				return item.Content[j+1].Value
			}
		}
	}
	return "#" + strconv.Itoa(i+1)
}
