package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestScenarioKubeconfigRunsNothing: a scenario whose kubeconfig holds an
// exec credential plugin, or a token file outside the kubeconfig's own
// directory, is refused before any request (exit 2): the plugin's command
// never runs, and the API server (an httptest server here) never hears
// from droprun, so the token file is never sent.
func TestScenarioKubeconfigRunsNothing(t *testing.T) {
	var requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer api.Close()
	dir := t.TempDir()
	ran := filepath.Join(t.TempDir(), "plugin-ran")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(user string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users:
- name: u
  user:
%s
`, api.URL, user)
	}
	for name, body := range map[string]string{
		"exec.kubeconfig":  kubeconfig(fmt.Sprintf("    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, \"id > %s\"], interactiveMode: Never}", ran)),
		"token.kubeconfig": kubeconfig("    tokenFile: " + secret),
		"exec.yaml":        "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: exec}\ncluster: {existing: {kubeconfig: exec.kubeconfig}}\nvariants: [{variant: no-prestop}]\n",
		"token.yaml":       "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: token}\ncluster: {existing: {kubeconfig: token.kubeconfig}}\nvariants: [{variant: no-prestop}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--output-dir", filepath.Join(dir, "run-exec"), filepath.Join(dir, "exec.yaml")}, `runs the credential plugin "/bin/sh -c id > ` + ran},
		{[]string{"run", "--output-dir", filepath.Join(dir, "run-token"), filepath.Join(dir, "token.yaml")}, "sends " + secret + " as its token, outside the kubeconfig's directory"},
		{[]string{"deploy", "--variant", "no-prestop", filepath.Join(dir, "exec.yaml")}, "runs the credential plugin"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--trust-kubeconfig") {
			t.Errorf("droprun %s: exit %d, want 2 saying %q and how to consent:\n%s", strings.Join(tc.args, " "), code, tc.want, errOut)
		}
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("the scenario's credential plugin ran (%s exists)", ran)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the API server got %d request(s) from a refused kubeconfig", n)
	}
	for _, d := range []string{"run-exec", "run-token"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Errorf("a refused run made its directory %s", d)
		}
	}
}
