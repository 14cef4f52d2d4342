package nodeimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/droprun/droprun/harness/atomicfile"
)

// defaultPath is the PATH of every image: kubeadm's static pods and kind's
// manifests name their commands without a directory.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// fileEntry is one entry of an image layer.
type fileEntry struct {
	path string      // absolute path in the image
	src  string      // host file to copy; empty for directories and symlinks
	data []byte      // literal content when src is empty and link is empty
	mode os.FileMode // permission bits; os.ModeDir for directories
	link string      // symlink target
}

// imageSpec is an image built FROM scratch.
type imageSpec struct {
	ref        string
	layers     [][]fileEntry
	entrypoint []string
	user       string
}

// cniImageRef and the local-path images name droprun's own images; the
// manifests in the node image refer to them and nothing ever pulls them.
func (b *builder) cniImageRef() string { return "docker.io/droprun/cni:" + b.cniHash[:12] }
func (b *builder) lppImageRef() string {
	return "docker.io/droprun/local-path-provisioner:" + b.v.LocalPathProvisioner
}
func (b *builder) lppHelperImageRef() string {
	return "docker.io/droprun/local-path-helper:busybox-" + b.v.DebianSuite
}

// manifests renders the CNI and storage manifests of the node image.
func (b *builder) manifests() (cni, storage string, err error) {
	c, err := manifestFS.ReadFile("manifests/default-cni.yaml")
	if err != nil {
		return "", "", err
	}
	s, err := manifestFS.ReadFile("manifests/default-storage.yaml")
	if err != nil {
		return "", "", err
	}
	cni = strings.ReplaceAll(string(c), "DROPRUN_CNI_IMAGE", b.cniImageRef())
	storage = strings.ReplaceAll(string(s), "DROPRUN_LPP_HELPER_IMAGE", b.lppHelperImageRef())
	storage = strings.ReplaceAll(storage, "DROPRUN_LPP_IMAGE", b.lppImageRef())
	return cni, storage, nil
}

// baseLayer is what every image gets: /etc/passwd and /etc/group with root,
// nobody and nonroot (65532), and a world-writable /tmp.
func baseLayer() []fileEntry {
	return []fileEntry{
		{path: "/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "/etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{path: "/tmp", mode: os.ModeDir | os.ModeSticky | 0o777},
		{path: "/root", mode: os.ModeDir | 0o700},
		{path: "/home/nonroot", mode: os.ModeDir | 0o755},
	}
}

func binEntry(src, dst string) fileEntry { return fileEntry{path: dst, src: src, mode: 0o755} }

// imageSpecs lists the images preloaded into the node's containerd.
func (b *builder) imageSpecs() ([]imageSpec, error) {
	kube := b.bins["kubernetes"]
	// iptables (nft and legacy), nft, conntrack and ip with their
	// libraries, from the node's own Debian root filesystem.
	netTools, err := b.netToolsLayer()
	if err != nil {
		return nil, err
	}
	k := b.images
	specs := []imageSpec{
		{ref: k.APIServer, layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(kube, "kube-apiserver"), "/usr/local/bin/kube-apiserver")}}},
		{ref: k.ControllerManager, layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(kube, "kube-controller-manager"), "/usr/local/bin/kube-controller-manager")}}},
		{ref: k.Scheduler, layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(kube, "kube-scheduler"), "/usr/local/bin/kube-scheduler")}}},
		{ref: k.Proxy, layers: [][]fileEntry{baseLayer(), netTools, {binEntry(filepath.Join(kube, "kube-proxy"), "/usr/local/bin/kube-proxy")}}},
		{ref: k.Etcd, layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(b.bins["etcd"], "etcd"), "/usr/local/bin/etcd")}}},
		{ref: k.CoreDNS, entrypoint: []string{"/coredns"},
			layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(b.bins["coredns"], "coredns"), "/coredns")}}},
		{ref: k.Pause, entrypoint: []string{"/pause"}, user: "65535:65535",
			layers: [][]fileEntry{{binEntry(filepath.Join(b.bins["pause"], "pause"), "/pause")}}},
		{ref: b.cniImageRef(), entrypoint: []string{"/usr/local/bin/droprun-cni"},
			layers: [][]fileEntry{baseLayer(), netTools, {binEntry(filepath.Join(b.bins["droprun-cni"], "droprun-cni"), "/usr/local/bin/droprun-cni")}}},
		{ref: b.lppImageRef(),
			layers: [][]fileEntry{baseLayer(), {binEntry(filepath.Join(b.bins["local-path-provisioner"], "local-path-provisioner"), "/usr/local/bin/local-path-provisioner")}}},
	}
	// The local-path helper runs shell scripts: busybox from the root
	// filesystem's busybox-static, with the applets the scripts use (and a
	// few network ones, handy to check pod networking).
	helper := append(baseLayer(), binEntry(filepath.Join(b.stage, "bin", "busybox"), "/bin/busybox"))
	for _, applet := range []string{"sh", "mkdir", "rm", "rmdir", "ls", "cat", "echo", "chmod", "test", "[",
		"sleep", "hostname", "ping", "wget", "nc", "httpd"} {
		helper = append(helper, fileEntry{path: "/bin/" + applet, link: "busybox"})
	}
	specs = append(specs, imageSpec{ref: b.lppHelperImageRef(), layers: [][]fileEntry{helper}})
	return specs, nil
}

// netToolsLayer collects the networking tools kube-proxy and droprun-cni
// run, with every library they load, from the unpacked root filesystem.
// iptables, ip6tables and their -save/-restore variants use the nf_tables
// backend, as the node's own (Debian's default) does.
func (b *builder) netToolsLayer() ([]fileEntry, error) {
	root := b.stage
	bins := []string{
		"/usr/sbin/xtables-nft-multi", "/usr/sbin/xtables-legacy-multi",
		"/usr/sbin/nft", "/usr/sbin/conntrack", "/usr/bin/ip", "/usr/sbin/ip",
	}
	var present []string
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(root, b)); err == nil {
			if real, err := resolveInRoot(root, b); err == nil && !contains(present, real) {
				present = append(present, real)
			}
		}
	}
	// iptables loads its match and target extensions with dlopen.
	xt, _ := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/xtables/*.so"))
	for _, x := range xt {
		present = append(present, "/"+strings.TrimPrefix(x, root+"/"))
	}
	files, err := elfClosure(root, present)
	if err != nil {
		return nil, err
	}
	var layer []fileEntry
	for _, f := range files {
		real, err := resolveInRoot(root, f)
		if err != nil {
			return nil, err
		}
		layer = append(layer, fileEntry{path: f, src: filepath.Join(root, real), mode: 0o755})
	}
	var ipPath string
	for _, f := range files {
		if path.Base(f) == "ip" {
			ipPath = f
		}
	}
	if ipPath != "" && ipPath != "/usr/sbin/ip" {
		layer = append(layer, fileEntry{path: "/usr/sbin/ip", link: ipPath})
	}
	for _, t := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		layer = append(layer,
			fileEntry{path: "/usr/sbin/" + t, link: "xtables-nft-multi"},
			fileEntry{path: "/usr/sbin/" + strings.Replace(t, "tables", "tables-nft", 1), link: "xtables-nft-multi"},
			fileEntry{path: "/usr/sbin/" + strings.Replace(t, "tables", "tables-legacy", 1), link: "xtables-legacy-multi"},
		)
	}
	for _, etc := range []string{"/etc/protocols", "/etc/services", "/etc/ethertypes"} {
		if real, err := resolveInRoot(root, etc); err == nil {
			if _, err := os.Stat(filepath.Join(root, real)); err == nil {
				layer = append(layer, fileEntry{path: etc, src: filepath.Join(root, real), mode: 0o644})
			}
		}
	}
	return layer, nil
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// libDirs is where the dynamic loader of Debian amd64 looks for libraries.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", "/lib64"}

// elfClosure returns the given ELF files (paths inside root) plus every
// shared library they need, transitively, and their program interpreter,
// as paths inside root, sorted.
func elfClosure(root string, files []string) ([]string, error) {
	seen := map[string]bool{}
	queue := append([]string(nil), files...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		real, err := resolveInRoot(root, p)
		if err != nil {
			return nil, err
		}
		f, err := elf.Open(filepath.Join(root, real))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		needed, err := f.ImportedLibraries()
		interp := ""
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				data, rerr := io.ReadAll(prog.Open())
				if rerr == nil {
					interp = strings.TrimRight(string(data), "\x00")
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if interp != "" {
			queue = append(queue, interp)
		}
		for _, lib := range needed {
			found := ""
			for _, d := range libDirs {
				cand := path.Join(d, lib)
				if real, err := resolveInRoot(root, cand); err == nil {
					if _, err := os.Stat(filepath.Join(root, real)); err == nil {
						found = cand
						break
					}
				}
			}
			if found == "" {
				return nil, fmt.Errorf("%s needs %s, which is not in %s", p, lib, root)
			}
			queue = append(queue, found)
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// resolveInRoot resolves symlinks in p (absolute, inside root) as if root
// were /: absolute link targets stay inside root. It returns the resolved
// path inside root.
func resolveInRoot(root, p string) (string, error) {
	parts := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many symlinks", p)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		rest := strings.Split(strings.Trim(target, "/"), "/")
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
		parts = append(rest, parts...)
	}
	return cur, nil
}

// writeLayer writes entries as an uncompressed layer tar, with parent
// directories, sorted, with a fixed timestamp.
func writeLayer(w io.Writer, entries []fileEntry) error {
	tw := tar.NewWriter(w)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	sorted := append([]fileEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	var addDirs func(string) error
	addDirs = func(dir string) error {
		if dir == "/" || dir == "." || dirs[dir] {
			return nil
		}
		if err := addDirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	written := map[string]bool{}
	for _, e := range sorted {
		if written[e.path] {
			continue
		}
		written[e.path] = true
		if err := addDirs(path.Dir(e.path)); err != nil {
			return err
		}
		name := strings.TrimPrefix(e.path, "/")
		switch {
		case e.mode.IsDir():
			if dirs[e.path] {
				continue
			}
			dirs[e.path] = true
			mode := int64(e.mode.Perm())
			if e.mode&os.ModeSticky != 0 {
				mode |= 0o1000
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return err
			}
		case e.link != "":
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: e.link, Mode: 0o777, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return err
			}
		default:
			data := e.data
			if e.src != "" {
				var err error
				if data, err = os.ReadFile(e.src); err != nil {
					return err
				}
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: int64(e.mode.Perm()), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// writeImage writes spec as a docker-archive tarball at dst (the format
// `ctr images import` and `docker load` read).
func writeImage(spec imageSpec, dst, tmp string) error {
	img := empty.Image
	for i, entries := range spec.layers {
		lp := filepath.Join(tmp, fmt.Sprintf("layer-%d.tar", i))
		if err := atomicfile.WriteFunc(lp, 0o644, func(w io.Writer) error { return writeLayer(w, entries) }); err != nil {
			return err
		}
		layer, err := tarball.LayerFromFile(lp, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
		if err != nil {
			return err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Env = []string{defaultPath}
	cf.Config.Entrypoint = spec.entrypoint
	cf.Config.User = spec.user
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tag, err := name.NewTag(spec.ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", spec.ref, err)
	}
	return atomicfile.WriteFunc(dst, 0o644, func(w io.Writer) error { return tarball.Write(tag, img, w) })
}

// buildImages writes every preloaded image as a tarball in the cache, keyed
// by the build's inputs.
func (b *builder) buildImages(ctx context.Context) (bool, error) {
	specs, err := b.imageSpecs()
	if err != nil {
		return false, err
	}
	b.imageDir = b.c.path("images", strings.TrimPrefix(b.inputs, "sha256:")[:16])
	b.preloaded = nil
	cached := true
	for _, s := range specs {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		b.preloaded = append(b.preloaded, s.ref)
		dst := filepath.Join(b.imageDir, imageFileName(s.ref))
		if _, err := os.Stat(dst); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		cached = false
		tmp, err := b.c.tmpDir("image")
		if err != nil {
			return false, err
		}
		err = writeImage(s, dst, tmp)
		os.RemoveAll(tmp)
		if err != nil {
			return false, fmt.Errorf("image %s: %w", s.ref, err)
		}
		fmt.Fprintf(b.out, "      %s\n", s.ref)
	}
	return cached, nil
}

// imageFileName turns an image reference into a file name.
func imageFileName(ref string) string {
	r := strings.NewReplacer("/", "_", ":", "_", "@", "_")
	return r.Replace(ref) + ".tar"
}
