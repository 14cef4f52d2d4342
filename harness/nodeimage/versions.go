package nodeimage

import (
	"github.com/droprun/droprun/harness/imageref"

	"fmt"
	"regexp"
	"strings"
)

// DefaultKubernetesVersion is the Kubernetes version of DefaultImage
// (imageref's, where the scenario parser reads it).
const DefaultKubernetesVersion = imageref.DefaultKubernetesVersion

// DefaultImage is the reference of the node image Build produces by default.
const DefaultImage = imageref.DefaultNodeImage

// KindVersion is the version of the kind module whose images/base files the
// node image replicates. It must match the kind version in droprun's go.mod.
const KindVersion = "v0.33.0"

// recipeVersion changes whenever the way the image is assembled changes, so
// that images built by an older droprun are rebuilt.
const recipeVersion = "1"

// Versions pins every component of the node image. Empty fields take their
// defaults: see DefaultVersions; Etcd, CoreDNS and Pause default to the
// versions kubeadm of the chosen Kubernetes release asks for.
type Versions struct {
	Kubernetes           string // k8s.io/kubernetes module version, e.g. v1.37.2
	Containerd           string // github.com/containerd/containerd/v2
	Runc                 string // github.com/opencontainers/runc
	Crictl               string // sigs.k8s.io/cri-tools
	CNIPlugins           string // github.com/containernetworking/plugins
	Etcd                 string // go.etcd.io/etcd/server/v3; empty: from kubeadm
	CoreDNS              string // github.com/coredns/coredns; empty: from kubeadm
	LocalPathProvisioner string // github.com/rancher/local-path-provisioner
	DebianSuite          string // debootstrap suite, e.g. bookworm
}

// DefaultVersions returns the versions kind v0.33.0's base image uses where
// the module proxy serves them (see ENVIRONMENT.md), for Kubernetes
// DefaultKubernetesVersion.
func DefaultVersions() Versions {
	return Versions{
		Kubernetes:           DefaultKubernetesVersion,
		Containerd:           "v2.3.4",
		Runc:                 "v1.4.3",
		Crictl:               "v1.36.0",
		CNIPlugins:           "v1.9.1",
		LocalPathProvisioner: "v0.0.30", // v0.0.34 is refused by the proxy
		DebianSuite:          "bookworm",
	}
}

// withDefaults fills every empty field of v from DefaultVersions.
func (v Versions) withDefaults() Versions {
	d := DefaultVersions()
	set := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	set(&v.Kubernetes, d.Kubernetes)
	set(&v.Containerd, d.Containerd)
	set(&v.Runc, d.Runc)
	set(&v.Crictl, d.Crictl)
	set(&v.CNIPlugins, d.CNIPlugins)
	set(&v.LocalPathProvisioner, d.LocalPathProvisioner)
	set(&v.DebianSuite, d.DebianSuite)
	return v
}

var kubeVersionRE = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)

// stagingVersion maps a Kubernetes release (v1.37.2) to the version of its
// published staging modules (k8s.io/api v0.37.2 and friends).
func stagingVersion(kube string) (string, error) {
	m := kubeVersionRE.FindStringSubmatch(kube)
	if m == nil {
		return "", fmt.Errorf("kubernetes version %q: want a release like v1.37.2", kube)
	}
	return "v0." + m[1] + "." + m[2], nil
}

// kubeImages is what `kubeadm config images list` prints, by role.
type kubeImages struct {
	APIServer, ControllerManager, Scheduler, Proxy string
	CoreDNS, Pause, Etcd                           string
}

// parseKubeadmImages sorts the output of `kubeadm config images list` by
// component.
func parseKubeadmImages(out string) (kubeImages, error) {
	var k kubeImages
	for _, line := range strings.Fields(out) {
		repo, _, ok := strings.Cut(lastPathElem(line), ":")
		if !ok {
			return k, fmt.Errorf("kubeadm image %q has no tag", line)
		}
		switch repo {
		case "kube-apiserver":
			k.APIServer = line
		case "kube-controller-manager":
			k.ControllerManager = line
		case "kube-scheduler":
			k.Scheduler = line
		case "kube-proxy":
			k.Proxy = line
		case "coredns":
			k.CoreDNS = line
		case "pause":
			k.Pause = line
		case "etcd":
			k.Etcd = line
		}
	}
	for role, ref := range map[string]string{
		"kube-apiserver": k.APIServer, "kube-controller-manager": k.ControllerManager,
		"kube-scheduler": k.Scheduler, "kube-proxy": k.Proxy, "coredns": k.CoreDNS,
		"pause": k.Pause, "etcd": k.Etcd,
	} {
		if ref == "" {
			return k, fmt.Errorf("kubeadm listed no %s image in %q", role, out)
		}
	}
	return k, nil
}

// imageTag returns the tag of an image reference.
func imageTag(ref string) string {
	_, tag, _ := strings.Cut(lastPathElem(ref), ":")
	return tag
}

func lastPathElem(ref string) string {
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

// etcdModuleVersion turns kubeadm's etcd image tag (3.7.0-0) into the etcd
// module version (v3.7.0).
func etcdModuleVersion(tag string) string {
	v, _, _ := strings.Cut(tag, "-")
	return "v" + strings.TrimPrefix(v, "v")
}
