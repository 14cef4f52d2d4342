// Package advise turns measured (pod deletion, node) pairs into a
// shutdown setting: how long a pod must keep serving after its deletion
// is requested so that every node has stopped routing new connections to
// it first.
//
// Each pair is one node's stop of routing to one deleted pod
// (analysis.RouteGap.Unrouted, seconds after the deletion request, or
// after the kubelet's start of the preStop hook where the app's SIGTERM
// shows that came first: see lead). The
// pairs of one deletion share one EndpointSlice change, so the bound takes
// one observation per deleted pod: its latest node, the moment every node
// had stopped. The delay D that advise recommends is a distribution-free
// one-sided upper confidence bound on a high quantile of those (by
// default: with 95% confidence, for 99% of deletions every node stops
// routing within D; see stats.UpperQuantileBound). It treats deletions as
// independent draws; those of one rollout share its moment, so take the
// bound as a guide and the sweep check as its test.
//
// From D it derives:
//   - preStop.sleep.seconds = ⌈D⌉, the native sleep taking whole seconds;
//   - a drain delay, D rounded up to 100 ms, for apps that delay their own
//     listener close after SIGTERM instead (SIGTERM comes at or after the
//     kubelet's start, so D after SIGTERM covers D after that start);
//   - terminationGracePeriodSeconds = preStop + the larger of the 30 s an
//     app gets after SIGTERM by default and its longest measured SIGTERM →
//     exit plus headroom (Kubernetes counts the hook inside the period).
//
// The time from deletion to SIGTERM and the app's own SIGTERM → listener
// close time add margin in practice; the recommendation does not count on
// them and reports them apart.
//
// When the runs hold a sweep of preStopSeconds or drainDelay, advise
// checks the recommendation against it: the sweep's clean floor is the
// smallest swept value from which every larger value was clean (see
// Clean), and it agrees when that floor is at or below the
// recommendation.
package advise
