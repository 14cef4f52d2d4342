package scenario

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPrivileges: every field by which a pod spec reaches beyond the Pod
// Security baseline is named, once, in the container it sits in; a spec
// that stays within it (the runtime's default capabilities added, a
// restricted security context, the default service account) names none.
func TestPrivileges(t *testing.T) {
	yes, no := true, false
	unmasked := corev1.UnmaskedProcMount
	app := func(sc *corev1.SecurityContext) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", SecurityContext: sc}}}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want []string
	}{
		{"plain", app(nil), nil},
		{"restricted", corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "app", SecurityContext: &corev1.SecurityContext{
			Privileged: &no, AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE", "CAP_CHOWN"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}}, nil},
		{"privileged", app(&corev1.SecurityContext{Privileged: &yes}), []string{`container "app": privileged`}},
		{"caps", app(&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN", "CHOWN", "NET_ADMIN"}}}),
			[]string{`container "app": capabilities SYS_ADMIN, NET_ADMIN added`}},
		{"procMount", app(&corev1.SecurityContext{ProcMount: &unmasked}), []string{`container "app": procMount Unmasked`}},
		{"container seccomp", app(&corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}),
			[]string{`container "app": an unconfined seccomp profile`}},
		{"apparmor", app(&corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}),
			[]string{`container "app": an unconfined AppArmor profile`}},
		{"selinux", app(&corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}), []string{`container "app": SELinux type "spc_t"`}},
		{"host namespaces", corev1.PodSpec{HostNetwork: true, HostPID: true, HostIPC: true}, []string{"hostNetwork", "hostPID", "hostIPC"}},
		{"service account", corev1.PodSpec{ServiceAccountName: "admin"}, []string{`serviceAccountName "admin"`}},
		{"deprecated service account", corev1.PodSpec{DeprecatedServiceAccount: "admin"}, []string{`serviceAccount "admin"`}},
		{"hostPath", corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data"}, {Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}},
			[]string{`hostPath volume "root" (/)`}},
		{"hostPort", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 80, HostPort: 80}}}}},
			[]string{`container "app": hostPort 80`}},
		{"pod seccomp and sysctls", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}, Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}},
			[]string{"an unconfined seccomp profile", "sysctls"}},
		{"init container", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "setup", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}},
			[]string{`container "setup": privileged`}},
		{"ephemeral container", corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}}},
			[]string{`container "debug": privileged`}},
	} {
		if got := Privileges(&tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
