package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/runfile"
)

const head = "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: strict}\n"

// endless reads as 'a' forever, like a device that has no end.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestReadCap: no file a user names is read past runfile.MaxUserFile, whatever it
// is, and the error names the file, the limit and what to do.
func TestReadCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	body := head + "variants: [{variant: no-prestop}]\n"
	if err := os.WriteFile(big, append([]byte(body), bytes.Repeat([]byte("# padding\n"), 2<<20/10)...), 0o644); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(dir, "exact.yaml")
	if err := os.WriteFile(exact, append([]byte(body), bytes.Repeat([]byte("#"), runfile.MaxUserFile-len(body))...), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		read func() error
		want string // "" = no error
	}{
		{"a 2 MiB scenario", func() error { _, err := Load(big); return err },
			big + ": is larger than 1 MiB, the most droprun reads from a scenario (fix: check the path"},
		{"/dev/zero as a scenario", func() error {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip("no /dev/zero")
			}
			_, err := Load("/dev/zero")
			return err
		}, "/dev/zero: is larger than 1 MiB"},
		{"a scenario of exactly 1 MiB", func() error { _, err := Load(exact); return err }, ""},
		{"a 2 MiB scenario in memory", func() error { _, err := Parse("mem.yaml", make([]byte, 2<<20)); return err },
			"mem.yaml: is larger than 1 MiB"},
		{"a 2 MiB Deployment manifest", func() error { _, err := ReadDeployment(big); return err },
			big + " is larger than 1 MiB, the most droprun reads from a Deployment manifest: check the path"},
		{"a reader without end", func() error { _, err := runfile.ReadAllCapped(endless{}, "pipe", "kubeconfig", 4096); return err },
			"pipe is larger than 4096 bytes, the most droprun reads from a kubeconfig"},
		{"a missing file", func() error { _, err := Load(filepath.Join(dir, "nope.yaml")); return err }, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestStrictKeys: keys match case-sensitively, a wrong-case key names its
// right spelling, and a key given twice is refused with its path.
func TestStrictKeys(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"Rate beside rate", head + "variants: [{variant: no-prestop}]\ntraffic:\n  Rate: 5\n  rate: 1000\n",
			[]string{"traffic.Rate: unknown field: field names are case-sensitive (fix: write rate)"}},
		{"Rate alone", head + "variants: [{variant: no-prestop}]\ntraffic: {Rate: 5}\n",
			[]string{"traffic.Rate: unknown field: field names are case-sensitive (fix: write rate)"}},
		{"wrong case in a variant", head + "variants: [{variant: prestop-sleep, PreStopSeconds: 3}]\n",
			[]string{"variants[0].PreStopSeconds: unknown field: field names are case-sensitive (fix: write preStopSeconds)"}},
		{"wrong case at the top", "APIVersion: droprun/v1alpha1\napiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nvariants: [{variant: no-prestop}]\n",
			[]string{"APIVersion: unknown field: field names are case-sensitive (fix: write apiVersion)"}},
		{"a typo lists the known fields", head + "variants: [{variant: no-prestop}]\ntraffic: {rat: 5}\n",
			[]string{"traffic.rat: unknown field (fix: check the spelling against the scenario format (droprun scenarios README); known fields here: arrivals, balance, between, connections, control, frontRetries, generators, idleTimeout,"}},
		{"a key twice", head + "variants: [{variant: no-prestop}]\ntraffic:\n  rate: 1000\n  rate: 5\n",
			[]string{"traffic.rate: is given twice (the second at line 7) (fix: keep one of them)"}},
		{"a key twice in a list entry", head + "variants:\n  - variant: no-prestop\n    variant: graceful-drain\n",
			[]string{"variants[0].variant: is given twice (the second at line 6)"}},
		{"a top-level key twice", head + "metadata: {name: again}\nvariants: [{variant: no-prestop}]\n",
			[]string{"metadata: is given twice (the second at line 4)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.body))
			if _, ok := AsErrors(err); !ok {
				t.Fatalf("err = %v (%T), want *Errors", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestProblemsTogether: decoding and validation problems come in one list;
// a value refused for its type is not reported again by validation.
func TestProblemsTogether(t *testing.T) {
	_, err := Parse("many.yaml", []byte(`apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: Bad_Name}
cluster:
  kind: {name: "x/../../a", nodes: lots, kubeProxyMode: userspace}
variants:
  - variant: nope
    preStopSeconds: 1.5
traffic:
  Rate: 5
  timeout: 2
  path: version
  path: /version
  keepAlive: [true]
`))
	e, ok := AsErrors(err)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		"traffic.path: is given twice (the second at line 13)",
		"cluster.kind.nodes: is a string, want a number",
		"variants[0].preStopSeconds: 1.5 is not a whole number",
		"traffic.keepAlive: is a list, want a boolean",
		"traffic.timeout: a duration must be a string with a unit",
		"traffic.Rate: unknown field: field names are case-sensitive (fix: write rate)",
		"metadata.name: \"Bad_Name\" is not a DNS label",
		"cluster.kind.kubeProxyMode: \"userspace\" is not a kube-proxy mode",
		"cluster.kind.name: \"x/../../a\" is not a kind cluster name",
		"variants[0].variant: \"nope\" is not a variant",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in\n%v", w, err)
		}
	}
	if len(e.List) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(e.List), len(want), err)
	}
	// Refused values fall back to unset: nodes is not also "is 0".
	if strings.Contains(err.Error(), "cluster.kind.nodes: is 0") {
		t.Errorf("validation repeated a refused value: %v", err)
	}
}

// TestShapeProblems: a value of the wrong shape is reported with its path,
// whatever the level, and never stops the rest being checked.
func TestShapeProblems(t *testing.T) {
	tests := []struct{ body, want string }{
		{"- just a list\n", "the file holds a list, want a map of fields"},
		{"plain text\n", "the file holds a string, want a map of fields"},
		{head + "variants: no-prestop\n", "variants: is a string, want a list"},
		{head + "variants: [no-prestop]\n", "variants[0]: is a string, want a map"},
		{head + "variants: [{variant: no-prestop, maxSurge: true}]\n", "variants[0].maxSurge: is a boolean, want a count or a percentage"},
		{head + "variants: [{variant: no-prestop, replicas: 99999999999}]\n", "variants[0].replicas: 99999999999 is not a whole number that fits in 32 bits"},
		{head + "variants: [{variant: no-prestop, resources: {requests: {cpu: [1]}}}]\n", "variants[0].resources.requests.cpu: is a list, want a string"},
		{head + "variants: [{variant: no-prestop}]\ntraffic: {rate: 5\n", "fix: fix the YAML at the line named"},
	}
	for _, tc := range tests {
		_, err := Parse("s.yaml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v\nwant it to contain %q", tc.body, err, tc.want)
		}
	}
	// sigs.k8s.io/yaml took a number for a string; that still holds.
	s, err := Parse("s.yaml", []byte(head+"variants: [{variant: no-prestop, resources: {requests: {cpu: 1}}}]\n"))
	if err != nil || s.Variants[0].Resources.Requests["cpu"] != "1" {
		t.Errorf("cpu: 1 = %v, %v", s, err)
	}
}

// TestHomeExpansion: a leading ~ in a path is the home directory, not a
// folder beside the scenario; ~name is refused.
func TestHomeExpansion(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  selector: {matchLabels: {app: m}}\n  template:\n    metadata: {labels: {app: m}}\n    spec: {containers: [{name: app, image: m:1}]}\n"
	if err := os.WriteFile(filepath.Join(home, "m.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(body string) string {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(head+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	s, err := Load(write("cluster: {existing: {kubeconfig: ~/.kube/config}}\nvariants: [{variant: no-prestop}]\noutput: ~/results\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Cluster.Existing.Kubeconfig, filepath.Join(home, ".kube/config"); got != want {
		t.Errorf("kubeconfig = %s, want %s", got, want)
	}
	if got, want := s.Output, filepath.Join(home, "results"); got != want {
		t.Errorf("output = %s, want %s", got, want)
	}

	s, err = Load(write("app: {custom: {images: [a:1, a:2], container: app, imageArchives: [~/a.tar, b.tar]}}\nvariants: [{name: mine, manifest: ~/m.yaml}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Variants[0].Manifest, filepath.Join(home, "m.yaml"); got != want {
		t.Errorf("manifest = %s, want %s", got, want)
	}
	if a := s.App.Custom.ImageArchives; a[0] != filepath.Join(home, "a.tar") || a[1] != filepath.Join(dir, "b.tar") {
		t.Errorf("imageArchives = %v", a)
	}

	_, err = Load(write("cluster: {existing: {kubeconfig: ~bob/.kube/config}}\nvariants: [{variant: no-prestop}]\n"))
	if err == nil || !strings.Contains(err.Error(), `cluster.existing.kubeconfig: "~bob/.kube/config" names another user's home directory`) {
		t.Errorf("~bob: err = %v", err)
	}
}

// TestExistingURL: the traffic URL is http://127.0.0.1:PORT, or a load
// balancer's http(s)://HOST[:PORT] (which a run still refuses unless
// --allow-target names the host: traffic.CheckURL), written plainly.
func TestExistingURL(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://127.0.0.1:30080", ""},
		{"http://127.0.0.1:1", ""},
		{"http://10.0.0.5:30080", ""},
		{"https://shop.example.com", ""},
		{"http://shop.example.com:8080", ""},
		{"https://[2001:db8::1]:443", ""},
		{"https://Shop.example.com", "is not written plainly (fix: write it as https://shop.example.com)"},
		{"https://shop.example.com/", "has a path, query or fragment (fix: write https://shop.example.com and put the request path in traffic.path"},
		{"http://shop.example.com:0", `has no port between 1 and 65535 (port "0")`},
		{"https://u:p@shop.example.com", "has credentials in it"},
		{"ftp://shop.example.com", `is not an http URL (scheme "ftp")`},
		{"http://0.0.0.0:30080", `is not on 127.0.0.1 (host "0.0.0.0")`},
		{"https://localhost:8443", `is not an http URL (scheme "https")`},
		{"http://localhost:30080", `is not on 127.0.0.1 (host "localhost")`},
		{"http://127.0.0.2:30080", `is not on 127.0.0.1`},
		{"http://[::1]:30080", `is not on 127.0.0.1 (host "::1")`},
		{"http://127.0.0.1.:30080", `is not on 127.0.0.1`},
		{"http://127.0.0.1:30080@example.com", `has credentials in it`},
		{"http://user:pw@127.0.0.1:30080", "has credentials in it (fix: remove the user:password@ part"},
		{"https://127.0.0.1:30080", `is not an http URL (scheme "https")`},
		{"127.0.0.1:30080", `is not a URL: first path segment in URL cannot contain colon`},
		{"//127.0.0.1:30080", `is not an http URL (scheme "")`},
		{"http:127.0.0.1:30080", "has no host"},
		{"http://127.0.0.1", `has no port between 1 and 65535 (port "")`},
		{"http://127.0.0.1:", `has no port between 1 and 65535`},
		{"http://127.0.0.1:0", `has no port between 1 and 65535 (port "0")`},
		{"http://127.0.0.1:65536", `has no port between 1 and 65535`},
		{"http://127.0.0.1:30080/", "has a path, query or fragment (fix: write http://127.0.0.1:30080 and put the request path in traffic.path"},
		{"http://127.0.0.1:30080/api", "has a path, query or fragment"},
		{"http://127.0.0.1:30080?x=1", "has a path, query or fragment"},
		{"http://127.0.0.1:30080#top", "has a path, query or fragment"},
		{"HTTP://127.0.0.1:30080", "is not written plainly (fix: write it as http://127.0.0.1:30080)"},
		{"http://127.0.0.1:030080", "is not written plainly (fix: write it as http://127.0.0.1:30080)"},
	}
	for _, tc := range tests {
		s := &Scenario{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "url"}, Variants: []Variant{{Variant: "no-prestop"}},
			Cluster: Cluster{Existing: &ExistingCluster{Kubeconfig: "/k", URL: tc.url}}}
		s.Default()
		var got []string
		for _, fe := range s.Validate() {
			got = append(got, fe.String())
		}
		all := strings.Join(got, "\n")
		if tc.want == "" && len(got) > 0 || tc.want != "" && !strings.Contains(all, "cluster.existing.url: "+`"`+tc.url+`" `+tc.want) {
			t.Errorf("%s: %q; want %q", tc.url, got, tc.want)
		}
	}
}

// TestReadDeploymentStrict: a manifest's keys are matched as the API server
// matches them.
func TestReadDeploymentStrict(t *testing.T) {
	const base = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  selector: {matchLabels: {app: m}}\n"
	tests := []struct{ body, want string }{
		{base + "  template: {spec: {containers: [{name: app, image: m:1}]}}\n", ""},
		{base + "  Replicas: 2\n  template: {spec: {containers: [{name: app}]}}\n", `unknown field "spec.Replicas"`},
		{base + "  replicas: 2\n  replicas: 3\n", `key "replicas" already set in map`},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		p := filepath.Join(dir, "m"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadDeployment(p)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: err = %v; want %q", tc.body, err, tc.want)
		}
	}
}

// TestProblemCap: a file with very many problems gets a bounded list.
func TestProblemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(head + "variants:\n")
	for range 200 {
		b.WriteString("  - variant: nope\n")
	}
	_, err := Parse("s.yaml", []byte(b.String()))
	e, ok := AsErrors(err)
	if !ok || len(e.List) != maxProblems || !strings.Contains(err.Error(), "more problems") {
		t.Fatalf("err = %v", err)
	}
}
