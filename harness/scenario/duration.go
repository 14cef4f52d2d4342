package scenario

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written in scenario files as a Go duration
// string ("2s", "500ms", "1m30s").
type Duration struct{ time.Duration }

// D returns a *Duration for d, for building scenarios in code.
func D(d time.Duration) *Duration { return &Duration{d} }

// Get returns the duration, 0 for a nil (unset) one.
func (d *Duration) Get() time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string. A bare number is rejected because
// its unit would be a guess.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string with a unit, like \"5s\" or \"500ms\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: write it like \"5s\" or \"500ms\"", s)
	}
	d.Duration = v
	return nil
}
