// Package closeprobe observes, from outside the app, when each deleted
// pod's listener closes: the start of its race window, for any app, not
// only one (like bookshop) that records its own close.
//
// A small prober (apps/closeprobe) runs inside one kind node. As the
// timeline sees each pod's deletion, Watch names the pod's IP and port; the
// prober connects to it every 5 ms (a TCP connect, closed at once, not a
// request) until a connect fails. The close lies between the last connect
// that succeeded and the first that failed: within about 5 ms, plus the
// connect's own round trip inside the node. A listener that closed before
// the deletion was seen has no open time: its close is known only to be
// before the first probe. Each close is one timeline.KindListenerProbed
// event; the analysis uses it where the app has no record of its own.
//
// The same prober reads a front's API from inside the node (Poll), at the
// front pod's IP, with no API server between: every 20 ms while a pod
// terminates (from the first watch until 10 s after the last ends), so a
// front's stop of sending to a pod is placed to within a read or two, and
// every 500 ms otherwise, so that reading the front costs little outside
// rollouts.
//
// And it reads a container's log file where the runtime writes it
// (Follow): a front's access log, a line per request, read every 100 ms
// and sent on in batches, with no kubelet or API server between. A
// kubelet following a log asks the runtime for the container's state at
// every write it wakes for, so that at 500 lines a second the node's
// kubelet and containerd spend about as much CPU as the front itself
// (results/README.md, "What the observers cost").
// One prober runs in each node where droprun needs one.
package closeprobe
