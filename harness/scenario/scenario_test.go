package scenario

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// TestLoadTestdata loads every testdata file: valid-*.yaml must load, and
// each invalid-*.yaml must fail with the message its first line announces
// ("# error: ...") and name the file.
func TestLoadTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if strings.HasPrefix(filepath.Base(f), "valid-") {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if s.Metadata.Name == "" || len(s.Variants) == 0 {
					t.Fatalf("loaded an empty scenario: %+v", s)
				}
				return
			}
			want := expectedError(t, f)
			if err == nil {
				t.Fatalf("Load succeeded; want an error containing %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\ndoes not contain %q", err, want)
			}
			if !strings.HasPrefix(err.Error(), f+":") {
				t.Errorf("error %q does not start with the file name", err)
			}
			if _, ok := AsErrors(err); !ok {
				t.Errorf("error is %T, want *Errors", err)
			}
		})
	}
}

func expectedError(t *testing.T, file string) string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	if sc.Scan() {
		if want, ok := strings.CutPrefix(sc.Text(), "# error: "); ok {
			return want
		}
	}
	t.Fatalf("%s: first line must be '# error: <expected message>'", file)
	return ""
}

// TestShippedScenarios keeps every file in scenarios/ loadable.
func TestShippedScenarios(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	if len(files) < 7 {
		t.Fatalf("found %d shipped scenarios, want at least 7", len(files))
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := Load("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k := s.Cluster.Kind
	if k == nil || k.Name != "droprun" || k.Nodes != 3 || k.KubeProxyMode != "iptables" || k.HostPort != 30080 {
		t.Errorf("cluster defaults = %+v", k)
	}
	if *s.Rollouts != 3 || s.Namespace != "droprun" || s.Output != "results" {
		t.Errorf("rollouts=%d namespace=%q output=%q", *s.Rollouts, s.Namespace, s.Output)
	}
	tr := s.Traffic
	if tr.Rate != 1000 || tr.KeepAlive || tr.Timeout.Duration != 2*time.Second || tr.Target != "nodeport" || tr.Path != "/version" {
		t.Errorf("traffic defaults = %+v", tr)
	}
	if tr.MaxWorkers != 4000 {
		t.Errorf("maxWorkers = %d, want 2×rate×timeout = 4000", tr.MaxWorkers)
	}
	if s.Variants[0].Name != "no-prestop" {
		t.Errorf("variant name defaulted to %q", s.Variants[0].Name)
	}
	// The new pods' share is measured by default only where connections
	// outlive a request; an explicit value stands.
	for _, tc := range []struct {
		traffic string
		want    time.Duration
	}{
		{"{}", 0},
		{"{keepAlive: true}", DefaultBalance},
		{"{protocol: h2c}", DefaultBalance},
		{"{protocol: grpc}", DefaultBalance},
		{"{balance: 10s}", 10 * time.Second},
		{"{protocol: grpc, balance: 0s}", 0},
	} {
		sc, err := Parse("b.yaml", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: b}\nvariants: [{variant: no-prestop}]\ntraffic: "+tc.traffic+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Traffic.Balance.Duration; got != tc.want {
			t.Errorf("traffic %s: balance %s, want %s", tc.traffic, got, tc.want)
		}
	}
	// The client's idle timeout is net/http's where it keeps connections
	// idle, absent where it keeps none; requests come at a constant rate.
	for _, tc := range []struct {
		traffic string
		want    *Duration
	}{
		{"{}", nil},
		{"{protocol: grpc}", nil},
		{"{keepAlive: true}", D(traffic.DefaultIdleTimeout)},
		{"{protocol: h2c}", D(traffic.DefaultIdleTimeout)},
		{"{keepAlive: true, idleTimeout: 200ms}", D(200 * time.Millisecond)},
	} {
		sc, err := Parse("i.yaml", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: i}\nvariants: [{variant: no-prestop}]\ntraffic: "+tc.traffic+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Traffic.IdleTimeout; (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("traffic %s: idleTimeout %v, want %v", tc.traffic, got, tc.want)
		}
		if sc.Traffic.Arrivals != string(traffic.ArrivalsConstant) {
			t.Errorf("traffic %s: arrivals %q, want %s", tc.traffic, sc.Traffic.Arrivals, traffic.ArrivalsConstant)
		}
	}
	w := s.Effective(0)
	if w.IdleTimeout.Get() != 0 {
		t.Errorf("the app's idle timeout defaults to %s, want 0s (none)", w.IdleTimeout)
	}
	if *w.Replicas != 2 || w.MaxSurge.String() != "25%" || *w.TerminationGracePeriodSeconds != 30 || *w.PreStopSeconds != 5 {
		t.Errorf("workload defaults: replicas=%d surge=%s grace=%d prestop=%d", *w.Replicas, w.MaxSurge, *w.TerminationGracePeriodSeconds, *w.PreStopSeconds)
	}
}

// TestEffectivePrecedence: a variant's own value beats the scenario's
// defaults, which beat the built-in ones, field by field.
func TestEffectivePrecedence(t *testing.T) {
	s, err := Load("testdata/valid-tuned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w0, w1 := s.Effective(0), s.Effective(1)
	if *w0.Replicas != 3 || *w0.PreStopSeconds != 10 || *w1.PreStopSeconds != 5 {
		t.Errorf("replicas=%d prestop0=%d prestop1=%d", *w0.Replicas, *w0.PreStopSeconds, *w1.PreStopSeconds)
	}
	if *w0.Readiness.PeriodSeconds != 2 || *w0.Readiness.FailureThreshold != 2 {
		t.Errorf("readiness = period %d failure %d; want the defaults' 2 and the built-in 2", *w0.Readiness.PeriodSeconds, *w0.Readiness.FailureThreshold)
	}
	if w1.DrainDelay.Duration != 2*time.Second || w1.Flavour != "distroless" {
		t.Errorf("drain=%s flavour=%q", w1.DrainDelay, w1.Flavour)
	}
}

// TestAllProblemsAtOnce: a file with several mistakes reports each of them.
func TestAllProblemsAtOnce(t *testing.T) {
	_, err := Parse("many.yaml", []byte(`
apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: Bad_Name}
variants:
  - variant: nope
traffic: {rate: 0, path: version, maxWorkers: 10001}
`))
	e, ok := AsErrors(err)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"metadata.name", "variants[0].variant", "traffic.path", "traffic.rate: is 0, which droprun would read as not given", "traffic.maxWorkers: is 10001 (fix: leave it out for the default, or give a bound from 1 to 10000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if len(e.List) < 3 {
		t.Errorf("got %d problems, want at least 3", len(e.List))
	}
}

// TestWrittenZeroRefused: a 0 written where droprun reads 0 as "not
// given" is refused with its field named, never silently replaced by the
// default (rate: 0 once ran at 1,000 req/s); where 0 is a value (a
// preStop of 0 s, a swept value), it is taken.
func TestWrittenZeroRefused(t *testing.T) {
	head := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: z}\nvariants: [{variant: no-prestop}]\n"
	for _, tc := range []struct{ body, path string }{
		{"traffic: {rate: 0}", "traffic.rate"},
		{"traffic: {protocol: h2c, connections: 0}", "traffic.connections"},
		{"traffic: {maxWorkers: 0}", "traffic.maxWorkers"},
		{"traffic: {generators: {from: pods, count: 0}}", "traffic.generators.count"},
		{"cluster: {kind: {nodes: 0}}", "cluster.kind.nodes"},
		{"cluster: {kind: {hostPort: 0}}", "cluster.kind.hostPort"},
	} {
		_, err := Parse("z.yaml", []byte(head+tc.body+"\n"))
		if want := tc.path + ": is 0, which droprun would read as not given and replace with the default (fix: leave it out for the default, or give 1 or more)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tc.body, err, want)
		}
	}
	// output is checked for a run (CheckOutput), not when a recorded run's
	// scenario is read back: such a scenario parses.
	for _, out := range []string{"/etc/cron.d", "../elsewhere", "results/../../up"} {
		s, err := Parse("z.yaml", []byte(head+"output: "+out+"\n"))
		if err != nil {
			t.Fatalf("output %s: %v; a recorded run's scenario must parse", out, err)
		}
		if err := s.CheckOutput(); err == nil || !strings.Contains(err.Error(), "output: \""+out+"\" is not a folder under the directory droprun runs in") {
			t.Errorf("output %s: %v, want refused for a run", out, err)
		}
	}
	if s, err := Parse("z.yaml", []byte(head+"output: results/nightly\n")); err != nil || s.CheckOutput() != nil {
		t.Errorf("output results/nightly refused: %v", err)
	}
	if _, err := Parse("z.yaml", []byte(head+"defaults: {preStopSeconds: 0}\n")); err != nil {
		t.Errorf("preStopSeconds: 0 refused: %v", err)
	}
}

func TestCustomManifestChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n")
	f := write("s.yaml", `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: custom}
app: {custom: {images: [a:1, a:2], container: app}}
variants:
  - {name: mine, manifest: svc.yaml}
`)
	_, err := Load(f)
	if err == nil || !strings.Contains(err.Error(), "not an apps/v1 Deployment") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load("../../scenarios/custom-app.yaml"); err != nil {
		t.Fatalf("shipped custom-app: %v", err)
	}
	// A Deployment may not take the name of one of droprun's own objects.
	write("traefik.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: traefik}\nspec:\n  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec: {containers: [{name: app, image: a:1}]}\n")
	f = write("t.yaml", `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: custom}
app: {custom: {images: [a:1, a:2], container: app}}
variants:
  - {name: mine, manifest: traefik.yaml}
`)
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), `traefik.yaml names Deployment "traefik", a name droprun gives its own objects`) {
		t.Errorf("a Deployment named traefik: %v", err)
	}
}

// TestPortLayout: node k uses hostPort+2k and gatewayHostPort+2k; every one
// must be a port and no web port may be a gateway port.
func TestPortLayout(t *testing.T) {
	tests := []struct {
		nodes, web, gw int
		want           string // "" = valid
	}{
		{3, 30080, 30081, ""},
		{10, 30080, 30081, ""},
		{3, 30081, 30080, ""},
		{3, 30080, 30086, ""},
		{3, 30086, 30080, ""},
		{1, 30080, 30082, ""},
		{3, 65531, 65530, ""},
		{3, 30080, 30084, "cluster.kind.gatewayHostPort: 30084 collides with hostPort 30080: port 30084 would be node 2's web port and node 0's gateway port"},
		{3, 30084, 30080, "cluster.kind.gatewayHostPort: 30080 collides with hostPort 30084: port 30084 would be node 0's web port and node 2's gateway port"},
		{2, 30080, 30080, "port 30080 would be node 0's web port and node 0's gateway port"},
		{3, 65530, 65533, "cluster.kind.gatewayHostPort: 65533 puts the host port of node 2 (of 3) at 65537, past 65535"},
		{10, 65517, 65516, ""},
		{10, 65518, 65517, "cluster.kind.hostPort: 65518 puts the host port of node 9 (of 10) at 65536, past 65535 (fix: node k uses hostPort+2k: use at most 65517 with 10 nodes)"},
	}
	for _, tc := range tests {
		s := &Scenario{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "ports"}, Variants: []Variant{{Variant: "no-prestop"}},
			Cluster: Cluster{Kind: &KindCluster{Nodes: tc.nodes, HostPort: tc.web, GatewayHostPort: tc.gw}}}
		s.Default()
		var got []string
		for _, fe := range s.Validate() {
			got = append(got, fe.String())
		}
		all := strings.Join(got, "\n")
		if tc.want == "" && len(got) > 0 || tc.want != "" && !strings.Contains(all, tc.want) {
			t.Errorf("%d nodes, hostPort %d, gatewayHostPort %d: %q; want %q", tc.nodes, tc.web, tc.gw, got, tc.want)
		}
	}
}

// TestTrafficProtocol: traffic.protocol names the client's protocol, h2c
// with its connections, and every combination that cannot work is refused
// with what to do.
func TestTrafficProtocol(t *testing.T) {
	const head = "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: p}\nvariants: [{variant: no-prestop}]\n"
	tests := []struct {
		traffic string
		want    traffic.Protocol
		conns   int
		err     string
	}{
		{"{}", traffic.ProtocolNewConnection, 0, ""},
		{"{keepAlive: true}", traffic.ProtocolKeepAlive, 0, ""},
		{"{protocol: http1, keepAlive: true}", traffic.ProtocolKeepAlive, 0, ""},
		{"{protocol: h2c}", traffic.ProtocolH2C, traffic.DefaultConnections, ""},
		{"{protocol: h2c, connections: 8}", traffic.ProtocolH2C, 8, ""},
		{"{protocol: h3}", "", 0, `traffic.protocol: "h3" is not a protocol droprun speaks`},
		{"{protocol: h2c, keepAlive: true}", "", 0, "traffic.keepAlive: is set with protocol h2c"},
		{"{protocol: h2c, target: traefik}", "", 0, "traffic.protocol: h2c with target traefik (fix: use target nodeport"},
		{"{connections: 4}", "", 0, "traffic.connections: is 4 with a new connection per request (fix: leave it out, or set keepAlive: true"},
		{"{keepAlive: true, connections: 6}", traffic.ProtocolKeepAlive, 6, ""},
		{"{idleTimeout: 5s}", "", 0, "traffic.idleTimeout: is 5s with a new connection per request"},
		{"{protocol: grpc, idleTimeout: 5s}", "", 0, "traffic.idleTimeout: is 5s with gRPC"},
		{"{keepAlive: true, idleTimeout: -1s}", "", 0, "traffic.idleTimeout: is negative"},
		{"{arrivals: bursty}", "", 0, `traffic.arrivals: "bursty" is not a way to space requests (fix: use constant`},
		{"{protocol: h2c, connections: 300}", "", 0, "traffic.connections: is 300 (fix: give 1 to 256"},
		{"{protocol: grpc}", traffic.ProtocolGRPC, traffic.DefaultConnections, ""},
		{"{protocol: grpc, connections: 2, path: /grpc.health.v1.Health/Check}", traffic.ProtocolGRPC, 2, ""},
		{"{protocol: grpc, keepAlive: true}", "", 0, "traffic.keepAlive: is set with protocol grpc"},
		{"{protocol: grpc, target: gateway}", "", 0, "traffic.protocol: grpc with target gateway (fix: use target nodeport"},
		{"{protocol: grpc, path: /version}", "", 0, "traffic.path: is /version with protocol grpc (fix: leave it out: every gRPC request is a call of /grpc.health.v1.Health/Check"},
		{"{protocol: grpc, method: POST}", "", 0, "traffic.method: is POST with protocol grpc"},
		// A path is a path: it can never add a target or a query.
		{`{path: "/version,http://evil.example:80/"}`, "", 0, `traffic.path: "/version,http://evil.example:80/" holds ','`},
		{`{path: "/version http://evil.example/"}`, "", 0, `traffic.path: "/version http://evil.example/" holds ' '`},
		{`{path: "/version?to=evil"}`, "", 0, `holds '?'`},
		{`{path: "/a\tb"}`, "", 0, `holds '\t'`},
		{`{path: "/books/%2C;list"}`, traffic.ProtocolNewConnection, 0, ""},
		// Only a front droprun runs and can configure resends.
		{"{target: caddy, frontRetries: 2}", traffic.ProtocolNewConnection, 0, ""},
		{"{target: caddy, frontRetries: 5}", traffic.ProtocolNewConnection, 0, ""},
		{"{frontRetries: 1}", "", 0, "traffic.frontRetries: is 1 with target nodeport, which droprun cannot make resend (fix: use target caddy"},
		{"{target: gateway, frontRetries: 1}", "", 0, "traffic.frontRetries: is 1 with target gateway"},
		{"{target: traefik, frontRetries: 1}", "", 0, "traffic.frontRetries: is 1 with target traefik, whose retry middleware leaves no trace in its access log"},
		{"{target: caddy, frontRetries: 6}", "", 0, "traffic.frontRetries: is 6 (fix: give 1 to 5 resends"},
		{"{target: caddy, frontRetries: -1}", "", 0, "traffic.frontRetries: is -1"},
	}
	for _, tt := range tests {
		s, err := Parse("p.yaml", []byte(head+"traffic: "+tt.traffic+"\n"))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("traffic %s: %v, want an error containing %q", tt.traffic, err, tt.err)
			}
		case err != nil:
			t.Errorf("traffic %s: %v", tt.traffic, err)
		case s.Traffic.Protocol() != tt.want || s.Traffic.Connections != tt.conns,
			tt.want == traffic.ProtocolGRPC && s.Traffic.Path != traffic.GRPCPath:
			t.Errorf("traffic %s: protocol %s with %d connections to %s, want %s with %d", tt.traffic, s.Traffic.Protocol(), s.Traffic.Connections, s.Traffic.Path, tt.want, tt.conns)
		}
	}
}

// TestGRPCVariantsNeedGRPC: a gRPC variant says how the app's gRPC server
// stops, so measuring it over HTTP would measure its HTTP twin under its
// name: refused, saying which protocol to use.
func TestGRPCVariantsNeedGRPC(t *testing.T) {
	const head = "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: p}\n"
	_, err := Parse("p.yaml", []byte(head+"variants: [{variant: grpc-drain}]\n"))
	if err == nil || !strings.Contains(err.Error(), "grpc-drain sets how the app's grpc server stops, and traffic.protocol is http1 (fix: set traffic.protocol: grpc") {
		t.Errorf("grpc-drain over http1: %v", err)
	}
	if _, err := Parse("p.yaml", []byte(head+"variants: [{variant: grpc-drain}, {variant: no-prestop}]\ntraffic: {protocol: grpc}\n")); err != nil {
		t.Errorf("grpc-drain and no-prestop over grpc: %v", err)
	}
}

// TestGenerators: traffic.generators sends from the host by default, or
// from generator pods, one per kind node by default; the clusterip target
// needs them, and every setting that cannot work is refused with what to
// do.
func TestGenerators(t *testing.T) {
	const head = "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: p}\nvariants: [{variant: no-prestop}]\n"
	const existing = "cluster: {existing: {kubeconfig: kc}}\n"
	tests := []struct {
		body      string
		pods      bool
		count     int
		placement string
		err       string
	}{
		{"traffic: {}\n", false, 0, "", ""},
		{"traffic: {generators: {from: host}}\n", false, 0, "", ""},
		{"traffic: {generators: {from: pods}}\n", true, 3, PlacementOnePerNode, ""},
		{"cluster: {kind: {nodes: 2}}\ntraffic: {target: clusterip, generators: {from: pods, placement: any, count: 4}}\n", true, 4, PlacementAny, ""},
		{existing + "traffic: {generators: {from: pods, count: 5, image: reg.example/droprun-generator:abc}}\n", true, 5, PlacementOnePerNode, ""},
		{"traffic: {target: clusterip}\n", false, 0, "", "traffic.target: clusterip begins inside the cluster (fix: send from generator pods"},
		{"traffic: {generators: {from: laptop}}\n", false, 0, "", `traffic.generators.from: "laptop" is not where load can come from`},
		{"traffic: {generators: {count: 3}}\n", false, 0, "", "traffic.generators: sets count, placement, image or resources with from: host"},
		{"traffic: {target: gateway, generators: {from: pods}}\n", true, 3, PlacementOnePerNode, ""},
		{"traffic: {target: traefik, generators: {from: pods}}\n", true, 3, PlacementOnePerNode, ""},
		{"traffic: {protocol: h2c, generators: {from: pods}}\n", false, 0, "", "traffic.protocol: h2c with generator pods"},
		{"traffic: {generators: {from: pods, count: 4}}\n", false, 0, "", "traffic.generators.count: 4 generators one per node on 3 nodes (fix: use at most 3, or placement: any"},
		{"traffic: {rate: 2, generators: {from: pods}}\n", false, 0, "", "traffic.generators.count: 3 generators share 2 requests/s"},
		{"traffic: {generators: {from: pods, placement: spread}}\n", false, 0, "", `traffic.generators.placement: "spread" is not a placement`},
		{existing + "traffic: {generators: {from: pods, count: 2}}\n", false, 0, "", "traffic.generators.image: is required on an existing cluster"},
		{existing + "traffic: {generators: {from: pods}}\n", false, 0, "", "traffic.generators.count: is 0"},
		{existing + "traffic: {generators: {from: pods, count: 2, image: gen:latest}}\n", false, 0, "", `traffic.generators.image: "gen:latest" uses the latest tag`},
		{"traffic: {generators: {from: pods, image: gen:v1}}\n", false, 0, "", "traffic.generators.image: is set on droprun's kind cluster"},
		{"traffic: {generators: {from: pods, resources: {requests: {cpu: lots}}}}\n", false, 0, "", `traffic.generators.resources.requests.cpu: "lots" is not a quantity`},
		{"traffic: {generators: {from: pods, resources: {limits: {gpu: 1}}}}\n", false, 0, "", "traffic.generators.resources.limits.gpu: is not a resource droprun sets"},
	}
	for _, tt := range tests {
		s, err := Parse("p.yaml", []byte(head+tt.body))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error containing %q", tt.body, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.body, err)
		case s.Traffic.FromPods() != tt.pods || tt.pods && (s.Traffic.Generators.Count != tt.count || s.Traffic.Generators.Placement != tt.placement):
			t.Errorf("%s: from pods %v, generators %+v; want %v, %d %s", tt.body, s.Traffic.FromPods(), s.Traffic.Generators, tt.pods, tt.count, tt.placement)
		}
	}
}
