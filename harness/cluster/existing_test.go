package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExistingKubeconfigRead: a user's kubeconfig is read at most once and
// at most 1 MiB of it, and paths inside it stay relative to the file, as
// clientcmd.LoadFromFile has them.
func TestExistingKubeconfigRead(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# padding\n"), 2<<20/10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Existing(big, "", ""); err == nil || !strings.Contains(err.Error(), big+" is larger than 1 MiB, the most droprun reads from a kubeconfig") {
		t.Errorf("2 MiB kubeconfig: err = %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := Existing("/dev/zero", "", ""); err == nil || !strings.Contains(err.Error(), "is larger than 1 MiB") {
			t.Errorf("/dev/zero: err = %v", err)
		}
	}
	kc := filepath.Join(dir, "kubeconfig")
	err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: kind-ca
clusters:
- name: kind-ca
  cluster: {server: "https://127.0.0.1:40000", certificate-authority: ca.crt}
contexts:
- name: kind-ca
  context: {cluster: kind-ca, user: u}
users:
- name: u
  user: {token: x}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Existing(kc, "", ""); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca.crt")) {
		t.Errorf("missing ca.crt beside the kubeconfig: err = %v, want it to name %s", err, filepath.Join(dir, "ca.crt"))
	}
}
