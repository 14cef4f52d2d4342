package testbed

import (
	"errors"
	"fmt"
	"strings"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/imageref"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
)

// Checked is a scenario whose input droprun checked once, before any
// cluster work (Check): its image archives read whole, the kube-proxy mode
// on this kernel, and where its load may go. Prepare takes it, so no check
// runs twice.
type Checked struct {
	Scenario *scenario.Scenario
	// Archives are a custom app's image archives, as Preflight inspected
	// them: Prepare loads them without reading them again.
	Archives []*image.Archive
	// Allow are the hosts beyond 127.0.0.1 the user allowed load to go to.
	Allow []traffic.AllowTarget
}

// AllowError is what the user has not consented to: load beyond 127.0.0.1
// without --allow-target (CheckAllow's refusal), or a kubeconfig a
// scenario names that would run a command or send a file. Bad usage.
type AllowError struct{ Err error }

func (e *AllowError) Error() string { return e.Err.Error() }
func (e *AllowError) Unwrap() error { return e.Err }

// Check runs every check of sc that needs no cluster, once: where load may
// go (CheckAllow; its refusal is an *AllowError) and Preflight (a
// *scenario.Errors).
func Check(sc *scenario.Scenario, allow []traffic.AllowTarget) (*Checked, error) {
	if err := CheckAllow(sc, allow); err != nil {
		return nil, &AllowError{err}
	}
	if k := sc.Cluster.Kind; k != nil && !k.NodeImageAllowed && !imageref.KnownNode(k.NodeImage) {
		return nil, &AllowError{fmt.Errorf("cluster.kind.nodeImage %s is neither droprun's node image (%s:…) nor kind's (%s:…); a node image runs privileged on this host as every node of the cluster: if you trust it, pass --allow-node-image %s",
			k.NodeImage, imageref.DroprunNodeRepo, imageref.KindNodeRepo, k.NodeImage)}
	}
	// A kubeconfig the scenario names may not run a command or send a
	// file unless the user vouches for it.
	if e := sc.Cluster.Existing; e != nil && !e.Trusted {
		if err := cluster.CheckKubeconfig(e.Kubeconfig); errors.Is(err, cluster.ErrUntrustedKubeconfig) {
			return nil, &AllowError{err}
		}
	}
	if err := CheckPrivileges(sc); err != nil {
		return nil, &AllowError{err}
	}
	archives, err := Preflight(sc)
	if err != nil {
		return nil, err
	}
	return &Checked{Scenario: sc, Archives: archives, Allow: allow}, nil
}

// CheckPrivileges refuses a custom app whose manifests ask for more than
// the Pod Security baseline (scenario.Privileges: a privileged container,
// the host's namespaces or paths, added capabilities, another service
// account) unless the user consented with --allow-privileged: on kind that
// is root on the host running droprun, and a scenario is data. A manifest
// that cannot be read is left to the scenario's own validation.
func CheckPrivileges(sc *scenario.Scenario) error {
	c := sc.App.Custom
	if c == nil || c.PrivilegedAllowed {
		return nil
	}
	var asks []string
	for _, v := range sc.Variants {
		if v.Manifest == "" {
			continue
		}
		data, err := sc.ReadManifest(v.Manifest)
		if err != nil {
			continue
		}
		d, err := scenario.DecodeDeployment(v.Manifest, data)
		if err != nil {
			continue
		}
		if p := scenario.Privileges(&d.Spec.Template.Spec); len(p) > 0 {
			asks = append(asks, fmt.Sprintf("%s (variant %s): %s", v.Manifest, v.Name, strings.Join(p, ", ")))
		}
	}
	if len(asks) == 0 {
		return nil
	}
	return fmt.Errorf("the custom app's pods would run beyond the Pod Security baseline, which on kind reaches the host running droprun: %s; remove those fields, or, if you trust the manifest, pass --allow-privileged",
		strings.Join(asks, "; "))
}

// Preflight checks what Prepare needs of the user's input, before any
// cluster work, so a bad input fails in a moment rather than after a
// cluster was created: a custom app's image archives must exist, be whole
// docker-save archives or OCI image layouts, and hold app.custom.images;
// and a kind cluster's kube-proxy mode must work on this host's kernel.
// Its error is a *scenario.Errors. It returns the inspected archives.
func Preflight(sc *scenario.Scenario) ([]*image.Archive, error) {
	archives, errs := checkArchives(sc)
	if k := sc.Cluster.Kind; k != nil && k.KubeProxyMode == "ipvs" {
		if ok, why := engine.IPVS("/"); !ok {
			errs = append(errs, scenario.FieldError{Path: "cluster.kind.kubeProxyMode",
				Msg: "ipvs needs the kernel's ip_vs module, which kind nodes take from this host: " + why,
				Fix: "use nftables or iptables (droprun doctor lists the modes this host supports)"})
		}
	}
	if len(errs) > 0 {
		return nil, &scenario.Errors{File: "scenario " + sc.Metadata.Name, List: errs}
	}
	return archives, nil
}

// checkArchives runs image.CheckArchives on a custom app's archives and
// images, its problems named by their scenario fields.
func checkArchives(sc *scenario.Scenario) ([]*image.Archive, []scenario.FieldError) {
	c := sc.App.Custom
	if c == nil {
		return nil, nil
	}
	archives, problems := image.CheckArchives(c.ImageArchives, c.Images)
	var errs []scenario.FieldError
	for _, p := range problems {
		errs = append(errs, scenario.FieldError{Path: "app.custom." + p.Field, Msg: p.Msg, Fix: p.Fix})
	}
	return archives, errs
}
