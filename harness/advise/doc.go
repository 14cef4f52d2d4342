// Package advise turns measured (pod deletion, node) pairs into a
// shutdown setting: how long a pod must keep serving after its deletion
// is requested so that every node has stopped routing new connections to
// it first.
//
// Each pair is one node's stop of routing to one deleted pod
// (analysis.RouteGap.Unrouted, seconds after the deletion request). The
// delay D that advise recommends is a distribution-free one-sided upper
// confidence bound on a high quantile of those delays (by default: with
// 95% confidence, 99% of pairs are unrouted within D; see
// stats.UpperQuantileBound). It assumes the pairs are independent draws
// from the delays the cluster shows; pairs of one rollout share its
// moment, so treat the bound as a guide and the sweep check as its test.
//
// From D it derives:
//   - preStop.sleep.seconds = ⌈D⌉, the native sleep taking whole seconds;
//   - a drain delay, D rounded up to 100 ms, for apps that delay their own
//     listener close after SIGTERM instead;
//   - terminationGracePeriodSeconds = preStop + 30: Kubernetes counts the
//     hook inside the grace period, and the runs do not record how long
//     the app takes from SIGTERM to exit, so the app keeps the 30 s it had
//     by default.
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
