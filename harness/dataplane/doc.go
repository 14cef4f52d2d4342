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
// lead to. A change writes route.added or route.removed (harness/timeline);
// the routes present at start are written as route.snapshot.
//
// Resolution and cost: the stamp is droprun's clock when it handles the
// transaction's last line (observe.Recorder.Record), which trails the
// kernel's commit by the line's way through docker exec's stream and the
// watcher's queue. kube-proxy's own timestamp of the end of that sync (its
// metric, on the same clock) is a check of it; docs/advise.md gives both
// as measured. The monitor sleeps between changes, and each transaction
// costs droprun one parse of its lines, no process start.
//
// The watch starts its monitor first, then adds and deletes a probe table
// until the monitor reports it (nft says nothing when it has subscribed),
// and only then lists the tables: no change can fall between the list and
// the stream.
//
// On clusters droprun cannot exec into (not kind), there is no watch: the
// analysis falls back to kube-proxy's sync metrics and says so.
package dataplane
