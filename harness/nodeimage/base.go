package nodeimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// nodeRootfs unpacks the Debian root filesystem into a scratch directory
// and turns it into a kind node: kind's images/base files and Dockerfile
// steps, the binaries, containerd's configuration and the manifests.
func (b *builder) nodeRootfs(ctx context.Context) (bool, error) {
	tmp, err := b.c.tmpDir("node")
	if err != nil {
		return false, err
	}
	b.cleanups = append(b.cleanups, func() { os.RemoveAll(tmp) })
	root := filepath.Join(tmp, "root")
	b.stage = root
	if err := b.unpackKindBase(ctx, root); err != nil {
		return false, err
	}
	if err := b.installBinaries(root); err != nil {
		return false, err
	}
	if err := b.configureContainerd(ctx, root); err != nil {
		return false, err
	}
	if err := patchFile(filepath.Join(root, "etc/default/kubelet"), func(s string) (string, error) {
		return patchKubeletDefaults(s), nil
	}); err != nil {
		return false, err
	}
	if err := b.writeKindFiles(root); err != nil {
		return false, err
	}
	return false, nil
}

// unpackKindBase unpacks the Debian root filesystem into root and makes
// it kind's base image: kind's images/base files (from the kind module at
// KindVersion) and the systemd steps of its Dockerfile.
func (b *builder) unpackKindBase(ctx context.Context, root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if _, err := runCmd(ctx, "", nil, "tar", "--numeric-owner", "--xattrs", "-C", root, "-xf", b.rootfsTar); err != nil {
		return err
	}
	if err := os.MkdirAll(b.c.path("go"), 0o755); err != nil {
		return err
	}
	kind, err := downloadModule(ctx, b.c.path("go"), "sigs.k8s.io/kind@"+KindVersion)
	if err != nil {
		return err
	}
	if err := copyKindFiles(filepath.Join(kind.Dir, "images", "base", "files"), root); err != nil {
		return fmt.Errorf("copy kind's base image files: %w", err)
	}
	return systemdSetup(root)
}

// installBinaries copies the downloaded binaries into root where kind's
// node image has them: kubeadm, kubelet and kubectl in /usr/bin (the
// control plane comes as images), containerd, runc and crictl under
// /usr/local, the CNI plugins in /opt/cni/bin.
func (b *builder) installBinaries(root string) error {
	kube := b.bins["kubernetes"]
	install := []struct{ src, dst string }{
		{filepath.Join(kube, "kubeadm"), "usr/bin/kubeadm"},
		{filepath.Join(kube, "kubelet"), "usr/bin/kubelet"},
		{filepath.Join(kube, "kubectl"), "usr/bin/kubectl"},
		{filepath.Join(b.bins["containerd"], "containerd"), "usr/local/bin/containerd"},
		{filepath.Join(b.bins["containerd"], "containerd-shim-runc-v2"), "usr/local/bin/containerd-shim-runc-v2"},
		{filepath.Join(b.bins["containerd"], "ctr"), "usr/local/bin/ctr"},
		{filepath.Join(b.bins["runc"], "runc"), "usr/local/sbin/runc"},
		{filepath.Join(b.bins["crictl"], "crictl"), "usr/local/bin/crictl"},
	}
	for _, p := range []string{"ptp", "bridge", "loopback", "host-local", "portmap"} {
		install = append(install, struct{ src, dst string }{filepath.Join(b.bins["cni-plugins"], p), "opt/cni/bin/" + p})
	}
	for _, in := range install {
		if err := copyFile(in.src, filepath.Join(root, in.dst), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// configureContainerd writes containerd's CRI base spec, made from `ctr
// oci spec` as kind's Dockerfile makes it, and patches kind's
// config.toml (patchContainerdConfig).
func (b *builder) configureContainerd(ctx context.Context, root string) error {
	spec, err := runCmd(ctx, "", nil, filepath.Join(b.bins["containerd"], "ctr"), "oci", "spec")
	if err != nil {
		return err
	}
	criBase, err := criBaseSpec([]byte(spec))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/cri-base.json"), criBase, 0o644); err != nil {
		return err
	}
	return patchFile(filepath.Join(root, "etc/containerd/config.toml"), func(cfg string) (string, error) {
		return patchContainerdConfig(cfg, b.images.Pause)
	})
}

// patchFile rewrites the file at path with what patch makes of its
// content, mode 0644.
func patchFile(path string, patch func(string) (string, error)) error {
	content, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	patched, err := patch(string(content))
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(patched), 0o644)
}

// writeKindFiles writes /kind/version and the manifests kind's create
// actions read.
func (b *builder) writeKindFiles(root string) error {
	if err := os.WriteFile(filepath.Join(root, "kind/version"), []byte(b.v.Kubernetes), 0o644); err != nil {
		return err
	}
	cniManifest, storageManifest, err := b.manifests()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "kind/manifests"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "kind/manifests/default-cni.yaml"), []byte(cniManifest), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "kind/manifests/default-storage.yaml"), []byte(storageManifest), 0o644)
}

// copyKindFiles copies kind's images/base/files tree into root with the
// modes kind's Dockerfile gives them: scripts 0755, everything else 0644.
// The module cache is read-only, so modes are set explicitly.
func copyKindFiles(src, root string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		return copyFile(p, dst, mode)
	})
}

// copyFile copies src to dst (replacing it) with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	os.Remove(dst)
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// systemdSetup replicates the systemd steps of kind's base Dockerfile on an
// unpacked root filesystem: remove unwanted units, keep journald off kmsg,
// make systemd the init, enable kubelet, containerd and undo-mount-hacks,
// mask systemd-binfmt.
func systemdSetup(root string) error {
	for _, glob := range []string{
		"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
		"lib/systemd/system/multi-user.target.wants/*",
		"etc/systemd/system/*.wants/*",
		"lib/systemd/system/local-fs.target.wants/*",
		"lib/systemd/system/sockets.target.wants/*udev*",
		"lib/systemd/system/sockets.target.wants/*initctl*",
		"lib/systemd/system/basic.target.wants/*",
	} {
		matches, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if err := os.Remove(m); err != nil {
				return err
			}
		}
	}
	journald := filepath.Join(root, "etc/systemd/journald.conf")
	f, err := os.OpenFile(journald, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("ReadKMsg=no\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, l := range systemdLinks() {
		p := filepath.Join(root, l.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		os.Remove(p)
		if err := os.Symlink(l.target, p); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(root, "etc/kubernetes/manifests"), 0o755)
}

type symlink struct{ path, target string }

// systemdLinks are the symlinks `systemctl enable/mask` and `ln -s` make in
// kind's Dockerfile (paths relative to the root).
func systemdLinks() []symlink {
	links := []symlink{{"sbin/init", "/usr/lib/systemd/systemd"}}
	for _, unit := range []string{"kubelet.service", "containerd.service", "undo-mount-hacks.service"} {
		links = append(links, symlink{"etc/systemd/system/multi-user.target.wants/" + unit, "/etc/systemd/system/" + unit})
	}
	return append(links, symlink{"etc/systemd/system/systemd-binfmt.service", "/dev/null"})
}

// criBaseSpec turns `ctr oci spec` output into kind's cri-base.json: the
// mount-product-files hook added, the rlimits removed.
func criBaseSpec(spec []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse ctr oci spec: %w", err)
	}
	if proc, ok := s["process"].(map[string]any); ok {
		delete(proc, "rlimits")
	}
	hooks, _ := s["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	cc, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(cc, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	s["hooks"] = hooks
	return json.MarshalIndent(s, "", "  ")
}

var (
	sandboxRE  = regexp.MustCompile(`(?m)^(\s*sandbox_image\s*=\s*)"[^"]*"`)
	oomScoreRE = regexp.MustCompile(`(?m)^(\s*restrict_oom_score_adj\s*=\s*)(true|false)`)
)

// patchContainerdConfig sets the sandbox image to the pause image kubeadm
// expects (so containerd never pulls one) and restrict_oom_score_adj = true:
// where the host lacks CAP_SYS_RESOURCE, nothing in a node may lower
// oom_score_adj.
func patchContainerdConfig(cfg, pauseImage string) (string, error) {
	if !sandboxRE.MatchString(cfg) {
		return "", fmt.Errorf("containerd config has no sandbox_image line: kind's config changed")
	}
	if !oomScoreRE.MatchString(cfg) {
		return "", fmt.Errorf("containerd config has no restrict_oom_score_adj line: kind's config changed")
	}
	cfg = sandboxRE.ReplaceAllString(cfg, `${1}"`+pauseImage+`"`)
	cfg = oomScoreRE.ReplaceAllString(cfg, "${1}true")
	return cfg, nil
}

// patchKubeletDefaults adds --fail-cgroupv1=false to KUBELET_EXTRA_ARGS in
// /etc/default/kubelet: kubelet >= 1.35 refuses a cgroup v1 host without it.
func patchKubeletDefaults(content string) string {
	const flag = "--fail-cgroupv1=false"
	if strings.Contains(content, flag) {
		return content
	}
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "KUBELET_EXTRA_ARGS=") {
			v := strings.TrimPrefix(l, "KUBELET_EXTRA_ARGS=")
			quoted := strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) && len(v) >= 2
			if quoted {
				v = v[1 : len(v)-1]
			}
			v = strings.TrimSpace(v + " " + flag)
			if quoted {
				v = `"` + v + `"`
			}
			lines[i] = "KUBELET_EXTRA_ARGS=" + v
			return strings.Join(lines, "\n") + "\n"
		}
	}
	return strings.Join(append(lines, "KUBELET_EXTRA_ARGS="+flag), "\n") + "\n"
}
