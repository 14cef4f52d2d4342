package scenario

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// baselineCaps are the capabilities the Pod Security baseline lets a
// container add (kubernetes.io/docs/concepts/security/pod-security-standards):
// the container runtime's defaults. Adding any other is a privilege.
var baselineCaps = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// Privileges lists what pod spec p asks for beyond the Pod Security
// baseline, each in words a user finds in their manifest: a privileged or
// escalating container, the host's namespaces, ports or paths, added
// capabilities, an unconfined seccomp or AppArmor profile, sysctls, or a
// service account other than "default". On kind any of these reaches the
// host that runs droprun; a scenario is data, so droprun applies such a
// spec only when the run says --allow-privileged (and otherwise the
// namespace it creates enforces the baseline too). Nil when none.
func Privileges(p *corev1.PodSpec) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if p.HostNetwork {
		add("hostNetwork")
	}
	if p.HostPID {
		add("hostPID")
	}
	if p.HostIPC {
		add("hostIPC")
	}
	if p.ServiceAccountName != "" && p.ServiceAccountName != "default" {
		add("serviceAccountName %q", p.ServiceAccountName)
	}
	if p.DeprecatedServiceAccount != "" && p.DeprecatedServiceAccount != "default" {
		add("serviceAccount %q", p.DeprecatedServiceAccount)
	}
	for _, v := range p.Volumes {
		if v.HostPath != nil {
			add("hostPath volume %q (%s)", v.Name, v.HostPath.Path)
		}
	}
	if sc := p.SecurityContext; sc != nil {
		if unconfined(sc.SeccompProfile) {
			add("an unconfined seccomp profile")
		}
		if len(sc.Sysctls) > 0 {
			add("sysctls")
		}
		if sc.SELinuxOptions != nil && sc.SELinuxOptions.Type != "" {
			add("SELinux type %q", sc.SELinuxOptions.Type)
		}
		if a := sc.AppArmorProfile; a != nil && a.Type == corev1.AppArmorProfileTypeUnconfined {
			add("an unconfined AppArmor profile")
		}
	}
	containers := slices.Concat(p.InitContainers, p.Containers)
	for _, e := range p.EphemeralContainers {
		containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				add("container %q: hostPort %d", c.Name, port.HostPort)
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			add("container %q: privileged", c.Name)
		}
		if caps := sc.Capabilities; caps != nil {
			var extra []string
			for _, k := range caps.Add {
				if !slices.Contains(baselineCaps, corev1.Capability(strings.ToUpper(strings.TrimPrefix(string(k), "CAP_")))) {
					extra = append(extra, string(k))
				}
			}
			if len(extra) > 0 {
				add("container %q: capabilities %s added", c.Name, strings.Join(extra, ", "))
			}
		}
		if unconfined(sc.SeccompProfile) {
			add("container %q: an unconfined seccomp profile", c.Name)
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			add("container %q: procMount %s", c.Name, *sc.ProcMount)
		}
		if sc.SELinuxOptions != nil && sc.SELinuxOptions.Type != "" {
			add("container %q: SELinux type %q", c.Name, sc.SELinuxOptions.Type)
		}
		if a := sc.AppArmorProfile; a != nil && a.Type == corev1.AppArmorProfileTypeUnconfined {
			add("container %q: an unconfined AppArmor profile", c.Name)
		}
	}
	return out
}

func unconfined(p *corev1.SeccompProfile) bool {
	return p != nil && p.Type == corev1.SeccompProfileTypeUnconfined
}
