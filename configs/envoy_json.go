//go:build !js

package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// jsonMark ties a byte offset of the JSON that nodeJSON writes to the key
// of the YAML file it was written from, so that an error protojson
// reports in the JSON is placed at the user's line.
type jsonMark struct {
	off  int
	key  *yaml.Node
	path string
}

// nodeJSON writes the YAML node n as JSON, in the file's order, and
// marks where each key and each value begins (toJSON, which goes through
// a map, loses both). Aliases are followed; a merge key (<<) is refused,
// as protojson would see its fields twice.
type nodeJSON struct {
	file  string
	buf   bytes.Buffer
	marks []jsonMark
	e     errs
}

func (j *nodeJSON) mark(key *yaml.Node, path string) {
	j.marks = append(j.marks, jsonMark{off: j.buf.Len(), key: key, path: path})
}

func (j *nodeJSON) write(n, key *yaml.Node, path string) {
	switch n.Kind {
	case yaml.AliasNode:
		j.write(n.Alias, key, path)
	case yaml.MappingNode:
		j.buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				j.e.at(at(j.file, k, joinPath(path, "<<")), "a YAML merge key has no counterpart in Envoy's JSON: write the fields out")
				continue
			}
			if i > 0 {
				j.buf.WriteByte(',')
			}
			p := joinPath(path, k.Value)
			j.mark(k, p)
			b, _ := json.Marshal(k.Value)
			j.buf.Write(b)
			j.buf.WriteByte(':')
			j.mark(k, p)
			j.write(v, k, p)
		}
		j.buf.WriteByte('}')
	case yaml.SequenceNode:
		j.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				j.buf.WriteByte(',')
			}
			p := fmt.Sprintf("%s[%d]", path, i)
			j.mark(c, p)
			j.write(c, c, p)
		}
		j.buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			j.e.at(at(j.file, key, path), "%v", err)
			j.buf.WriteString("null")
			return
		}
		b, err := json.Marshal(jsonable(v))
		if err != nil {
			j.e.at(at(j.file, key, path), "%s has no JSON form: %v", n.Value, err)
			j.buf.WriteString("null")
			return
		}
		j.buf.Write(b)
	default:
		j.buf.WriteString("null")
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var protojsonPos = regexp.MustCompile(`^proto:[\s\x{00a0}]*\(line (\d+):(\d+)\):[\s\x{00a0}]*(.*)$`)

// place returns the position in the YAML file of a protojson error, and
// the error's message without its JSON position.
func (j *nodeJSON) place(err error) (Pos, string) {
	m := protojsonPos.FindStringSubmatch(err.Error())
	if m == nil {
		return Pos{File: j.file, Line: 1, Col: 1}, err.Error()
	}
	col, _ := strconv.Atoi(m[2])
	// protojson counts columns in runes, from 1; the JSON is one line.
	off, b := 0, j.buf.Bytes()
	for r := 1; r < col && off < len(b); r++ {
		_, size := utf8.DecodeRune(b[off:])
		off += size
	}
	i := sort.Search(len(j.marks), func(i int) bool { return j.marks[i].off > off }) - 1
	if i < 0 {
		return Pos{File: j.file, Line: 1, Col: 1}, m[3]
	}
	mk := j.marks[i]
	return at(j.file, mk.key, mk.path), m[3]
}
