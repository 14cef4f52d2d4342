package analysis

import (
	"slices"
	"testing"

	"github.com/droprun/droprun/harness/scenario"
)

// sweepRow is a synthetic row of the sweep g over preStopSeconds.
// Its drops and requests are split over three rollouts, the first taking
// what does not divide.
func sweepRow(value string, number float64, drops, requests uint64, floor float64) VariantSummary {
	v := VariantSummary{
		Variant:       scenario.SweepName("g", "preStopSeconds", value),
		Sweep:         &SweepPoint{Field: "preStopSeconds", Value: value, Number: number, Group: "g"},
		Measurable:    Tally{Failures: drops, Requests: requests},
		ExpectedFloor: floor,
	}
	for k := range 3 {
		ro := RolloutSummary{N: k + 1}
		ro.Window.Failures, ro.Window.Requests = drops/3, requests/3
		if k == 0 {
			ro.Window.Failures += drops % 3
			ro.Window.Requests += requests % 3
		}
		v.Rollouts = append(v.Rollouts, ro)
	}
	return v
}

// withIntervals fills in hand-built rows' intervals, as rows does.
func withIntervals(rows []VariantSummary) []VariantSummary {
	SetIntervals(&Summary{Variants: rows})
	return rows
}

func TestSweepsGroupsAndSorts(t *testing.T) {
	rows := []VariantSummary{
		{Variant: "no-prestop", Measurable: Tally{Failures: 50, Requests: 1000}},
		sweepRow("5", 5, 0, 30000, 0),
		sweepRow("0", 0, 120, 30000, 0),
		{Variant: "h@drainDelay=1s", Sweep: &SweepPoint{Field: "drainDelay", Value: "1s", Number: 1, Group: "h"}, Measurable: Tally{Requests: 10}},
		sweepRow("2", 2, 3, 30000, 4.5),
		sweepRow("1", 1, 9, 30000, 4.5),
	}
	sw := Sweeps(withIntervals(rows))
	if len(sw) != 2 || sw[0].Group != "g" || sw[1].Group != "h" {
		t.Fatalf("sweeps %+v, want groups g then h", sw)
	}
	var values []string
	for _, p := range sw[0].Points {
		values = append(values, p.Point.Value)
	}
	if !slices.Equal(values, []string{"0", "1", "2", "5"}) {
		t.Errorf("points in order %v, want 0 1 2 5", values)
	}
	p0 := sw[0].Points[0]
	if p0.Drops != 120 || p0.Requests != 30000 || p0.Rate.Point != 0.004 || !(p0.Rate.Lo < 0.004 && p0.Rate.Hi > 0.004) || p0.AtFloor {
		t.Errorf("point 0: %+v", p0)
	}
	// 9 drops against a floor of 4.5 are above it; 3 are not.
	if sw[0].Points[1].AtFloor || !sw[0].Points[2].AtFloor || !sw[0].Points[3].AtFloor {
		t.Errorf("at floor: %v %v %v, want false true true", sw[0].Points[1].AtFloor, sw[0].Points[2].AtFloor, sw[0].Points[3].AtFloor)
	}
	if v, ok := sw[0].Floor(); !ok || v != "2" {
		t.Errorf("Floor() = %q, %v; want 2, true", v, ok)
	}
	if !sw[0].Seconds() {
		t.Error("a preStopSeconds sweep is not in seconds")
	}
}

func TestSweepFloor(t *testing.T) {
	for _, c := range []struct {
		name  string
		drops []uint64
		want  string
		ok    bool
	}{
		{"drops stop at 3", []uint64{40, 10, 0, 0}, "3", true},
		{"a late drop resets it", []uint64{40, 0, 2, 0}, "5", true},
		{"never stops", []uint64{40, 10, 5, 1}, "", false},
		{"all at floor", []uint64{0, 0, 0, 0}, "0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rows []VariantSummary
			for i, v := range []string{"0", "1", "3", "5"} {
				n := []float64{0, 1, 3, 5}[i]
				rows = append(rows, sweepRow(v, n, c.drops[i], 30000, 0))
			}
			got, ok := Sweeps(rows)[0].Floor()
			if got != c.want || ok != c.ok {
				t.Errorf("Floor() = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
	// A row that measured nothing is not at the floor.
	if s := Sweeps([]VariantSummary{sweepRow("0", 0, 0, 0, 0), sweepRow("1", 1, 0, 10, 0)}); s[0].Points[0].AtFloor {
		t.Error("a row without requests is at the floor")
	}
}

func TestSweepPoint(t *testing.T) {
	s, err := scenario.Parse("s.yaml", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: s}
variants:
  - variant: no-prestop
  - variant: graceful-drain
    sweep: {field: drainDelay, values: [500ms, 2s]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if p := sweepPoint(s.Variants[0]); p != nil {
		t.Errorf("unswept variant: %+v", p)
	}
	p := sweepPoint(s.Variants[1])
	if p == nil || *p != (SweepPoint{Field: "drainDelay", Value: "500ms", Number: 0.5, Group: "graceful-drain"}) {
		t.Errorf("sweepPoint = %+v", p)
	}
}

func TestPropagationDelays(t *testing.T) {
	rows := []VariantSummary{
		{Routes: []RouteGap{{Unrouted: 0.9, Source: RouteSourceKubeProxy}, {Unrouted: -1, Source: RouteSourceDataPlane}}},
		{Routes: []RouteGap{{Unrouted: 1.2, Source: RouteSourceDataPlane}, {Unrouted: 0.4, Source: RouteSourceDataPlane}}},
	}
	if got := PropagationDelays(rows); !slices.Equal(got, []float64{0.4, 1.2}) {
		t.Errorf("with data-plane routes: %v, want [0.4 1.2]", got)
	}
	rows = rows[:1]
	if got := PropagationDelays(rows); !slices.Equal(got, []float64{0.9}) {
		t.Errorf("without: %v, want [0.9] (any source)", got)
	}
}
