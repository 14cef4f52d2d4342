package run

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/droprun/droprun/harness/attack"
	"github.com/droprun/droprun/harness/generators/pods"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// startLoad starts the variant's load source: the host client, writing
// the host's results file, or the generator pods, each writing its own.
// done closes what the source wrote to, after its Stop.
func (r *runner) startLoad(ctx context.Context, name string, cfg traffic.Config, observe func(traffic.Record)) (src traffic.Source, done func() error, err error) {
	if r.sc.Traffic.FromPods() {
		return r.startPods(ctx, name, cfg, observe)
	}
	f, err := r.out.Results(name, traffic.HostOrigin)
	if err != nil {
		return nil, nil, err
	}
	if src, err = attack.StartHost(ctx, cfg, f, observe); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return src, f.Close, nil
}

// startPods starts the variant's generator pods (traffic.generators:
// pods) with cfg's load, sent to the targets from inside the cluster, and
// records where each one runs and, at its stop, its clock again, what it
// may have missed and when it stalled.
func (r *runner) startPods(ctx context.Context, name string, cfg traffic.Config, observe func(traffic.Record)) (traffic.Source, func() error, error) {
	sc, tb := r.sc, r.tb
	var urls []string
	for _, t := range r.info.Traffic.Targets { // insideTargets, listed once for run.json
		urls = append(urls, t.URL)
	}
	job := render.GeneratorsOf(sc, cfg, tb.GeneratorImage, urls)
	src, err := pods.Start(ctx, pods.Config{
		Client: tb.Cluster.Client, Namespace: sc.Namespace, Job: job, Rate: cfg.Rate, Apply: tb.Apply, Log: r.log, Observe: observe,
		Open: func(origin string) (io.WriteCloser, error) { return r.out.Results(name, origin) },
		Placed: func(p pods.Generator) {
			d := map[string]string{"variant": name, "origin": pods.OriginOf(p.Index), "pod": p.Pod, "node": p.Node}
			if c := p.Start; c.Bound > 0 {
				d["offset"], d["bound"] = c.Offset.String(), c.Bound.String()
			}
			r.rec.Mark(timeline.KindGeneratorPlaced, d)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	done := func() error {
		for _, gen := range src.Generators() {
			for _, gap := range gen.Stream.Gaps {
				r.rec.Mark(timeline.KindGeneratorGap, map[string]string{"variant": name, "origin": gen.Stream.Origin,
					"from": gap.From.Format(time.RFC3339Nano), "to": gap.To.Format(time.RFC3339Nano), "why": gap.Why})
			}
			if c := gen.End; c.Bound > 0 {
				r.rec.Mark(timeline.KindGeneratorClock, map[string]string{"variant": name, "origin": gen.Stream.Origin, "node": gen.Node,
					"at": c.At.Format(time.RFC3339Nano), "offset": c.Offset.String(), "bound": c.Bound.String()})
			}
			for _, st := range gen.Stream.Stalls {
				r.rec.Mark(timeline.KindGeneratorStall, map[string]string{"variant": name, "origin": gen.Stream.Origin,
					"from": st.From.Format(time.RFC3339Nano), "to": st.To.Format(time.RFC3339Nano), "lag": st.Lag.String()})
			}
		}
		return nil
	}
	return src, done, nil
}

// insideTargets are the URLs generator pods send to: the app's Service's
// DNS name (target clusterip: each pod's own node's rules pick the app's
// pod), or every node's web NodePort on its InternalIP (target nodeport:
// that node's rules pick).
func insideTargets(ctx context.Context, r *runner) ([]traffic.Target, error) {
	sc := r.sc
	if sc.Path().Inside {
		name, port, err := appService(ctx, r)
		if err != nil {
			return nil, err
		}
		return []traffic.Target{{URL: render.ServiceURL(name, sc.Namespace, strconv.Itoa(int(port)), sc.Traffic.Path)}}, nil
	}
	nodes, err := r.tb.Cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes for the generators' NodePort targets: %w", err)
	}
	var out []traffic.Target
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out = append(out, traffic.Target{Node: n.Name, URL: "http://" + net.JoinHostPort(a.Address, strconv.Itoa(int(sc.Path().NodePort))) + sc.Traffic.Path})
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node has an InternalIP for the generators' NodePort targets")
	}
	return out, nil
}

// appService is the Service in front of the app's pods, and its port:
// bookshop's web Service; the one droprun renders for a custom app (named
// after its Deployment); or the user's own (app.custom.service), whose
// port is read from the cluster: the one that targets app.custom.port,
// else its only one.
func appService(ctx context.Context, r *runner) (string, int32, error) {
	c := r.sc.App.Custom
	switch {
	case c == nil:
		return variant.WebName, variant.ServicePort, nil
	case c.Service == "":
		o, err := render.Render(r.sc, 0, 0, false, "")
		if err != nil {
			return "", 0, err
		}
		return *o.Service.Name, *o.Service.Spec.Ports[0].Port, nil
	}
	svc, err := r.tb.Cluster.Client.CoreV1().Services(r.sc.Namespace).Get(ctx, c.Service, metav1.GetOptions{})
	if err != nil {
		return "", 0, fmt.Errorf("reading app.custom.service %s for the generators' target: %w", c.Service, err)
	}
	ports := svc.Spec.Ports
	for _, p := range ports {
		if p.TargetPort.IntValue() == c.Port || p.TargetPort.String() == strconv.Itoa(c.Port) {
			return c.Service, p.Port, nil
		}
	}
	if len(ports) != 1 {
		return "", 0, fmt.Errorf("service %s has %d ports and none targets app.custom.port %d: the generators cannot tell which to send to", c.Service, len(ports), c.Port)
	}
	return c.Service, ports[0].Port, nil
}
