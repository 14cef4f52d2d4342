package run

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/cluster"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed"
	"github.com/droprun/droprun/harness/testbed/render"
)

// TestEveryPathAimsAtWhatItRenders: every combination of app (bookshop, a
// custom app), target, protocol and load source either fails validation
// with its reason and a fix, or every place its load is planned to go is
// a Service the run renders: from the host, the path's node port on a
// rendered Service; from generator pods, a rendered Service's DNS name and
// port (east-west) or the path's node port on every node. No cell may aim
// at an object that does not exist (a custom app east-west once aimed at
// bookshop's web and failed every request).
func TestEveryPathAimsAtWhatItRenders(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  selector: {matchLabels: {app: shop}}\n  template:\n    metadata: {labels: {app: shop}}\n    spec: {containers: [{name: app, image: shop:1}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := fake.NewClientset(node("cp", "172.18.0.2"), node("w1", "172.18.0.3"), node("w2", "172.18.0.4"))
	apps := map[string]string{
		"bookshop": "variants: [{variant: no-prestop}]\n",
		"custom":   "app: {custom: {images: [shop:1, shop:2], container: app}}\nvariants: [{name: mine, manifest: shop.yaml}]\n",
	}
	protocols := map[string]string{"http1-new": "", "keep-alive": "keepAlive: true, ", "h2c": "protocol: h2c, ", "grpc": "protocol: grpc, "}
	sources := map[string]string{"host": "", "pods": "generators: {from: pods}, "}
	targets := []string{"nodeport", "gateway", "traefik", "caddy", "clusterip"}
	protoOrder := []string{"http1-new", "keep-alive", "h2c", "grpc"}
	cells, refused := 0, 0
	supported := map[string]bool{} // "app target protocol source" that validate takes
	for _, appName := range []string{"bookshop", "custom"} {
		app := apps[appName]
		for _, target := range targets {
			for _, protoName := range protoOrder {
				proto := protocols[protoName]
				for _, srcName := range []string{"host", "pods"} {
					src := sources[srcName]
					cell := fmt.Sprintf("%s %s %s from %s", appName, target, protoName, srcName)
					cells++
					file := filepath.Join(dir, strings.ReplaceAll(cell, " ", "-")+".yaml")
					body := "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: cell}\n" + app + "traffic: {" + proto + src + "target: " + target + "}\n"
					if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					sc, err := scenario.Load(file)
					if err != nil {
						refused++
						t.Logf("%s: refused: %s", cell, firstProblem(err))
						if !strings.Contains(err.Error(), "(fix: ") {
							t.Errorf("%s: refused without a fix: %v", cell, err)
						}
						continue
					}
					supported[cell] = true
					services := renderedServices(t, sc)
					p := sc.Path()
					if !sc.Traffic.FromPods() {
						if !servesNodePort(services, p.NodePort) {
							t.Errorf("%s: the host's load goes to node port %d, which no rendered Service has", cell, p.NodePort)
						}
						continue
					}
					r := &runner{sc: sc, tb: &testbed.Testbed{Cluster: &cluster.Cluster{Client: nodes}}}
					targets, err := insideTargets(context.Background(), r)
					if err != nil {
						t.Errorf("%s: %v", cell, err)
						continue
					}
					for _, tg := range targets {
						u, err := url.Parse(tg.URL)
						if err != nil {
							t.Fatal(err)
						}
						port, _ := strconv.Atoi(u.Port())
						switch name, isService := strings.CutSuffix(u.Hostname(), "."+sc.Namespace+".svc.cluster.local."); {
						case isService && !servesPort(services, name, int32(port)):
							t.Errorf("%s: generators aim at Service %s port %d, which the run does not render", cell, name, port)
						case !isService && (net.ParseIP(u.Hostname()) == nil || int32(port) != p.NodePort || !servesNodePort(services, p.NodePort)):
							t.Errorf("%s: generators aim at %s, not a node's IP at a rendered node port", cell, tg.URL)
						}
					}
				}
			}
		}
	}
	t.Logf("%d cells: %d refused at validate, %d aim at rendered Services", cells, refused, cells-refused)
	if refused == cells {
		t.Error("every cell refused")
	}
	checkSupportTable(t, supportTable(targets, protoOrder, supported))
}

var updateMatrix = flag.Bool("update-matrix", false, "TestEveryPathAimsAtWhatItRenders: write the support table into docs/own-service.md")

// supportTable is docs/own-service.md's support matrix: a row per target
// and protocol, a column per app and load source.
func supportTable(targets, protocols []string, supported map[string]bool) string {
	var b strings.Builder
	b.WriteString("| target | protocol | bookshop from the host | bookshop from pods | your app from the host | your app from pods |\n|---|---|---|---|---|---|\n")
	for _, target := range targets {
		for _, proto := range protocols {
			row := []string{target, proto}
			for _, app := range []string{"bookshop", "custom"} {
				for _, src := range []string{"host", "pods"} {
					mark := "—"
					if supported[fmt.Sprintf("%s %s %s from %s", app, target, proto, src)] {
						mark = "yes"
					}
					row = append(row, mark)
				}
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	}
	return b.String()
}

// checkSupportTable holds docs/own-service.md's table between its
// support-matrix markers to table (written there with -update-matrix).
func checkSupportTable(t *testing.T, table string) {
	t.Helper()
	const doc, begin, end = "../../docs/own-service.md", "<!-- support-matrix -->\n", "<!-- /support-matrix -->"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q markers", doc, strings.TrimSpace(begin), end)
	}
	got := s[i+len(begin) : j]
	if got == table {
		return
	}
	if *updateMatrix {
		if err := os.WriteFile(doc, []byte(s[:i+len(begin)]+table+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's support matrix is not what validate and the renderer do: go test ./harness/run -run TestEveryPathAimsAtWhatItRenders -update-matrix\nwant:\n%s", doc, table)
}

// renderedServices are the Services a run of sc's first variant applies:
// the app's and its front's.
func renderedServices(t *testing.T, sc *scenario.Scenario) []*corev1ac.ServiceApplyConfiguration {
	t.Helper()
	o, err := render.Render(sc, 0, 0, false, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1ac.ServiceApplyConfiguration
	for _, obj := range o.List() {
		if s, ok := obj.(*corev1ac.ServiceApplyConfiguration); ok {
			out = append(out, s)
		}
	}
	return out
}

func servesNodePort(services []*corev1ac.ServiceApplyConfiguration, nodePort int32) bool {
	for _, s := range services {
		for _, p := range s.Spec.Ports {
			if p.NodePort != nil && *p.NodePort == nodePort {
				return true
			}
		}
	}
	return false
}

func servesPort(services []*corev1ac.ServiceApplyConfiguration, name string, port int32) bool {
	for _, s := range services {
		for _, p := range s.Spec.Ports {
			if *s.Name == name && p.Port != nil && *p.Port == port {
				return true
			}
		}
	}
	return false
}

// firstProblem is the first line of a validation error after its file.
func firstProblem(err error) string {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > 1 {
		return strings.TrimSpace(lines[1])
	}
	return lines[0]
}

func node(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}
