package run

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/dataplane"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/variant"
)

// watchRoutes starts watching, inside every kind node, the rules that
// route the traffic's Service to each pod (harness/dataplane), and returns
// the function that stops it. On other clusters, and in ipvs mode, it
// says so and does nothing; the analysis then falls back to kube-proxy's
// sync metrics where the run polled them (kind clusters only).
func (r *runner) watchRoutes(ctx context.Context) (stop func() error, err error) {
	if r.tb.Cluster.Nodes == nil {
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
	nodes, exec, err := r.tb.Cluster.Nodes.Exec()
	if err != nil {
		fmt.Fprintf(r.log, "warning: not watching the nodes' routes: %v\n", err)
		return noStop, nil
	}
	fmt.Fprintf(r.log, "routes: watching service %s/%s's rules inside %d node(s) (nft monitor)\n", svc.Namespace, svc.Name, len(nodes))
	w := dataplane.Watch(ctx, nodes, dataplane.Exec(exec), svc, r.rec.Record)
	return func() error {
		// A broken watch costs the run its (pod, node) pairs, not its
		// measurement: the analysis says which nodes it lacks.
		if err := w.Stop(); err != nil {
			fmt.Fprintf(r.log, "warning: watching routes: %v\n", err)
		}
		return nil
	}, nil
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
