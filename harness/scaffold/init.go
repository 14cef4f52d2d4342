package scaffold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
)

// Defaults of what Init writes.
const (
	// DefaultOut is the scenario file Init writes.
	DefaultOut = "droprun.yaml"
	// DefaultPreStopSeconds is the prestop-sleep variant's sleep: long
	// enough for an endpoint removal to reach every node's kube-proxy on
	// a small cluster (../../results/README.md measures 0.6–2.9 s).
	DefaultPreStopSeconds = 5
	// Rate and Rollouts are a quick first look on a laptop.
	Rate     = 500
	Rollouts = 3
	// kubeletGrace is Kubernetes' terminationGracePeriodSeconds default.
	kubeletGrace = 30
	// appTime is the least time the app keeps, after the sleep, to shut
	// down within the grace period before Init raises the grace period.
	appTime = 5
)

// Variant names of the scenario Init writes.
const (
	AsShipped    = "as-shipped"
	PreStopSleep = "prestop-sleep"
)

// Options is what the user gave `droprun init`.
type Options struct {
	// Manifest is the user's Deployment manifest (one Deployment alone).
	Manifest string
	// Out is the scenario file to write. Default DefaultOut. The
	// prestop-sleep manifest is written next to it.
	Out string
	// Container is the container whose image the rollouts change;
	// required when the pod has several.
	Container string
	// Port is the container port traffic goes to. Default: the readiness
	// probe's port, else the container's only port, else its port named
	// http.
	Port int
	// Images are the two images the rollouts alternate between.
	Images []string
	// Archives are image archives holding them, relative to the working
	// directory; the scenario names them relative to itself.
	Archives []string
	// Path is traffic.path. Default: the readiness probe's httpGet path,
	// else /.
	Path string
	// Name is the scenario's name. Default: the Deployment's.
	Name string
	// PreStopSeconds is the prestop-sleep variant's sleep. Default
	// DefaultPreStopSeconds.
	PreStopSeconds int64
	// Force overwrites files that exist.
	Force bool
}

// InputError is bad input to Init: what is wrong and what to do. Nothing
// was written.
type InputError struct {
	Msg string
	Fix string
}

func (e *InputError) Error() string {
	if e.Fix == "" {
		return e.Msg
	}
	return e.Msg + " (fix: " + e.Fix + ")"
}

func inputErr(fix, format string, a ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, a...), Fix: fix}
}

// Result is what Init wrote.
type Result struct {
	// Scenario is the scenario written, as `droprun validate` loads it.
	Scenario *scenario.Scenario
	// Out is the scenario file, PreStopManifest the prestop-sleep
	// variant's Deployment written next to it.
	Out, PreStopManifest string
	// Container, Port and Path are what Init chose, and why.
	Container string
	Port      int
	PortFrom  string
	Path      string
	// Notes are what the user should know about the choices made.
	Notes []string
}

// Init writes a scenario for the Deployment in o.Manifest and the
// prestop-sleep variant's manifest next to it, then loads and checks the
// scenario as `droprun validate` does.
func Init(o Options) (*Result, error) {
	if o.Out == "" {
		o.Out = DefaultOut
	}
	if o.PreStopSeconds == 0 {
		o.PreStopSeconds = DefaultPreStopSeconds
	}
	if o.PreStopSeconds < 1 {
		return nil, inputErr("use a sleep of 1 second or more, e.g. 5", "the preStop sleep is %d s", o.PreStopSeconds)
	}
	d, raw, err := readDeployment(o.Manifest)
	if err != nil {
		return nil, err
	}
	r := &Result{Out: o.Out}
	c, err := pickContainer(d, o.Container)
	if err != nil {
		return nil, err
	}
	r.Container = c.Name
	if r.Port, r.PortFrom, err = pickPort(c, o.Port); err != nil {
		return nil, err
	}
	probe, err := r.pickPath(c, o.Path)
	if err != nil {
		return nil, err
	}
	if err := checkImages(o, c); err != nil {
		return nil, err
	}
	name, err := scenarioName(o.Name, d.Name)
	if err != nil {
		return nil, err
	}

	dir := filepath.Dir(o.Out)
	r.PreStopManifest = filepath.Join(dir, d.Name+"-"+PreStopSleep+".yaml")
	if err := checkOutputs(o, r.PreStopManifest); err != nil {
		return nil, err
	}
	pre, notes, err := preStopManifest(raw, d, c, o)
	if err != nil {
		return nil, err
	}
	r.Notes = append(r.Notes, notes...)
	t := templateData{
		Deployment: d.Name, Manifest: o.Manifest, Out: o.Out, Name: name,
		Images: o.Images, Container: c.Name, Port: r.Port, PortFrom: r.PortFrom,
		AsShipped: relTo(dir, o.Manifest), PreStop: relTo(dir, r.PreStopManifest),
		PreStopSeconds: o.PreStopSeconds, Path: r.Path, Probe: probe, PathGiven: o.Path != "",
		Rate: Rate, Rollouts: Rollouts,
	}
	for _, a := range o.Archives {
		t.Archives = append(t.Archives, relTo(dir, a))
	}
	if r.Scenario, err = write(t, o.Out, r.PreStopManifest, pre); err != nil {
		return nil, err
	}
	if len(o.Archives) == 0 {
		r.Notes = append(r.Notes, "no --archive: the cluster's nodes must already have both images, or pull them; for a kind cluster, give an archive holding them (docker save IMAGE1 IMAGE2 -o images.tar)")
	}
	return r, nil
}

// pickPath sets the path the traffic asks for: the one given (absolute),
// else the container's HTTP readiness probe's, else / with a note. It
// reports whether the path is the probe's.
func (r *Result) pickPath(c *corev1.Container, given string) (probe bool, err error) {
	r.Path = "/"
	probe = c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != ""
	switch {
	case given != "":
		if given[0] != '/' {
			return false, inputErr("give an absolute path such as /version", "--path %q does not start with /", given)
		}
		r.Path = given
		return false, nil
	case probe:
		r.Path = c.ReadinessProbe.HTTPGet.Path
	default:
		r.Notes = append(r.Notes, fmt.Sprintf("traffic.path is / (container %q has no HTTP readiness probe to take a path from): set it to a path your service answers with 200", c.Name))
	}
	return probe, nil
}

// write renders the scenario of t to out beside the preStop manifest, pre
// at preStopPath, once the text parses and validates, and returns the
// scenario as `droprun validate` reads it from the files as written.
func write(t templateData, out, preStopPath string, pre []byte) (*scenario.Scenario, error) {
	var b bytes.Buffer
	if err := scenarioTemplate.Execute(&b, t); err != nil {
		return nil, fmt.Errorf("writing the scenario: %w", err)
	}
	if _, err := scenario.Parse(out, b.Bytes()); err != nil {
		return nil, fmt.Errorf("droprun init wrote a scenario that does not validate (a bug; please report it): %w", err)
	}
	if err := atomicfile.Write(preStopPath, pre); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(out, b.Bytes()); err != nil {
		return nil, err
	}
	sc, err := scenario.Load(out)
	if err == nil {
		_, err = testbed.Preflight(sc)
	}
	if err != nil {
		return nil, fmt.Errorf("droprun init wrote a scenario that does not validate (a bug; please report it): %w", err)
	}
	return sc, nil
}

// readDeployment reads the user's manifest strictly (scenario.ReadDeployment:
// one apps/v1 Deployment alone, known fields only) and as a generic
// document, which the prestop-sleep manifest is written from.
func readDeployment(p string) (*appsv1.Deployment, map[string]any, error) {
	const fix = "give droprun init the manifest of one apps/v1 Deployment, as `kubectl apply -f` takes it"
	if p == "" {
		return nil, nil, inputErr(fix, "no Deployment manifest given")
	}
	d, err := scenario.ReadDeployment(p)
	if err != nil {
		return nil, nil, &InputError{Msg: err.Error(), Fix: fix}
	}
	data, err := runfile.ReadUser(p, "Deployment manifest")
	if err != nil {
		return nil, nil, err
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil, &InputError{Msg: err.Error(), Fix: fix}
	}
	var raw map[string]any
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, nil, &InputError{Msg: err.Error(), Fix: fix}
	}
	if d.Name == "" {
		return nil, nil, inputErr("give it metadata.name", "%s: the Deployment has no metadata.name", p)
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, nil, inputErr("give the pod its containers under spec.template.spec.containers", "%s: the Deployment has no containers", p)
	}
	return d, raw, nil
}

func containerNames(d *appsv1.Deployment) string {
	names := make([]string, len(d.Spec.Template.Spec.Containers))
	for i, c := range d.Spec.Template.Spec.Containers {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// pickContainer is the container named, or the pod's only one.
func pickContainer(d *appsv1.Deployment, name string) (*corev1.Container, error) {
	cs := d.Spec.Template.Spec.Containers
	if name == "" {
		if len(cs) == 1 {
			return &cs[0], nil
		}
		return nil, inputErr("name the one whose image the rollouts change: --container NAME", "Deployment %s has %d containers (%s)", d.Name, len(cs), containerNames(d))
	}
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i], nil
		}
	}
	return nil, inputErr("name one of them with --container", "Deployment %s has no container %q; its containers: %s", d.Name, name, containerNames(d))
}

// pickPort is the port traffic goes to, and where it came from.
func pickPort(c *corev1.Container, port int) (int, string, error) {
	if port != 0 {
		if port < 1 || port > 65535 {
			return 0, "", inputErr("give the container port the app serves HTTP on", "--port %d is not a port", port)
		}
		return port, "--port", nil
	}
	byName := func(n string) int {
		for _, p := range c.Ports {
			if p.Name == n {
				return int(p.ContainerPort)
			}
		}
		return 0
	}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil {
		if v := p.HTTPGet.Port.IntValue(); v > 0 {
			return v, "the readiness probe's port", nil
		}
		if v := byName(p.HTTPGet.Port.String()); v > 0 {
			return v, fmt.Sprintf("the readiness probe's port %q", p.HTTPGet.Port.String()), nil
		}
		return 0, "", inputErr("give the port with --port, or declare the named port under the container's ports", "container %q's readiness probe uses port %q, which the container does not declare", c.Name, p.HTTPGet.Port.String())
	}
	switch {
	case len(c.Ports) == 1:
		return int(c.Ports[0].ContainerPort), "the container's only port", nil
	case byName("http") > 0:
		return byName("http"), `the container's port named "http"`, nil
	case len(c.Ports) == 0:
		return 0, "", inputErr("give the port the app serves HTTP on with --port PORT", "container %q declares no containerPort and has no HTTP readiness probe", c.Name)
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%d (%s)", p.ContainerPort, p.Name))
	}
	return 0, "", inputErr("choose the one serving HTTP traffic with --port PORT", "container %q declares %d ports: %s", c.Name, len(c.Ports), strings.Join(ports, ", "))
}

// checkImages checks the two images and the archives that must hold them.
func checkImages(o Options, c *corev1.Container) error {
	const build = "build two tags of your service and give both, e.g. `droprun image build-go PKG@VERSION --tag NAME:T1 --tag NAME:T2 --out images.tar`, or `docker tag` and `docker save` of your own images"
	if len(o.Images) != 2 {
		return inputErr(build+"; then --image NAME:T1 --image NAME:T2 (--archive images.tar)",
			"droprun init needs two images of container %q to alternate between, one per rollout, and got %d (the manifest's image is %s)", c.Name, len(o.Images), c.Image)
	}
	a, b := o.Images[0], o.Images[1]
	for _, ref := range o.Images {
		if _, err := image.FullName(ref); err != nil {
			return inputErr("write it as repository:tag, e.g. myapp:1.0", "--image: %v", err)
		}
	}
	if fa, _ := image.FullName(a); fa == mustFull(b) {
		return inputErr(build, "--image %s and --image %s are one image: a rollout must change the pod template", a, b)
	}
	var archives []*image.Archive
	for _, p := range o.Archives {
		ar, err := image.Inspect(p)
		if err != nil {
			var ae *image.ArchiveError
			if errors.As(err, &ae) {
				return &InputError{Msg: "--archive " + ae.Path + ": " + ae.Msg, Fix: ae.Fix}
			}
			return err
		}
		archives = append(archives, ar)
	}
	if len(archives) == 0 {
		return nil
	}
	for _, ref := range o.Images {
		if _, err := image.FindIn(archives, ref); err != nil {
			return inputErr("give the archive that holds it with --archive, or name an image they hold", "--image %v", err)
		}
	}
	return nil
}

func mustFull(ref string) string {
	f, _ := image.FullName(ref)
	return f
}

// scenarioName is name, or the Deployment's name made a DNS label.
func scenarioName(name, deployment string) (string, error) {
	if name == "" {
		name = strings.Trim(strings.ReplaceAll(deployment, ".", "-"), "-")
		name = strings.TrimRight(name[:min(len(name), validation.DNS1123LabelMaxLength)], "-")
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return "", inputErr("give a name of lower-case letters, digits and '-' with --name", "scenario name %q is not a DNS label: %s", name, msgs[0])
	}
	return name, nil
}

// checkOutputs refuses to overwrite a file without o.Force, and the
// user's manifest ever.
func checkOutputs(o Options, preStop string) error {
	in, _ := filepath.Abs(o.Manifest)
	for _, p := range []string{o.Out, preStop} {
		if abs, _ := filepath.Abs(p); abs == in {
			return inputErr("write the scenario elsewhere with -o FILE", "%s is the Deployment manifest droprun init reads: it would be overwritten", p)
		}
		_, err := os.Stat(p)
		if err == nil && !o.Force {
			return inputErr("give --force to overwrite it, or -o another file", "%s exists", p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// relTo is p relative to dir when it can be, else p made absolute.
func relTo(dir, p string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return p
	}
	if r, err := filepath.Rel(ad, ap); err == nil {
		return filepath.ToSlash(r)
	}
	return ap
}

// preStopManifest is the user's Deployment with a native preStop sleep on
// container c (replacing its own preStop hook, if any) and, when the
// grace period would leave the app under appTime seconds after the sleep,
// the grace period raised to the sleep plus the grace period it had. It is
// written from the generic document, so every field the user set stays
// as written (in sorted order: comments are lost).
func preStopManifest(raw map[string]any, d *appsv1.Deployment, c *corev1.Container, o Options) ([]byte, []string, error) {
	var notes []string
	podSpec, _ := dig(raw, "spec", "template", "spec").(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	var target map[string]any
	for _, x := range containers {
		if m, ok := x.(map[string]any); ok && m["name"] == c.Name {
			target = m
		}
	}
	if target == nil {
		return nil, nil, fmt.Errorf("container %q not found in %s", c.Name, o.Manifest)
	}
	lc, _ := target["lifecycle"].(map[string]any)
	if lc == nil {
		lc = map[string]any{}
		target["lifecycle"] = lc
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		notes = append(notes, fmt.Sprintf("variant %s replaces container %q's own preStop hook with the sleep", PreStopSleep, c.Name))
	}
	lc["preStop"] = map[string]any{"sleep": map[string]any{"seconds": o.PreStopSeconds}}
	grace := int64(kubeletGrace)
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	header := fmt.Sprintf("# Variant %s, written by `droprun init` from %s: the same Deployment\n"+
		"# with a native preStop sleep of %d s on container %q (lifecycle.preStop.sleep,\n"+
		"# Kubernetes 1.30 and later), so that the pod keeps serving while the removal\n"+
		"# of its endpoint reaches every node; SIGTERM comes after the sleep.\n",
		PreStopSleep, filepath.Base(o.Manifest), o.PreStopSeconds, c.Name)
	if grace < o.PreStopSeconds+appTime {
		raised := o.PreStopSeconds + grace
		podSpec["terminationGracePeriodSeconds"] = raised
		header += fmt.Sprintf("# terminationGracePeriodSeconds is raised from %d to %d (the sleep plus the\n"+
			"# %d s the app had), as the sleep is spent inside the grace period.\n", grace, raised, grace)
		notes = append(notes, fmt.Sprintf("variant %s raises terminationGracePeriodSeconds from %d to %d so that the %d s sleep fits", PreStopSleep, grace, raised, o.PreStopSeconds))
	}
	header += "# Run `droprun init --force` again after changing " + filepath.Base(o.Manifest) + ".\n"
	y, err := yaml.Marshal(raw)
	if err != nil {
		return nil, nil, err
	}
	return append([]byte(header), y...), notes, nil
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

type templateData struct {
	Deployment, Manifest, Out, Name string
	Images, Archives                []string
	Container                       string
	Port                            int
	PortFrom                        string
	AsShipped, PreStop              string
	PreStopSeconds                  int64
	Path                            string
	Probe, PathGiven                bool
	Rate, Rollouts                  int
}

// quote writes s as a YAML (JSON) string, whatever it holds.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var scenarioTemplate = template.Must(template.New("scenario").Funcs(template.FuncMap{
	"q": quote,
	"list": func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	},
}).Parse(`# A droprun scenario for Deployment {{.Deployment}} ({{.Manifest}}), written by
# droprun init. It measures the requests each variant's rolling updates drop:
# the Deployment as you ship it, and the same with a preStop sleep.
#   droprun validate {{.Out}}   check it (after any change)
#   droprun run {{.Out}}        measure: a kind cluster, both variants, a report
# Paths are relative to this file. Every field is explained by
# droprun scenarios README; the ones below are those you may want to change.
apiVersion: droprun/v1alpha1
kind: Scenario
metadata:
  # Names the results directory: results/<time>-{{.Name}}.
  name: {{.Name}}
  description: {{q (print "Deployment " .Deployment " as shipped, and with a " .PreStopSeconds " s preStop sleep")}}
app:
  custom:
    # The two images the rollouts alternate between (v1, v2, v1, ...): two
    # tags of your service, so that every rollout changes the pod template.
    images: {{list .Images}}
{{- if .Archives}}
    # Loaded into every kind node before the first variant: docker-save
    # archives or OCI image layouts; droprun validate checks they hold both
    # images.
    imageArchives: {{list .Archives}}
{{- else}}
    # No image archive: the nodes must already have both images, or pull
    # them. For a kind cluster, name an archive holding them, e.g.
    # imageArchives: ["images.tar"]   # docker save IMAGE1 IMAGE2 -o images.tar
{{- end}}
    # The container whose image the rollouts change.
    container: {{q .Container}}
    # The container port droprun's NodePort Service sends traffic to
    # ({{.PortFrom}}).
    port: {{.Port}}
variants:
  # Your Deployment exactly as in {{.AsShipped}}.
  - name: as-shipped
    manifest: {{q .AsShipped}}
  # The same with a native preStop sleep of {{.PreStopSeconds}} s (see the file's header).
  - name: prestop-sleep
    manifest: {{q .PreStop}}
# Rollouts per variant: more give a tighter estimate; 3 is a first look.
rollouts: {{.Rollouts}}
traffic:
  # Requests per second, each on a new TCP connection (as curl does), round
  # robin over every node's host port on 127.0.0.1.
  rate: {{.Rate}}
{{- if .PathGiven}}
  # The path every request asks for (droprun init --path).
{{- else if .Probe}}
  # The readiness probe's path. If your app fails readiness on purpose while
  # it shuts down, those 503s count as drops here: then point this at a path
  # that serves real traffic.
{{- else}}
  # The pod has no HTTP readiness probe to take a path from: / is a guess.
  # Use a path your service answers with 200.
{{- end}}
  path: {{q .Path}}
`))
