package scenarios

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeontools/herdlab/internal/editdist"
)

// Field is one field of the scenario format, as the reference describes
// it: what reflection over the decoder's types finds (the path, the type,
// the defaults that setDefaults gives, the kinds that use the field),
// with what it cannot see (the meaning, bounds, the values a string
// takes) from the table in reference_table.go.
type Field struct {
	// Path is the field's path, with [] for the items of a list and
	// <NAME> for the keys of a mapping the file names, such as
	// strategies[].backoff.cap or strategies[].edges.<edge>.
	Path string
	// Key is the last element of Path.
	Key string
	// Type is what the field takes, in words: duration, int, float,
	// probability, bool, string, one of the values of Values, list of
	// ..., mapping.
	Type string
	// Default is the value the field has when the file leaves it out;
	// "" when that is nothing (an empty list, no section, 0 of a field
	// whose zero the meaning explains).
	Default string
	// Bounds are the values the field takes, such as [0,1] or >= 1; "" for
	// any.
	Bounds string
	// Values are the strings the field takes, for a field with a fixed
	// set.
	Values []string
	// Kinds, for a field of a mapping with a kind (a backoff's kind, a
	// distribution's dist), are the kinds that use the field; nil when
	// every kind does.
	Kinds []string
	// Doc is the field's meaning, in a sentence or two.
	Doc string
	// Fields are the fields of a mapping, or of a list's items, in the
	// order of the Go type.
	Fields []*Field

	t     reflect.Type // the Go type; for a list, its items'
	entry string       // the field's key in table: TYPE.KEY
	info  info
}

// info is what reflection cannot see of a field.
type info struct {
	doc    string
	def    string   // the default, where setDefaults does not set it (or sets it later)
	bounds string   // [a,b], (a,b], > a, >= a, or words the schema does not check
	values []string // the strings the field takes
	typ    string   // the type, where the Go type does not say it
	// unlimited marks a count whose bound is the string unlimited as
	// well as 0 (see the Pitfalls).
	unlimited bool
}

// kinded is a mapping whose keys depend on a kind: the key that names the
// kind, its default ("" when the kind is required) and the keys each kind
// uses (the decoder's own tables, which it checks keys against).
type kinded struct {
	key, def string
	uses     map[string][]string
}

// kindedTypes are the mappings with a kind.
var kindedTypes = map[reflect.Type]kinded{
	reflect.TypeFor[Backoff]():  {"kind", "", backoffKeys},
	reflect.TypeFor[Dist]():     {"dist", "", distKeys},
	reflect.TypeFor[Arrival]():  {"kind", Burst, arrivalKeys},
	reflect.TypeFor[Breaker]():  {"kind", BreakerStandard, breakerKeys},
	reflect.TypeFor[Budget]():   {"kind", "", budgetKeys},
	reflect.TypeFor[Throttle](): {"kind", "", throttleKeys},
}

// The types that decode themselves, or are written otherwise than their
// Go fields.
var (
	limitType        = reflect.TypeFor[Limit]()
	autoDurationType = reflect.TypeFor[AutoDuration]()
	hedgeDelayType   = reflect.TypeFor[HedgeDelay]()
	distType         = reflect.TypeFor[Dist]()
	edgesType        = reflect.TypeFor[Edges]()
	edgePolicyType   = reflect.TypeFor[EdgePolicy]()
	overridesType    = reflect.TypeFor[ServiceOverrides]()
	checkType        = reflect.TypeFor[Check]()
	boundType        = reflect.TypeFor[bound]()
	varyType         = reflect.TypeFor[Vary]()
	varyFieldsType   = reflect.TypeFor[varyFields]()
	valueListType    = reflect.TypeFor[valueList]()
	strategyType     = reflect.TypeFor[Strategy]()
	serviceType      = reflect.TypeFor[Service]()
)

// checkKeys are the fields of a check other than the figures it bounds
// (see Check.decodeNode).
var checkKeys = []string{"strategy", "compare", "why"}

// reference returns the scenario format's fields, from the top: one
// Field per top-level field of a scenario file, without defaults.
func reference() []*Field {
	return structFieldsAt(reflect.TypeFor[Scenario](), "")
}

// structFieldsAt returns the fields of the struct type t at path.
func structFieldsAt(t reflect.Type, path string) []*Field {
	switch t {
	case checkType:
		var out []*Field
		for _, k := range checkKeys {
			out = append(out, newField(path, k, reflect.TypeFor[string](), "Check"))
		}
		fig := newField(path, "<figure>", boundType, "Check")
		return append(out, fig)
	case varyType:
		t = varyFieldsType
	}
	var out []*Field
	for _, sf := range structFields(t) {
		out = append(out, newField(path, sf.key, sf.t, sf.owner))
	}
	return out
}

// structField is a yaml field of a struct: its key, its Go type and the
// name of the type that declares it (for a field of an inlined struct,
// that struct's).
type structField struct {
	key, owner string
	t          reflect.Type
	index      []int
}

// structFields lists the yaml fields of the struct type t in
// declaration order, inlined structs' in place (as yamlFields maps them).
func structFields(t reflect.Type) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" && opts == "inline" {
			for _, sub := range structFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if name != "" && name != "-" {
			out = append(out, structField{key: name, owner: typeName(t), t: f.Type, index: []int{i}})
		}
	}
	return out
}

// typeName names a struct type in the table of reference_table.go.
func typeName(t reflect.Type) string {
	switch t {
	case varyFieldsType:
		return "Vary"
	case boundType:
		return "Bound"
	}
	return t.Name()
}

// newField describes the field key, of Go type t, declared by the type
// named owner, at path.
func newField(path, key string, t reflect.Type, owner string) *Field {
	f := &Field{Path: join(path, key), Key: key, entry: owner + "." + key, info: table[owner+"."+key]}
	f.Doc, f.Bounds, f.Values = f.info.doc, f.info.bounds, f.info.values
	list := ""
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t != valueListType {
		if t.Kind() == reflect.Slice {
			list = "list of "
			f.Path += "[]"
		}
		t = t.Elem()
	}
	f.t = t
	f.Type = list + typeWords(t, f.info)
	switch {
	case t == edgesType:
		f.Fields = []*Field{newField(f.Path, "<edge>", edgePolicyType, "Edges")}
	case t == overridesType:
		f.Fields = []*Field{newField(f.Path, "<service>", serviceType, "ServiceOverrides")}
	case t == edgePolicyType, t == serviceType && strings.HasSuffix(f.Path, ">"):
		// Described by reference to strategies[] or services[].
	case t == distType || t.Kind() == reflect.Struct && t != hedgeDelayType && t != valueListType:
		f.Fields = structFieldsAt(t, f.Path)
	}
	if k, ok := kindedTypes[t]; ok {
		markKinds(f.Fields, k)
	}
	return f
}

// markKinds sets, on the fields of a kinded mapping, the kinds that use
// each, and on its kind field the kinds.
func markKinds(fields []*Field, k kinded) {
	kinds := slices.Sorted(maps.Keys(k.uses))
	for _, f := range fields {
		if f.Key == k.key {
			f.Values = kinds
			f.Type = "string"
			if k.def != "" {
				f.info.def = k.def
			}
			continue
		}
		var users []string
		for _, kind := range kinds {
			if slices.Contains(k.uses[kind], f.Key) {
				users = append(users, kind)
			}
		}
		if len(users) > 0 {
			f.Kinds = users
		}
	}
}

// typeWords says what a value of Go type t is, in words.
func typeWords(t reflect.Type, in info) string {
	if in.typ != "" {
		return in.typ
	}
	switch t {
	case durationType:
		return "duration"
	case limitType:
		return "int or unlimited"
	case autoDurationType:
		return "duration or auto"
	case hedgeDelayType:
		return "duration or percentile (p95)"
	case distType:
		return "duration or distribution"
	case edgesType:
		return "mapping of edges to policies"
	case edgePolicyType:
		return "edge policy"
	case overridesType:
		return "mapping of services to changes"
	case serviceType:
		return "service fields"
	case valueListType:
		return "list of values, or a range"
	}
	if in.unlimited {
		return "int or unlimited"
	}
	switch t.Kind() {
	case reflect.Struct:
		return "mapping"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Uint64:
		return "int"
	case reflect.Float64:
		return "float"
	case reflect.String:
		if len(in.values) > 0 {
			return "string"
		}
		return "string"
	}
	return t.String()
}

// Walk calls fn for every field of fields and below, depth first, in
// order.
func Walk(fields []*Field, fn func(*Field)) {
	for _, f := range fields {
		fn(f)
		Walk(f.Fields, fn)
	}
}

// withDefaults fills in the Default of every field: the table's, or what
// setDefaults gives a new value of the enclosing type.
func withDefaults(fields []*Field, parent reflect.Type) {
	var zero reflect.Value
	if parent != nil && parent.Kind() == reflect.Struct {
		zero = reflect.New(parent)
		setDefaults(zero)
		zero = zero.Elem()
	}
	byKey := map[string][]int{}
	if zero.IsValid() {
		for _, sf := range structFields(parent) {
			byKey[sf.key] = sf.index
		}
	}
	for _, f := range fields {
		switch {
		case f.info.def != "":
			f.Default = f.info.def
		case zero.IsValid() && byKey[f.Key] != nil && !strings.HasSuffix(f.Path, "[]"):
			f.Default = valueText(zero.FieldByIndex(byKey[f.Key]))
		}
		withDefaults(f.Fields, f.t)
	}
}

// valueText writes a default value as a file would, "" for a zero value.
func valueText(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		return durationText(x)
	case Dist:
		if x.Kind == Constant {
			return durationText(x.Mean)
		}
	case fmt.Stringer:
		return x.String()
	}
	switch v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Struct, reflect.Pointer, reflect.Slice:
		return ""
	}
	return fmt.Sprint(v.Interface())
}

// durationText writes d as a file would: 15m rather than 15m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ScenarioReference returns the scenario format's fields, from the top:
// one Field per top-level field of a scenario file, with its defaults,
// built anew on each call.
func ScenarioReference() []*Field {
	ref := reference()
	withDefaults(ref, reflect.TypeFor[Scenario]())
	return ref
}

// normalPath drops the list markers and indexes of a path written by a
// user (strategies[0].backoff, strategies[].backoff or
// strategies.backoff), for comparing paths.
func normalPath(p string) string {
	var b strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.Trim(b.String(), ".")
}

// LookupField returns the field that path names (strategies.backoff,
// strategies[].backoff, strategies[0].backoff, or a last part alone
// when only one field ends with it, such as backoff.cap); false with the
// nearest paths when none does.
func LookupField(ref []*Field, path string) (*Field, []string, bool) {
	want := normalPath(path)
	var byEnd []*Field
	var all []string
	var found *Field
	Walk(ref, func(f *Field) {
		p := normalPath(f.Path)
		all = append(all, f.Path)
		switch {
		case p == want:
			found = f
		case strings.HasSuffix(p, "."+want):
			byEnd = append(byEnd, f)
		}
	})
	if found != nil {
		return found, nil, true
	}
	if len(byEnd) == 1 {
		return byEnd[0], nil, true
	}
	if len(byEnd) > 1 {
		var names []string
		for _, f := range byEnd {
			names = append(names, f.Path)
		}
		return nil, names, false
	}
	slices.SortStableFunc(all, func(a, b string) int {
		return distance(normalPath(a), want) - distance(normalPath(b), want)
	})
	return nil, all[:min(5, len(all))], false
}

// distance is the Levenshtein distance between a and b, counted also
// against b's last part alone (so that a misspelt last part is near).
func distance(a, b string) int {
	d := editdist.Levenshtein(a, b)
	if i := strings.LastIndexByte(a, '.'); i >= 0 {
		d = min(d, editdist.Levenshtein(a[i+1:], b)+1)
	}
	return d
}
