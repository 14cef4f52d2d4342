package run

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/dataplane"
	"github.com/droprun/droprun/harness/kube"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// watchRoutes starts watching, inside every kind node, the rules that
// route the traffic's Service to each pod (harness/dataplane), and returns
// the function that stops it. On other clusters, and in ipvs mode, it
// says so and does nothing; the analysis then falls back to kube-proxy's
// sync metrics where the run polled them (kind clusters only).
func (r *runner) watchRoutes(ctx context.Context) (stop func() error, err error) {
	nodeExec := r.tb.Cluster.Exec()
	if nodeExec == nil {
		fmt.Fprintf(r.log, "routes: not a kind cluster: droprun cannot watch its nodes' rules, so this run has no (pod, node) pairs (droprun advise needs a run on a kind cluster)\n")
		return noStop, nil
	}
	if k := r.sc.Cluster.Kind; k != nil && k.KubeProxyMode == "ipvs" {
		// ipvs routes in the kernel's IPVS tables, not in nf_tables.
		fmt.Fprintf(r.log, "routes: kube-proxy runs in ipvs mode, whose rules nft cannot see; the (pod, node) pairs come from kube-proxy's sync metrics\n")
		return noStop, nil
	}
	svc := dataplane.Service{Namespace: r.sc.Namespace, Name: variant.WebName, Ports: []string{variant.ServicePortName}}
	if c := r.sc.App.Custom; c != nil && c.Service == "" {
		// droprun's Service for a custom app is named after its Deployment.
		name, err := r.customServiceName()
		if err != nil {
			fmt.Fprintf(r.log, "warning: not watching the nodes' routes: %v\n", err)
			return noStop, nil
		}
		svc.Name = name
	}
	if c := r.sc.App.Custom; c != nil && c.Service != "" {
		svc.Name, svc.Ports = c.Service, nil
		s, err := r.tb.Cluster.Client.CoreV1().Services(r.sc.Namespace).Get(ctx, c.Service, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(r.log, "warning: reading service %s/%s for its port names: %v; routes are watched in nftables mode only\n", r.sc.Namespace, c.Service, err)
		} else {
			for _, p := range s.Spec.Ports {
				svc.Ports = append(svc.Ports, p.Name)
			}
		}
	}
	nodes, exec, err := nodeExec.Exec()
	if err != nil {
		fmt.Fprintf(r.log, "warning: not watching the nodes' routes: %v\n", err)
		return noStop, nil
	}
	fmt.Fprintf(r.log, "routes: watching service %s/%s's rules inside %d node(s) (nft monitor)\n", svc.Namespace, svc.Name, len(nodes))
	w := dataplane.Watch(ctx, nodes, dataplane.Exec(exec), svc, r.rec.Record)
	r.routes = w
	return func() error {
		// A broken watch costs the run its (pod, node) pairs, not its
		// measurement: the analysis says which nodes it lacks.
		if err := w.Stop(); err != nil {
			fmt.Fprintf(r.log, "warning: watching routes: %v\n", err)
		}
		return nil
	}, nil
}

// routesSettle bounds the wait for the nodes' rules after a variant is
// deployed: kube-proxy here syncs within a second or two of a change, so
// a node still behind after this is reported rather than waited for.
const routesSettle = 30 * time.Second

// awaitRoutes waits until every watched node routes the Service only to
// pods that run (kube.LiveIPs). A pod is deleted before every node's rules
// forget it: a long-lived connection dialled then (gRPC, keep-alive) sends
// its SYN to an address no longer there, and its requests time out for as
// long as that conntrack entry lives, control window included. A node
// still behind after routesSettle is named and the run goes on: its
// failures then show in the control window.
func (r *runner) awaitRoutes(ctx context.Context) error {
	if r.routes == nil {
		return nil
	}
	live, err := kube.LiveIPs(ctx, r.tb.Cluster.Client, r.sc.Namespace)
	if err != nil {
		return fmt.Errorf("listing the pods the nodes should route to: %w", err)
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, routesSettle)
	defer cancel()
	bad, err := r.routes.Await(wctx, func(routes []string) bool {
		return !slices.ContainsFunc(routes, func(ip string) bool { return !live[ip] })
	})
	if err == nil {
		if waited := time.Since(start); waited >= 500*time.Millisecond {
			fmt.Fprintf(r.log, "routes: waited %s for every node to stop routing to the pods replaced\n", waited.Round(100*time.Millisecond))
		}
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, node := range slices.Sorted(maps.Keys(bad)) {
		what := "its rules are not listed yet"
		if routes := bad[node]; routes != nil {
			what = "it still routes to " + strings.Join(routes, " ") + ", not all of them live pods"
		}
		fmt.Fprintf(r.log, "warning: routes: after %s, node %s is behind (%s): the control window may see its failures\n", routesSettle, node, what)
	}
	return nil
}

// noStop is the stop of an observer with nothing to watch.
func noStop() error { return nil }

// customServiceName is the name of the Service droprun renders for a custom
// app (its Deployment's name). The route watch follows one Service, so
// variants whose manifests name different Deployments are refused here.
func (r *runner) customServiceName() (string, error) {
	var name string
	for _, v := range render.Variants(r.sc) {
		o, err := v.Objects(0, true, "")
		if err != nil {
			return "", err
		}
		if o.Service == nil || o.Service.Name == nil {
			continue
		}
		switch n := *o.Service.Name; {
		case name == "":
			name = n
		case n != name:
			return "", fmt.Errorf("the variants' Deployments have different names (%s, %s): the route watch follows one Service", name, n)
		}
	}
	if name == "" {
		return "", fmt.Errorf("no variant renders a Service")
	}
	return name, nil
}
