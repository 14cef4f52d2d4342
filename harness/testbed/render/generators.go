package render

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/droprun/droprun/harness/generators"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

// GeneratorsName names the generators' Job and labels its pods.
const GeneratorsName = variant.GeneratorsName

// GeneratorContainer is the generator's container in each pod.
const GeneratorContainer = "generator"

// GeneratorControlPort is the generators' control port (apps/generator's
// --control): start, stop and clock, reached through the API server.
const GeneratorControlPort = 9000

// Generators describes the Indexed Job of a variant's generator pods.
type Generators struct {
	Namespace string
	Image     string
	// Count is how many generators share the load, an index each.
	Count int
	// Args are the flags every generator gets (apps/generator: targets,
	// rate, protocol...); --generators and the index are added.
	Args []string
	// OnePerNode spreads the pods one per node (required pod
	// anti-affinity on the node's hostname): Count must not exceed the
	// nodes that can run them, or the rest stay pending.
	OnePerNode bool
	// Requests and Limits are the generator container's resources
	// (e.g. {"cpu": "250m"}); nil for none.
	Requests, Limits map[string]string
	// Deadline bounds the Job's life (activeDeadlineSeconds): generators
	// droprun lost track of are stopped by the cluster.
	DeadlineSeconds int64
	// Token is the run's control token (generators.TokenEnv): a start or
	// stop without it is refused.
	Token string
}

// GeneratorsDeadline bounds a generator Job's life: generators droprun
// lost track of are stopped by the cluster.
const GeneratorsDeadline = 3 * time.Hour

// LoadConfig is the load of variant name of scenario s, as the host
// client and the generator pods both send it; the run adds the targets
// and the hosts the user allowed.
func LoadConfig(s *scenario.Scenario, name string) traffic.Config {
	t := s.Traffic
	p := s.Path()
	return traffic.Config{
		Rate: t.Rate, Protocol: t.Protocol(), Connections: t.Connections, Method: t.Method,
		Timeout: t.Timeout.Duration, MaxWorkers: uint64(t.MaxWorkers), Name: name,
		IdleTimeout: t.IdleTimeout.Get(), Arrivals: traffic.Arrivals(t.Arrivals),
		// A front that logs each request's ID joins its line to the record.
		RequestIDs: p.Proxy != nil && p.Proxy.AccessLog != nil,
	}
}

// GeneratorsOf is the generators' Job for scenario s's load cfg
// (LoadConfig), its pods sending to targets from image: cfg as the
// generator's flags (one --target flag per target: nothing in a URL can
// add another), the scenario's placement and resources. The run gives it
// its control token (pods.Start); `droprun render` prints it with
// stand-ins for what only a run knows.
func GeneratorsOf(s *scenario.Scenario, cfg traffic.Config, image string, targets []string) Generators {
	var args []string
	for _, u := range targets {
		args = append(args, "--target="+u)
	}
	args = append(args, "--rate="+strconv.Itoa(cfg.Rate), "--protocol="+string(cfg.Protocol),
		"--method="+cfg.Method, "--timeout="+cfg.Timeout.String(), "--name="+cfg.Name, "--arrivals="+string(cfg.Arrivals))
	if cfg.Connections > 0 {
		args = append(args, "--connections="+strconv.Itoa(cfg.Connections))
	}
	if cfg.IdleTimeout > 0 {
		args = append(args, "--idle-timeout="+cfg.IdleTimeout.String())
	}
	if cfg.RequestIDs {
		args = append(args, "--request-ids")
	}
	g := s.Traffic.Generators
	job := Generators{Namespace: s.Namespace, Image: image, Count: g.Count, Args: args,
		OnePerNode: g.Placement == scenario.PlacementOnePerNode, DeadlineSeconds: int64(GeneratorsDeadline.Seconds())}
	if res := g.Resources; res != nil {
		job.Requests, job.Limits = res.Requests, res.Limits
	}
	return job
}

// ServiceURL is the URL generator pods send to a Service by: its name in
// namespace, ending in a dot so that the pods' resolver asks for it alone
// rather than through every search domain first, at port, with path.
func ServiceURL(name, namespace, port, path string) string {
	return "http://" + net.JoinHostPort(name+"."+namespace+".svc.cluster.local.", port) + path
}

// GeneratorsJob renders g as one Indexed Job: Count pods, one per
// completion index, each the generator for its index
// (JOB_COMPLETION_INDEX), all at once. A pod that fails is replaced, up to
// twice per index (backoffLimitPerIndex), by a new pod of the same index:
// a new log, which the run reads as that generator restarted. The pods
// need no API access: no service account token is mounted.
func GeneratorsJob(g Generators) (*batchv1ac.JobApplyConfiguration, error) {
	if g.Count < 1 {
		return nil, fmt.Errorf("generators: a count of %d; want 1 or more", g.Count)
	}
	if g.Token == "" {
		return nil, errors.New("generators: no control token")
	}
	res, err := resources(g.Requests, g.Limits)
	if err != nil {
		return nil, fmt.Errorf("generators: %w", err)
	}
	labels := map[string]string{"app": GeneratorsName, variant.LabelManagedBy: variant.ManagedBy}
	args := append([]string{"--generators=" + strconv.Itoa(g.Count), "--control=:" + strconv.Itoa(GeneratorControlPort)}, g.Args...)
	c := corev1ac.Container().
		WithName(GeneratorContainer).
		WithImage(g.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs(args...).
		WithEnv(corev1ac.EnvVar().WithName(generators.PodNameEnv).
			WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
			corev1ac.EnvVar().WithName(generators.TokenEnv).WithValue(g.Token)).
		WithPorts(corev1ac.ContainerPort().WithName("control").WithContainerPort(GeneratorControlPort)).
		WithSecurityContext(restricted()).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/clock").WithPort(intstr.FromString("control"))).
			WithPeriodSeconds(1))
	if res != nil {
		c.WithResources(res)
	}
	pod := corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithAutomountServiceAccountToken(false).
		WithContainers(c)
	if g.OnePerNode {
		pod.WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
				WithTopologyKey(corev1.LabelHostname).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": GeneratorsName})))))
		// The control plane of a kind cluster is a node like the others.
		pod.WithTolerations(corev1ac.Toleration().WithKey("node-role.kubernetes.io/control-plane").WithOperator(corev1.TolerationOpExists).WithEffect(corev1.TaintEffectNoSchedule))
	}
	spec := batchv1ac.JobSpec().
		WithCompletionMode(batchv1.IndexedCompletion).
		WithCompletions(int32(g.Count)).
		WithParallelism(int32(g.Count)).
		WithBackoffLimitPerIndex(2).
		WithMaxFailedIndexes(int32(g.Count)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(pod))
	if g.DeadlineSeconds > 0 {
		spec.WithActiveDeadlineSeconds(g.DeadlineSeconds)
	}
	return batchv1ac.Job(GeneratorsName, g.Namespace).WithLabels(labels).WithSpec(spec), nil
}
