package scenario

import (
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/droprun/droprun/harness/imageref"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"

	"github.com/droprun/droprun/harness/path"
)

// Defaults for fields a scenario leaves out.
const (
	DefaultClusterName     = "droprun"
	DefaultNodes           = 3
	DefaultKubeProxyMode   = "iptables"
	DefaultNodeImage       = imageref.Auto
	DefaultHostPort        = 30080
	DefaultGatewayHostPort = 30081
	DefaultNamespace       = "droprun"
	DefaultOutput          = "results"
	DefaultRollouts        = 3
	DefaultRate            = 1000
	DefaultPath            = "/version"
	DefaultAppPort         = 8080
	DefaultMetricsPath     = "/metrics"
	DefaultCodeLabel       = "code"
)

// Default timings.
const (
	DefaultTimeout = traffic.DefaultTimeout
	DefaultControl = 10 * time.Second
	DefaultBetween = 10 * time.Second
	DefaultSettle  = 5 * time.Second
	DefaultBalance = 30 * time.Second
)

// builtinWorkload is what a variant gets when neither it nor the scenario's
// defaults set a field: the classic demo Deployment (2 replicas, 25%/25%, a
// 30 s grace period, a 5 s preStop sleep) with a quick readiness probe.
func builtinWorkload() Workload {
	return Workload{
		Replicas:                      ptr(int32(2)),
		MaxSurge:                      ptr(intstr.FromString("25%")),
		MaxUnavailable:                ptr(intstr.FromString("25%")),
		MinReadySeconds:               ptr(int32(0)),
		TerminationGracePeriodSeconds: ptr(int64(30)),
		PreStopSeconds:                ptr(int64(5)),
		DrainDelay:                    D(5 * time.Second),
		IdleTimeout:                   D(0),
		Readiness: &Probe{
			InitialDelaySeconds: ptr(int32(0)),
			PeriodSeconds:       ptr(int32(1)),
			TimeoutSeconds:      ptr(int32(1)),
			SuccessThreshold:    ptr(int32(1)),
			FailureThreshold:    ptr(int32(2)),
		},
		Resources: &Resources{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}},
	}
}

func ptr[T any](v T) *T { return &v }

// Default fills every unset field with its default. Load calls it; call it
// yourself on a Scenario built in code.
func (s *Scenario) Default() {
	if s.Cluster.Kind == nil && s.Cluster.Existing == nil {
		s.Cluster.Kind = &KindCluster{}
	}
	if k := s.Cluster.Kind; k != nil {
		setDefault(&k.Name, DefaultClusterName)
		setDefault(&k.Nodes, DefaultNodes)
		setDefault(&k.KubeProxyMode, DefaultKubeProxyMode)
		setDefault(&k.NodeImage, DefaultNodeImage)
		setDefault(&k.HostPort, DefaultHostPort)
		setDefault(&k.GatewayHostPort, DefaultGatewayHostPort)
	}
	setDefault(&s.Namespace, DefaultNamespace)
	setDefault(&s.Output, DefaultOutput)
	if s.Rollouts == nil {
		s.Rollouts = ptr(DefaultRollouts)
	}
	if c := s.App.Custom; c != nil {
		setDefault(&c.Port, DefaultAppPort)
		if m := c.Metrics; m != nil {
			setDefault(&m.Port, c.Port)
			setDefault(&m.Path, DefaultMetricsPath)
			setDefault(&m.CodeLabel, DefaultCodeLabel)
		}
	}
	if s.App.Custom == nil || s.App.Custom.Service == "" {
		if s.App.Service == nil {
			s.App.Service = &AppService{}
		}
		setDefault(&s.App.Service.Type, ServiceNodePort)
	}
	for i := range s.Variants {
		setDefault(&s.Variants[i].Name, s.Variants[i].Variant)
	}
	t := &s.Traffic
	setDefault(&t.Rate, DefaultRate)
	setDefault(&t.Target, path.NodePort.Name)
	setDefault(&t.Wire, traffic.WireHTTP1)
	if t.Protocol() == traffic.ProtocolGRPC {
		setDefault(&t.Path, traffic.GRPCPath)
	}
	setDefault(&t.Path, DefaultPath)
	setDefault(&t.Method, traffic.DefaultMethod)
	if t.Protocol().Multiplexed() {
		setDefault(&t.Connections, traffic.DefaultConnections)
	}
	if t.Protocol().IdleTimed() {
		setDefault(&t.IdleTimeout, D(traffic.DefaultIdleTimeout))
	}
	setDefault(&t.Arrivals, string(traffic.ArrivalsConstant))
	setDefault(&t.Timeout, D(DefaultTimeout))
	setDefault(&t.Control, D(DefaultControl))
	setDefault(&t.Between, D(DefaultBetween))
	setDefault(&t.Settle, D(DefaultSettle))
	if t.Protocol().ReusesConnections() {
		setDefault(&t.Balance, D(DefaultBalance))
	} else {
		setDefault(&t.Balance, D(0)) // every request is routed afresh: nothing to unbalance
	}
	if t.MaxWorkers == 0 {
		t.MaxWorkers = int(traffic.DefaultWorkers(t.Rate, t.Timeout.Duration))
	}
	if g := t.Generators; g != nil {
		setDefault(&g.From, FromHost)
		if g.From == FromPods {
			setDefault(&g.Placement, PlacementOnePerNode)
			if k := s.Cluster.Kind; k != nil {
				setDefault(&g.Count, k.Nodes)
			}
		}
	}
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// Effective returns variant i's workload with every field set: the
// variant's own value, else the scenario's default, else the built-in one.
func (s *Scenario) Effective(i int) Workload {
	w := merge(merge(s.Variants[i].Workload, s.Defaults), builtinWorkload())
	return w
}

// merge returns a with every nil field taken from b.
func merge(a, b Workload) Workload {
	pick(&a.Replicas, b.Replicas)
	pick(&a.MaxSurge, b.MaxSurge)
	pick(&a.MaxUnavailable, b.MaxUnavailable)
	pick(&a.MinReadySeconds, b.MinReadySeconds)
	pick(&a.TerminationGracePeriodSeconds, b.TerminationGracePeriodSeconds)
	pick(&a.PreStopSeconds, b.PreStopSeconds)
	pick(&a.DrainDelay, b.DrainDelay)
	pick(&a.IdleTimeout, b.IdleTimeout)
	if a.Flavour == "" {
		a.Flavour = b.Flavour
	}
	if a.Readiness == nil {
		a.Readiness = b.Readiness
	} else if b.Readiness != nil {
		p := *a.Readiness
		pick(&p.InitialDelaySeconds, b.Readiness.InitialDelaySeconds)
		pick(&p.PeriodSeconds, b.Readiness.PeriodSeconds)
		pick(&p.TimeoutSeconds, b.Readiness.TimeoutSeconds)
		pick(&p.SuccessThreshold, b.Readiness.SuccessThreshold)
		pick(&p.FailureThreshold, b.Readiness.FailureThreshold)
		a.Readiness = &p
	}
	pick(&a.Resources, b.Resources)
	return a
}

func pick[T any](a **T, b *T) {
	if *a == nil {
		*a = b
	}
}

// OfVariant is the scenario of one built-in variant with every default,
// named "render", under the protocol the variant needs (a gRPC variant's
// grpc): what `droprun render` shows without a scenario file.
func OfVariant(name string) *Scenario {
	sc := &Scenario{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: "render"},
		Variants: []Variant{{Variant: name}},
	}
	if info, ok := variant.Lookup(name); ok {
		sc.Traffic.Wire = info.Protocol
	}
	sc.Default()
	return sc
}
