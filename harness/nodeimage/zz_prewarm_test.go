package nodeimage

import (
	"context"
	"os"
	"testing"
)

// temporary: runs the docker-free steps (deleted before handing over)
func TestPrewarm(t *testing.T) {
	if os.Getenv("PREWARM") != "1" {
		t.Skip()
	}
	ctx := context.Background()
	d, _ := defaultCacheDir()
	src, err := findSourceDir("")
	if err != nil {
		t.Fatal(err)
	}
	cniHash, _ := hashDir(src + "/apps/cni")
	v := Versions{}.withDefaults()
	inputs, _ := inputsHash(v, cniHash)
	if err := ensureDebianPackages(ctx, os.Stdout, "gcc", "libc6-dev", "libseccomp-dev", "pkg-config", "debootstrap"); err != nil {
		t.Fatal(err)
	}
	b := &builder{c: cache{root: d}, v: v, out: os.Stdout, src: src, cniHash: cniHash, inputs: inputs, ref: DefaultImage}
	p := &progress{out: os.Stdout, total: 11}
	steps := []struct {
		name string
		fn   func(context.Context) (bool, error)
	}{
		{"kubernetes", b.kubernetes},
		{"containerd", b.component("containerd")},
		{"runc", b.component("runc")},
		{"crictl", b.component("crictl")},
		{"cni-plugins", b.component("cni-plugins")},
		{"etcd", b.component("etcd")},
		{"coredns", b.component("coredns")},
		{"lpp", b.component("local-path-provisioner")},
		{"cni", b.cni},
		{"pause", b.pause},
		{"rootfs", b.rootfs},
	}
	for _, s := range steps {
		fn := s.fn
		if err := p.step(s.name, func() (bool, error) { return fn(ctx) }); err != nil {
			t.Error(err)
			if s.name == "kubernetes" {
				return
			}
		}
	}
}
