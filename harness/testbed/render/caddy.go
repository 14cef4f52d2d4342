package render

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/variant"
)

// Caddy's settings droprun chooses: its port for the client's requests.
// How often it looks the web pods up again in DNS is
// frontlog.CaddyRefresh, which the analysis of its lookups relies on
// (Caddy's default is a minute, which would hold a deleted pod in its
// list that long).
const (
	caddyWebPort = 8000
	caddyConfig  = "caddy.json"
)

// Caddy renders Caddy as the run's front, in namespace: a headless Service
// beside upstream (same selector, named with variant.DNSSuffix), whose DNS
// name resolves to the ready web pods' IPs; a ConfigMap with Caddy's
// config; one replica running image; and its NodePort Service
// (variant.GatewayNodePort). Caddy's reverse proxy looks the name up
// again every frontlog.CaddyRefresh (dynamic A upstreams, through the pod's
// resolver: the cluster DNS) and sends to podPort on the IPs found. It
// logs each request as JSON to stdout with its X-Request-Id header and
// the upstream it chose, and each DNS refresh with the IPs found (a debug
// log of those alone). Caddy needs no access to the Kubernetes API.
func Caddy(namespace, image string, upstream *corev1ac.ServiceApplyConfiguration, podPort int32, retries int) []any {
	name := variant.CaddyName
	labels := map[string]string{"app": name, variant.LabelManagedBy: variant.ManagedBy}
	selector := map[string]string{"app": name}
	dnsName := *upstream.Name + variant.DNSSuffix
	headless := corev1ac.Service(dnsName, namespace).
		WithLabels(map[string]string{"app": dnsName, variant.LabelManagedBy: variant.ManagedBy}).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(upstream.Spec.Selector).
			WithPorts(corev1ac.ServicePort().WithName(variant.ServicePortName).WithPort(podPort).WithTargetPort(intstr.FromInt32(podPort))))
	config := corev1ac.ConfigMap(name, namespace).WithLabels(labels).
		WithData(map[string]string{caddyConfig: CaddyConfig(fmt.Sprintf("%s.%s.svc.cluster.local.", dnsName, namespace), podPort, retries)})
	deployment := appsv1ac.Deployment(name, namespace).
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(selector).
				WithSpec(corev1ac.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithVolumes(
						corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(name)),
						corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource())).
					WithContainers(corev1ac.Container().
						WithName(name).
						WithImage(image).
						WithImagePullPolicy(corev1.PullNever).
						WithSecurityContext(restricted()).
						WithArgs("run", "--config", "/etc/caddy/"+caddyConfig).
						WithEnv(
							corev1ac.EnvVar().WithName("GOMAXPROCS").WithValue(variant.AppGOMAXPROCS),
							// Caddy keeps its state under these; the image has no home.
							corev1ac.EnvVar().WithName("HOME").WithValue("/data"),
							corev1ac.EnvVar().WithName("XDG_CONFIG_HOME").WithValue("/data/config"),
							corev1ac.EnvVar().WithName("XDG_DATA_HOME").WithValue("/data/data")).
						WithVolumeMounts(
							corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/caddy").WithReadOnly(true),
							corev1ac.VolumeMount().WithName("data").WithMountPath("/data")).
						WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(caddyWebPort)).
						WithReadinessProbe(corev1ac.Probe().
							WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("http"))).
							WithPeriodSeconds(1))))))
	service := Service(namespace, name, selector, intstr.FromString("http"), variant.GatewayNodePort)
	return []any{headless, config, deployment, service}
}

// CaddyConfig is Caddy's JSON config: one server on caddyWebPort whose
// reverse proxy sends every request to port on the IPs dnsName resolves to
// (refreshed every frontlog.CaddyRefresh), trying each request once, or with
// retries above 0 resending it up to that many times to a pod picked
// again when the one picked did not answer (load_balancing retries); an
// access log with the upstream chosen, its status and the resends
// appended; a debug log of the upstreams' refreshes alone; the rest of
// Caddy's log at INFO. No admin endpoint, no HTTPS, nothing persisted.
func CaddyConfig(dnsName string, port int32, retries int) string {
	log := func(level string, include, exclude []string) map[string]any {
		l := map[string]any{
			"writer":  map[string]any{"output": "stdout"},
			"encoder": map[string]any{"format": "json", "time_format": "rfc3339_nano"},
			"level":   level,
		}
		if include != nil {
			l["include"] = include
		}
		if exclude != nil {
			l["exclude"] = exclude
		}
		return l
	}
	proxy := map[string]any{"handler": "reverse_proxy", "dynamic_upstreams": map[string]any{
		"source": "a", "name": dnsName, "port": fmt.Sprint(port), "refresh": frontlog.CaddyRefresh.String(),
	}}
	handle := []any{
		map[string]any{"handler": "log_append", "key": "upstream", "value": "{http.reverse_proxy.upstream.hostport}"},
		map[string]any{"handler": "log_append", "key": "upstream_status", "value": "{http.reverse_proxy.status_code}"},
	}
	if retries > 0 {
		proxy["load_balancing"] = map[string]any{"retries": retries}
		handle = append(handle, map[string]any{"handler": "log_append", "key": frontlog.CaddyRetriesKey, "value": "{http.reverse_proxy.retries}"})
	}
	handle = append(handle, proxy)
	cfg := map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{
			"default":   log("INFO", nil, []string{frontlog.CaddyAccessLogger, frontlog.CaddyUpstreamsLogger}),
			"access":    log("INFO", []string{frontlog.CaddyAccessLogger}, nil),
			"upstreams": log("DEBUG", []string{frontlog.CaddyUpstreamsLogger}, nil),
		}},
		"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"web": map[string]any{
			"listen":          []string{fmt.Sprintf(":%d", caddyWebPort)},
			"automatic_https": map[string]any{"disable": true},
			"logs":            map[string]any{},
			"routes":          []any{map[string]any{"handle": handle}},
		}}}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // maps of strings and slices always marshal
	}
	return string(b)
}
