package variant

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Detect names the built-in variant a live pod template actually is, from
// the fields that make the variant (the app's --shutdown flag, the preStop
// hook, the image flavour), not from its labels: a field left behind by an
// earlier change must not silently change what is measured. It returns ""
// when the template matches no built-in variant, with a description of
// what it found.
func Detect(spec *corev1.PodSpec) (name, found string) {
	var c *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == ContainerName {
			c = &spec.Containers[i]
		}
	}
	if c == nil {
		return "", "no container named " + ContainerName
	}
	shutdown := ShutdownNone
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shutdown="); ok {
			shutdown = Shutdown(v)
		}
	}
	hook := PreStopNone
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		switch h := c.Lifecycle.PreStop; {
		case h.Exec != nil:
			hook = PreStopExec
		case h.Sleep != nil:
			hook = PreStopAction
		default:
			hook = "other"
		}
	}
	distroless := strings.HasSuffix(c.Image, "-distroless")
	found = "shutdown=" + string(shutdown) + " preStop=" + string(hook) + " image=" + c.Image
	if hook == "" {
		found = "shutdown=" + string(shutdown) + " preStop=none image=" + c.Image
	}
	for _, v := range catalogue {
		if v.Shutdown == shutdown && v.PreStop == hook && v.Distroless == distroless {
			return v.Name, found
		}
	}
	return "", found
}
