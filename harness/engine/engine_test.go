package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCapField(t *testing.T) {
	status := []byte("Name:\tbash\nCapInh:\t0000000000000000\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n")
	bnd, err := parseCapField(status, "CapBnd")
	if err != nil {
		t.Fatal(err)
	}
	if hasCap(bnd, capSysResource) {
		t.Errorf("CapBnd %x: CAP_SYS_RESOURCE reported present", bnd)
	}
	if !hasCap(bnd, 21) { // CAP_SYS_ADMIN
		t.Errorf("CapBnd %x: CAP_SYS_ADMIN reported missing", bnd)
	}
	full, _ := parseCapField([]byte("CapBnd:\t000001ffffffffff\n"), "CapBnd")
	if !hasCap(full, capSysResource) {
		t.Error("full bounding set: CAP_SYS_RESOURCE reported missing")
	}
	if _, err := parseCapField([]byte("CapBnd:\tzz\n"), "CapBnd"); err == nil {
		t.Error("bad hex: want an error")
	}
	if _, err := parseCapField([]byte("Name:\tx\n"), "CapBnd"); err == nil {
		t.Error("no CapBnd: want an error")
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return m
}

func TestMergeDaemonConfig(t *testing.T) {
	wrapper := daemonSettings{wrapperPath: "/usr/local/bin/droprun-runc"}
	tests := []struct {
		name        string
		existing    string
		settings    daemonSettings
		wantChanged []string
		wantKeys    map[string]any // checked after decoding
	}{
		{
			name: "no file, wrapper needed", settings: wrapper,
			wantChanged: []string{"default-runtime", "runtimes", "userland-proxy"},
			wantKeys: map[string]any{
				"userland-proxy":  false,
				"default-runtime": "droprun-runc",
				"runtimes":        map[string]any{"droprun-runc": map[string]any{"path": "/usr/local/bin/droprun-runc"}},
			},
		},
		{
			name: "no file, no wrapper", existing: "",
			wantChanged: []string{"userland-proxy"},
			wantKeys:    map[string]any{"userland-proxy": false},
		},
		{
			name:     "keeps other keys and runtimes",
			existing: `{"log-driver": "json-file", "max-concurrent-downloads": 3, "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime"}}, "userland-proxy": true}`,
			settings: wrapper, wantChanged: []string{"default-runtime", "runtimes", "userland-proxy"},
			wantKeys: map[string]any{
				"log-driver":               "json-file",
				"max-concurrent-downloads": float64(3),
				"userland-proxy":           false,
				"runtimes": map[string]any{
					"nvidia":       map[string]any{"path": "/usr/bin/nvidia-container-runtime"},
					"droprun-runc": map[string]any{"path": "/usr/local/bin/droprun-runc"},
				},
			},
		},
		{
			name:        "already merged",
			existing:    `{"default-runtime": "droprun-runc", "runtimes": {"droprun-runc": {"path": "/usr/local/bin/droprun-runc"}}, "userland-proxy": false}`,
			settings:    wrapper,
			wantChanged: nil,
		},
		{
			name:        "no wrapper leaves an existing default runtime alone",
			existing:    `{"default-runtime": "crun", "userland-proxy": false}`,
			wantChanged: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := mergeDaemonConfig([]byte(tt.existing), tt.settings)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(changed, tt.wantChanged) {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if tt.wantChanged == nil {
				if string(out) != tt.existing {
					t.Errorf("unchanged config rewritten:\n%s", out)
				}
				return
			}
			got := decode(t, out)
			for k, want := range tt.wantKeys {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("%s = %#v, want %#v", k, got[k], want)
				}
			}
			// Merging the result again changes nothing.
			_, again, err := mergeDaemonConfig(out, tt.settings)
			if err != nil || again != nil {
				t.Errorf("second merge: changed %v, err %v; want no change", again, err)
			}
		})
	}
	if _, _, err := mergeDaemonConfig([]byte("{broken"), wrapper); err == nil {
		t.Error("invalid daemon.json: want an error, not a clobbered file")
	}
	// Someone's own default runtime is refused, never overwritten.
	for _, own := range []string{"crun", "runc"} {
		if _, _, err := mergeDaemonConfig([]byte(`{"default-runtime": "`+own+`"}`), wrapper); err == nil || !strings.Contains(err.Error(), `"default-runtime": `+own) {
			t.Errorf("default-runtime %s with the wrapper needed: %v, want refused naming it", own, err)
		}
	}
}

// TestWriteDaemonConfigRecordsFirst: the file as it was reaches the
// record before it changes, whether it existed or not, and an unchanged
// file records nothing.
func TestWriteDaemonConfigRecordsFirst(t *testing.T) {
	for _, existing := range []string{"", `{"log-driver": "json-file"}`} {
		path := filepath.Join(t.TempDir(), "daemon.json")
		if existing != "" {
			if err := os.WriteFile(path, []byte(existing), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var got []FileBefore
		record := func(f FileBefore) error {
			b, _ := os.ReadFile(path)
			if string(b) != existing {
				t.Errorf("the file changed before it was recorded: %q", b)
			}
			got = append(got, f)
			return nil
		}
		if _, err := writeDaemonConfig(io.Discard, path, daemonSettings{}, record); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Path != path || got[0].Existed != (existing != "") || got[0].Content != existing {
			t.Errorf("recorded %+v for a file that existed %v with %q", got, existing != "", existing)
		}
		got = nil
		if _, err := writeDaemonConfig(io.Discard, path, daemonSettings{}, record); err != nil || len(got) != 0 {
			t.Errorf("an unchanged file: recorded %+v (%v), want nothing", got, err)
		}
	}
}

// TestRestoreFile puts a recorded file back, or removes one that did not
// exist; the record lists what setup changed.
func TestRestoreFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(p, []byte(`{"userland-proxy": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restoreFile(FileBefore{Path: p, Existed: true, Content: "{}\n"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" {
		t.Errorf("restored %q, want {}", b)
	}
	if err := restoreFile(FileBefore{Path: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a file that did not exist before is still there (%v)", err)
	}
	r := &HostRecord{Packages: []string{"docker.io"}, DaemonConfig: &FileBefore{Path: p}, RouteLocalnet: "0", LocalnetGuard: true}
	if c := strings.Join(r.Changes(), "; "); !strings.Contains(c, "installed docker.io") || !strings.Contains(c, "created "+p) || !strings.Contains(c, "route_localnet=1 (was 0)") || !strings.Contains(c, "raw-table drop") {
		t.Errorf("changes: %s", c)
	}
}

func TestReloadable(t *testing.T) {
	if !reloadable([]string{"default-runtime", "runtimes"}) {
		t.Error("runtime keys: want reloadable")
	}
	if reloadable([]string{"runtimes", "userland-proxy"}) {
		t.Error("userland-proxy: want a restart")
	}
}

func TestUserlandProxyDisabled(t *testing.T) {
	for content, want := range map[string]bool{
		``:                          false,
		`{}`:                        false,
		`{"userland-proxy": true}`:  false,
		`{"userland-proxy": false}`: true,
	} {
		got, err := userlandProxyDisabled([]byte(content))
		if err != nil || got != want {
			t.Errorf("userlandProxyDisabled(%q) = %v, %v; want %v", content, got, err, want)
		}
	}
}

func TestReportPrint(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: "docker CLI", OK: true, Detail: "/usr/bin/docker"},
		{Name: "node image", Detail: "droprun/node:v1.37.2 not present", Fix: "droprun node-image build"},
	}}
	if r.OK() {
		t.Error("OK() = true with a failed check")
	}
	var buf bytes.Buffer
	if err := r.Print(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"CHECK", "docker CLI", "ok", "FAIL", "fix: droprun node-image build", "1 of 2 checks failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestWrapperSourceEmbedded(t *testing.T) {
	for _, n := range []string{"runcwrap/main.go", "runcwrap/wrap.go"} {
		b, err := wrapperSource.ReadFile(n)
		if err != nil || !bytes.Contains(b, []byte("package main")) {
			t.Errorf("%s not embedded: %v", n, err)
		}
	}
	if h := wrapperSourceHash(); len(h) != 16 {
		t.Errorf("wrapperSourceHash() = %q", h)
	}
}
