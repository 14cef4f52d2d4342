package variant

import (
	"sort"
	"strings"
	"time"
)

// The built-in shutdown variants of the bookshop web Deployment.
const (
	NoPreStop             = "no-prestop"
	PreStopSleep          = "prestop-sleep"
	PreStopSleepAction    = "prestop-sleep-action"
	GracefulDrain         = "graceful-drain"
	GracefulDrainClose    = "graceful-drain-close"
	NaiveShutdown         = "naive-shutdown"
	MaxConnectionAged     = "max-connection-age"
	PreStopExecDistroless = "prestop-exec-distroless"
	// The gRPC variants: how the app's gRPC server stops (protocol grpc).
	GRPCStop             = "grpc-stop"
	GRPCGracefulStop     = "grpc-graceful-stop"
	GRPCDrain            = "grpc-drain"
	GRPCMaxConnectionAge = "grpc-max-connection-age"
)

// GRPCStopMode is the bookshop app's --grpc-stop: what its gRPC server
// does when the app shuts down (at once, or after the drain delay).
type GRPCStopMode string

// The gRPC server's stops.
const (
	// GRPCGraceful is grpc.Server.GracefulStop, the default: close the
	// listener, send every connection GOAWAY, finish the calls in flight.
	GRPCGraceful GRPCStopMode = "graceful"
	// GRPCHard is grpc.Server.Stop: close the listener and every
	// connection at once, cancelling the calls in flight.
	GRPCHard GRPCStopMode = "stop"
)

// MaxConnectionAge is the app's maximum connection age in the variants
// that set it (max-connection-age, grpc-max-connection-age): each
// connection is ended after about this long (±10% jitter, as grpc-go's
// keepalive MaxConnectionAge has), so clients reconnect and new pods get
// their share of the connections.
const MaxConnectionAge = 10 * time.Second

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

// Info describes one built-in variant: how it is built, what a run is
// expected to show and why.
type Info struct {
	Name       string
	PreStop    PreStop
	Shutdown   Shutdown
	Distroless bool // the image has no /bin/sleep
	// GRPCStop is how the app's gRPC server stops: set in every gRPC
	// variant, empty (the app's default, GRPCGraceful) in the others.
	GRPCStop GRPCStopMode
	// MaxConnectionAge, when set, is how long the app lets a connection
	// live (its --max-connection-age, for HTTP and gRPC alike).
	MaxConnectionAge time.Duration
	// Protocol, when set, is the one traffic.protocol the variant means
	// anything under ("grpc"): with another it would measure a variant
	// that has a name of its own.
	Protocol string
	Summary  string
	Expect   string
	// Drops says whether the variant's rollouts are expected to drop
	// requests: it loses the SIGTERM/endpoint race. The others are fixes,
	// expected to drop nothing.
	Drops bool
	// Why explains, in a paragraph, why the variant behaves as Expect
	// says: what the report says of every row that measured it.
	Why string
}

// CustomWhy is said of a custom app, whose shutdown droprun does not
// know: how to read its failure classes instead.
const CustomWhy = "A custom app: droprun does not know how it shuts down, so read the classes. Refused connections, resets " +
	"and EOFs during a rollout mean the process stopped listening while traffic was still routed to it, the SIGTERM/endpoint " +
	"race; 502s are the same race seen through a proxy; timeouts alone point at connections sent to an address that no " +
	"longer answered. A pod that keeps serving until its endpoint removal has reached every node (a preStop wait, or a " +
	"drain in the app) drops nothing."

var catalogue = []Info{
	{
		Name: NoPreStop, Shutdown: ShutdownNone,
		Summary: "bare ListenAndServe, no preStop hook",
		Expect:  "drops in every rollout: SIGTERM closes the listener while kube-proxy rules still point at the pod (000: connection refused, then timeouts)",
		Drops:   true,
		Why: "No preStop hook, and an app that does not handle SIGTERM. Pod deletion is concurrent, not ordered: " +
			"when the Deployment deletes an old pod, the kubelet sends SIGTERM at once while the endpoint controller removes the pod " +
			"from the Service's EndpointSlice, a change that still has to reach every node's kube-proxy. The kill is a local kill(2); " +
			"the removal is a distributed update, and nothing makes the first wait for the second. So the process dies and its " +
			"listener closes while some node's rules still send new connections to it. Refused connections (000:refused) are that " +
			"race; resets and EOFs are connections the dying process cut; timeouts are connections sent to a pod address that no " +
			"longer answers at all. kubectl reports a successful rollout throughout.",
	},
	{
		Name: PreStopSleep, PreStop: PreStopExec, Shutdown: ShutdownNone,
		Summary: "exec preStop hook `sleep N`, app unchanged",
		Expect:  "no drops (or a rare single timeout): the pod keeps serving while the endpoint removal reaches every node",
		Why: "An exec preStop hook runs sleep before the kubelet sends SIGTERM. The app is unchanged, but its " +
			"listener stays open and keeps answering while the endpoint removal reaches every node; when SIGTERM lands, no rule " +
			"anywhere points at the pod, so nothing is sent to it. The sleep is spent inside terminationGracePeriodSeconds, not on " +
			"top of it. This is the fix for code you cannot change.",
	},
	{
		Name: PreStopSleepAction, PreStop: PreStopAction, Shutdown: ShutdownNone,
		Summary: "native lifecycle.preStop.sleep, no binary needed",
		Expect:  "no drops, like prestop-sleep, and it works on images without a shell",
		Why: "The same wait as prestop-sleep, with the native lifecycle.preStop.sleep action: the kubelet " +
			"does the sleeping, so the image needs no sleep binary, and the hook works on distroless and scratch images too. " +
			"The listener stays open until the endpoint removal has reached every node, then SIGTERM lands on a pod nobody routes to.",
	},
	{
		Name: GracefulDrain, Shutdown: ShutdownDrain,
		Summary: "app catches SIGTERM, fails readiness, keeps serving for the drain delay, then Shutdown",
		Expect:  "no drops: the preStop sleep moved inside the process",
		Why: "The fix for code you can change: on SIGTERM the app fails its readiness probe, keeps serving for " +
			"the drain delay, then stops accepting and drains the requests in flight (Shutdown) and exits well inside the grace " +
			"period. Keeping on serving is the preStop sleep moved inside the process: the gap is a propagation delay in someone " +
			"else's control loop, and the only remedy is to outlive it.",
	},
	{
		Name: GracefulDrainClose, Shutdown: ShutdownDrainClose,
		Summary: "graceful-drain for kept-alive clients: while draining, every response says Connection: close; idle connections stay open until the drain is over",
		Expect:  "no drops, with keep-alive traffic too: graceful-drain switches keep-alives off at SIGTERM, which closes idle connections under clients sending on them (000:eof, 000:reset); here each client leaves its connection after a response and reconnects through the updated routes",
		Why: "graceful-drain for clients that keep their connections alive. On SIGTERM the app fails its readiness " +
			"probe and keeps serving for the drain delay, as graceful-drain does, but it leaves keep-alives on: every response " +
			"during the drain says Connection: close, so each client leaves its connection right after its next response and " +
			"reconnects through the updated routes, to a pod that is not going away, and the idle connections stay open until the " +
			"drain is over. graceful-drain switches keep-alives off instead, which closes every idle connection at once, under " +
			"clients that may be sending on one (000:eof, 000:reset). Then Shutdown drains the requests in flight and the app " +
			"exits inside the grace period.",
	},
	{
		Name: MaxConnectionAged, Shutdown: ShutdownDrainClose, MaxConnectionAge: MaxConnectionAge,
		Summary: "graceful-drain-close with connections ended after 10s (HTTP/1.1: Connection: close, h2c: GOAWAY)",
		Expect:  "no drops, and with kept-alive or h2c clients the new pods get their share of the requests soon after a rollout: every connection is replaced within about 10 s",
		Why: "graceful-drain-close, plus an app that ends every connection after about 10 s: the next response on an older " +
			"connection says Connection: close, which over HTTP/2 becomes a GOAWAY. A kept-alive or HTTP/2 client holds its " +
			"connections as long as they live, and a connection is routed once, when it opens: after a rollout the connections " +
			"opened before it stay on the pods that were there, and a new pod gets only the connections opened since, until the " +
			"next rollout. With a maximum age every client reconnects within it, through the current routes, and the load " +
			"spreads over the new pods. The client learns of the close from the response it waited for, so nothing races it. " +
			"With a new connection per request it changes nothing. The shutdown itself is graceful-drain-close's.",
	},
	{
		Name: NaiveShutdown, Shutdown: ShutdownNaive,
		Summary: "app calls server.Shutdown() on SIGTERM",
		Expect:  "drops like no-prestop: Shutdown closes the listener first and only drains requests already inside",
		Drops:   true,
		Why: "The app catches SIGTERM and calls server.Shutdown() at once. Shutdown closes the listening socket " +
			"immediately and only then waits for the requests in flight: it carefully drains the requests that had already arrived " +
			"while refusing the ones still being routed to the pod. Closing the listener first is the very behaviour that drops " +
			"requests, so this graceful shutdown does not help.",
	},
	{
		Name: PreStopExecDistroless, PreStop: PreStopExec, Shutdown: ShutdownNone, Distroless: true,
		Summary: "exec preStop `sleep N` in an image that has no sleep binary",
		Expect:  "drops like no-prestop: the hook fails (FailedPreStopHook event) and SIGTERM follows at once",
		Drops:   true,
		Why: "An exec preStop hook that runs sleep, in a distroless image with no sleep binary. The hook " +
			"fails outright (a FailedPreStopHook event) and the kubelet proceeds to SIGTERM immediately: the no-prestop race, now " +
			"with an event log entry. The native sleep action (prestop-sleep-action), an httpGet hook or a wait in code avoids it.",
	},
	{
		Name: GRPCStop, Shutdown: ShutdownNaive, GRPCStop: GRPCHard, Protocol: "grpc",
		Summary: "gRPC: app calls grpc.Server.Stop() on SIGTERM",
		Expect:  "drops in every rollout: calls in flight are cancelled (000:eof, 000:stream-reset) and new connections refused while kube-proxy still routes to the pod (000:refused)",
		Drops:   true,
		Why: "The app catches SIGTERM and calls Stop on its gRPC server at once: the listener closes and every connection " +
			"is cut, with its calls in flight. The clients' channels reconnect through rules that still send some new connections " +
			"to the stopped pod, which refuses them, and a channel whose connection attempt failed waits out its reconnect backoff " +
			"(grpc-go's default starts at 1 s) failing every call put on it. The endpoint race, made worse by the cut.",
	},
	{
		Name: GRPCGracefulStop, Shutdown: ShutdownNaive, GRPCStop: GRPCGraceful, Protocol: "grpc",
		Summary: "gRPC: app calls grpc.Server.GracefulStop() on SIGTERM",
		Expect:  "drops like no-prestop: GracefulStop finishes the calls in flight, but its listener closes while kube-proxy still routes new connections to the pod (000:refused)",
		Drops:   true,
		Why: "GracefulStop is naive-shutdown for gRPC. It closes the listener at once, sends every connection GOAWAY and " +
			"finishes the calls already inside, so no call is cut. But each client then reconnects, and until the endpoint removal " +
			"has reached every node, some of those new connections are routed to the pod whose listener is gone: refused, and the " +
			"channel that tried waits out its reconnect backoff, failing the calls put on it.",
	},
	{
		Name: GRPCDrain, Shutdown: ShutdownDrain, GRPCStop: GRPCGraceful, Protocol: "grpc",
		Summary: "gRPC: app fails readiness, keeps serving for the drain delay, then GracefulStop()",
		Expect:  "no drops: the clients' connections stay served until GOAWAY, and they reconnect through updated routes",
		Why: "graceful-drain for gRPC. On SIGTERM the app fails its readiness probe and keeps serving its gRPC connections " +
			"for the drain delay, while the endpoint removal reaches every node. Then GracefulStop sends GOAWAY: grpc-go retries " +
			"the streams it refused on a new connection (masked, not failed), and the new connections go to pods that stay. " +
			"The calls in flight finish before the process exits.",
	},
	{
		Name: GRPCMaxConnectionAge, Shutdown: ShutdownDrain, GRPCStop: GRPCGraceful, MaxConnectionAge: MaxConnectionAge, Protocol: "grpc",
		Summary: "gRPC: grpc-drain with the server's MaxConnectionAge at 10s",
		Expect:  "no drops, and the new pods get their share of the calls soon after a rollout: every connection is replaced within about 10 s",
		Why: "grpc-drain, plus a server that ends every connection after about 10 s (keepalive MaxConnectionAge: GOAWAY, " +
			"then a close once its calls finish). A gRPC client holds its connections as long as they live, so after a rollout " +
			"the connections opened before it stay on the pods that were there, and a new pod gets only the connections opened " +
			"since. With a maximum age every client reconnects within it, through the current routes, and the load spreads " +
			"over the new pods. The shutdown itself is grpc-drain's.",
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
