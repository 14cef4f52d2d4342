package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIPVS(t *testing.T) {
	mk := func(t *testing.T, files ...string) string {
		root := t.TempDir()
		for _, f := range append([]string{"proc/sys/kernel/osrelease"}, files...) {
			p := filepath.Join(root, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("6.1.0-test\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	cases := []struct {
		name  string
		files []string
		ok    bool
		says  string
	}{
		{"nothing", nil, false, "kernel 6.1.0-test has no ip_vs"},
		{"other modules only", []string{"lib/modules/6.1.0-test/kernel/net/netfilter/nf_tables.ko"}, false, "no module under /lib/modules/6.1.0-test"},
		{"loaded", []string{"proc/net/ip_vs"}, true, "loaded (/proc/net/ip_vs)"},
		{"loadable", []string{"lib/modules/6.1.0-test/kernel/net/netfilter/ipvs/ip_vs.ko.xz"}, true, "loadable (/lib/modules/6.1.0-test/kernel/net/netfilter/ipvs/ip_vs.ko.xz)"},
		{"another release's module", []string{"lib/modules/5.10.0-old/kernel/net/netfilter/ipvs/ip_vs.ko"}, false, "no ip_vs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := IPVS(mk(t, c.files...))
			if ok != c.ok || !strings.Contains(why, c.says) {
				t.Errorf("IPVS = %v, %q; want %v and %q", ok, why, c.ok, c.says)
			}
			check := kubeProxyModesCheck(mk(t, c.files...))
			if !check.OK || strings.Contains(check.Detail, "not ipvs") == c.ok {
				t.Errorf("doctor check %+v for ipvs %v", check, c.ok)
			}
		})
	}
}
