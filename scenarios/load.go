package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads, decodes and validates the scenario file at path. On failure
// the error joins one *Error per problem found, each naming the file, line,
// column and field path; every problem is reported, not only the first.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot read: %v", err)}
	}
	return Parse(path, data)
}

// Parse decodes and validates a scenario from data, naming it file in
// errors. A scenario without a name takes the file's base name without
// its extension.
func Parse(file string, data []byte) (*Scenario, error) {
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
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, syntaxError(file, err)
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

	s := Default()
	d := &decoder{file: file, where: map[string]pos{}}
	d.decode(doc, reflect.ValueOf(&s).Elem(), "")
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := s.Validate(); err != nil {
		d.place(err)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	s.src = &source{file: file, where: d.where}
	return &s, nil
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
		d.add(&Error{File: d.file, Line: p.line, Col: p.col, Path: fe.Path, Msg: fe.Msg})
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
