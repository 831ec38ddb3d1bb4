package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	goyaml "github.com/goccy/go-yaml"
	goyamlparser "github.com/goccy/go-yaml/parser"
	"go.yaml.in/yaml/v3"

	"github.com/zeontools/herdlab/configs"
)

// Limits on what Parse accepts, so that a hostile or mistaken file cannot
// exhaust memory: a scenario is a page of YAML, not a data set.
const (
	MaxFileSize = 1 << 20 // bytes
	maxNodes    = 100_000 // YAML nodes decoded, aliases expanded
	maxErrors   = 50      // problems reported for one file
)

// Error is one problem in a scenario file, with its position. Its text is
// `FILE:LINE:COL: field.path: what is wrong`.
type Error struct {
	File      string
	Line, Col int
	Path      string // field path, such as strategies[2].backoff.cap; empty for the file itself
	// Origin, for a value read from a configuration file (from:), is
	// its path in that file's terms; File, Line and Col are then that
	// file's, and the text is `FILE:LINE:COL: ORIGIN (PATH): ...`.
	Origin string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	switch {
	case e.Origin != "" && e.Path != "":
		b.WriteString(e.Origin + " (" + e.Path + "): ")
	case e.Origin != "":
		b.WriteString(e.Origin + ": ")
	case e.Path != "":
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// pos is a position in the file, 1-based; for a value read from a
// configuration file (from:), line and col are where from: was written
// and o is where the value came from.
type pos struct {
	line, col int
	o         *configs.Pos
}

// decoder turns a YAML node tree into Go values strictly: unknown keys,
// duplicate keys, wrong types and bad durations are errors, and every
// error is collected, not only the first. It records where each field path
// was written so that later validation errors can be placed.
type decoder struct {
	file  string
	errs  []*Error
	where map[string]pos
	nodes int
	more  bool // more than maxErrors problems
	bomb  bool // more than maxNodes nodes: that is the only problem reported
	memo  *decodeMemo
	// origin holds where the nodes that from: made came from.
	origin map[*yaml.Node]configs.Pos
}

// posOf returns where n was written.
func (d *decoder) posOf(n *yaml.Node) pos {
	p := pos{line: n.Line, col: n.Column}
	if o, ok := d.origin[n]; ok {
		p.o = &o
	}
	return p
}

// errorAt records a problem with the field path, at p.
func (d *decoder) errorAt(p pos, path, msg string) {
	e := &Error{File: d.file, Line: p.line, Col: p.col, Path: path, Msg: msg}
	if p.o != nil {
		e.File, e.Line, e.Col, e.Origin = p.o.File, p.o.Line, p.o.Col, p.o.Path
	}
	d.add(e)
}

// decodeMemo keeps the values decoded from mappings and lists, for the
// decoders of a sweep's points: a point's YAML tree shares every node
// that no setting changes with the file's (see set), so each of those
// is decoded once for all the points, and only what varies is decoded
// again. A value taken from it shares its slices and pointers with the
// other points', and the positions inside it are not recorded (an error
// is placed at the nearest enclosing field): it is for checking the
// points (checkPoints), not for running them.
type decodeMemo struct {
	values map[memoKey]memoValue
}

type memoKey struct {
	n    *yaml.Node
	t    reflect.Type
	path string
}

type memoValue struct {
	v     reflect.Value
	nodes int
}

// nodeDecoder is implemented by types that decode themselves from a node
// (a scalar shorthand, a keyword such as `unlimited`). It returns false to
// fall back to the ordinary decoding of the type's kind.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string) bool
}

// keyChecker is implemented by structs whose set of valid keys depends on
// a value, such as a backoff's kind. It is called after the struct is
// decoded, with the keys the file wrote.
type keyChecker interface {
	checkKeys(written map[string]*yaml.Node, fail func(key, msg string))
}

// fieldDecoder is implemented by structs one of whose fields takes a
// keyword its Go type cannot hold (max_attempts: unlimited, kept as 0).
// decodeField returns false to leave the field to the ordinary decoding.
type fieldDecoder interface {
	decodeField(d *decoder, key string, n *yaml.Node, path string) bool
}

// defaulter is implemented by structs with defaults; the decoder calls it
// on every struct it creates before decoding the file's values over it.
type defaulter interface {
	setDefaults()
}

var durationType = reflect.TypeFor[time.Duration]()

func (d *decoder) failAt(n *yaml.Node, path, format string, args ...any) {
	d.errorAt(d.posOf(n), path, fmt.Sprintf(format, args...))
}

// add records a problem; past maxErrors it only notes that there are
// more.
func (d *decoder) add(e *Error) {
	if d.bomb {
		return // past the node limit, the rest says nothing
	}
	if len(d.errs) < maxErrors {
		d.errs = append(d.errs, e)
	} else {
		d.more = true
	}
}

// err returns every problem recorded, in file order (the scenario's,
// then those of the files its from: reads), as one error whose Unwrap
// lists them; nil when there is none.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool {
		if a, b := d.errs[i].File, d.errs[j].File; a != b { // the scenario's first, then each file's a from: reads
			return a == d.file || (b != d.file && a < b)
		}
		if d.errs[i].Line != d.errs[j].Line {
			return d.errs[i].Line < d.errs[j].Line
		}
		return d.errs[i].Col < d.errs[j].Col
	})
	list := make([]error, len(d.errs), len(d.errs)+1)
	for i, e := range d.errs {
		list[i] = e
	}
	if d.more {
		list = append(list, &Error{File: d.file, Line: 1, Col: 1, Msg: fmt.Sprintf("more than %d problems: fix these first", maxErrors)})
	}
	return errors.Join(list...)
}

// decode decodes n into v, which must be settable, at field path path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.memo == nil || (n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode) || n.Style&yaml.TaggedStyle != 0 {
		d.decodeNode(n, v, path)
		return
	}
	key := memoKey{n, v.Type(), path}
	if m, ok := d.memo.values[key]; ok && d.nodes+m.nodes <= maxNodes {
		d.where[path] = d.posOf(n)
		d.nodes += m.nodes
		v.Set(m.v)
		return
	}
	nodes, errs := d.nodes, len(d.errs)
	d.decodeNode(n, v, path)
	if len(d.errs) == errs && !d.more && !d.bomb {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		d.memo.values[key] = memoValue{c, d.nodes - nodes}
	}
}

// decodeNode is decode, without the memo.
func (d *decoder) decodeNode(n *yaml.Node, v reflect.Value, path string) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			// The cause of everything else: reported alone.
			d.errs, d.more = nil, false
			d.failAt(n, path, "too many YAML nodes (more than %d, aliases expanded): a scenario is a page of YAML", maxNodes)
			d.bomb = true
		}
		return
	}
	if n.Style&yaml.TaggedStyle != 0 {
		d.failAt(n, path, "YAML tags such as %s are not supported: write the value alone", n.Tag)
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.where[path] = d.posOf(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" { // ShortTag resolves the plain scalars With makes
		return // `key:` or `key: ~` leaves the default
	}
	if v.CanAddr() {
		if nd, ok := v.Addr().Interface().(nodeDecoder); ok && nd.decodeNode(d, n, path) {
			return
		}
	}
	if v.Type() == durationType {
		d.duration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		setDefaults(elem)
		d.decode(n, elem.Elem(), path)
		v.Set(elem)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.String:
		if d.scalar(n, path, "a string") {
			v.SetString(n.Value)
		}
	case reflect.Bool:
		if !d.scalar(n, path, "true or false") || !d.unquoted(n, path, "true or false") {
			return
		}
		switch n.Value {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.failAt(n, path, "want true or false, got %q", n.Value)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if i, ok := d.integer(n, path); ok {
			v.SetInt(i)
		}
	case reflect.Uint64:
		if !d.scalar(n, path, "a non-negative integer") || !d.unquoted(n, path, "a non-negative integer") {
			return
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		if err != nil {
			d.failAt(n, path, "want a non-negative integer, got %q", n.Value)
			return
		}
		v.SetUint(u)
	case reflect.Float64:
		if !d.scalar(n, path, "a number") || !d.unquoted(n, path, "a number") {
			return
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.failAt(n, path, "want a number, got %q", n.Value)
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("scenarios: cannot decode into %s", v.Type()))
	}
}

// decodeInto decodes n into what ptr points to.
func (d *decoder) decodeInto(n *yaml.Node, ptr any, path string) {
	d.decode(n, reflect.ValueOf(ptr).Elem(), path)
}

// scalar reports whether n is a scalar, and records an error otherwise.
func (d *decoder) scalar(n *yaml.Node, path, want string) bool {
	if n.Kind != yaml.ScalarNode {
		d.failAt(n, path, "want %s, got %s", want, kindName(n))
		return false
	}
	return true
}

// unquoted reports whether the scalar n is written without quotes, and
// records an error otherwise: "100" is a string in YAML, and a number
// that is a string is a mistake somewhere.
func (d *decoder) unquoted(n *yaml.Node, path, want string) bool {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		d.failAt(n, path, "want %s, got the quoted string %q: write it without quotes", want, n.Value)
		return false
	}
	return true
}

// integer parses an integer, accepting 50_000 and integral floats such as
// 1e6.
func (d *decoder) integer(n *yaml.Node, path string) (int64, bool) {
	if !d.scalar(n, path, "an integer") || !d.unquoted(n, path, "an integer") {
		return 0, false
	}
	s := strings.ReplaceAll(n.Value, "_", "")
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		d.failAt(n, path, "want an integer, got %q", n.Value)
		return 0, false
	}
	return int64(f), true
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if !d.scalar(n, path, "a duration") {
		return
	}
	dur, err := parseDuration(n.Value)
	if err != nil {
		d.failAt(n, path, "%v", err)
		return
	}
	v.SetInt(int64(dur))
}

// MaxDuration is the longest duration a scenario field takes: ten
// years. Sums of a few such durations (an outage's start and length, a
// wait after the end of the horizon) cannot overflow a time.Duration.
const MaxDuration = 10 * 365 * 24 * time.Hour

// durationForm matches what time.ParseDuration reads, whatever the size.
var durationForm = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// parseDuration parses a Go duration string of at most MaxDuration either
// way; a bare 0 is allowed.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	dur, err := time.ParseDuration(s)
	if err != nil && !durationForm.MatchString(s) {
		return 0, fmt.Errorf("want a duration such as 250ms, 30s or 2h, got %q", s)
	}
	if err != nil || dur > MaxDuration || dur < -MaxDuration { // well formed, so too long
		return 0, fmt.Errorf("%q is longer than 10 years (87600h), the most a scenario's durations take", s)
	}
	return dur, nil
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.failAt(n, path, "want a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		setDefaults(s.Index(i).Addr())
		d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "want a mapping, got %s", kindName(n))
		return
	}
	fields := yamlFields(v.Type())
	written := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		name := key.Value
		sub := join(path, name)
		if key.Kind != yaml.ScalarNode {
			d.failAt(key, path, "want a field name, got %s", kindName(key))
			continue
		}
		if key.Tag == "!!merge" {
			d.failAt(key, path, "merge keys (<<) are not supported: write the fields out")
			continue
		}
		if _, dup := written[name]; dup {
			d.failAt(key, sub, "duplicate field (first set on line %d)", written[name].Line)
			continue
		}
		index, ok := fields[name]
		if !ok {
			d.failAt(key, sub, "unknown field%s", suggest(name, fields))
			continue
		}
		written[name] = key
		if fd, ok := v.Addr().Interface().(fieldDecoder); ok && fd.decodeField(d, name, val, sub) {
			continue
		}
		d.decode(val, v.FieldByIndex(index), sub)
	}
	if kc, ok := v.Addr().Interface().(keyChecker); ok {
		kc.checkKeys(written, func(key, msg string) {
			d.failAt(written[key], join(path, key), "%s", msg)
		})
	}
}

// setDefaults applies the defaults of the struct that ptr points to, if
// it has any.
func setDefaults(ptr reflect.Value) {
	if df, ok := ptr.Interface().(defaulter); ok {
		df.setDefaults()
	}
}

// fieldsOf caches yamlFields: a sweep decodes the same types once per
// point.
var fieldsOf sync.Map // reflect.Type -> map[string][]int

// yamlFields maps the yaml tag names of t's fields to their indexes (for
// reflect.Value.FieldByIndex). The fields of a struct field tagged
// `yaml:",inline"` are t's own, as a service has every field of a
// server. The map is shared: callers must not change it.
func yamlFields(t reflect.Type) map[string][]int {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string][]int)
	}
	fields := make(map[string][]int, t.NumField())
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" && opts == "inline" {
			for k, sub := range yamlFields(t.Field(i).Type) {
				fields[k] = append([]int{i}, sub...)
			}
			continue
		}
		if name != "" && name != "-" {
			fields[name] = []int{i}
		}
	}
	fieldsOf.Store(t, fields)
	return fields
}

// suggest names the valid keys, nearest first, for an unknown key.
func suggest(name string, fields map[string][]int) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if strings.EqualFold(k, name) || strings.ReplaceAll(k, "_", "") == strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(name)) {
			return fmt.Sprintf(" (did you mean %s?)", k)
		}
	}
	return " (want one of " + strings.Join(names, ", ") + ")"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// yamlLine finds the line number in a yaml.v3 syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError converts a yaml.v3 parse error of data into an Error at the
// place of the mistake. yaml.v3 names only a line, and often the line of
// the enclosing block rather than of the mistake, so the position (and
// then the words) come from a second parser, go-yaml's, which names the
// line and column of the offending token, moved to the place of the fix
// where that is elsewhere (see syntaxFix); where it finds no mistake,
// yaml.v3's line is kept, at its first non-blank column.
func syntaxError(file string, err error, data []byte) *Error {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e := &Error{File: file, Line: line, Col: firstColumn(data, line), Msg: "not valid YAML: " + msg}
	if _, gerr := goyamlparser.ParseBytes(data, 0); gerr != nil {
		var ge goyaml.Error
		if errors.As(gerr, &ge) && ge.GetToken() != nil && ge.GetToken().Position != nil && ge.GetToken().Position.Line > 0 {
			p := ge.GetToken().Position
			e.Line, e.Col = p.Line, max(p.Column, 1)
			e.Msg = "not valid YAML: " + strings.ReplaceAll(ge.GetMessage(), "\t", `\t`)
			syntaxFix(e, data, line)
		}
	}
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		// An alias to no anchor: find where it is used.
		if at := bytes.Index(data, []byte("*"+m[1])); at >= 0 {
			e.Line = bytes.Count(data[:at], []byte("\n")) + 1
			e.Col = at - bytes.LastIndexByte(data[:at], '\n')
		}
	}
	return e
}

// unknownAnchor matches yaml.v3's error for an alias without an anchor.
var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
