package testbed

import (
	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/scenario"
)

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
