package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCapField(t *testing.T) {
	status := []byte("Name:\tcat\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n")
	got, err := parseCapField(status, "CapBnd")
	if err != nil {
		t.Fatal(err)
	}
	if got != 0x1fffeffffff {
		t.Errorf("CapBnd = %x, want 1fffeffffff", got)
	}
	if _, err := parseCapField(status, "CapAmb"); err == nil {
		t.Error("missing field: want an error")
	}
}

func TestMissingCaps(t *testing.T) {
	tests := []struct {
		name string
		bnd  uint64
		want []string
	}{
		{"this project's hosts", 0x1fffeffffff, []string{"CAP_SYS_RESOURCE"}},
		{"full set", 0x1ffffffffff, nil},
		{"also no CAP_BPF", 0x1fffeffffff &^ (1 << 39), []string{"CAP_SYS_RESOURCE", "CAP_BPF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingCaps(tt.bnd); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("missingCaps(%x) = %v, want %v", tt.bnd, got, tt.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want invocation
	}{
		{"shim create", []string{"--root", "/var/run/docker/runtime-runc/moby", "--log", "/run/x/log.json", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "id1"},
			invocation{command: "create", bundle: "/run/b"}},
		{"equals forms", []string{"--root=/r", "create", "--bundle=/run/b2", "id"}, invocation{command: "create", bundle: "/run/b2"}},
		{"short bundle", []string{"run", "-b", "bundle", "id"}, invocation{command: "run", bundle: "bundle"}},
		{"no bundle", []string{"--debug", "run", "id"}, invocation{command: "run"}},
		{"exec", []string{"--root", "/r", "--log", "l", "--log-format", "json", "exec", "--process", "/tmp/runc-process123", "--detach", "--pid-file", "p", "id"},
			invocation{command: "exec", process: "/tmp/runc-process123"}},
		{"exec short", []string{"exec", "-p=/tmp/p.json", "id"}, invocation{command: "exec", process: "/tmp/p.json"}},
		{"delete", []string{"--root", "/r", "delete", "--force", "id"}, invocation{command: "delete"}},
		{"version", []string{"--version"}, invocation{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseArgs(tt.args); got != tt.want {
				t.Errorf("parseArgs(%q) = %+v, want %+v", tt.args, got, tt.want)
			}
		})
	}
}

func TestSpecFile(t *testing.T) {
	tests := []struct {
		inv         invocation
		wantPath    string
		wantProcess bool
	}{
		{invocation{command: "create", bundle: "/run/b"}, "/run/b/config.json", false},
		{invocation{command: "run"}, "/cwd/config.json", false},
		{invocation{command: "run", bundle: "rel"}, "/cwd/rel/config.json", false},
		{invocation{command: "exec", process: "/tmp/p"}, "/tmp/p", true},
		{invocation{command: "exec"}, "", false},
		{invocation{command: "start"}, "", false},
	}
	for _, tt := range tests {
		path, isProcess := specFile(tt.inv, "/cwd")
		if path != tt.wantPath || isProcess != tt.wantProcess {
			t.Errorf("specFile(%+v) = %q, %v; want %q, %v", tt.inv, path, isProcess, tt.wantPath, tt.wantProcess)
		}
	}
}

// capsOf decodes the capability sets of a config.json or process.json.
func capsOf(t *testing.T, doc []byte, isProcess bool) map[string][]string {
	t.Helper()
	var v struct {
		Capabilities map[string][]string `json:"capabilities"`
		Process      struct {
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	if isProcess {
		return v.Capabilities
	}
	return v.Process.Capabilities
}

func TestStripCapsConfig(t *testing.T) {
	doc, err := os.ReadFile("testdata/config.json")
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := stripCaps(doc, []string{"CAP_SYS_RESOURCE"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Fatal("changed = false, want true")
	}
	caps := capsOf(t, out, false)
	for set, list := range caps {
		for _, c := range list {
			if c == "CAP_SYS_RESOURCE" {
				t.Errorf("%s still holds CAP_SYS_RESOURCE", set)
			}
		}
	}
	if want := []string{"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_NET_ADMIN"}; !reflect.DeepEqual(caps["bounding"], want) {
		t.Errorf("bounding = %v, want %v", caps["bounding"], want)
	}
	if caps["ambient"] == nil || len(caps["ambient"]) != 0 {
		t.Errorf("ambient = %#v, want an empty list kept", caps["ambient"])
	}
	// Everything else survives: big numbers exactly, HTML characters unescaped.
	for _, keep := range []string{"9223372036854771712", "4294967294", `"<keep & as is>"`, `"hostname":"kind-control-plane"`, "/proc/asound"} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("output lost %s:\n%s", keep, out)
		}
	}
}

func TestStripCapsProcess(t *testing.T) {
	doc, err := os.ReadFile("testdata/process.json")
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := stripCaps(doc, []string{"CAP_SYS_RESOURCE"}, true)
	if err != nil || !changed {
		t.Fatalf("stripCaps = changed %v, %v", changed, err)
	}
	caps := capsOf(t, out, true)
	want := map[string][]string{"bounding": {"CAP_KILL"}, "effective": {"CAP_KILL"}, "permitted": {"CAP_KILL"}}
	if !reflect.DeepEqual(caps, want) {
		t.Errorf("caps = %v, want %v", caps, want)
	}
}

func TestStripCapsUnchanged(t *testing.T) {
	doc, err := os.ReadFile("testdata/unprivileged.json")
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := stripCaps(doc, []string{"CAP_SYS_RESOURCE"}, false)
	if err != nil || changed || string(out) != string(doc) {
		t.Errorf("stripCaps of a spec without the capability: changed=%v err=%v, want the input untouched", changed, err)
	}
	if _, _, err := stripCaps([]byte("{not json"), []string{"CAP_SYS_RESOURCE"}, false); err == nil {
		t.Error("invalid JSON: want an error")
	}
}

func TestRewriteFile(t *testing.T) {
	doc, err := os.ReadFile("testdata/config.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rewriteFile(path, []string{"CAP_SYS_RESOURCE"}, false); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "CAP_SYS_RESOURCE") {
		t.Error("CAP_SYS_RESOURCE still in the file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 kept", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
