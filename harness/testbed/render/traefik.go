package render

import (
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/droprun/droprun/harness/variant"
)

// Traefik's ports: web takes the client's requests; traefik serves /ping
// (its readiness) and the API droprun reads the servers it sends to from.
const (
	traefikWebPort  = 8000
	traefikPingPort = variant.TraefikAPIPort
)

// Traefik renders Traefik Proxy as the run's front, in namespace: a
// ServiceAccount with a Role that reads only what its Kubernetes Ingress
// provider watches there (Ingresses, Services, EndpointSlices, Secrets),
// one replica running image, its NodePort Service (variant.GatewayNodePort),
// and an Ingress sending every path to upstream's port http. Traefik
// watches only namespace and no cluster-scoped object
// (disableClusterScopeResources), so droprun creates no ClusterRole. It
// writes a JSON access log line per request to stdout, with the request's
// X-Request-Id header, the upstream it chose and both statuses. Its API
// answers only requests with the front's token (FrontToken; the
// traefik-api ConfigMap holds the router that checks it).
func Traefik(namespace, image, upstream string) []any {
	name := variant.TraefikName
	labels := map[string]string{"app": name, variant.LabelManagedBy: variant.ManagedBy}
	selector := map[string]string{"app": name}
	read := []string{"get", "list", "watch"}
	sa := corev1ac.ServiceAccount(name, namespace).WithLabels(labels)
	role := rbacv1ac.Role(name, namespace).WithLabels(labels).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("services", "secrets").WithVerbs(read...),
		rbacv1ac.PolicyRule().WithAPIGroups("discovery.k8s.io").WithResources("endpointslices").WithVerbs(read...),
		rbacv1ac.PolicyRule().WithAPIGroups("networking.k8s.io").WithResources("ingresses").WithVerbs(read...),
	)
	binding := rbacv1ac.RoleBinding(name, namespace).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(name)).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(name).WithNamespace(namespace))
	args := []string{
		fmt.Sprintf("--entryPoints.web.address=:%d", traefikWebPort),
		fmt.Sprintf("--entryPoints.traefik.address=:%d", traefikPingPort),
		"--ping=true",
		"--api=true",
		// The API is served by the router of traefikAPIConfig alone, to
		// requests that carry the front's token (no --api.insecure).
		"--api.dashboard=false",
		"--providers.file.directory=" + traefikDynamicDir,
		"--providers.kubernetesIngress=true",
		"--providers.kubernetesIngress.namespaces=" + namespace,
		"--providers.kubernetesIngress.disableClusterScopeResources=true",
		// Traefik's default, set so the analysis can rely on it: a new
		// list of pods at most every 2 s (path.Traefik's RoundRobin).
		"--providers.providersThrottleDuration=2s",
		"--accessLog=true",
		"--accessLog.format=json",
		"--accessLog.fields.headers.defaultMode=drop",
		"--accessLog.fields.headers.names.X-Request-Id=keep",
		"--log.level=INFO",
	}
	deployment := appsv1ac.Deployment(name, namespace).
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(selector).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(name).
					WithVolumes(corev1ac.Volume().WithName("api").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(traefikAPIName))).
					WithContainers(corev1ac.Container().
						WithName(name).
						WithImage(image).
						WithImagePullPolicy(corev1.PullNever).
						WithSecurityContext(restricted()).
						WithArgs(args...).
						WithEnv(corev1ac.EnvVar().WithName("GOMAXPROCS").WithValue(variant.AppGOMAXPROCS),
							corev1ac.EnvVar().WithName(traefikTokenEnv).WithValueFrom(corev1ac.EnvVarSource().
								WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(variant.FrontTokenSecret).WithKey(variant.FrontTokenKey)))).
						WithVolumeMounts(corev1ac.VolumeMount().WithName("api").WithMountPath(traefikDynamicDir).WithReadOnly(true)).
						WithPorts(
							corev1ac.ContainerPort().WithName("http").WithContainerPort(traefikWebPort),
							corev1ac.ContainerPort().WithName("ping").WithContainerPort(traefikPingPort)).
						WithReadinessProbe(corev1ac.Probe().
							WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/ping").WithPort(intstr.FromString("ping"))).
							WithPeriodSeconds(1))))))
	service := Service(namespace, name, selector, intstr.FromString("http"), variant.GatewayNodePort)
	ingress := networkingv1ac.Ingress(variant.WebName, namespace).WithLabels(labels).
		WithSpec(networkingv1ac.IngressSpec().WithRules(networkingv1ac.IngressRule().
			WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(networkingv1ac.HTTPIngressPath().
				WithPath("/").WithPathType(networkingv1.PathTypePrefix).
				WithBackend(networkingv1ac.IngressBackend().
					WithService(networkingv1ac.IngressServiceBackend().WithName(upstream).
						WithPort(networkingv1ac.ServiceBackendPort().WithName(variant.ServicePortName))))))))
	apiConfig := corev1ac.ConfigMap(traefikAPIName, namespace).WithLabels(labels).
		WithData(map[string]string{"api.yaml": traefikAPIConfig})
	return []any{FrontToken(namespace), sa, role, binding, apiConfig, deployment, service, ingress}
}

// Traefik's API behind the front's token: a file-provider router on the
// traefik entry point sends to the API only requests whose query carries
// the token (variant.FrontTokenParam), which the file reads from the
// container's environment (the provider's templating); others get 404.
// /ping keeps its own router there.
const (
	traefikAPIName    = "traefik-api"
	traefikDynamicDir = "/etc/traefik/dynamic"
	traefikTokenEnv   = "DROPRUN_FRONT_TOKEN"
	traefikAPIConfig  = `http:
  routers:
    droprun-api:
      entryPoints: [traefik]
      rule: "PathPrefix(` + "`/api`" + `) && Query(` + "`" + variant.FrontTokenParam + "`" + `, ` + "`" + `{{ env "` + traefikTokenEnv + `" }}` + "`" + `)"
      service: api@internal
`
)

// FrontToken is the Secret holding a front's API token, a new random one:
// kube.Apply creates it when namespace has none and otherwise keeps the
// one there, so every run in the namespace shares it and the front's pods
// never restart for it.
func FrontToken(namespace string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(variant.FrontTokenSecret, namespace).
		WithLabels(map[string]string{variant.LabelManagedBy: variant.ManagedBy}).
		WithData(map[string][]byte{variant.FrontTokenKey: []byte(rand.Text())})
}
