package testbed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/scenario"
)

// TestPrepareChecksArchivesFirst: Prepare (droprun deploy's way in) fails
// on a corrupt image archive before it looks for a cluster or docker.
func TestPrepareChecksArchivesFirst(t *testing.T) {
	dir := t.TempDir()
	for n, body := range map[string]string{
		"d.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec: {containers: [{name: app, image: a:1}]}\n",
		"bad.tar": "not a tar at all",
		"s.yaml":  "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: pre}\ncluster: {kind: {name: droprun-preflight-test}}\napp: {custom: {images: [a:1, a:2], imageArchives: [bad.tar], container: app}}\nvariants: [{name: mine, manifest: d.yaml}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Prepare(context.Background(), sc, Options{CreateCluster: true})
	if _, ok := scenario.AsErrors(err); !ok || tb != nil || !strings.Contains(err.Error(), "app.custom.imageArchives[0]") || !strings.Contains(err.Error(), "is not a tar archive") {
		t.Fatalf("Prepare = %v, %v; want a scenario error about bad.tar", tb, err)
	}
}
