package render

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/variant"
)

// Probe is a readiness probe's timing.
type Probe struct {
	InitialDelaySeconds, PeriodSeconds, TimeoutSeconds, SuccessThreshold, FailureThreshold int32
}

// Params is everything needed to render the web Deployment of one
// variant at one version. Every field is explicit: defaults are the
// scenario's business (see scenario.Scenario.Params).
type Params struct {
	Namespace string
	// Name is the variant's row name (a label on the pod template).
	Name string
	// Info is the built-in variant being rendered.
	Info variant.Info
	// Image is the container image, e.g. bookshop:v1 or bookshop:v1-distroless.
	Image string

	Replicas                      int32
	MaxSurge, MaxUnavailable      intstr.IntOrString
	MinReadySeconds               int32
	TerminationGracePeriodSeconds int64
	PreStopSeconds                int64
	DrainDelay                    time.Duration
	// IdleTimeout is the app's --idle-timeout; 0 leaves it out (no
	// timeout).
	IdleTimeout      time.Duration
	Readiness        Probe
	Requests, Limits map[string]string
	// ChangeCause is recorded in the kubernetes.io/change-cause annotation.
	ChangeCause string
}

// Deployment renders the bookshop web Deployment for p as a server-side
// apply configuration. The pod template carries exactly the fields the
// variant needs, so applying it with one field manager removes a hook or
// flag an earlier variant left behind.
func Deployment(p Params) (*appsv1ac.DeploymentApplyConfiguration, error) {
	res, err := resources(p.Requests, p.Limits)
	if err != nil {
		return nil, err
	}
	args := []string{"--shutdown=" + string(p.Info.Shutdown)}
	if p.Info.Shutdown.Drains() {
		args = append(args, "--drain-delay="+p.DrainDelay.String())
	}
	if p.Info.GRPCStop != "" {
		args = append(args, "--grpc-stop="+string(p.Info.GRPCStop))
	}
	if p.Info.MaxConnectionAge > 0 {
		args = append(args, "--max-connection-age="+p.Info.MaxConnectionAge.String())
	}
	if p.IdleTimeout > 0 {
		args = append(args, "--idle-timeout="+p.IdleTimeout.String())
	}
	c := corev1ac.Container().
		WithName(variant.ContainerName).
		WithImage(p.Image).
		WithImagePullPolicy(corev1.PullNever). // images are loaded into the nodes; nothing is pulled
		WithSecurityContext(restricted()).
		WithArgs(args...).
		// One P: on a small machine at 1000 req/s the Go runtime's wakeups
		// of idle Ps cost more context switches than a second P saves.
		// It changes nothing about how the app shuts down.
		WithEnv(corev1ac.EnvVar().WithName("GOMAXPROCS").WithValue(variant.AppGOMAXPROCS)).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(variant.ContainerPort),
			corev1ac.ContainerPort().WithName(variant.GRPCPortName).WithContainerPort(variant.GRPCContainerPort)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/readyz").WithPort(intstr.FromString("http"))).
			WithInitialDelaySeconds(p.Readiness.InitialDelaySeconds).
			WithPeriodSeconds(p.Readiness.PeriodSeconds).
			WithTimeoutSeconds(p.Readiness.TimeoutSeconds).
			WithSuccessThreshold(p.Readiness.SuccessThreshold).
			WithFailureThreshold(p.Readiness.FailureThreshold)).
		WithLivenessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString("http"))).
			WithPeriodSeconds(10))
	if res != nil {
		c.WithResources(res)
	}
	switch p.Info.PreStop {
	case variant.PreStopExec:
		c.WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithExec(corev1ac.ExecAction().WithCommand("sleep", strconv.FormatInt(p.PreStopSeconds, 10)))))
	case variant.PreStopAction:
		c.WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithSleep(corev1ac.SleepAction().WithSeconds(p.PreStopSeconds))))
	}

	selector := map[string]string{"app": variant.WebName}
	template := corev1ac.PodTemplateSpec().
		WithLabels(selector).
		WithLabels(map[string]string{variant.LabelVariant: p.Info.Name, variant.LabelRow: p.Name}).
		WithSpec(corev1ac.PodSpec().
			WithTerminationGracePeriodSeconds(p.TerminationGracePeriodSeconds).
			WithContainers(c))
	if p.ChangeCause != "" {
		template.WithAnnotations(map[string]string{variant.AnnotationChangeCause: p.ChangeCause})
	}
	d := appsv1ac.Deployment(variant.WebName, p.Namespace).
		WithLabels(map[string]string{"app": variant.WebName, variant.LabelManagedBy: variant.ManagedBy}).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(p.Replicas).
			WithMinReadySeconds(p.MinReadySeconds).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType("RollingUpdate").
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
					WithMaxSurge(p.MaxSurge).
					WithMaxUnavailable(p.MaxUnavailable))).
			WithTemplate(template))
	if p.ChangeCause != "" {
		d.WithAnnotations(map[string]string{variant.AnnotationChangeCause: p.ChangeCause})
	}
	return d, nil
}

// Service renders a NodePort Service named name that selects the pods
// labelled selector and forwards port 80 to targetPort on them; the host
// port mapped by the kind cluster reaches nodePort.
func Service(namespace, name string, selector map[string]string, targetPort intstr.IntOrString, nodePort int32) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, namespace).
		WithLabels(map[string]string{"app": name, variant.LabelManagedBy: variant.ManagedBy}).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeNodePort).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName(variant.ServicePortName).
				WithPort(variant.ServicePort).
				WithTargetPort(targetPort).
				WithNodePort(nodePort)))
}

// WithServiceType returns svc, a Service from Service, as type typ:
// NodePort (Service's own) or LoadBalancer. A LoadBalancer Service keeps
// its node port, so kind's host ports reach it as before; on a cluster
// that provisions load balancers it gets one in front of every node.
func WithServiceType(svc *corev1ac.ServiceApplyConfiguration, typ corev1.ServiceType) *corev1ac.ServiceApplyConfiguration {
	svc.Spec.WithType(typ)
	return svc
}

// WebService is the NodePort Service in front of the bookshop web pods,
// forwarding to their port named targetPort ("http", or "grpc" under
// protocol grpc).
func WebService(namespace string, targetPort string) *corev1ac.ServiceApplyConfiguration {
	return Service(namespace, variant.WebName, map[string]string{"app": variant.WebName}, intstr.FromString(targetPort), variant.WebNodePort)
}

// GatewayService is the NodePort Service in front of the gateway.
func GatewayService(namespace string) *corev1ac.ServiceApplyConfiguration {
	return Service(namespace, variant.GatewayName, map[string]string{"app": variant.GatewayName}, intstr.FromString("http"), variant.GatewayNodePort)
}

// Custom reads the user's Deployment manifest as an apply configuration,
// moves it into namespace, labels its pod template with the variant's row
// name (variant.LabelRow), and sets container's image. Nothing else in the user's spec is
// changed.
func Custom(manifest []byte, namespace, name, container, image, changeCause string) (*appsv1ac.DeploymentApplyConfiguration, error) {
	var d appsv1ac.DeploymentApplyConfiguration
	if err := yaml.UnmarshalStrict(manifest, &d); err != nil {
		return nil, err
	}
	if d.Spec == nil || d.Spec.Template == nil || d.Spec.Template.Spec == nil {
		return nil, fmt.Errorf("the manifest has no spec.template.spec")
	}
	d.WithNamespace(namespace)
	d.Spec.Template.WithLabels(map[string]string{variant.LabelRow: name})
	if changeCause != "" {
		d.WithAnnotations(map[string]string{variant.AnnotationChangeCause: changeCause})
		d.Spec.Template.WithAnnotations(map[string]string{variant.AnnotationChangeCause: changeCause})
	}
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name != nil && *c.Name == container {
			c.WithImage(image)
			return &d, nil
		}
	}
	return nil, fmt.Errorf("the Deployment has no container named %q", container)
}

// Gateway renders the in-cluster reverse proxy (bookshop in gateway mode)
// that forwards to the web Service with a new connection per request, so a
// request routed to a dead pod shows as 502 instead of 000. The gateway
// itself drains gracefully and is never rolled, so its own shutdown never

// resources parses a container's requests and limits (e.g. {"cpu":
// "250m"}); nil when both are empty.
func resources(requests, limits map[string]string) (*corev1ac.ResourceRequirementsApplyConfiguration, error) {
	req, err := resourceList(requests)
	if err != nil {
		return nil, fmt.Errorf("requests: %w", err)
	}
	lim, err := resourceList(limits)
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	if len(req) == 0 && len(lim) == 0 {
		return nil, nil
	}
	r := corev1ac.ResourceRequirements()
	if len(req) > 0 {
		r.WithRequests(req)
	}
	if len(lim) > 0 {
		r.WithLimits(lim)
	}
	return r, nil
}

// enters the measurement.
func Gateway(namespace, image, upstreamService string) *appsv1ac.DeploymentApplyConfiguration {
	selector := map[string]string{"app": variant.GatewayName}
	upstream := fmt.Sprintf("http://%s.%s.svc:%d", upstreamService, namespace, variant.ServicePort)
	return appsv1ac.Deployment(variant.GatewayName, namespace).
		WithLabels(map[string]string{"app": variant.GatewayName, variant.LabelManagedBy: variant.ManagedBy}).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(selector).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().
					WithName(variant.GatewayName).
					WithImage(image).
					WithImagePullPolicy(corev1.PullNever).
					WithSecurityContext(restricted()).
					WithArgs("--mode=gateway", "--upstream="+upstream, "--shutdown=drain").
					WithEnv(corev1ac.EnvVar().WithName("GOMAXPROCS").WithValue(variant.AppGOMAXPROCS)).
					WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(variant.ContainerPort),
						corev1ac.ContainerPort().WithName(variant.GRPCPortName).WithContainerPort(variant.GRPCContainerPort)).
					WithReadinessProbe(corev1ac.Probe().
						WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/readyz").WithPort(intstr.FromString("http"))).
						WithPeriodSeconds(1))))))
}

// restricted is the security context of every container droprun renders
// (the app, the gateway, Traefik, Caddy, the generators), within the Pod
// Security restricted standard: not root, no privilege escalation, no
// capability, the runtime's default seccomp profile. None needs more:
// each listens on high ports, and its image already runs as nonRootUID;
// Caddy writes only to an emptyDir.
func restricted() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithRunAsNonRoot(true).WithRunAsUser(nonRootUID).
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// nonRootUID is the user droprun's own containers run as (distroless's
// "nonroot").
const nonRootUID = 65532

func resourceList(m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	l := corev1.ResourceList{}
	for name, q := range m {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, q, err)
		}
		l[corev1.ResourceName(name)] = v
	}
	return l, nil
}

// YAML renders objects as a multi-document YAML stream, the way kubectl
// prints a list of manifests.
func YAML(objs ...any) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("rendering object %d: %w", i, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
