package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads, decodes and validates the scenario file at path. On failure
// the error joins one *Error per problem found, each naming the file, line,
// column and field path; every problem is reported, not only the first.
func Load(path string) (*Scenario, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load, stopped by ctx: checking the points of a large
// sweep takes a while. It returns ctx's error once ctx is done.
func LoadContext(ctx context.Context, path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot read: %v", err)}
	}
	return parse(ctx, path, data, readNear(path))
}

// Parse decodes and validates a scenario from data, naming it file in
// errors. A scenario without a name takes the file's base name without
// its extension.
func Parse(file string, data []byte) (*Scenario, error) {
	return ParseContext(context.Background(), file, data)
}

// ParseContext is Parse, stopped by ctx (see LoadContext). A scenario
// parsed from bytes has no directory: a from: that names a
// configuration file is refused (Load reads them).
func ParseContext(ctx context.Context, file string, data []byte) (*Scenario, error) {
	return parse(ctx, file, data, nil)
}

// parse is ParseContext, reading the configuration files that from:
// names with read (nil: none may be named).
func parse(ctx context.Context, file string, data []byte, read readFile) (*Scenario, error) {
	fail := func(line int, format string, args ...any) (*Scenario, error) {
		return nil, &Error{File: file, Line: line, Col: 1, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxFileSize {
		return fail(1, "file is larger than %d bytes: a scenario is a page of YAML", MaxFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(1, "file is empty: a scenario needs at least server, workload and strategies")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return fail(1, "file holds no YAML document")
		}
		return nil, pathHint(syntaxError(file, err, data), data)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, syntaxError(file, err, data)
		}
		return fail(line, "more than one YAML document: a file holds one scenario")
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return fail(doc.Line, "want a mapping of scenario fields at the top, got %s", kindName(doc))
	}

	rd := &decoder{file: file, where: map[string]pos{}}
	from := rd.resolveFrom(doc, read)
	if err := rd.err(); err != nil {
		return nil, err
	}
	s, err := buildWith(file, doc, 0, nil, from)
	if err != nil {
		return nil, err
	}
	if s.Sweep != nil {
		// Every point of the sweep must build too. build never gets
		// here: the points have no sweep.
		if err := s.checkPoints(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// build decodes and validates the scenario in the mapping doc, naming it
// file in errors, as Parse does, but does not check a sweep's points.
// fields is how many field paths the file is expected to have, 0 if
// unknown.
func build(file string, doc *yaml.Node, fields int) (*Scenario, error) {
	return buildWith(file, doc, fields, nil, nil)
}

// buildWith is build, with the values decoded from the nodes in memo
// where it has them (nil: none), and what from: read (nil: nothing).
func buildWith(file string, doc *yaml.Node, fields int, memo *decodeMemo, from *resolved) (*Scenario, error) {
	s := Default()
	d := &decoder{file: file, where: make(map[string]pos, fields), memo: memo}
	if from != nil {
		d.origin = from.origin
	}
	d.decode(doc, reflect.ValueOf(&s).Elem(), "")
	if _, graph := d.where["services"]; graph {
		if p, both := d.where["server"]; both {
			d.errorAt(p, "server", "a scenario has server (one service) or services (a graph), not both")
		}
		if s.Services == nil {
			s.Services = []Service{} // written empty: reported by Validate
		}
	} else if p, ok := d.where["workload.target"]; ok {
		d.errorAt(p, "workload.target", "names a service of services; a scenario with server has one")
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := s.Validate(); err != nil {
		d.place(err)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	s.src = &source{file: file, where: d.where, root: doc, from: from}
	return &s, nil
}

// flowPath matches a sweep's path with [ ] written unquoted in a { }
// mapping, which YAML reads as the start of a list.
var flowPath = regexp.MustCompile(`\{[^}]*\bpath:\s*[^"'\s][^,}\s]*\[`)

// pathHint explains a syntax error where flowPath matches, on its line
// or the next (yaml.v3 names the line before a flow mapping's), and
// moves the error to that line.
func pathHint(e *Error, data []byte) *Error {
	lines := bytes.Split(data, []byte("\n"))
	for line := e.Line; line <= e.Line+1 && line <= len(lines); line++ {
		if loc := flowPath.FindIndex(lines[line-1]); loc != nil {
			if line != e.Line {
				e.Line, e.Col = line, loc[1] // the [
			}
			e.Msg += ` (in a { } mapping, quote a path with [ ], as in {path: "strategies[0].timeout", values: [1s, 2s]})`
			break
		}
	}
	return e
}

// place gives every FieldError in err the position of its field, or of
// the nearest enclosing field the file wrote.
//
// A field that failed to decode keeps its default, which validation may
// then find wrong: that follows from the decoding error and is not
// reported again.
func (d *decoder) place(err error) {
	var decoded []string
	for _, e := range d.errs {
		decoded = append(decoded, e.Path)
	}
	for _, e := range unjoin(err) {
		var fe *FieldError
		if !errors.As(e, &fe) || follows(fe.Path, decoded) {
			continue
		}
		p := d.locate(fe.Path)
		d.errorAt(p, fe.Path, fe.Msg)
	}
}

func (d *decoder) locate(path string) pos { return locate(d.where, path) }

// locate returns where path was written, or the nearest enclosing field.
func locate(where map[string]pos, path string) pos {
	for path != "" {
		if p, ok := where[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return where[""]
}

// follows reports whether a validation problem at path is at or within
// a field that failed to decode.
func follows(path string, failed []string) bool {
	for _, f := range failed {
		if path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

// unjoin lists the errors joined in err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
