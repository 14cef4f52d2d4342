package variant

import (
	"sort"
	"strings"
)

// The built-in shutdown variants of the bookshop web Deployment.
const (
	NoPreStop             = "no-prestop"
	PreStopSleep          = "prestop-sleep"
	PreStopSleepAction    = "prestop-sleep-action"
	GracefulDrain         = "graceful-drain"
	GracefulDrainClose    = "graceful-drain-close"
	NaiveShutdown         = "naive-shutdown"
	PreStopExecDistroless = "prestop-exec-distroless"
)

// PreStop is the kind of preStop hook a variant has.
type PreStop string

// The preStop hooks a variant can carry.
const (
	PreStopNone   PreStop = ""             // no hook: SIGTERM at once
	PreStopExec   PreStop = "exec"         // exec: ["sleep", N] in the container
	PreStopAction PreStop = "sleep-action" // the native lifecycle.preStop.sleep
)

// Shutdown is the bookshop app's --shutdown mode.
type Shutdown string

// The app's shutdown modes (see apps/bookshop).
const (
	ShutdownNone  Shutdown = "none"  // default disposition: SIGTERM kills, listener closes at once
	ShutdownNaive Shutdown = "naive" // Shutdown() at once: listener closes first, still drops
	ShutdownDrain Shutdown = "drain" // fail readiness, keep serving, then Shutdown
	// ShutdownDrainClose drains as ShutdownDrain does, but keeps
	// keep-alives on: each response says "Connection: close", and idle
	// connections are closed only when the drain is over.
	ShutdownDrainClose Shutdown = "drain-close"
)

// Drains reports whether the app keeps serving for a drain delay after
// SIGTERM (it takes --drain-delay, which counts against the grace period).
func (s Shutdown) Drains() bool { return s == ShutdownDrain || s == ShutdownDrainClose }

// Info describes one built-in variant: how it is built and what a run is
// expected to show, in the chapter's terms.
type Info struct {
	Name       string
	PreStop    PreStop
	Shutdown   Shutdown
	Distroless bool // the image has no /bin/sleep
	Summary    string
	Expect     string
}

var catalogue = []Info{
	{
		Name: NoPreStop, Shutdown: ShutdownNone,
		Summary: "bare ListenAndServe, no preStop hook",
		Expect:  "drops in every rollout: SIGTERM closes the listener while kube-proxy rules still point at the pod (000: connection refused, then timeouts)",
	},
	{
		Name: PreStopSleep, PreStop: PreStopExec, Shutdown: ShutdownNone,
		Summary: "exec preStop hook `sleep N`, app unchanged",
		Expect:  "no drops (or a rare single timeout): the pod keeps serving while the endpoint removal reaches every node",
	},
	{
		Name: PreStopSleepAction, PreStop: PreStopAction, Shutdown: ShutdownNone,
		Summary: "native lifecycle.preStop.sleep, no binary needed",
		Expect:  "no drops, like prestop-sleep, and it works on images without a shell",
	},
	{
		Name: GracefulDrain, Shutdown: ShutdownDrain,
		Summary: "app catches SIGTERM, fails readiness, keeps serving for the drain delay, then Shutdown",
		Expect:  "no drops: the preStop sleep moved inside the process",
	},
	{
		Name: GracefulDrainClose, Shutdown: ShutdownDrainClose,
		Summary: "graceful-drain for kept-alive clients: while draining, every response says Connection: close; idle connections stay open until the drain is over",
		Expect:  "no drops, with keep-alive traffic too: graceful-drain switches keep-alives off at SIGTERM, which closes idle connections under clients sending on them (000:eof, 000:reset); here each client leaves its connection after a response and reconnects through the updated routes",
	},
	{
		Name: NaiveShutdown, Shutdown: ShutdownNaive,
		Summary: "app calls server.Shutdown() on SIGTERM",
		Expect:  "drops like no-prestop: Shutdown closes the listener first and only drains requests already inside",
	},
	{
		Name: PreStopExecDistroless, PreStop: PreStopExec, Shutdown: ShutdownNone, Distroless: true,
		Summary: "exec preStop `sleep N` in an image that has no sleep binary",
		Expect:  "drops like no-prestop: the hook fails (FailedPreStopHook event) and SIGTERM follows at once",
	},
}

// Lookup returns the built-in variant called name.
func Lookup(name string) (Info, bool) {
	for _, v := range catalogue {
		if v.Name == name {
			return v, true
		}
	}
	return Info{}, false
}

// All returns every built-in variant, in the order the README lists them.
func All() []Info { return append([]Info(nil), catalogue...) }

// Names returns the built-in variant names, sorted, for help and errors.
func Names() []string {
	n := make([]string, len(catalogue))
	for i, v := range catalogue {
		n[i] = v.Name
	}
	sort.Strings(n)
	return n
}

// NameList is Names joined for messages.
func NameList() string { return strings.Join(Names(), ", ") }
