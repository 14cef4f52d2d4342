package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/droprun/droprun/harness/attack"
	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// Options tune Prepare.
type Options struct {
	// Log receives progress lines.
	Log io.Writer
	// ModuleDir is a droprun source tree to build the bookshop images
	// from. Default: the bookshop source embedded in droprun (see
	// image.BuildOptions.ModuleDir).
	ModuleDir string
	// ImageDir caches the bookshop image archive. Default
	// os.UserCacheDir()/droprun/images.
	ImageDir string
	// AllowContext names an existing non-kind context the user allows.
	AllowContext string
	// CreateCluster lets Prepare create the kind cluster when it does not
	// exist; without it a missing cluster is an error.
	CreateCluster bool
	// Keep keeps a cluster Prepare created when Prepare then fails.
	Keep bool
	// Owner is the run the objects are applied for (kube.Owner). Default:
	// this process, with a run ID from the time.
	Owner kube.Owner
	// AllowGenerators is the user's consent to run generator pods
	// (traffic.generators.from: pods) on an existing cluster: pods that
	// send load from inside it. On droprun's kind cluster it is not needed.
	AllowGenerators bool
}

// Testbed is a prepared cluster with droprun's namespace in it.
type Testbed struct {
	Scenario *scenario.Scenario
	// Cluster is the cluster, with the node capabilities its provider
	// offers (none on an existing cluster).
	Cluster *cluster.Cluster
	// URL is where an existing cluster's web Service is reached:
	// cluster.existing.url, else http://127.0.0.1:<web node port>.
	URL string
	// Entries are a kind cluster's host ports, one per node (see
	// cluster.Config.Entries); nil for an existing cluster.
	Entries []cluster.Entry
	// Allow are the hosts beyond 127.0.0.1 the user allowed (Options.
	// AllowTargets): every request to Targets, load or probe, goes through
	// traffic's check with them (traffic.CheckURL), and nowhere else.
	Allow []traffic.AllowTarget
	// GeneratorImage is the generator pods' image (traffic.generators:
	// pods): built and loaded on kind, the scenario's on an existing
	// cluster; "" without generator pods.
	GeneratorImage string
	log            io.Writer
	// archives are a custom app's image archives, as Preflight inspected
	// them.
	archives []*image.Archive
	owner    kube.Owner
	// lease is the run's hold on the namespace; nsCreated says droprun
	// created the namespace (so Teardown may delete it); applied is every
	// object this testbed applied, with its UID.
	lease     *kube.Lease
	nsCreated bool
	applied   []kube.Ref
}

// Prepare brings up (or connects to) the checked scenario's cluster, loads
// the images, creates droprun's namespace and takes its Lease (a second
// run in the namespace is refused, wrapping kube.ErrNamespaceBusy). A
// cluster Prepare created is deleted again when a later step fails,
// unless Options.Keep.
func Prepare(ctx context.Context, in *Checked, o Options) (_ *Testbed, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Owner.RunID == "" {
		o.Owner = kube.NewOwner(time.Now().UTC().Format("20060102-150405"))
	}
	sc := in.Scenario
	tb := &Testbed{Scenario: sc, log: o.Log, archives: in.Archives, Allow: in.Allow, owner: o.Owner}
	defer func() {
		if err == nil || tb.Cluster == nil || !tb.Cluster.Created || !tb.Cluster.Deletable() {
			return
		}
		if o.Keep {
			fmt.Fprintf(o.Log, "cluster %q kept (--keep) although preparing it failed; delete it with `droprun cluster down --name %s`\n", tb.Cluster.Name, tb.Cluster.Name)
			return
		}
		fmt.Fprintf(o.Log, "deleting cluster %q: this run created it and preparing it failed (--keep keeps it)\n", tb.Cluster.Name)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if derr := tb.Cluster.Down(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting cluster %s: %w", tb.Cluster.Name, derr))
		}
	}()
	prov, err := providerOf(sc, o)
	if err != nil {
		return nil, err
	}
	if tb.Cluster, err = prov.Open(ctx); err != nil {
		return nil, err
	}
	tb.Entries = tb.Cluster.Entries
	if e := sc.Cluster.Existing; e != nil {
		cl := tb.Cluster
		tb.URL = e.URL
		if tb.URL == "" {
			tb.URL = fmt.Sprintf("http://127.0.0.1:%d", scenario.DefaultHostPort)
		}
		fmt.Fprintf(o.Log, "using existing cluster %s (context %s); images must already be on its nodes\n", e.Kubeconfig, cl.Name)
		if sc.Traffic.FromPods() {
			if !o.AllowGenerators {
				return nil, fmt.Errorf("traffic.generators.from: pods on the existing cluster %s: generator pods would send load from inside it; pass --allow-generators to allow them (they need no API access, are given the resources the scenario sets, and are deleted after each variant)", cl.Name)
			}
			tb.GeneratorImage = sc.Traffic.Generators.Image
		}
	}
	if err := tb.loadImages(ctx, o); err != nil {
		return nil, err
	}
	podSecurity := kube.PodSecurityBaseline // droprun's own pods and a custom app without --allow-privileged
	if c := sc.App.Custom; c != nil && c.PrivilegedAllowed {
		podSecurity = kube.PodSecurityPrivileged
	}
	if tb.nsCreated, err = kube.EnsureNamespace(ctx, tb.Cluster.Client, sc.Namespace, o.Owner, podSecurity); err != nil {
		return nil, err
	}
	if tb.lease, err = kube.AcquireLease(ctx, tb.Cluster.Client, sc.Namespace, o.Owner); err != nil {
		return nil, err
	}
	if c := sc.App.Custom; c != nil && c.Service != "" {
		if err := checkOwnService(ctx, tb.Cluster.Client, sc.Namespace, c.Service); err != nil {
			return nil, errors.Join(err, tb.Release(context.WithoutCancel(ctx)))
		}
	}
	return tb, nil
}

// Release gives up the namespace's Lease (Close does it too): for a
// command that leaves its objects in place, such as deploy.
func (tb *Testbed) Release(ctx context.Context) error {
	err := tb.lease.Release(ctx)
	tb.lease = nil
	return err
}

// imageDir is where the images droprun builds are written: ImageDir, by
// default droprun/images in the user's cache directory.
func (o Options) imageDir() (string, error) {
	if o.ImageDir != "" {
		return o.ImageDir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "droprun", "images"), nil
}

// loadImages builds (a no-op when cached and unchanged) and loads the
// bookshop images, or loads a custom app's archives, and the front's image
// when the path has one of its own.
func (tb *Testbed) loadImages(ctx context.Context, o Options) error {
	loader := tb.Cluster.Images()
	if loader == nil {
		return nil // an existing cluster: its images must already be on its nodes
	}
	archives := []string{}
	for _, a := range tb.archives {
		// kind's loader takes docker save's format: an OCI layout is
		// converted into a temporary file first.
		file, done, err := a.DockerSave(ctx, "")
		if err != nil {
			return err
		}
		defer done()
		archives = append(archives, file)
	}
	p := tb.Scenario.Path()
	if tb.Scenario.App.Custom == nil || p.Proxy != nil && p.Proxy.Source == "" { // the gateway is bookshop
		dir, err := o.imageDir()
		if err != nil {
			return err
		}
		res, err := image.Build(ctx, image.BuildOptions{ModuleDir: o.ModuleDir, OutDir: dir, Log: o.Log})
		if err != nil {
			return err
		}
		archives = append(archives, res.Archive)
	}
	if p.Proxy != nil && p.Proxy.Source != "" {
		// The front's image is built once per version and kept: its
		// source is a tagged release.
		archive, err := image.CachedGo(ctx, image.GoBuildOptions{Package: p.Proxy.Source, Tags: []string{p.Proxy.Image}, Log: o.Log}, "")
		if err != nil {
			return fmt.Errorf("building the %s front's image: %w", p.Name, err)
		}
		archives = append(archives, archive)
	}
	if tb.Scenario.Traffic.FromPods() {
		dir, err := o.imageDir()
		if err != nil {
			return err
		}
		im, archive, err := image.BuildGenerator(ctx, "", dir, o.Log)
		if err != nil {
			return fmt.Errorf("building the load generator's image: %w", err)
		}
		tb.GeneratorImage = im.Ref
		archives = append(archives, archive)
	}
	for _, a := range archives {
		if err := loader.LoadImageArchive(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// DeployTimeout bounds each wait of a Deploy.
const DeployTimeout = 3 * time.Minute

// Deploy applies variant v at version (0 or 1; initial: its From, the
// state before its first rollout) with its Service (and the gateway's
// objects) and waits for it as every rollout is waited for (Rollout).
// Switching from the previous variant is a rollout of its own: its pods
// must be gone before a control window, or their drops count as the rig's
// floor.
func (tb *Testbed) Deploy(ctx context.Context, v render.Variant, version int, initial bool) error {
	objs, err := v.Objects(version, initial, fmt.Sprintf("droprun: deploy %s %s", v.Name(), scenario.Versions[version]))
	if err != nil {
		return err
	}
	start := time.Now()
	if err := tb.Rollout(ctx, DeployTimeout, objs.List()...); err != nil {
		return err
	}
	fmt.Fprintf(tb.log, "variant %s (%s) rolled out in %s\n", v.Name(), scenario.Versions[version], time.Since(start).Round(100*time.Millisecond))
	return nil
}

// Rollout applies objs (server-side apply, one field manager) and waits,
// each wait bounded by timeout, until every Deployment among them is
// rolled out and the pods of its old ReplicaSets are gone (rolled out is
// not over: old pods may still be in their preStop hook or draining, and
// some clusters never set the Deployment's terminatingReplicas). It is the
// one way droprun changes a workload: deploying a variant and every
// measured rollout.
func (tb *Testbed) Rollout(ctx context.Context, timeout time.Duration, objs ...any) error {
	c, ns := tb.Cluster.Client, tb.Scenario.Namespace
	deps, refs, err := kube.Apply(ctx, c, tb.owner, objs...)
	tb.remember(refs)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		if err := kube.WaitRolledOut(ctx, c, ns, name, timeout); err != nil {
			return err
		}
		if err := kube.WaitOldPodsGone(ctx, c, ns, name, timeout); err != nil {
			return fmt.Errorf("waiting for the replaced pods of %s to go: %w", name, err)
		}
	}
	return nil
}

// Apply applies objs as droprun's own (server-side apply, one field
// manager) without waiting for them, and remembers them for Teardown: for
// objects a run adds and deletes itself, such as the generators' Job.
func (tb *Testbed) Apply(ctx context.Context, objs ...any) ([]kube.Ref, error) {
	_, refs, err := kube.Apply(ctx, tb.Cluster.Client, tb.owner, objs...)
	tb.remember(refs)
	return refs, err
}

// remember adds refs to the objects Teardown deletes (an object applied
// again keeps one entry, with its latest UID).
func (tb *Testbed) remember(refs []kube.Ref) {
	for _, r := range refs {
		i := slices.IndexFunc(tb.applied, func(a kube.Ref) bool {
			return a.Kind == r.Kind && a.Namespace == r.Namespace && a.Name == r.Name
		})
		if i < 0 {
			tb.applied = append(tb.applied, r)
		} else {
			tb.applied[i] = r
		}
	}
}

// Targets are the URLs traffic is sent to, per the scenario's path (the
// node port its client connects to) and HTTP path: on kind one per node,
// control plane first, each named by its node; on an existing cluster the
// one URL the user gave (through a proxy, 127.0.0.1 at the proxy's node
// port), with no node name.
func (tb *Testbed) Targets() []traffic.Target {
	sc := tb.Scenario
	p := sc.Path()
	if len(tb.Entries) == 0 {
		base := tb.URL
		if p.Proxy != nil {
			base = fmt.Sprintf("http://%s:%d", traffic.LoopbackHost, p.NodePort)
		}
		return []traffic.Target{{URL: base + sc.Traffic.Path}}
	}
	if p.Inside {
		// Only pods send on it; droprun itself (WaitAnswering) reaches
		// the same Service through its NodePort.
		p = path.NodePort
	}
	out := make([]traffic.Target, len(tb.Entries))
	for i, e := range tb.Entries {
		out[i] = traffic.Target{Node: e.Node, URL: fmt.Sprintf("http://%s:%d%s", traffic.LoopbackHost, e.HostPort(p.NodePort), sc.Traffic.Path)}
	}
	return out
}

// TargetURL is the first of Targets (the control plane's, on kind), for
// callers that want one URL.
func (tb *Testbed) TargetURL() string {
	return tb.Targets()[0].URL
}

// Answer is what one GET of the traffic URL returned.
type Answer struct {
	Status  int
	Pod     string
	Version string
	Body    string
}

// WaitAnswering polls every one of Targets until each has answered 200,
// which is the last stage, "routed": kube-proxy on every node behind a
// host port has rules for the Service. It returns the first target's
// answer. On an existing cluster whose load comes from generator pods,
// where this machine may not reach the Service at all, it asks the
// Service through the API server instead (waitAnsweringInside).
func (tb *Testbed) WaitAnswering(ctx context.Context, timeout time.Duration) (*Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if tb.Scenario.Cluster.Existing != nil && tb.Scenario.Traffic.FromPods() {
		return tb.waitAnsweringInside(ctx, timeout)
	}
	targets := tb.Targets()
	client, done, err := attack.ProbeClient(targets, tb.Allow, 2*time.Second, tb.Scenario.Traffic.Protocol())
	if err != nil {
		return nil, err
	}
	defer done()
	answers := make([]*Answer, len(targets))
	last := make([]error, len(targets))
	for {
		waiting := 0
		for i, t := range targets {
			if answers[i] != nil {
				continue
			}
			a, err := get(ctx, client, t.URL)
			if err == nil && a.Status == http.StatusOK {
				answers[i] = a
				continue
			}
			if err == nil {
				err = fmt.Errorf("status %d from %s: %.200q", a.Status, or(a.Pod, "an unknown server"), a.Body)
			}
			if last[i] == nil || ctx.Err() == nil { // keep the cause, not the deadline
				last[i] = err
			}
			waiting++
		}
		if waiting == 0 {
			return answers[0], nil
		}
		select {
		case <-ctx.Done():
			var not []string
			for i, t := range targets {
				if answers[i] == nil {
					not = append(not, fmt.Sprintf("%s (%s): %v", t.URL, nodeOrCluster(t.Node), last[i]))
				}
			}
			return nil, fmt.Errorf("%d of %d target(s) did not answer 200 within %s: %s", len(not), len(targets), timeout, strings.Join(not, "; "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitAnsweringInside polls the web Service through the API server's
// service proxy (GET .../services/web:80/proxy<path>) until it answers
// 200, within ctx's deadline (timeout, for the message).
func (tb *Testbed) waitAnsweringInside(ctx context.Context, timeout time.Duration) (*Answer, error) {
	sc := tb.Scenario
	var a *Answer
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		body, err := tb.Cluster.Client.CoreV1().Services(sc.Namespace).
			ProxyGet("http", variant.WebName, strconv.Itoa(variant.ServicePort), sc.Traffic.Path, nil).DoRaw(ctx)
		if err != nil {
			if ctx.Err() == nil {
				last = err
			}
			return false, nil
		}
		a = &Answer{Status: http.StatusOK}
		a.read(body)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("service %s/%s did not answer %s 200 through the API server's proxy within %s: %v", sc.Namespace, variant.WebName, sc.Traffic.Path, timeout, last)
	}
	return a, nil
}

// nodeOrCluster names a target's node for messages.
func nodeOrCluster(node string) string {
	if node == "" {
		return "existing cluster"
	}
	return "node " + node
}

func get(ctx context.Context, c *http.Client, url string) (*Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := &Answer{Status: resp.StatusCode, Pod: resp.Header.Get("X-Bookshop-Pod"), Version: resp.Header.Get("X-Bookshop-Version")}
	a.read(body)
	return a, nil
}

// read sets a's Body, and its Pod and Version from bookshop's JSON answer
// when the body is one.
func (a *Answer) read(body []byte) {
	a.Body = string(body)
	var v struct{ Pod, Version string }
	if json.Unmarshal(body, &v) == nil && v.Pod != "" {
		a.Pod, a.Version = v.Pod, v.Version
	}
}

// Close undoes Prepare: it deletes what droprun created in the namespace
// (Teardown), gives up the Lease and, unless keep, deletes the cluster
// when Prepare created it, and says what it left running. It is the one
// place a cluster droprun created is deleted after a run.
func (tb *Testbed) Close(ctx context.Context, keep bool) error {
	err := tb.Teardown(ctx)
	if err != nil {
		err = fmt.Errorf("cleaning up namespace %s: %w", tb.Scenario.Namespace, err)
	}
	err = errors.Join(err, tb.Release(ctx))
	cl := tb.Cluster
	switch {
	case !cl.Deletable():
	case cl.Created && !keep:
		fmt.Fprintf(tb.log, "deleting cluster %q (this run created it; --keep keeps it)\n", cl.Name)
		if derr := cl.Down(ctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting cluster %s: %w", cl.Name, derr))
		}
	case cl.Created:
		fmt.Fprintf(tb.log, "cluster %q kept (--keep); delete it with `droprun cluster down --name %s`\n", cl.Name, cl.Name)
	default:
		fmt.Fprintf(tb.log, "cluster %q kept: it existed before this run; delete it with `droprun cluster down --name %s`\n", cl.Name, cl.Name)
	}
	return err
}

// Teardown deletes droprun's namespace when droprun created it, else only
// droprun's objects there. With app.custom.service the namespace holds the
// user's own Service or Ingress, which the next run needs again: the
// namespace is kept and only droprun's Deployments are deleted (see
// KeepsNamespace). Every delete carries the UID droprun applied the object
// with; an object droprun did not create is never deleted.
func (tb *Testbed) Teardown(ctx context.Context) error {
	sc := tb.Scenario
	if tb.nsCreated && !KeepsNamespace(sc) {
		return kube.DeleteNamespace(ctx, tb.Cluster.Client, sc.Namespace, 2*time.Minute)
	}
	refs, err := tb.ours(ctx)
	if err != nil {
		return err
	}
	if err := kube.DeleteOurs(ctx, tb.Cluster.Client, refs, 2*time.Minute); err != nil {
		return err
	}
	why := fmt.Sprintf("droprun did not create it (no %s annotation)", kube.AnnotationCreated)
	if KeepsNamespace(sc) {
		why = fmt.Sprintf("it holds your app.custom.service %q, which the next run needs", sc.App.Custom.Service)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.String())
	}
	fmt.Fprintf(tb.log, "namespace %s kept: %s; deleted droprun's objects there: %s\n", sc.Namespace, why, or(strings.Join(names, ", "), "none"))
	return nil
}

// ours is what Teardown deletes outside a namespace droprun created: what
// this testbed applied and, left by an earlier run, any Deployment of the
// scenario's that carries droprun's label, each with its UID.
func (tb *Testbed) ours(ctx context.Context) ([]kube.Ref, error) {
	refs := slices.Clone(tb.applied)
	names, err := deploymentNames(tb.Scenario)
	if err != nil {
		return nil, err
	}
	ns := tb.Scenario.Namespace
	for _, name := range names {
		if slices.ContainsFunc(refs, func(r kube.Ref) bool { return r.Kind == "Deployment" && r.Name == name }) {
			continue
		}
		d, err := tb.Cluster.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading deployment %s/%s: %w", ns, name, err)
		case kube.Ours(d.Labels):
			refs = append(refs, kube.Ref{Kind: "Deployment", Namespace: ns, Name: name, UID: d.UID})
		}
	}
	return refs, nil
}

// KeepsNamespace reports whether a run leaves droprun's namespace in
// place: it does when app.custom.service names the user's own Service or
// Ingress in it.
func KeepsNamespace(sc *scenario.Scenario) bool {
	return sc.App.Custom != nil && sc.App.Custom.Service != ""
}

// deploymentNames are the Deployments sc's variants apply, sorted, each
// once.
func deploymentNames(sc *scenario.Scenario) ([]string, error) {
	var names []string
	for i := range sc.Variants {
		objs, err := render.Render(sc, i, 0, true, "")
		if err != nil {
			return nil, err
		}
		if d := objs.Deployment; d != nil && d.Name != nil && !slices.Contains(names, *d.Name) {
			names = append(names, *d.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// CheckAllow checks an existing cluster's traffic URL against the hosts
// the user allowed with --allow-target, before anything runs: a URL beyond
// 127.0.0.1 needs its host named, and every name must be the URL's host
// (and port, when it has one), so a typo is an error rather than a
// permission that allows nothing. On a kind cluster load goes to
// 127.0.0.1 only and --allow-target is refused. The check itself is
// traffic.CheckURL, which every request to a target goes through again.
func CheckAllow(sc *scenario.Scenario, allow []traffic.AllowTarget) error {
	e := sc.Cluster.Existing
	if e == nil {
		if len(allow) > 0 {
			return fmt.Errorf("--allow-target %s: applies to an existing cluster's url only (cluster.existing.url, with --kubeconfig or in the scenario); on kind, load goes to 127.0.0.1", allow[0])
		}
		return nil
	}
	raw := or(e.URL, fmt.Sprintf("http://127.0.0.1:%d", scenario.DefaultHostPort))
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("cluster.existing.url: %w", err)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[u.Scheme == "https"]
	}
	for _, a := range allow {
		if a.Host != host || a.Port != "" && a.Port != port {
			return fmt.Errorf("--allow-target %s does not name cluster.existing.url %s (host %s, port %s): name exactly the host (and port) load goes to, --allow-target %s, or leave it out", a, raw, host, port, traffic.AllowTarget{Host: host, Port: port})
		}
	}
	if _, err := traffic.CheckURL(raw, allow); err != nil {
		return fmt.Errorf("cluster.existing.url: %w", err)
	}
	return nil
}

// checkOwnService checks that the user's own Service or Ingress (app.custom.
// service), which droprun does not create, is in namespace before a run
// relies on it.
func checkOwnService(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	_, err := c.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return wrapOwn(err, namespace, name)
	}
	_, err = c.NetworkingV1().Ingresses(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("app.custom.service %q: namespace %s has no Service or Ingress of that name, and droprun creates none for you: "+
			"create it in %s (a Service selects pods of its own namespace only) before the run, with the namespace labelled %s=%s "+
			"(kubectl create namespace %s; kubectl label namespace %s %s=%s; kubectl -n %s apply -f YOUR-SERVICE.yaml); "+
			"droprun keeps that namespace after the run (it deletes only its own Deployments there), so the Service serves the next run too",
			name, namespace, namespace, variant.LabelManagedBy, variant.ManagedBy, namespace, namespace, variant.LabelManagedBy, variant.ManagedBy, namespace)
	}
	return wrapOwn(err, namespace, name)
}

func wrapOwn(err error, namespace, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("app.custom.service %q: reading it in namespace %s: %w", name, namespace, err)
}
