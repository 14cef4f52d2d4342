// Command droprun-runc wraps runc for hosts whose capability bounding set
// lacks capabilities that privileged containers ask for (this project's
// machines lack CAP_SYS_RESOURCE, and every `docker run --privileged`, so
// every kind node, fails with "unable to apply caps: operation not
// permitted").
//
// For `runc create` and `runc run` it removes those capabilities from the
// bundle's config.json (.process.capabilities), for `runc exec` from the
// --process file, and then executes the real runc with the same arguments.
// Docker runs it as its default runtime (droprun engine setup registers it
// in /etc/docker/daemon.json).
//
// With DROPRUN_RUNCWRAP_INFO=1 it prints its source hash and the runc it
// runs, and exits. DROPRUN_REAL_RUNC overrides the real runc's path.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Set at build time by droprun engine setup.
var (
	sourceHash      = "dev"
	defaultRealRunc = ""
)

func main() {
	real, err := realRunc()
	if os.Getenv("DROPRUN_RUNCWRAP_INFO") == "1" {
		fmt.Printf("droprun-runc source=%s runc=%s\n", sourceHash, real)
		if err != nil {
			fmt.Fprintln(os.Stderr, "droprun-runc:", err)
			os.Exit(1)
		}
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "droprun-runc:", err)
		os.Exit(1)
	}
	args := os.Args[1:]
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		if bnd, err := parseCapField(status, "CapBnd"); err == nil {
			if drop := missingCaps(bnd); len(drop) > 0 {
				cwd, _ := os.Getwd()
				if path, isProcess := specFile(parseArgs(args), cwd); path != "" {
					if err := rewriteFile(path, drop, isProcess); err != nil {
						// runc reports the real failure, if there is one.
						fmt.Fprintln(os.Stderr, "droprun-runc: warning:", err)
					}
				}
			}
		}
	}
	err = syscall.Exec(real, append([]string{"runc"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "droprun-runc: exec %s: %v\n", real, err)
	os.Exit(1)
}

// realRunc finds the runc to run: $DROPRUN_REAL_RUNC, the path set at build
// time, or the usual places, never this wrapper itself.
func realRunc() (string, error) {
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	candidates := []string{os.Getenv("DROPRUN_REAL_RUNC"), defaultRealRunc,
		"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		resolved, err := filepath.EvalSymlinks(c)
		if err != nil || resolved == self {
			continue
		}
		if fi, err := os.Stat(resolved); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("no runc found (looked at %v); install runc or set DROPRUN_REAL_RUNC", candidates[1:])
}
