package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/intstr"
	sjson "sigs.k8s.io/json"
)

// docChecker walks a decoded document beside the Scenario type before the
// strict decode. It records every value of the wrong type, bad duration or
// out-of-range count with its path, and returns the document without them,
// so the decoder (which stops at the first such value) sees only what fits
// and the rest of the file can still be validated. Unknown keys are left in
// place for the decoder to report; unknown holds, by path, what to say
// about each.
type docChecker struct {
	problems []FieldError
	unknown  map[string]FieldError
}

var (
	durationType    = reflect.TypeOf(Duration{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
)

// kindOf names the JSON kind of a value decoded with UseNumber.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	}
	return "null"
}

// bad records a problem at path and drops the value (nil becomes JSON
// null, which leaves the field unset).
func (c *docChecker) bad(path, msg, fix string) any {
	c.problems = append(c.problems, FieldError{Path: path, Msg: msg, Fix: fix})
	return nil
}

func (c *docChecker) wrongType(path string, v any, want string) any {
	msg := fmt.Sprintf("is a %s, want a %s", kindOf(v), want)
	if path == "" {
		msg = fmt.Sprintf("the file holds a %s, want a map of fields (apiVersion, kind, metadata, variants...)", kindOf(v))
	}
	return c.bad(path, msg, "check the value's type against the scenario format (droprun scenarios README)")
}

// walkStruct is walk of a map decoded into struct type t: every key a
// field of t's (an unknown one is recorded, with the field it may mean),
// and no plain int field written as 0.
func (c *docChecker) walkStruct(v any, t reflect.Type, path string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return c.wrongType(path, v, "map")
	}
	fields := jsonFields(t)
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := join(path, k)
		ft, known := fields[k]
		if !known {
			c.unknown[p] = unknownField(p, k, fields)
			out[k] = m[k]
			continue
		}
		if n, ok := m[k].(json.Number); ok && ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64 && n == "0" {
			// A plain int field reads 0 as not given and takes its
			// default, which a written 0 never means.
			out[k] = c.bad(p, "is 0, which droprun would read as not given and replace with the default", "leave it out for the default, or give 1 or more")
			continue
		}
		out[k] = c.walk(m[k], ft, p)
	}
	return out
}

// walk returns v as the decoder may take it: nil where it dropped v.
func (c *docChecker) walk(v any, t reflect.Type, path string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return nil
	}
	switch {
	case t == durationType:
		raw, _ := json.Marshal(v)
		if err := new(Duration).UnmarshalJSON(raw); err != nil {
			return c.bad(path, err.Error(), `write durations as strings with a unit, e.g. "5s"`)
		}
	case t == intOrStringType:
		n, isNum := v.(json.Number)
		_, isStr := v.(string)
		if _, err := strconv.ParseInt(string(n), 10, 32); !isStr && (!isNum || err != nil) {
			return c.bad(path, fmt.Sprintf("is %s, want a count or a percentage", valueText(v)), `use a count such as 1 or a percentage such as "25%"`)
		}
	case t.Kind() == reflect.String:
		// sigs.k8s.io/yaml, which droprun used before, took a number or a
		// boolean for a string (cpu: 1 is "1"); keep accepting that.
		switch x := v.(type) {
		case string:
		case json.Number:
			return x.String()
		case bool:
			return strconv.FormatBool(x)
		default:
			return c.wrongType(path, v, "string")
		}
	case t.Kind() == reflect.Bool:
		if _, ok := v.(bool); !ok {
			return c.wrongType(path, v, "boolean")
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return c.wrongType(path, v, "number")
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return c.bad(path, fmt.Sprintf("%s is not a whole number that fits in %d bits", n, t.Bits()), "check the value against the scenario format (droprun scenarios README)")
		}
	case t.Kind() == reflect.Struct:
		return c.walkStruct(v, t, path)
	case t.Kind() == reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return c.wrongType(path, v, "map")
		}
		out := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out[k] = c.walk(m[k], t.Elem(), join(path, k))
		}
		return out
	case t.Kind() == reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			return c.wrongType(path, v, "list")
		}
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
		return out
	}
	return v
}

func valueText(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return "a " + kindOf(v)
}

// unknownField says what is wrong with key at path, given the fields known
// there: a key that differs only in case names its right spelling.
func unknownField(path, key string, fields map[string]reflect.Type) FieldError {
	known := slices.Sorted(maps.Keys(fields))
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return FieldError{Path: path, Msg: "unknown field: field names are case-sensitive", Fix: "write " + k}
		}
	}
	return FieldError{Path: path, Msg: "unknown field",
		Fix: "check the spelling against the scenario format (droprun scenarios README); known fields here: " + strings.Join(known, ", ")}
}

// strictProblem turns one of sigs.k8s.io/json's strict errors (an unknown
// or a duplicate field, with its path) into a FieldError.
func (c *docChecker) strictProblem(err error) FieldError {
	var fe sjson.FieldError
	if !errors.As(err, &fe) {
		return decodeError(err)
	}
	p := fe.FieldPath()
	if strings.HasPrefix(err.Error(), "duplicate field") {
		return FieldError{Path: p, Msg: "is given twice", Fix: "keep one of them"}
	}
	if known, ok := c.unknown[p]; ok {
		return known
	}
	return FieldError{Path: p, Msg: "unknown field", Fix: "check the spelling against the scenario format (droprun scenarios README)"}
}

// jsonFields maps a struct's JSON field names to their types, flattening
// embedded structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			maps.Copy(out, jsonFields(f.Type))
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

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// duplicateKeys turns the strict YAML parser's complaint about keys given
// twice (which names only lines) into FieldErrors with paths, found by
// walking the document in order with every key kept. When the two do not
// line up, the parser's own lines are reported.
func duplicateKeys(data []byte, strictErr error) []FieldError {
	var te *yamlv2.TypeError
	if !errors.As(strictErr, &te) {
		return []FieldError{{Msg: cleanMessage(strictErr), Fix: "give each key once"}}
	}
	var doc yamlv2.MapSlice
	var paths []string
	if yamlv2.Unmarshal(data, &doc) == nil {
		paths = dupPaths(doc, "", paths)
	}
	out := make([]FieldError, len(te.Errors))
	for i, line := range te.Errors {
		if len(paths) == len(te.Errors) {
			at, _, _ := strings.Cut(line, ":")
			out[i] = FieldError{Path: paths[i], Msg: "is given twice (the second at " + at + ")", Fix: "keep one of them"}
		} else {
			out[i] = FieldError{Msg: line, Fix: "give each key once"}
		}
	}
	return out
}

// dupPaths appends the path of every repeated key in v, in document order.
func dupPaths(v any, path string, out []string) []string {
	switch x := v.(type) {
	case yamlv2.MapSlice:
		seen := map[any]bool{}
		for _, item := range x {
			p := join(path, fmt.Sprint(item.Key))
			if isComparable(item.Key) {
				if seen[item.Key] {
					out = append(out, p)
				}
				seen[item.Key] = true
			}
			out = dupPaths(item.Value, p, out)
		}
	case []any:
		for i, e := range x {
			out = dupPaths(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
	return out
}

func isComparable(k any) bool {
	return k == nil || reflect.TypeOf(k).Comparable()
}

// cleanMessage strips the YAML and JSON libraries' prefixes from a message.
func cleanMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: ", "yaml: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// decodeError turns an error the checker did not foresee into a FieldError,
// with its path when the decoder gave one.
func decodeError(err error) FieldError {
	fe := FieldError{Msg: cleanMessage(err), Fix: "check the value's type against the scenario format (droprun scenarios README)"}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		fe.Path = te.Field
		fe.Msg = fmt.Sprintf("is a %s, want a %s", te.Value, te.Type)
	}
	return fe
}
