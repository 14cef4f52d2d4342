package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IPVS reports whether kube-proxy's ipvs mode can work on this host: kind
// nodes share the host's kernel, and that mode needs its ip_vs module,
// loaded (/proc/net/ip_vs, /sys/module/ip_vs) or loadable (a module file
// under /lib/modules/RELEASE). root is "/" but for tests. The reason says
// what was looked at, for a message.
func IPVS(root string) (ok bool, reason string) {
	for _, p := range []string{"proc/net/ip_vs", "sys/module/ip_vs"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return true, "ip_vs is loaded (/" + p + ")"
		}
	}
	release := "this kernel"
	if b, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/osrelease")); err == nil {
		release = strings.TrimSpace(string(b))
	}
	mods := filepath.Join(root, "lib/modules", release)
	found := ""
	_ = filepath.WalkDir(mods, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "ip_vs.ko") {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if found != "" {
		return true, "ip_vs is loadable (" + strings.TrimPrefix(found, filepath.Clean(root)) + ")"
	}
	return false, fmt.Sprintf("kernel %s has no ip_vs: not loaded (no /proc/net/ip_vs) and no module under /lib/modules/%s", release, release)
}

// kubeProxyModesCheck says which kube-proxy modes a kind cluster can use
// here. iptables (the default) and nftables need only netfilter, which
// every kernel able to run kind has; ipvs needs ip_vs.
func kubeProxyModesCheck(root string) Check {
	ok, why := IPVS(root)
	c := Check{Name: "kube-proxy modes", OK: true}
	if ok {
		c.Detail = "iptables, nftables and ipvs: " + why
		return c
	}
	c.Detail = "iptables and nftables; not ipvs: " + why + " (droprun refuses kubeProxyMode ipvs here)"
	return c
}
