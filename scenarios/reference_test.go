package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestReferenceTableMatchesTypes holds the table of reference_table.go
// to the decoder's types: a field the decoder knows that the table does
// not describe, or an entry that names no field, fails.
func TestReferenceTableMatchesTypes(t *testing.T) {
	seen := map[string]bool{}
	Walk(reference(), func(f *Field) {
		seen[f.entry] = true
		assert.NotEmpty(t, f.Doc, "%s (%s): no meaning in the table", f.Path, f.entry)
		if f.t == nil || f.t.Kind() != reflect.Struct || len(f.Fields) == 0 {
			return
		}
		// The keys the reference lists are the keys the decoder takes.
		var keys []string
		for _, sub := range f.Fields {
			keys = append(keys, sub.Key)
		}
		want := decoderKeys(f.t)
		assert.ElementsMatch(t, want, keys, "%s: the reference's fields and the decoder's", f.Path)
	})
	topKeys := slices.Sorted(maps.Keys(yamlFields(reflect.TypeFor[Scenario]())))
	var refTop []string
	for _, f := range reference() {
		refTop = append(refTop, f.Key)
	}
	assert.ElementsMatch(t, topKeys, refTop)
	for key := range table {
		assert.True(t, seen[key], "table entry %s names no field of the scenario format", key)
	}
}

// decoderKeys are the keys the decoder takes in a mapping of type t.
func decoderKeys(t reflect.Type) []string {
	switch t {
	case checkType:
		return append(slices.Clone(checkKeys), "<figure>")
	case varyType:
		t = varyFieldsType
	case edgesType:
		return []string{"<edge>"}
	case overridesType:
		return []string{"<service>"}
	}
	return slices.Sorted(maps.Keys(yamlFields(t)))
}

// TestGeneratedDocsAreCurrent fails when docs/scenario-reference.md or
// docs/scenario.schema.json is not what the generator writes now.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	var md bytes.Buffer
	require.NoError(t, WriteReference(&md, ScenarioReference(), true, true))
	schema, err := Schema()
	require.NoError(t, err)
	for file, want := range map[string][]byte{
		"../docs/scenario-reference.md": md.Bytes(),
		"../docs/scenario.schema.json":  schema,
	} {
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go generate ./cmd/herdlab` (or go run ./cmd/herdlab help scenario --markdown / --schema > the file) and commit it", file)
		}
	}
}

// compiledSchema compiles docs/scenario.schema.json as generated now.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Schema()
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("scenario.schema.json", doc))
	s, err := c.Compile("scenario.schema.json")
	require.NoError(t, err)
	return s
}

// asJSON reads YAML data as the values a YAML editor checks against the
// schema.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return out
}

// shippedScenarios lists every scenario file shipped: the library (the
// browser lab's examples), the configuration examples, the valid test
// files and the browser lab's own test scenarios.
func shippedScenarios(t *testing.T) []string {
	var files []string
	for _, glob := range []string{"*.yaml", "configs/*.yaml", "testdata/valid/*.yaml", "../web/lab/testdata/*.yaml"} {
		m, err := filepath.Glob(glob)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.Greater(t, len(files), 40)
	return files
}

func TestShippedScenariosMatchSchema(t *testing.T) {
	schema := compiledSchema(t)
	for _, file := range shippedScenarios(t) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		_, err = Load(file)
		require.NoError(t, err, "%s: the decoder refuses it", file)
		assert.NoError(t, schema.Validate(asJSON(t, data)), "%s: the schema refuses what the decoder takes", file)
	}
}

// TestSchemaRefusesWhatTheDecoderRefuses tries typical mistakes: the
// decoder refuses each, and so must the schema.
func TestSchemaRefusesWhatTheDecoderRefuses(t *testing.T) {
	schema := compiledSchema(t)
	base := `server: {concurrency: 10, service_time: 100ms, queue: 100}
workload: {requests: 100, arrival: {kind: burst, at: 1s}}
`
	one := func(strategy string) string {
		return base + "strategies:\n  - " + strategy + "\n"
	}
	tests := []struct{ name, doc string }{
		{"unknown top-level field", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "sed: 1\n"},
		{"misspelt field", one("{name: a, backoff: {kind: none}, max_attempt: 3}")},
		{"unknown backoff kind", one("{name: a, backoff: {kind: jitter}, max_attempts: 3}")},
		{"a key the kind does not use", one("{name: a, backoff: {kind: fixed, delay: 1s, base: 1s}, max_attempts: 3}")},
		{"a preset with a kind", one("{name: a, backoff: {preset: failsafe-go, kind: none}}")},
		{"unknown preset", one("{name: a, backoff: {preset: polly}}")},
		{"quoted number", one(`{name: a, backoff: {kind: none}, max_attempts: "3"}`)},
		{"negative count", one("{name: a, backoff: {kind: none}, max_attempts: -1}")},
		{"fractional count", one("{name: a, backoff: {kind: none}, max_attempts: 2.5}")},
		{"max_attempts 0, not unlimited", one("{name: a, backoff: {kind: fixed, delay: 1s}, max_attempts: 0}")},
		{"bad duration", one("{name: a, backoff: {kind: fixed, delay: 5 seconds}, max_attempts: 3}")},
		{"number for a duration", one("{name: a, backoff: {kind: fixed, delay: 5}, max_attempts: 3}")},
		{"unknown outcome", one("{name: a, backoff: {kind: none}, max_attempts: 3, retry_on: [503]}")},
		{"probability above 1", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "queue: 100", "queue: 100, response_loss: 1.5", 1)},
		{"unknown outage mode", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "queue: 100", "queue: 100, outages: [{start: 1s, duration: 1s, mode: down}]", 1)},
		{"a distribution key its dist does not take", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "service_time: 100ms", "service_time: {dist: uniform, min: 1ms, max: 2ms, mean: 1ms}", 1)},
		{"burst with a rate", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "at: 1s", "at: 1s, rate: 5", 1)},
		{"queue that is a word", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "queue: 100", "queue: lots", 1)},
		{"a bool that is a word", one("{name: a, backoff: {kind: none}, max_attempts: 3, ignore_pushback: yes}")},
		{"budget kind missing a key's kind", one("{name: a, backoff: {kind: none}, max_attempts: 3, budget: {kind: tokens, capacity: 5}}")},
		{"breaker cumulative with consecutive", one("{name: a, backoff: {kind: none}, max_attempts: 3, breaker: {kind: cumulative, failure_ratio: 0.1, consecutive: 3}}")},
		{"throttle sre with beta", one("{name: a, backoff: {kind: none}, max_attempts: 3, throttle: {kind: sre, beta: 0.5}}")},
		{"unknown figure in a check", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "checks: [{strategy: a, peak_load_ration: {max: 1}}]\n"},
		{"unknown lint rule", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "lint: {silence: [{rule: HL999, reason: x}]}\n"},
		{"silence without a reason", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "lint: {silence: [{rule: HL001}]}\n"},
		{"no strategies", base},
		{"server and services", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "services: [{name: s}]\n"},
		{"clients with arrival", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "workload: {", "workload: {clients: {count: 5, think_time: 1s}, ", 1)},
		{"a bad edge key", one("{name: a, backoff: {kind: none}, max_attempts: 3, edges: {api-db: {max_attempts: 1}}}")},
		{"a name field in an edge policy", one("{name: a, backoff: {kind: none}, max_attempts: 3, edges: {default: {name: b}}}")},
		{"sweep without values", one("{name: a, backoff: {kind: none}, max_attempts: 3}") + "sweep: {vary: [{path: seed}]}\n"},
		{"strategy without a name", one("{backoff: {kind: none}, max_attempts: 3}")},
		{"hedge delay that is not a percentile", one("{name: a, backoff: {kind: none}, max_attempts: 3, hedge: {delay: q95}}")},
		{"a distribution without dist", strings.Replace(one("{name: a, backoff: {kind: none}, max_attempts: 3}"), "service_time: 100ms", "service_time: {mean: 100ms}", 1)},
		{"a list for a mapping", one("{name: a, backoff: [none], max_attempts: 3}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("mistake.yaml", []byte(tt.doc))
			require.Error(t, err, "the decoder takes it: not a mistake")
			assert.Error(t, schema.Validate(asJSON(t, []byte(tt.doc))), "the schema takes what the decoder refuses: %v", err)
		})
	}
}

// TestSchemaRefusesUnknownKeysEverywhere adds an unknown key to every
// mapping of the everything files in turn: the decoder refuses each, and
// so must the schema.
func TestSchemaRefusesUnknownKeysEverywhere(t *testing.T) {
	skipUnderRace(t)
	schema := compiledSchema(t)
	files, err := filepath.Glob("testdata/valid/everything*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 4)
	tried := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var root yaml.Node
		require.NoError(t, yaml.Unmarshal(data, &root))
		maps := nodes(&root, func(n *yaml.Node) bool { return n.Kind == yaml.MappingNode })
		for i, m := range maps {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "bogus_key"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "1"})
			doc, err := yaml.Marshal(&root)
			m.Content = m.Content[:len(m.Content)-2]
			require.NoError(t, err)
			abs, _ := filepath.Abs(file)
			_, derr := parse(t.Context(), abs, doc, readNear(abs))
			assert.Error(t, derr, "%s mapping %d: the decoder takes an unknown key", file, i)
			assert.Error(t, schema.Validate(asJSON(t, doc)), "%s mapping %d (line %d): the schema takes an unknown key", file, i, m.Line)
			tried++
		}
	}
	assert.Greater(t, tried, 80)
}

// nodes lists the nodes under n that keep, depth first.
func nodes(n *yaml.Node, keep func(*yaml.Node) bool) []*yaml.Node {
	var out []*yaml.Node
	if keep(n) {
		out = append(out, n)
	}
	for _, c := range n.Content {
		out = append(out, nodes(c, keep)...)
	}
	return out
}

// TestSchemaRefusesAWrongTypeEverywhere puts a mapping in place of every
// value of the everything files in turn (a duration, a number, a name,
// an item of a list): the decoder refuses each, and so must the schema.
func TestSchemaRefusesAWrongTypeEverywhere(t *testing.T) {
	skipUnderRace(t)
	schema := compiledSchema(t)
	files, err := filepath.Glob("testdata/valid/everything*.yaml")
	require.NoError(t, err)
	tried := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var root yaml.Node
		require.NoError(t, yaml.Unmarshal(data, &root))
		// The values: the scalars that are not keys.
		var values []*yaml.Node
		for _, n := range nodes(&root, func(n *yaml.Node) bool { return n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode }) {
			for i, c := range n.Content {
				if c.Kind == yaml.ScalarNode && (n.Kind == yaml.SequenceNode || i%2 == 1) {
					values = append(values, c)
				}
			}
		}
		abs, _ := filepath.Abs(file)
		for _, v := range values {
			saved := *v
			*v = yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "x"}, {Kind: yaml.ScalarNode, Value: "1"}}}
			doc, err := yaml.Marshal(&root)
			*v = saved
			require.NoError(t, err)
			_, derr := parse(t.Context(), abs, doc, readNear(abs))
			assert.Error(t, derr, "%s:%d: the decoder takes a mapping for %q", file, saved.Line, saved.Value)
			assert.Error(t, schema.Validate(asJSON(t, doc)), "%s:%d: the schema takes a mapping for %q", file, saved.Line, saved.Value)
			tried++
		}
	}
	assert.Greater(t, tried, 300)
}

// TestEverythingUsesEveryField walks the schema beside the everything
// files: every property of every mapping the schema defines must be
// written in at least one of them, and each must pass validation.
func TestEverythingUsesEveryField(t *testing.T) {
	b, err := Schema()
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(b, &root))
	defs := root["$defs"].(map[string]any)
	used := map[string]map[string]bool{} // def -> keys written
	var walk func(v any, s map[string]any, def string)
	walk = func(v any, s map[string]any, def string) {
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			walk(v, defs[name].(map[string]any), name)
		}
		for _, key := range []string{"anyOf", "allOf"} {
			for _, sub := range asList(s[key]) {
				walk(v, sub.(map[string]any), def)
			}
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			for k, x := range v {
				if used[def] == nil {
					used[def] = map[string]bool{}
				}
				if sub, ok := props[k].(map[string]any); ok {
					used[def][k] = true
					walk(x, sub, "")
				} else if sub, ok := s["additionalProperties"].(map[string]any); ok {
					walk(x, sub, "")
				}
			}
		case []any:
			if items, ok := s["items"].(map[string]any); ok {
				for _, x := range v {
					walk(x, items, "")
				}
			}
		}
	}
	files, err := filepath.Glob("testdata/valid/everything*.yaml")
	require.NoError(t, err)
	for _, file := range files {
		_, err := Load(file)
		require.NoError(t, err, file)
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var v any
		require.NoError(t, yaml.Unmarshal(data, &v))
		walk(v, root, "")
	}
	var missing []string
	for name, d := range defs {
		props, _ := d.(map[string]any)["properties"].(map[string]any)
		for k := range props {
			if !used[name][k] {
				missing = append(missing, fmt.Sprintf("%s.%s", name, k))
			}
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "fields of the schema that no everything*.yaml writes")
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestLookupField(t *testing.T) {
	ref := ScenarioReference()
	for _, q := range []string{"strategies.backoff", "strategies[].backoff", "strategies[2].backoff", "backoff"} {
		f, _, ok := LookupField(ref, q)
		if assert.True(t, ok, q) {
			assert.Equal(t, "strategies[].backoff", f.Path, q)
		}
	}
	_, near, ok := LookupField(ref, "strategies.bakoff")
	assert.False(t, ok)
	assert.Contains(t, near, "strategies[].backoff")
	// A last part shared by several fields names them all.
	_, near, ok = LookupField(ref, "cap")
	assert.False(t, ok)
	assert.Contains(t, near, "strategies[].backoff.cap")
	assert.Contains(t, near, "strategies[].retry_after.cap")
}

// TestSchemaFieldsAreTheDecoders holds every mapping of the schema to
// the decoder's type: the schema's properties are the keys the decoder
// takes, no more and no fewer, and every type the decoder reaches has
// its definition.
func TestSchemaFieldsAreTheDecoders(t *testing.T) {
	b, err := Schema()
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(b, &root))
	defs := root["$defs"].(map[string]any)

	types := map[string]reflect.Type{}
	var reach func(t reflect.Type)
	reach = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		switch t {
		case varyType:
			t = varyFieldsType
		case checkType:
			types["Check"] = t
			reach(boundType)
			return
		case edgesType, edgePolicyType:
			reach(strategyType) // an edge policy is a strategy's fields, less some
			return
		case overridesType:
			reach(serviceType)
			return
		}
		if t.Kind() != reflect.Struct || t == hedgeDelayType || t == valueListType || types[typeName(t)] != nil {
			return
		}
		types[typeName(t)] = t
		for _, sf := range structFields(t) {
			reach(sf.t)
		}
	}
	reach(reflect.TypeFor[Scenario]())
	require.Greater(t, len(types), 30)
	for name, typ := range types {
		d, ok := defs[name].(map[string]any)
		if !assert.True(t, ok, "no definition of %s in the schema", name) {
			continue
		}
		props, _ := d["properties"].(map[string]any)
		want := decoderKeys(typ)
		if typ == checkType {
			want = slices.Clone(checkKeys) // the figures are propertyNames
		}
		assert.ElementsMatch(t, want, slices.Collect(maps.Keys(props)), "%s: the schema's properties and the decoder's keys", name)
		if typ != checkType {
			assert.Equal(t, false, d["additionalProperties"], "%s: the decoder refuses unknown keys", name)
		}
	}
}
