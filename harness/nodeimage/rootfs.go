package nodeimage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// rootfsPackages are installed by debootstrap on top of --variant=minbase:
// what kind's base image installs (images/base/Dockerfile), without the
// storage-test extras (nfs-common, open-iscsi, fuse-overlayfs), plus
// busybox-static for the local-path helper image.
var rootfsPackages = []string{
	"systemd", "systemd-sysv", "dbus",
	"conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod",
	"libseccomp2", "pigz",
	"e2fsprogs",
	"bash", "ca-certificates", "curl", "jq", "procps",
	"busybox-static",
}

const defaultMirror = "http://deb.debian.org/debian"

// debianMirror finds the Debian archive this machine's apt uses, from the
// contents of /etc/apt/sources.list and /etc/apt/sources.list.d/* (path =>
// content), in one-line or deb822 format. Security and other archives are
// skipped; without one, deb.debian.org is used.
func debianMirror(sources map[string]string) string {
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	isArchive := func(uri string) bool {
		u := strings.TrimSuffix(uri, "/")
		return strings.HasSuffix(u, "/debian") && !strings.Contains(u, "security")
	}
	for _, n := range names {
		content := sources[n]
		switch {
		case strings.HasSuffix(n, ".sources"):
			// deb822 stanzas: Types, URIs, Suites, ... separated by blank lines.
			for _, stanza := range strings.Split(content, "\n\n") {
				fields := map[string]string{}
				sc := bufio.NewScanner(strings.NewReader(stanza))
				for sc.Scan() {
					line := strings.TrimSpace(sc.Text())
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					k, v, ok := strings.Cut(line, ":")
					if ok {
						fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
					}
				}
				if !strings.Contains(" "+fields["types"]+" ", " deb ") || fields["enabled"] == "no" {
					continue
				}
				for _, uri := range strings.Fields(fields["uris"]) {
					if isArchive(uri) {
						return strings.TrimSuffix(uri, "/")
					}
				}
			}
		case strings.HasSuffix(n, ".list"):
			sc := bufio.NewScanner(strings.NewReader(content))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) < 3 || f[0] != "deb" {
					continue
				}
				i := 1
				if strings.HasPrefix(f[i], "[") { // [arch=amd64 signed-by=...]
					for i < len(f) && !strings.HasSuffix(f[i], "]") {
						i++
					}
					i++
				}
				if i < len(f) && isArchive(f[i]) {
					return strings.TrimSuffix(f[i], "/")
				}
			}
		}
	}
	return defaultMirror
}

// hostDebianMirror reads this machine's apt sources.
func hostDebianMirror() string {
	sources := map[string]string{}
	read := func(p string) {
		if b, err := os.ReadFile(p); err == nil {
			sources[p] = string(b)
		}
	}
	read("/etc/apt/sources.list")
	matches, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, m := range matches {
		read(m)
	}
	return debianMirror(sources)
}

// rootfsKey names the cached root filesystem: suite and package list.
func rootfsKey(suite string) string {
	h := sha256.Sum256([]byte(strings.Join(rootfsPackages, ",")))
	return fmt.Sprintf("debian-%s-%s", suite, hex.EncodeToString(h[:])[:12])
}

// buildRootfs debootstraps a minimal Debian into the cache and keeps it as a
// tar file (numeric owners, so it unpacks the same anywhere).
func buildRootfs(ctx context.Context, c cache, suite string, log io.Writer) (string, bool, error) {
	tarPath := c.path("rootfs", rootfsKey(suite)+".tar")
	if _, err := os.Stat(tarPath); err == nil {
		return tarPath, true, nil
	}
	if err := ensureDebianPackages(ctx, log, "debootstrap"); err != nil {
		return "", false, err
	}
	tmp, err := c.tmpDir("rootfs")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	mirror := hostDebianMirror()
	fmt.Fprintf(log, "      debootstrap %s from %s\n", suite, mirror)
	if _, err := runCmd(ctx, "", nil, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(rootfsPackages, ","), suite, root, mirror); err != nil {
		return "", false, err
	}
	// What kind's clean-install removes after installing packages.
	for _, glob := range []string{
		"var/cache/debconf/*", "var/lib/apt/lists/*", "var/cache/apt/*.bin",
		"var/cache/apt/archives/*.deb", "var/log/*", "tmp/*", "var/tmp/*",
		"usr/share/doc/*", "usr/share/doc-base/*", "usr/share/man/*", "usr/share/local/*",
	} {
		matches, _ := filepath.Glob(filepath.Join(root, glob))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return "", false, err
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(tarPath), 0o755); err != nil {
		return "", false, err
	}
	part := tarPath + ".part"
	if _, err := runCmd(ctx, "", nil, "tar", "--numeric-owner", "--xattrs", "-C", root, "-cf", part, "."); err != nil {
		os.Remove(part)
		return "", false, err
	}
	if err := os.Rename(part, tarPath); err != nil {
		return "", false, err
	}
	return tarPath, false, nil
}
