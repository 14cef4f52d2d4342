package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/path"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// Variant is one of a scenario's variants resolved for a run: its entry
// and its effective workload (every default applied), with the scenario
// it renders against. Deploy, run and render pass it around as a value.
type Variant struct {
	// Entry is the variant as the scenario gives it (name, built-in
	// variant, From, manifest).
	Entry    scenario.Variant
	Workload scenario.Workload
	sc       *scenario.Scenario
}

// Of resolves variant i of s.
func Of(s *scenario.Scenario, i int) Variant {
	return Variant{Entry: s.Variants[i], Workload: s.Effective(i), sc: s}
}

// Variants resolves every variant of s, in order.
func Variants(s *scenario.Scenario) []Variant {
	out := make([]Variant, len(s.Variants))
	for i := range s.Variants {
		out[i] = Of(s, i)
	}
	return out
}

// Params returns what Deployment needs for bookshop variant v at version,
// with every default applied. kind is the built-in variant to render: the
// variant's own, or its From variant for the state before the first
// rollout.
func (v Variant) Params(kind, version string) (Params, error) {
	s := v.sc
	info, ok := variant.Lookup(kind)
	if !ok {
		return Params{}, fmt.Errorf("%q is not a variant (use one of: %s)", kind, variant.NameList())
	}
	w := v.Workload
	flavour := image.FlavourStandard
	if info.Distroless {
		flavour = image.FlavourDistroless
	}
	if w.Flavour != "" {
		flavour = image.Flavour(w.Flavour)
	}
	r := w.Readiness
	p := Params{
		Namespace:                     s.Namespace,
		Name:                          scenario.RowLabel(v.Entry.Name),
		Info:                          info,
		Image:                         image.Ref(version, flavour),
		Replicas:                      *w.Replicas,
		MaxSurge:                      *w.MaxSurge,
		MaxUnavailable:                *w.MaxUnavailable,
		MinReadySeconds:               *w.MinReadySeconds,
		TerminationGracePeriodSeconds: *w.TerminationGracePeriodSeconds,
		PreStopSeconds:                *w.PreStopSeconds,
		DrainDelay:                    w.DrainDelay.Duration,
		IdleTimeout:                   w.IdleTimeout.Duration,
		Readiness: Probe{
			InitialDelaySeconds: *r.InitialDelaySeconds,
			PeriodSeconds:       *r.PeriodSeconds,
			TimeoutSeconds:      *r.TimeoutSeconds,
			SuccessThreshold:    *r.SuccessThreshold,
			FailureThreshold:    *r.FailureThreshold,
		},
	}
	if res := w.Resources; res != nil {
		p.Requests, p.Limits = res.Requests, res.Limits
	}
	return p, nil
}

// Objects are the Kubernetes objects of one variant at one version: what
// droprun applies before and during its rollouts. Everything after
// rendering works on these and on the Deployment's name, never on bookshop
// specifics.
type Objects struct {
	Deployment *appsv1ac.DeploymentApplyConfiguration
	// Service is droprun's web Service; nil when app.custom.service names
	// the user's own.
	Service *corev1ac.ServiceApplyConfiguration
	// Front is the front's objects, in apply order, when traffic goes
	// through one (the scenario's path has a Proxy).
	Front []any
}

// List returns the objects in apply order.
func (o Objects) List() []any {
	l := []any{o.Deployment}
	if o.Service != nil {
		l = append(l, o.Service)
	}
	return append(l, o.Front...)
}

// Render returns scenario variant i's objects at version (0 or 1, an index into the
// two versions or custom images). initial renders the state before the
// first rollout: the variant's From, when it has one.
func Render(s *scenario.Scenario, i, version int, initial bool, changeCause string) (Objects, error) {
	return Of(s, i).Objects(version, initial, changeCause)
}

// Objects returns v's objects at version (0 or 1, an index into the two
// versions or custom images). initial renders the state before the first
// rollout: the variant's From, when it has one.
func (v Variant) Objects(version int, initial bool, changeCause string) (Objects, error) {
	s := v.sc
	var o Objects
	if c := s.App.Custom; c != nil {
		manifest, err := s.ReadManifest(v.Entry.Manifest)
		if err != nil {
			return o, fmt.Errorf("variant %s: %w", v.Entry.Name, err)
		}
		d, err := Custom(manifest, s.Namespace, scenario.RowLabel(v.Entry.Name), c.Container, c.Images[version], changeCause)
		if err != nil {
			return o, fmt.Errorf("variant %s: %s: %w", v.Entry.Name, v.Entry.Manifest, err)
		}
		o.Deployment = d
		selector := map[string]string{}
		if d.Spec.Selector != nil {
			selector = d.Spec.Selector.MatchLabels
		}
		if c.Service == "" { // else the user's own Service or Ingress fronts the pods
			o.Service = Service(s.Namespace, *d.Name, selector, intstr.FromInt32(int32(c.Port)), variant.WebNodePort)
		}
	} else {
		kind := v.Entry.Variant
		if initial && v.Entry.From != "" {
			kind = v.Entry.From
		}
		p, err := v.Params(kind, scenario.Versions[version])
		if err != nil {
			return o, err
		}
		p.ChangeCause = changeCause
		if o.Deployment, err = Deployment(p); err != nil {
			return o, fmt.Errorf("variant %s: %w", v.Entry.Name, err)
		}
		port, _ := bookshopPort(s)
		o.Service = WebService(s.Namespace, port)
	}
	if o.Service != nil && s.App.Service != nil && s.App.Service.Type != "" {
		WithServiceType(o.Service, corev1.ServiceType(s.App.Service.Type))
	}
	if p := s.Path(); p.Proxy != nil && o.Service != nil {
		port := int32(variant.ContainerPort)
		if c := s.App.Custom; c != nil {
			port = int32(c.Port)
		}
		o.Front = Front(p, s.Namespace, o.Service, port, s.Traffic.FrontRetries)
	}
	return o, nil
}

// Front renders path p's front in namespace, sending to the web pods
// behind the Service upstream (named like the Deployment, for a custom app
// too), which listen on podPort, resending a request whose pod did not
// take it up to retries times (traffic.frontRetries; Caddy only).
func Front(p path.Path, namespace string, upstream *corev1ac.ServiceApplyConfiguration, podPort int32, retries int) []any {
	switch p.Proxy.Name {
	case variant.TraefikName:
		return Traefik(namespace, p.Proxy.Image, *upstream.Name)
	case variant.CaddyName:
		return Caddy(namespace, p.Proxy.Image, upstream, podPort, retries)
	default: // the gateway, bookshop in gateway mode
		return []any{Gateway(namespace, image.Ref(scenario.Versions[0], image.FlavourStandard), *upstream.Name), GatewayService(namespace)}
	}
}

// Name is the variant's name: its rows' and its results file's.
func (v Variant) Name() string { return v.Entry.Name }

// AppPort is the pods' port the scenario's traffic reaches: a custom app's
// port, or bookshop's HTTP port, or its gRPC port under protocol grpc.
func AppPort(s *scenario.Scenario) int {
	if c := s.App.Custom; c != nil {
		return c.Port
	}
	_, n := bookshopPort(s)
	return n
}

// bookshopPort is the bookshop container port the web Service targets,
// by name and number.
func bookshopPort(s *scenario.Scenario) (string, int) {
	if s.Traffic.Protocol() == traffic.ProtocolGRPC {
		return variant.GRPCPortName, variant.GRPCContainerPort
	}
	return "http", variant.ContainerPort
}
