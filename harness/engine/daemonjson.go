package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// WrapperRuntime is the name the runc wrapper is registered under in
// dockerd's "runtimes".
const WrapperRuntime = "droprun-runc"

// daemonSettings are the dockerd settings droprun needs.
type daemonSettings struct {
	wrapperPath string // register and default to the runc wrapper; "" = leave runtimes alone
}

// mergeDaemonConfig merges droprun's settings into the content of an
// existing /etc/docker/daemon.json (empty for none), keeping every other
// key. It returns the new content, the keys it changed, and whether only
// keys dockerd reloads on SIGHUP changed.
func mergeDaemonConfig(existing []byte, s daemonSettings) (out []byte, changed []string, err error) {
	cfg := map[string]any{}
	if len(bytes.TrimSpace(existing)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(existing))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return nil, nil, fmt.Errorf("parse daemon.json: %w", err)
		}
		if cfg == nil {
			cfg = map[string]any{}
		}
	}
	set := func(key string, v any) {
		if old, ok := cfg[key]; ok && reflect.DeepEqual(normalize(old), normalize(v)) {
			return
		}
		cfg[key] = v
		changed = append(changed, key)
	}
	set("userland-proxy", false)
	if s.wrapperPath != "" {
		// Someone's own default runtime is theirs: refused, never
		// overwritten.
		if d, ok := cfg["default-runtime"]; ok && d != WrapperRuntime {
			return nil, nil, fmt.Errorf("sets \"default-runtime\": %v; privileged containers on this host (no CAP_SYS_RESOURCE) need droprun's runc wrapper as the default runtime, and droprun overwrites no one's setting: remove the key (or set it to %q) if nothing else needs it", d, WrapperRuntime)
		}
		runtimes, _ := cfg["runtimes"].(map[string]any)
		merged := map[string]any{}
		for k, v := range runtimes {
			merged[k] = v
		}
		merged[WrapperRuntime] = map[string]any{"path": s.wrapperPath}
		set("runtimes", merged)
		set("default-runtime", WrapperRuntime)
	}
	sort.Strings(changed)
	if len(changed) == 0 {
		return existing, nil, nil
	}
	out, err = json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return append(out, '\n'), changed, nil
}

// reloadable reports whether dockerd applies every changed key on SIGHUP
// (runtimes and default-runtime are; userland-proxy needs a restart).
func reloadable(changed []string) bool {
	for _, k := range changed {
		if k != "runtimes" && k != "default-runtime" {
			return false
		}
	}
	return true
}

// normalize round-trips v through JSON so that values decoded from a file
// and values built in Go compare equal.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// userlandProxyDisabled reports whether a daemon.json sets
// "userland-proxy": false.
func userlandProxyDisabled(content []byte) (bool, error) {
	if len(bytes.TrimSpace(content)) == 0 {
		return false, nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(content, &cfg); err != nil {
		return false, err
	}
	v, ok := cfg["userland-proxy"].(bool)
	return ok && !v, nil
}
