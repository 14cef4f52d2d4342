// Package variant is the catalogue of bookshop's shutdown variants and the
// names, ports and labels of the objects droprun applies for them.
//
// A variant is a way for a pod to leave: no preStop hook (no-prestop), an
// exec or native preStop sleep, a drain inside the app (graceful-drain,
// graceful-drain-close), a naive Shutdown, a hook that cannot run
// (prestop-exec-distroless). Info says what each is expected to show and
// why; `droprun variants` prints it.
//
// Detect reads back, from a live pod template, which variant it is: the
// pods a rollout deletes are the old template's, not the new one's. Facts
// reads the same template's shutdown settings for any container,
// bookshop's or a custom app's: preStop hook and length, grace period,
// readiness probe. The package renders nothing: the manifests are
// harness/testbed/render's, so that what reads a run's records needs no
// client-go.
package variant
