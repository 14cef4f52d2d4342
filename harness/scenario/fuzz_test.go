package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse: Parse never panics; it refuses with *Errors, each problem
// saying something; and what it accepts validates again and survives the
// round trip a run makes (marshalled into the run's scenario.yaml, parsed
// back by the analysis) unchanged. Seeded with the shipped scenarios and
// the testdata.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../../scenarios/*.yaml", "testdata/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			e, ok := AsErrors(err)
			if !ok || len(e.List) == 0 {
				t.Fatalf("error %v is %T with no problems listed, want *Errors", err, err)
			}
			for _, fe := range e.List {
				if fe.Msg == "" {
					t.Fatalf("a problem without a message: %+v", fe)
				}
			}
			return
		}
		if errs := s.Validate(); len(errs) > 0 {
			t.Fatalf("accepted a scenario that does not validate again: %v", errs)
		}
		y, err := yaml.Marshal(s)
		if err != nil {
			t.Fatalf("marshalling an accepted scenario: %v", err)
		}
		s2, err := Parse("remarshalled.yaml", y)
		if err != nil {
			t.Fatalf("the marshalled scenario does not parse: %v\n%s", err, y)
		}
		y2, err := yaml.Marshal(s2)
		if err != nil || !bytes.Equal(y, y2) {
			t.Fatalf("the round trip changed the scenario (%v):\n%s\nbecame\n%s", err, y, y2)
		}
	})
}
