package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a configuration file read: a mesh's deployed files
// are pages, not data sets.
const MaxFileSize = 4 << 20

// documents parses data, YAML or JSON (JSON is YAML), into its documents'
// top nodes, naming file in errors. A syntax error is placed at its line.
func documents(file string, data []byte) ([]*yaml.Node, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(file, err)
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			out = append(out, n.Content[0])
		}
	}
	if len(out) == 0 {
		return nil, &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "file holds no document"}
	}
	return out, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(file string, err error) *Error {
	e := &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: err.Error()}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Pos.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
	}
	return e
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

// get follows keys from n through mappings, and returns the value node
// at the end, or nil.
func get(n *yaml.Node, keys ...string) *yaml.Node {
	for _, key := range keys {
		_, n = field(n, key)
		if n == nil {
			return nil
		}
	}
	return n
}

// at returns the position of node n (a key node, for a value written;
// the enclosing object, for a default) with path in the file's terms.
func at(file string, n *yaml.Node, path string) Pos {
	if n == nil {
		return Pos{File: file, Line: 1, Col: 1, Path: path}
	}
	return Pos{File: file, Line: n.Line, Col: n.Column, Path: path}
}

// toJSON re-encodes the node n as JSON, for the projects' own decoders
// (protojson); positions are then found in n by path.
func toJSON(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(jsonable(v))
}

// jsonable turns the map[any]any that YAML can produce into what
// encoding/json takes.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	}
	return v
}
