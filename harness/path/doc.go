// Package path is the way droprun's requests travel from the client to a
// web pod: what the client connects to, which hops choose where each
// request goes next, and what each hop needs in the cluster. The scenario's
// traffic.target names a Path; rendering, the testbed's targets and the
// analysis's attribution read it, instead of branching on the name.
//
// Two paths exist today. NodePort is direct: the client connects to the web
// Service's node port and the entry node's kube-proxy rules pick the pod.
// Gateway puts a Proxy in between: the client connects to the gateway's
// node port, and the gateway pod opens its own connection to the web
// Service, so the rules of the gateway pod's node pick the web pod. A real
// front (an ingress controller that sends to pod IPs itself, the issue
// "The whole path") is the next Proxy: it picks the pod from its own
// endpoint list, and its hop's times come from the front, not kube-proxy.
package path
