package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/variant"
	"k8s.io/apimachinery/pkg/util/validation"

	yamlv2 "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads, strictly decodes, defaults and validates a scenario file of
// at most runfile.MaxUserFile bytes. Relative paths inside the file (custom
// manifests, image archives, a kubeconfig) are resolved against the file's
// directory, and ~ against the home directory. Every problem found is
// returned at once, each naming the file, the field path and the fix.
func Load(path string) (*Scenario, error) {
	return load(nil, path, filepath.Dir(path))
}

// load is Load (files nil: the OS file system) and LoadFS. dir is the
// scenario's folder, which its relative paths start from.
func load(files fs.FS, path, dir string) (*Scenario, error) {
	data, err := readFrom(files, path, "scenario")
	if e, ok := asTooLarge(err); ok {
		return nil, &Errors{File: path, List: []FieldError{{Msg: e.Msg(), Fix: e.Fix()}}}
	}
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	s.files = files
	if errs := s.resolvePaths(dir); len(errs) > 0 {
		return nil, &Errors{File: path, List: dedupe(errs)}
	}
	if errs := s.checkManifests(); len(errs) > 0 {
		return nil, &Errors{File: path, List: dedupe(errs)}
	}
	return s, nil
}

// checkManifests reads a custom app's Deployment manifests: each must be a
// Deployment that has the container the rollouts change, and all must
// name the same Deployment, the one droprun rolls from variant to variant
// (another would keep running beside it, its pods taking traffic).
func (s *Scenario) checkManifests() []FieldError {
	var v validator
	first := -1 // the first variant whose manifest was read
	var firstName string
	for i, vr := range s.Variants {
		if vr.Manifest == "" {
			continue
		}
		p := s.entryPath(i) + ".manifest"
		data, err := s.ReadManifest(vr.Manifest)
		var d *appsv1.Deployment
		if err == nil {
			d, err = DecodeDeployment(vr.Manifest, data)
		}
		if err != nil {
			v.add(p, err.Error(), "give the path, relative to the scenario file, of a Deployment manifest")
			continue
		}
		if c := s.App.Custom; c != nil {
			if msg, fix := containerProblem(d, c); msg != "" {
				v.add(p, vr.Manifest+" "+msg, fix)
			}
		}
		if slices.Contains(variant.Reserved, d.Name) {
			v.add(p, fmt.Sprintf("%s names Deployment %q, a name droprun gives its own objects (%s)", vr.Manifest, d.Name, strings.Join(variant.Reserved, ", ")),
				"rename the Deployment (metadata.name): droprun would apply its own object of that name over it, or it over droprun's")
		}
		switch {
		case first < 0:
			first, firstName = i, d.Name
		case d.Name != firstName:
			v.add(p, fmt.Sprintf("%s names Deployment %q, but %s (%s) names %q", vr.Manifest, d.Name, s.entryPath(first), s.Variants[first].Manifest, firstName),
				"give every variant's manifest the same metadata.name: droprun rolls that one Deployment from variant to variant, and a Deployment of another name would keep running beside it")
		}
	}
	return v.errs
}

// containerProblem says what is wrong with the container app.custom names
// in Deployment d: it must be one of the pod's containers, and when that
// container declares ports, app.custom.port must be one of them (else the
// Service targets a port nothing listens on). It returns "" when fine.
func containerProblem(d *appsv1.Deployment, c *CustomApp) (msg, fix string) {
	var names []string
	for _, k := range d.Spec.Template.Spec.Containers {
		names = append(names, fmt.Sprintf("%q", k.Name))
		if k.Name != c.Container {
			continue
		}
		var ports []string
		for _, p := range k.Ports {
			if int(p.ContainerPort) == c.Port {
				return "", ""
			}
			ports = append(ports, strconv.Itoa(int(p.ContainerPort)))
		}
		if len(ports) == 0 {
			return "", ""
		}
		return fmt.Sprintf("declares container %q with port(s) %s, not app.custom.port %d", c.Container, strings.Join(ports, ", "), c.Port),
			"set app.custom.port to the port the app serves traffic on (the default is 8080)"
	}
	if len(names) == 0 {
		return "has no containers", "give the Deployment its containers under spec.template.spec.containers"
	}
	return fmt.Sprintf("has no container named %q; its containers: %s", c.Container, strings.Join(names, ", ")),
		"set app.custom.container to the container whose image the rollouts change"
}

// ReadDeployment strictly decodes a file of at most runfile.MaxUserFile bytes
// holding one apps/v1 Deployment: keys match case-sensitively, as the API
// server matches them, and an unknown or repeated key is an error.
func ReadDeployment(path string) (*appsv1.Deployment, error) {
	data, err := runfile.ReadUser(path, "Deployment manifest")
	if err != nil {
		return nil, err
	}
	return DecodeDeployment(path, data)
}

// DecodeDeployment is ReadDeployment for a manifest already read from path.
func DecodeDeployment(path string, data []byte) (*appsv1.Deployment, error) {
	if moreDocuments(data) {
		// The YAML decoder would read the first document and drop the rest.
		return nil, fmt.Errorf("%s holds more than one YAML document; droprun needs the Deployment alone (put it in a file of its own)", path)
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, cleanMessage(err))
	}
	var d appsv1.Deployment
	strict, err := sjson.UnmarshalStrict(j, &d, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, cleanMessage(err))
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s: %s (field names are case-sensitive; `kubectl explain deployment.spec` lists them)", path, strings.Join(msgs, ", "))
	}
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		return nil, fmt.Errorf("%s holds %s %s, not an apps/v1 Deployment", path, d.APIVersion, d.Kind)
	}
	// The name names files droprun writes (droprun init's prestop-sleep
	// manifest) and objects it applies: Kubernetes' own rule keeps it a
	// plain name, never a path.
	if d.Name != "" {
		if msgs := validation.IsDNS1123Subdomain(d.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("%s: the Deployment's metadata.name %q is not a Kubernetes name: %s", path, d.Name, msgs[0])
		}
	}
	return &d, nil
}

// maxProblems bounds the list Parse returns: a large broken file must not
// produce a larger error.
const maxProblems = 50

// Parse decodes, defaults and validates a scenario held in memory. file is
// used only to name the source in errors. Decoding is strict: keys match
// case-sensitively, an unknown or repeated key is an error, and so is a
// second YAML document. Every problem is reported, decoding and validation
// alike, except validation problems at a field whose value was refused.
func Parse(file string, data []byte) (*Scenario, error) {
	if len(data) > runfile.MaxUserFile {
		e := &runfile.TooLargeError{Path: file, What: "scenario", Limit: runfile.MaxUserFile}
		return nil, &Errors{File: file, List: []FieldError{{Msg: e.Msg(), Fix: e.Fix()}}}
	}
	var problems []FieldError
	// YAMLToJSONStrict refuses a key given twice in one map; the lax
	// conversion then lets the rest of the file be checked too.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		lax, laxErr := yaml.YAMLToJSON(data)
		if laxErr != nil {
			fix := "fix the YAML at the line named (indentation, a missing ':', an unclosed quote)"
			if strings.Contains(err.Error(), "unsupported value") {
				fix = "write a finite number; .inf and .nan have no JSON form"
			}
			return nil, &Errors{File: file, List: []FieldError{{Msg: cleanMessage(err), Fix: fix}}}
		}
		problems = append(problems, duplicateKeys(data, err)...)
		j = lax
	}
	if moreDocuments(data) {
		problems = append(problems, FieldError{Msg: "holds more than one YAML document", Fix: "keep one scenario per file: remove the second --- and what follows it"})
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		problems = append(problems, FieldError{Msg: "the file is empty", Fix: "start from one of the files in scenarios/"})
		return nil, newErrors(file, problems)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, newErrors(file, append(problems, decodeError(err)))
	}
	c := docChecker{unknown: map[string]FieldError{}}
	clean := c.walk(doc, reflect.TypeOf(Scenario{}), "")
	problems = append(problems, c.problems...)
	cj, err := json.Marshal(clean)
	if err != nil {
		return nil, newErrors(file, append(problems, decodeError(err)))
	}
	var s Scenario
	strict, err := sjson.UnmarshalStrict(cj, &s, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
	if err != nil {
		// The checker removes every value the decoder refuses; one it
		// missed leaves s half-decoded, not worth validating.
		return nil, newErrors(file, append(problems, decodeError(err)))
	}
	for _, e := range strict {
		problems = append(problems, c.strictProblem(e))
	}
	s.Default()
	problems = append(problems, s.expandSweeps()...)
	for _, fe := range s.Validate() {
		if !covered(fe.Path, c.problems) {
			problems = append(problems, fe)
		}
	}
	if len(problems) > 0 {
		return nil, newErrors(file, problems)
	}
	return &s, nil
}

// covered reports whether path is at or under the path of a refused value
// (the root's path is ""): its validation problem would only repeat that one.
func covered(path string, refused []FieldError) bool {
	for _, r := range refused {
		if r.Path == "" || path == r.Path || strings.HasPrefix(path, r.Path+".") || strings.HasPrefix(path, r.Path+"[") {
			return true
		}
	}
	return false
}

// moreDocuments reports whether data holds a YAML document after the first
// that is not empty (a trailing --- is fine).
func moreDocuments(data []byte) bool {
	d := yamlv2.NewDecoder(bytes.NewReader(data))
	var first any
	if d.Decode(&first) != nil {
		return false
	}
	for {
		var next any
		err := d.Decode(&next)
		if err == io.EOF {
			return false
		}
		if err != nil || next != nil {
			return true
		}
	}
}

func newErrors(file string, list []FieldError) *Errors {
	if len(list) > maxProblems {
		n := len(list) - maxProblems + 1
		list = append(list[:maxProblems-1:maxProblems-1], FieldError{Msg: fmt.Sprintf("and %d more problems", n), Fix: "fix the ones above and validate again"})
	}
	return &Errors{File: file, List: list}
}

// resolvePaths makes file references relative to the scenario's directory,
// and expands a leading ~ in them (and in output) to the home directory.
// output stays relative to where droprun runs, as it always was. In a
// scenario read from an fs.FS (LoadFS), manifests resolve inside that FS,
// and the files opened on disk (image archives, a kubeconfig) relative to
// the working directory: such a scenario has no folder on disk.
func (s *Scenario) resolvePaths(dir string) []FieldError {
	var v validator
	onDisk := func(path string, p *string, relative bool) {
		x, err := expandHome(*p)
		if err != nil {
			v.add(path, err.Error(), "write the full path, or ./"+*p+" for a folder of that name")
			return
		}
		if relative && x != "" && !filepath.IsAbs(x) {
			x = filepath.Join(dir, x)
		}
		*p = x
	}
	inDir := s.files == nil
	for i := range s.Variants {
		f := s.entryPath(i) + ".manifest"
		if s.files != nil {
			resolveInFS(&v, f, &s.Variants[i].Manifest, dir)
		} else {
			onDisk(f, &s.Variants[i].Manifest, true)
		}
	}
	if c := s.App.Custom; c != nil {
		for i := range c.ImageArchives {
			onDisk(fmt.Sprintf("app.custom.imageArchives[%d]", i), &c.ImageArchives[i], inDir)
		}
	}
	if e := s.Cluster.Existing; e != nil {
		onDisk("cluster.existing.kubeconfig", &e.Kubeconfig, inDir)
	}
	onDisk("output", &s.Output, false)
	return v.errs
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
