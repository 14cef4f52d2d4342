package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/scenario"
)

// TestCheckArchivesFirst: Check (droprun deploy's and run's way in) fails
// on a corrupt image archive, before anything looks for a cluster or
// docker.
func TestCheckArchivesFirst(t *testing.T) {
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
	in, err := Check(sc, nil)
	if _, ok := scenario.AsErrors(err); !ok || in != nil || !strings.Contains(err.Error(), "app.custom.imageArchives[0]") || !strings.Contains(err.Error(), "is not a tar archive") {
		t.Fatalf("Check = %v, %v; want a scenario error about bad.tar", in, err)
	}
}

// TestPreflightRefusesIPVSWithoutIPVS: a kind cluster in kube-proxy's ipvs
// mode is refused before any cluster work on a kernel without ip_vs (the
// nodes share it); nftables passes.
func TestPreflightRefusesIPVSWithoutIPVS(t *testing.T) {
	if ok, why := engine.IPVS("/"); ok {
		t.Skipf("this host has ip_vs (%s): nothing to refuse", why)
	}
	dir := t.TempDir()
	for mode, wantErr := range map[string]bool{"ipvs": true, "nftables": false} {
		p := filepath.Join(dir, mode+".yaml")
		body := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: m}\ncluster: {kind: {kubeProxyMode: " + mode + "}}\nvariants: [{variant: no-prestop}]\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Preflight(sc)
		if got := err != nil; got != wantErr {
			t.Fatalf("%s: Preflight = %v, want error %v", mode, err, wantErr)
		}
		if wantErr && (!strings.Contains(err.Error(), "cluster.kind.kubeProxyMode") || !strings.Contains(err.Error(), "no ip_vs")) {
			t.Errorf("%s: error %q does not name the field and the missing ip_vs", mode, err)
		}
	}
}

// TestCheckNodeImageConsent: a kind node image other than droprun's or
// kind's is refused as not consented to (an *AllowError) until the user
// allows it on the command line.
func TestCheckNodeImageConsent(t *testing.T) {
	sc, err := scenario.Parse("node", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: node}\ncluster: {kind: {nodeImage: \"127.0.0.1:5000/other/node:v1.37.2\"}}\nvariants: [{variant: no-prestop}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ae *AllowError
	if _, err := Check(sc, nil); !errors.As(err, &ae) || !strings.Contains(err.Error(), "--allow-node-image 127.0.0.1:5000/other/node:v1.37.2") {
		t.Errorf("a node image nobody allowed: %v, want an AllowError naming the flag", err)
	}
	sc.Cluster.Kind.NodeImageAllowed = true
	if _, err := Check(sc, nil); err != nil {
		t.Errorf("the node image allowed: %v", err)
	}
	// Parsing never sets the consent: it is not a field of the file.
	if _, err := scenario.Parse("node", []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: node}\ncluster: {kind: {nodeImage: \"127.0.0.1:5000/other/node:v1.37.2\", NodeImageAllowed: true}}\nvariants: [{variant: no-prestop}]\n")); err == nil {
		t.Error("a scenario setting NodeImageAllowed parsed")
	}
}
