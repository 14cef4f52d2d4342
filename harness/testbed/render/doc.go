// Package render turns a scenario's variant into the Kubernetes objects
// droprun applies: the web Deployment (bookshop's, rendered from the
// variant catalogue, or a user's own manifest with only the image changed),
// the web Service and, when traffic goes through the gateway, the gateway's
// Deployment and Service, all as server-side apply configurations.
//
// It is the testbed's: the scenario parser reads and validates files and
// renders nothing, so that what reads a run's records (harness/analysis and
// its views) needs no client-go. `droprun render` prints what Render
// returns, as YAML.
package render
