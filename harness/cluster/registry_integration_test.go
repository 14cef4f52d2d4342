package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/nodeimage"
	"github.com/droprun/droprun/internal/citest"
)

// registryModule is the CNCF distribution registry, built from the Go
// module proxy for this test.
const registryModule = "github.com/distribution/distribution/v3/cmd/registry@v3.1.2"

// TestIntegrationNodeImageFromRegistry creates a kind cluster from a node
// image that only a registry on 127.0.0.1 has: droprun must pull it (and
// build nothing), tell by its labels that it is droprun's image under
// another name, and bring the node to Ready. It needs an engine and
// droprun's cached node image (pushed to the registry under another name);
// it builds the registry with the local Go toolchain (DROPRUN_REGISTRY_BIN
// names a prebuilt one). Takes about 2 minutes warm.
func TestIntegrationNodeImageFromRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := engine.DockerInfo(ctx); err != nil {
		citest.Missing(t, "no container engine here (%v): run `droprun engine setup` to run this test", err)
	}
	if ok, err := nodeimage.Exists(ctx, nodeimage.DefaultImage); err != nil || !ok {
		citest.Missing(t, "node image %s not built (%v): run `droprun node-image build` to run this test", nodeimage.DefaultImage, err)
	}

	addr := serveRegistry(ctx, t)
	mirror := addr + "/mirror/node:" + nodeimage.DefaultKubernetesVersion
	docker(ctx, t, "tag", nodeimage.DefaultImage, mirror)
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "docker", "image", "rm", mirror).Run() })
	start := time.Now()
	docker(ctx, t, "push", mirror)
	t.Logf("pushed %s in %s", mirror, time.Since(start).Round(time.Second))
	docker(ctx, t, "image", "rm", mirror)
	if ok, err := nodeimage.Exists(ctx, mirror); err != nil || ok {
		t.Fatalf("%s still in the local engine after docker image rm (%v, %v)", mirror, ok, err)
	}

	// testbed.NewKind's host, which a test inside this package cannot import.
	k, err := NewKind(testLog{t}, Host{
		Ready:            func(ctx context.Context) error { _, err := engine.DockerInfo(ctx); return err },
		LacksSysResource: engine.LacksCapSysResource,
	})
	if err != nil {
		t.Fatal(err)
	}
	k.StateDir = t.TempDir()
	buildCache := t.TempDir()
	k.NodeImages.CacheDir = buildCache // an offline build would write here
	c := Config{Name: "droprun-registry", Nodes: 1, KubeProxyMode: "iptables", NodeImage: mirror,
		HostPort: freePort(t), GatewayHostPort: freePort(t)}
	t.Cleanup(func() {
		if err := k.Down(context.Background(), c.Name); err != nil {
			t.Errorf("deleting cluster %s: %v", c.Name, err)
		}
	})
	cl, err := k.Up(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	img := cl.NodeImage
	if img.Image != mirror || img.Source != nodeimage.SourceGiven || !img.Pulled || img.Built {
		t.Errorf("node image %+v: want %s given and pulled, nothing built", img, mirror)
	}
	if !img.Droprun {
		t.Errorf("node image %+v: droprun's image under another name must be recognised by its %s label", img, nodeimage.LabelInputs)
	}
	if ok, err := nodeimage.Exists(ctx, mirror); err != nil || !ok {
		t.Errorf("%s not in the local engine after Up (%v, %v): it was not pulled", mirror, ok, err)
	}
	if entries, err := os.ReadDir(buildCache); err != nil || len(entries) != 0 {
		t.Errorf("the node image build cache %s has %d entries (%v): a build ran", buildCache, len(entries), err)
	}
	nodes, err := k.Status(ctx, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !nodes[0].Ready {
		t.Fatalf("nodes %+v: want 1 Ready", nodes)
	}

	// The running cluster matches its settings again, and "auto" accepts
	// the image it runs (the hash follows the running image).
	for _, ref := range []string{mirror, nodeimage.Auto} {
		again := c
		again.NodeImage = ref
		cl, err := k.Connect(ctx, again)
		if err != nil {
			t.Errorf("Connect with nodeImage %s: %v", ref, err)
			continue
		}
		if cl.NodeImage.Image != mirror || !cl.NodeImage.Droprun || cl.NodeImage.Pulled {
			t.Errorf("Connect with nodeImage %s: node image %+v", ref, cl.NodeImage)
		}
	}
}

// serveRegistry builds the distribution registry and serves it on
// 127.0.0.1 with filesystem storage in a temporary directory until the
// test ends. It returns host:port once /v2/ answers.
func serveRegistry(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := os.Getenv("DROPRUN_REGISTRY_BIN")
	if bin == "" {
		gobin := t.TempDir()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "install", registryModule)
		cmd.Env = append(os.Environ(), "GOBIN="+gobin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s: %v\n%s", registryModule, err, out)
		}
		bin = filepath.Join(gobin, "registry")
		t.Logf("built the registry in %s", time.Since(start).Round(time.Second))
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: %s}
http: {addr: %q}
`, filepath.Join(dir, "data"), addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", config)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("the registry exited: %v", err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("registry on %s: %v\n%s", addr, err, logs.String())
	}
	return addr
}

func docker(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testLog sends kind's and droprun's progress to the test log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
