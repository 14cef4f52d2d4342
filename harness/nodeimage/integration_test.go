package nodeimage

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/droprun/droprun/internal/citest"
)

// dockerRunning skips the test when no docker engine answers.
func dockerRunning(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		citest.Missing(t, "no docker CLI: install an engine (droprun engine setup on Debian) to run this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "info").Run(); err != nil {
		citest.Missing(t, "docker engine not running (start it with droprun engine setup)")
	}
}

// TestIntegrationBuild builds the node image for real. It takes about 15
// minutes cold on 2 cores, so it runs only with DROPRUN_NODEIMAGE_BUILD=1
// (go test -timeout 0).
func TestIntegrationBuild(t *testing.T) {
	if os.Getenv("DROPRUN_NODEIMAGE_BUILD") != "1" {
		t.Skip("set DROPRUN_NODEIMAGE_BUILD=1 to build the node image (about 15 min cold, seconds when cached)")
	}
	dockerRunning(t)
	res, err := Build(context.Background(), Options{Out: os.Stdout, Force: os.Getenv("DROPRUN_NODEIMAGE_FORCE") == "1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (inputs %s) up-to-date=%v in %s", res.Image, res.InputsHash, res.UpToDate, res.Duration)
	ok, err := Exists(context.Background(), res.Image)
	if err != nil || !ok {
		t.Fatalf("Exists(%s) = %v, %v after Build", res.Image, ok, err)
	}
}
