// Package cluster gives droprun a cluster to measure on: a kind cluster it
// creates, reuses and deletes through the kind library (never the kind
// binary), or an existing cluster the user names explicitly.
//
// A kind cluster is 1 control plane plus workers (3 nodes by default, like
// the bookshop chapter's), on droprun's node image, with 127.0.0.1 host
// ports mapped to the web (30080) and gateway (30081) NodePorts. Its
// kubeconfig is written to droprun's own directory, never into
// ~/.kube/config. kind's wait covers only the control plane and returns nil
// on timeout, so Up waits for every node itself.
package cluster
