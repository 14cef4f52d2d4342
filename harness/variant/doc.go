// Package variant is the catalogue of bookshop's shutdown variants and the
// manifests droprun applies for them.
//
// A variant is a way for a pod to leave: no preStop hook (no-prestop), an
// exec or native preStop sleep, a drain inside the app (graceful-drain,
// graceful-drain-close), a naive Shutdown, a hook that cannot run
// (prestop-exec-distroless). Info says what each is expected to show and
// why; `droprun variants` prints it.
//
// Deployment renders a variant as a server-side apply configuration of the
// bookshop web Deployment (Custom does the same for a user's manifest, only
// the image changed), Service and GatewayService the Services, and Detect
// reads back, from a live pod template, which variant it is: the pods a
// rollout deletes are the old template's, not the new one's. Facts reads
// the same template's shutdown settings for any container, bookshop's or a
// custom app's: preStop hook and length, grace period, readiness probe.
package variant
