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

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/droprun/droprun/harness/variant"
)

// SweepSpec is a variant entry's sweep: one workload field measured at
// several values, one row per value. In a file it is written
// {field: preStopSeconds, values: [0, 1, 2, 3, 5]}; Load expands the entry
// into one variant per value, named NAME@FIELD=VALUE, each with the field
// set and its own SweepSpec holding that Value (Values empty). A scenario
// recorded by a run (scenario.yaml) holds those expanded variants, and
// reads back as it was run.
type SweepSpec struct {
	// Field is a numeric workload field by its name in the file
	// (preStopSeconds, drainDelay, replicas, readiness.periodSeconds...).
	Field string `json:"field"`
	// Values are the values to measure, as the field takes them: at least
	// two, all different.
	Values []string `json:"values,omitempty"`
	// Value is, on an expanded variant, the value it measures, as written;
	// Group is the name of the entry that was swept.
	Value string `json:"value,omitempty"`
	Group string `json:"group,omitempty"`
	// Number is Value in the field's unit, for tables and plots: seconds
	// for a duration, the count otherwise (a percentage's number).
	Number float64 `json:"-"`

	// index is Value's position in the entry's values (-1: a recorded
	// point, which has no list), for problem paths.
	index int
}

// SweepName is the name of the variant that measures value of field in
// the sweep of entry name.
func SweepName(name, field, value string) string { return name + "@" + field + "=" + value }

// SweepFields are the workload fields a sweep can vary: every numeric
// field of Workload (counts, durations, count-or-percentages), the probe's
// as readiness.NAME.
func SweepFields() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for _, name := range slices.Sorted(maps.Keys(jsonFields(t))) {
			ft := jsonFields(t)[name]
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == durationType, ft == intOrStringType, ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64:
				out = append(out, prefix+name)
			case ft == reflect.TypeOf(Probe{}):
				walk(ft, prefix+name+".")
			}
		}
	}
	walk(reflect.TypeOf(Workload{}), "")
	return out
}

// expandSweeps replaces every entry with a sweep by one variant per value,
// and records on every variant the entry it came from. An entry whose
// sweep has problems stays as it is, without the sweep, so the rest of it
// is still validated.
func (s *Scenario) expandSweeps() []FieldError {
	var v validator
	var out []Variant
	for i, vr := range s.Variants {
		vr.entry = i + 1
		if vr.Sweep == nil {
			out = append(out, vr)
			continue
		}
		points, ok := s.expandEntry(&v, i, vr)
		if !ok {
			vr.Sweep = nil
			out = append(out, vr)
			continue
		}
		out = append(out, points...)
	}
	s.Variants = out
	return v.errs
}

// expandEntry returns the variants of entry i's sweep, or false after
// recording why it cannot be swept.
func (s *Scenario) expandEntry(v *validator, i int, vr Variant) ([]Variant, bool) {
	sw := *vr.Sweep
	p := fmt.Sprintf("variants[%d].sweep", i)
	ok := true
	fail := func(path, msg, fix string) {
		v.add(path, msg, fix)
		ok = false
	}
	fields := SweepFields()
	if !slices.Contains(fields, sw.Field) {
		msg := fmt.Sprintf("%q is not a field a sweep can vary", sw.Field)
		if sw.Field == "" {
			msg = "field is required"
		}
		fail(p+".field", msg, "sweep one of: "+strings.Join(fields, ", "))
	}
	if s.App.Custom != nil {
		fail(p, "sweeps a custom app's variant, whose Deployment comes whole from its manifest", "write one variant per value, each with its own manifest")
	}
	if vr.From != "" {
		fail(p, fmt.Sprintf("is on a variant with from (%s): each value's first rollout would run under %s's rules and be reported apart, so no row would measure %s at one value alone", vr.From, vr.From, vr.Variant),
			"sweep the variant without from; measure the trap at one value in a variant entry of its own")
	}
	if ok && s.App.Custom == nil {
		if msg := ignoredBy(vr.Variant, sw.Field); msg != "" {
			fail(p+".field", msg, "sweep a field the variant uses, or choose a variant that uses "+sw.Field+" (droprun variants lists them)")
		}
	}
	recorded := sw.Value != "" && len(sw.Values) == 0
	group := vr.Name
	if recorded {
		group = sw.Group
	}
	if msgs := validation.IsDNS1123Label(group); group != "" && len(msgs) > 0 {
		fail(fmt.Sprintf("variants[%d].name", i), fmt.Sprintf("%q is not a DNS label", group), "use lower-case letters, digits and '-'; the sweep's rows are named NAME@FIELD=VALUE")
	}
	switch {
	case recorded:
		// A point of a sweep a run recorded: keep it, checked.
		if want := SweepName(sw.Group, sw.Field, sw.Value); sw.Group == "" || vr.Name != want {
			fail(fmt.Sprintf("variants[%d].name", i), fmt.Sprintf("%q does not match its sweep (want %q)", vr.Name, want),
				"write the sweep as {field, values} on the entry and let droprun name the rows")
		}
		sw.Values, sw.index = []string{sw.Value}, -1
	case sw.Value != "" || sw.Group != "":
		fail(p, "sets value or group", "give field and values only; droprun sets value and group on the rows it expands")
	case len(sw.Values) < 2:
		fail(p+".values", fmt.Sprintf("has %d value(s)", len(sw.Values)), "give at least two values to compare, e.g. values: [0, 1, 2, 3, 5]")
	}
	if !ok {
		return nil, false
	}
	out := expandValues(v, p, vr, sw, recorded)
	return out, len(out) > 0
}

// expandValues makes one variant per value of sw (checked: p is the
// sweep's path), or the one recorded point. A value's problem leaves the
// other values expanded, so validation still reports theirs.
func expandValues(v *validator, p string, vr Variant, sw SweepSpec, recorded bool) []Variant {
	var out []Variant
	seen := map[string]int{}
	for k, val := range sw.Values {
		vp := fmt.Sprintf("%s.values[%d]", p, k)
		if recorded {
			vp = p + ".value"
		}
		name := vr.Name
		if !recorded {
			name = SweepName(vr.Name, sw.Field, val)
		}
		w, canon, num, err := withField(vr.Workload, sw.Field, val)
		if err != nil {
			v.add(vp, fmt.Sprintf("%s for %s: %v", val, name, err), "give "+sw.Field+" values of the type the field takes (the scenario format in droprun's scenarios README)")
			continue
		}
		if j, dup := seen[canon]; dup {
			v.add(vp, fmt.Sprintf("%s is the same %s as values[%d] (%s)", val, sw.Field, j, sw.Values[j]), "list each value once")
			continue
		}
		seen[canon] = k
		x := vr
		x.Name, x.Workload = name, w
		index := k
		if recorded {
			index = -1
		}
		x.Sweep = &SweepSpec{Field: sw.Field, Value: val, Group: vr.Name, Number: num, index: index}
		if recorded {
			x.Sweep.Group = sw.Group
		}
		out = append(out, x)
	}
	return out
}

// ignoredBy says why the built-in variant name does not render field
// (its rows would all measure the same thing), or "" when it does.
func ignoredBy(name, field string) string {
	info, known := variant.Lookup(name)
	if !known {
		return "" // validation reports the variant
	}
	switch {
	case field == "preStopSeconds" && info.PreStop == variant.PreStopNone:
		return fmt.Sprintf("preStopSeconds is ignored by %s, which has no preStop hook: every row would measure the same Deployment", name)
	case field == "drainDelay" && !info.Shutdown.Drains():
		return fmt.Sprintf("drainDelay is ignored by %s, whose app does not drain: every row would measure the same Deployment", name)
	}
	return ""
}

// withField returns w with the field at path (a SweepFields name) set to
// value, the field's value in canonical JSON (to compare values), and its
// number. It goes through w's JSON form, so any field takes the values
// (and refuses the ones) the file itself would.
func withField(w Workload, path, value string) (Workload, string, float64, error) {
	raw, err := json.Marshal(w)
	if err != nil {
		return w, "", 0, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return w, "", 0, err
	}
	var val any = value
	if _, err := strconv.ParseFloat(value, 64); err == nil && json.Valid([]byte(value)) {
		val = json.Number(value)
	}
	at, key := m, path
	if parent, child, nested := strings.Cut(path, "."); nested {
		sub, _ := m[parent].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
		}
		m[parent], at, key = sub, sub, child
	}
	at[key] = val
	if raw, err = json.Marshal(m); err != nil {
		return w, "", 0, err
	}
	var out Workload
	if err := json.Unmarshal(raw, &out); err != nil {
		return w, "", 0, fieldValueError(err)
	}
	f := fieldByPath(reflect.ValueOf(&out).Elem(), path)
	canon, err := json.Marshal(f.Interface())
	if err != nil {
		return w, "", 0, err
	}
	return out, string(canon), numberOf(f), nil
}

// fieldValueError words a JSON decoding error about the swept value.
func fieldValueError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if k := te.Type.Kind(); k >= reflect.Int && k <= reflect.Int64 {
			return errors.New("is not a whole number")
		}
		return fmt.Errorf("is not a %s", te.Type)
	}
	return errors.New(cleanMessage(err))
}

// fieldByPath is the struct field at a SweepFields path in v (a Workload).
func fieldByPath(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		t := v.Type()
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if tag == name {
				v = v.Field(i)
				break
			}
		}
	}
	return v
}

// numberOf is a swept field's value in its unit: seconds for a
// Duration, the count for an integer, the number of a count-or-percentage.
func numberOf(f reflect.Value) float64 {
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return 0
		}
		f = f.Elem()
	}
	switch x := f.Interface().(type) {
	case Duration:
		return x.Seconds()
	case intstr.IntOrString:
		if x.Type == intstr.Int {
			return float64(x.IntVal)
		}
		n, _ := strconv.ParseFloat(strings.TrimSuffix(x.StrVal, "%"), 64)
		return n
	}
	if f.CanInt() {
		return float64(f.Int())
	}
	return 0
}

// entryPath is the file's path of variant i: variants[N], N its entry's
// index in the file.
func (s *Scenario) entryPath(i int) string {
	if e := s.Variants[i].entry; e > 0 {
		return fmt.Sprintf("variants[%d]", e-1)
	}
	return fmt.Sprintf("variants[%d]", i)
}

// sweptPath is the path of the value variant i's sweep set field to, or ""
// when variant i does not sweep field.
func (s *Scenario) sweptPath(i int, field string) string {
	sw := s.Variants[i].Sweep
	if sw == nil || sw.Field != field || sw.Value == "" {
		return ""
	}
	if sw.index < 0 {
		return s.entryPath(i) + ".sweep.value"
	}
	return fmt.Sprintf("%s.sweep.values[%d]", s.entryPath(i), sw.index)
}

// RowLabel is name as a Kubernetes label value (the pod template's
// droprun.dev/row): a sweep's row names hold '@' and '=', which labels do
// not take, so every character a label value refuses becomes '_'.
func RowLabel(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	out := string(b)
	if len(out) > validation.LabelValueMaxLength {
		out = out[:validation.LabelValueMaxLength]
	}
	return strings.TrimRight(strings.TrimLeft(out, "-_."), "-_.")
}

// dedupe drops repeated problems: the variants of one sweep share every
// field but the swept one, so a problem elsewhere would show once per value.
func dedupe(list []FieldError) []FieldError {
	seen := map[FieldError]bool{}
	out := list[:0:0]
	for _, fe := range list {
		if !seen[fe] {
			seen[fe] = true
			out = append(out, fe)
		}
	}
	return out
}
