package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/scenario"
)

// TestPreflightBeforeAnything: a custom app whose image archive is missing
// fails at once, before a run directory or a cluster exists.
func TestPreflightBeforeAnything(t *testing.T) {
	dir := t.TempDir()
	for n, body := range map[string]string{
		"d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec: {containers: [{name: app, image: a:1}]}\n",
		"s.yaml": "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: pre}\napp: {custom: {images: [a:1, a:2], imageArchives: [gone.tar], container: app}}\nvariants: [{name: mine, manifest: d.yaml}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	start := time.Now()
	a, err := Run(context.Background(), sc, Options{Dir: out})
	if _, ok := scenario.AsErrors(err); !ok || a != nil || !strings.Contains(err.Error(), "gone.tar: does not exist") {
		t.Fatalf("Run = %v, %v; want no analysis and a scenario error about gone.tar", a, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the preflight took %s", took)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a run directory was created for bad input (%v)", err)
	}
}
