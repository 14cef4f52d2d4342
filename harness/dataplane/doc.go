// Package dataplane records, inside each kind node, when that node starts
// and stops routing a Service's traffic to each pod IP: the moment the
// race is about, at millisecond resolution.
//
// Both kube-proxy modes droprun runs here program nf_tables: iptables mode
// through iptables-nft (table ip nat: a KUBE-SVC chain per Service port
// jumping to one KUBE-SEP chain per endpoint, each DNATing to the pod),
// nftables mode directly (table ip kube-proxy: a service-… chain per
// Service port whose rule DNATs to its endpoints). One `nft -a monitor`
// per node, run through `docker exec`, reports every rule change of that
// node as it commits; the watcher keeps a model of the two tables (the
// rules by handle, from one `nft -a list` at start plus the monitor's
// changes) and, at the end of each transaction (the monitor's "new
// generation" line), works out which pod IPs the Service's chains still
// lead to. A change writes route.added or route.removed (harness/timeline)
// stamped with droprun's clock as it read that line; the routes present at
// start are written as route.snapshot.
//
// Resolution and cost: the stamp trails the kernel's commit by the time
// the line takes through docker exec's stream. Measured here, a removal's
// stamp falls a median 3–11 ms before kube-proxy's own timestamp of the
// end of the sync that made it (its metric, same clock), so the stamp is
// good to milliseconds. The monitor sleeps between changes: over a 7-min
// run at 1000 req/s each node's nft used 30–40 ms of CPU and its docker
// exec client 80 ms; each transaction costs droprun one parse of its
// lines, no process start.
//
// On clusters droprun cannot exec into (not kind), there is no watch: the
// analysis falls back to kube-proxy's sync metrics and says so.
package dataplane
