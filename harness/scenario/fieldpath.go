package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// locate finds where in data the strict decoder's complaint lies, since
// encoding/json names neither the path of an unknown field nor that of a
// value a custom decoder rejected. It walks the YAML document beside the
// Scenario type and returns the first unknown key or bad duration as a
// FieldError (or a value of the wrong type); ok is false when it finds nothing to say.
func locate(data []byte) (fe FieldError, ok bool) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return FieldError{}, false
	}
	return walk(doc, reflect.TypeOf(Scenario{}), "")
}

var (
	durationType    = reflect.TypeOf(Duration{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
)

// jsonKind is the reflect.Kind of a value decoded from YAML into any.
func jsonKind(v any) reflect.Kind {
	switch v.(type) {
	case string:
		return reflect.String
	case bool:
		return reflect.Bool
	case float64, int64, int:
		return reflect.Float64
	}
	return reflect.Invalid
}

func scalarName(k reflect.Kind) string {
	switch {
	case k == reflect.String:
		return "string"
	case k == reflect.Bool:
		return "boolean"
	case k >= reflect.Int && k <= reflect.Float64:
		return "number"
	}
	return "list or map"
}

func walk(v any, t reflect.Type, path string) (FieldError, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		raw, _ := json.Marshal(v)
		if err := new(Duration).UnmarshalJSON(raw); err != nil {
			return FieldError{Path: path, Msg: err.Error(), Fix: `write durations as strings with a unit, e.g. "5s"`}, true
		}
	case t == intOrStringType:
		// a number or a string such as "25%"; validation checks the rest
	case t.Kind() == reflect.String || t.Kind() == reflect.Bool || t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		if want, got := scalarName(t.Kind()), scalarName(jsonKind(v)); v != nil && want != got {
			return FieldError{Path: path, Msg: fmt.Sprintf("is a %s, want a %s", got, want), Fix: "check the value's type against scenarios/README.md"}, true
		}
	case t.Kind() == reflect.Struct:
		m, isMap := v.(map[string]any)
		if !isMap {
			return FieldError{}, false
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(mapKeys(m)) {
			ft, known := fields[k]
			p := join(path, k)
			if !known {
				return FieldError{Path: p, Msg: "unknown field",
					Fix: "check the spelling against scenarios/README.md; known fields here: " + strings.Join(slices.Sorted(mapKeys(fields)), ", ")}, true
			}
			if fe, found := walk(m[k], ft, p); found {
				return fe, true
			}
		}
	case t.Kind() == reflect.Slice:
		if s, isSlice := v.([]any); isSlice {
			for i, e := range s {
				if fe, found := walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); found {
					return fe, true
				}
			}
		}
	}
	return FieldError{}, false
}

// jsonFields maps a struct's JSON field names to their types, flattening
// embedded structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name != "-" && f.IsExported() {
			out[name] = f.Type
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
