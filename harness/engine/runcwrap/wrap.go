package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// capNames are the Linux capabilities by bit number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
	"CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// parseCapField reads a capability mask such as CapBnd from the text of
// /proc/self/status.
func parseCapField(status []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
	}
	return 0, fmt.Errorf("no %s line in /proc/self/status", field)
}

// missingCaps names the known capabilities absent from the bounding set
// bnd: a container asking for any of them fails with "unable to apply
// caps: operation not permitted".
func missingCaps(bnd uint64) []string {
	var missing []string
	for bit, name := range capNames {
		if bnd&(1<<uint(bit)) == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

// invocation is what the wrapper needs to know about a runc command line.
type invocation struct {
	command string // create, run, exec, ... ("" when none)
	bundle  string // --bundle/-b of create and run ("" = working directory)
	process string // --process/-p of exec
}

// runc's global flags that take a value (the others are booleans).
var globalValueFlags = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// parseArgs finds the subcommand and its bundle or process file in runc's
// arguments (without argv[0]).
func parseArgs(args []string) invocation {
	var inv invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			inv.command = a
			i++
			break
		}
		if !strings.Contains(a, "=") && globalValueFlags[a] {
			i++ // skip the value
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		var dst *string
		switch name {
		case "--bundle", "-b", "-bundle":
			dst = &inv.bundle
		case "--process", "-p", "-process":
			dst = &inv.process
		default:
			continue
		}
		if hasValue {
			*dst = value
		} else if i+1 < len(args) {
			*dst = args[i+1]
			i++
		}
	}
	return inv
}

// specFile returns the JSON file to rewrite for inv and whether it is a
// process (exec) file rather than a bundle's config.json; "" when the
// command starts no process.
func specFile(inv invocation, cwd string) (path string, isProcess bool) {
	switch inv.command {
	case "create", "run":
		b := inv.bundle
		if b == "" {
			b = cwd
		} else if !filepath.IsAbs(b) {
			b = filepath.Join(cwd, b)
		}
		return filepath.Join(b, "config.json"), false
	case "exec":
		if inv.process == "" {
			return "", false
		}
		p := inv.process
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return p, true
	}
	return "", false
}

// stripCaps removes the capabilities named in drop from every set
// (bounding, effective, inheritable, permitted, ambient) of an OCI
// config.json (.process.capabilities) or an exec process.json
// (.capabilities). It reports whether anything changed; unchanged input is
// returned as is. Numbers and unknown fields are kept.
func stripCaps(doc []byte, drop []string, isProcess bool) ([]byte, bool, error) {
	if len(drop) == 0 {
		return doc, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, false, err
	}
	proc := root
	if !isProcess {
		p, ok := root["process"].(map[string]any)
		if !ok {
			return doc, false, nil
		}
		proc = p
	}
	caps, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return doc, false, nil
	}
	dropSet := map[string]bool{}
	for _, d := range drop {
		dropSet[d] = true
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if s, ok := c.(string); ok && dropSet[s] {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return doc, false, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, false, err
	}
	return buf.Bytes(), true, nil
}

// rewriteFile strips drop from the capabilities in the JSON file at path,
// replacing it atomically with the same permissions.
func rewriteFile(path string, drop []string, isProcess bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changed, err := stripCaps(doc, drop, isProcess)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".droprun-runc-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
