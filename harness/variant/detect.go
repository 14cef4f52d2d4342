package variant

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	var stop GRPCStopMode
	var age time.Duration
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shutdown="); ok {
			shutdown = Shutdown(v)
		}
		if v, ok := strings.CutPrefix(a, "--grpc-stop="); ok {
			stop = GRPCStopMode(v)
		}
		if v, ok := strings.CutPrefix(a, "--max-connection-age="); ok {
			age, _ = time.ParseDuration(v)
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
	if stop != "" {
		found += " grpc-stop=" + string(stop)
	}
	if age > 0 {
		found += " max-connection-age=" + age.String()
	}
	// The gRPC variants say --grpc-stop even for the app's default, so
	// that each is told apart from its HTTP twin (grpc-drain from
	// graceful-drain).
	for _, v := range catalogue {
		if v.Shutdown == shutdown && v.PreStop == hook && v.Distroless == distroless && v.GRPCStop == stop && v.MaxConnectionAge == age {
			return v.Name, found
		}
	}
	return "", found
}

// PodFacts are the shutdown settings of the container under test as a
// live pod template has them: what the pods a rollout deletes really do
// on their way out, whatever the manifest meant them to do.
type PodFacts struct {
	Container string `json:"container"`
	// PreStop is the hook's kind: none, sleep (the native action), exec,
	// httpGet or tcpSocket.
	PreStop string `json:"preStop"`
	// PreStopSeconds is the hook's length where it is known: a sleep
	// action's seconds, or N for an exec of `sleep N`.
	PreStopSeconds *int64 `json:"preStopSeconds,omitempty"`
	// PreStopCommand is an exec hook's command, PreStopTarget an httpGet
	// hook's path and port or a tcpSocket hook's port.
	PreStopCommand []string `json:"preStopCommand,omitempty"`
	PreStopTarget  string   `json:"preStopTarget,omitempty"`
	// GracePeriodSeconds is terminationGracePeriodSeconds (30 when unset,
	// as Kubernetes defaults it).
	GracePeriodSeconds int64 `json:"terminationGracePeriodSeconds"`
	// Replicas is the Deployment's spec.replicas when the facts were read
	// (0 in runs recorded before droprun read it): a drop rate depends
	// on how many pods share the load.
	Replicas int32 `json:"replicas,omitempty"`
	// Readiness is the container's readiness probe; nil when it has none.
	Readiness *ProbeFacts `json:"readiness,omitempty"`
	// Pod is the live pod the facts were read from; FromTemplate says
	// they were read from the Deployment's pod template instead, no live
	// pod being found. Neither is set in runs recorded before droprun
	// said which.
	Pod          string `json:"pod,omitempty"`
	FromTemplate bool   `json:"fromTemplate,omitempty"`
	// Image is the container's image as the spec names it (e.g.
	// bookshop:v1, myapp:1.4.0), and ImageID the image the live pod runs
	// as its runtime reports it (a digest; empty from a template). Both
	// are absent in runs recorded before droprun read them.
	Image   string `json:"image,omitempty"`
	ImageID string `json:"imageID,omitempty"`
}

// ProbeFacts are a probe's kind, target and timing.
type ProbeFacts struct {
	// Kind is httpGet, tcpSocket, exec or grpc.
	Kind string `json:"kind"`
	// Path is an httpGet probe's path; Port its port (or a tcpSocket or
	// grpc probe's), as a number where the container names it.
	Path string `json:"path,omitempty"`
	Port string `json:"port,omitempty"`
	// Command is an exec probe's command.
	Command []string `json:"command,omitempty"`
	// PeriodSeconds and FailureThreshold, with Kubernetes' defaults (10,
	// 3) where unset.
	PeriodSeconds    int32 `json:"periodSeconds"`
	FailureThreshold int32 `json:"failureThreshold"`
}

// Facts reads container's shutdown settings from a pod's or a pod
// template's spec; an error when it has no such container.
func Facts(spec *corev1.PodSpec, container string) (*PodFacts, error) {
	var c *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == container {
			c = &spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("the live pod spec has no container named %q", container)
	}
	f := &PodFacts{Container: container, PreStop: "none", GracePeriodSeconds: corev1.DefaultTerminationGracePeriodSeconds, Image: c.Image}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		f.GracePeriodSeconds = *g
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		switch h := c.Lifecycle.PreStop; {
		case h.Sleep != nil:
			f.PreStop, f.PreStopSeconds = "sleep", &h.Sleep.Seconds
		case h.Exec != nil:
			f.PreStop, f.PreStopCommand = "exec", h.Exec.Command
			if cmd := h.Exec.Command; len(cmd) == 2 && path.Base(cmd[0]) == "sleep" {
				if n, err := strconv.ParseInt(cmd[1], 10, 64); err == nil {
					f.PreStopSeconds = &n
				}
			}
		case h.HTTPGet != nil:
			f.PreStop, f.PreStopTarget = "httpGet", h.HTTPGet.Path+" :"+portOf(c, h.HTTPGet.Port)
		case h.TCPSocket != nil:
			f.PreStop, f.PreStopTarget = "tcpSocket", ":"+portOf(c, h.TCPSocket.Port)
		default:
			f.PreStop = "other"
		}
	}
	if p := c.ReadinessProbe; p != nil {
		r := &ProbeFacts{PeriodSeconds: p.PeriodSeconds, FailureThreshold: p.FailureThreshold}
		if r.PeriodSeconds == 0 {
			r.PeriodSeconds = 10
		}
		if r.FailureThreshold == 0 {
			r.FailureThreshold = 3
		}
		switch {
		case p.HTTPGet != nil:
			r.Kind, r.Path, r.Port = "httpGet", p.HTTPGet.Path, portOf(c, p.HTTPGet.Port)
		case p.TCPSocket != nil:
			r.Kind, r.Port = "tcpSocket", portOf(c, p.TCPSocket.Port)
		case p.Exec != nil:
			r.Kind, r.Command = "exec", p.Exec.Command
		case p.GRPC != nil:
			r.Kind, r.Port = "grpc", strconv.Itoa(int(p.GRPC.Port))
		default:
			r.Kind = "other"
		}
		f.Readiness = r
	}
	return f, nil
}

// portOf is a probe's or hook's port as a number, resolving a name against
// the container's ports.
func portOf(c *corev1.Container, p intstr.IntOrString) string {
	if p.Type == intstr.Int {
		return strconv.Itoa(p.IntValue())
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return strconv.Itoa(int(cp.ContainerPort))
		}
	}
	return p.StrVal
}

// String says the facts in one line, e.g. "preStop sleep 5s, grace 30s,
// readiness GET /readyz :9898 every 10s, unready after 3 failures".
func (f *PodFacts) String() string {
	if f == nil {
		return ""
	}
	var hook string
	switch f.PreStop {
	case "none":
		hook = "no preStop"
	case "sleep":
		hook = fmt.Sprintf("preStop sleep %ds", *f.PreStopSeconds)
	case "exec":
		hook = "preStop exec " + strings.Join(f.PreStopCommand, " ")
		if f.PreStopSeconds != nil {
			hook += fmt.Sprintf(" (%ds)", *f.PreStopSeconds)
		}
	case "httpGet":
		hook = "preStop GET " + f.PreStopTarget
	case "tcpSocket":
		hook = "preStop TCP " + f.PreStopTarget
	default:
		hook = "preStop " + f.PreStop
	}
	s := fmt.Sprintf("%s, grace %ds, ", hook, f.GracePeriodSeconds)
	r := f.Readiness
	if r == nil {
		return s + "no readiness probe" + f.source()
	}
	switch r.Kind {
	case "httpGet":
		s += fmt.Sprintf("readiness GET %s :%s", r.Path, r.Port)
	case "tcpSocket", "grpc":
		s += fmt.Sprintf("readiness %s :%s", r.Kind, r.Port)
	case "exec":
		s += "readiness exec " + strings.Join(r.Command, " ")
	default:
		s += "readiness " + r.Kind
	}
	return s + fmt.Sprintf(" every %ds, unready after %d failures", r.PeriodSeconds, r.FailureThreshold) + f.source()
}

// source says where the facts were read from, "" when not recorded.
func (f *PodFacts) source() string {
	switch {
	case f.Pod != "":
		return " (read from pod " + f.Pod + ")"
	case f.FromTemplate:
		return " (read from the Deployment's pod template: no live pod found)"
	}
	return ""
}
