package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Load reads, strictly decodes, defaults and validates a scenario file.
// Relative paths inside the file (custom manifests, image archives) are
// resolved against the file's directory. Every problem found is returned
// at once, each naming the file, the field path and the fix.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	s.resolvePaths(filepath.Dir(path))
	if errs := s.checkManifests(); len(errs) > 0 {
		return nil, &Errors{File: path, List: errs}
	}
	return s, nil
}

// checkManifests reads a custom app's Deployment manifests: each must be a
// Deployment that has the container the rollouts change.
func (s *Scenario) checkManifests() []FieldError {
	var v validator
	for i, vr := range s.Variants {
		if vr.Manifest == "" {
			continue
		}
		p := fmt.Sprintf("variants[%d].manifest", i)
		d, err := ReadDeployment(vr.Manifest)
		if err != nil {
			v.add(p, err.Error(), "give the path, relative to the scenario file, of a Deployment manifest")
			continue
		}
		if c := s.App.Custom; c != nil && !hasContainer(d, c.Container) {
			v.add(p, fmt.Sprintf("%s has no container named %q", vr.Manifest, c.Container), "set app.custom.container to the container whose image the rollouts change")
		}
	}
	return v.errs
}

func hasContainer(d *appsv1.Deployment, name string) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// ReadDeployment strictly decodes a file holding one apps/v1 Deployment.
func ReadDeployment(path string) (*appsv1.Deployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		return nil, fmt.Errorf("%s holds %s %s, not an apps/v1 Deployment", path, d.APIVersion, d.Kind)
	}
	return &d, nil
}

// Parse decodes, defaults and validates a scenario held in memory. file is
// used only to name the source in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	if j, err := yaml.YAMLToJSON(data); err == nil && bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, &Errors{File: file, List: []FieldError{{Msg: "the file is empty", Fix: "start from one of the files in scenarios/"}}}
	}
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		fe, ok := locate(data)
		if !ok {
			fe = decodeError(err)
		}
		return nil, &Errors{File: file, List: []FieldError{fe}}
	}
	s.Default()
	if errs := s.Validate(); len(errs) > 0 {
		return nil, &Errors{File: file, List: errs}
	}
	return &s, nil
}

// decodeError turns a decoder message that locate could not place (a
// wrong type, broken YAML) into a FieldError.
func decodeError(err error) FieldError {
	msg := err.Error()
	// sigs.k8s.io/yaml wraps encoding/json: strip its prefixes.
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return FieldError{Msg: msg, Fix: "check the value's type against scenarios/README.md"}
}

// resolvePaths makes file references relative to the scenario's directory.
func (s *Scenario) resolvePaths(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i := range s.Variants {
		s.Variants[i].Manifest = abs(s.Variants[i].Manifest)
	}
	if c := s.App.Custom; c != nil {
		for i := range c.ImageArchives {
			c.ImageArchives[i] = abs(c.ImageArchives[i])
		}
	}
	if e := s.Cluster.Existing; e != nil {
		e.Kubeconfig = abs(e.Kubeconfig)
	}
}

// FieldError is one problem in a scenario: where (a field path such as
// variants[1].preStopSeconds), what, and how to fix it.
type FieldError struct {
	Path string
	Msg  string
	Fix  string
}

func (e FieldError) String() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString(" (fix: ")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// Errors is every problem found in one scenario file.
type Errors struct {
	File string
	List []FieldError
}

func (e *Errors) Error() string {
	if len(e.List) == 1 {
		return e.File + ": " + e.List[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", e.File, len(e.List))
	for _, fe := range e.List {
		b.WriteString("\n  ")
		b.WriteString(fe.String())
	}
	return b.String()
}

// AsErrors returns the scenario errors inside err, if any.
func AsErrors(err error) (*Errors, bool) {
	var e *Errors
	ok := errors.As(err, &e)
	return e, ok
}
