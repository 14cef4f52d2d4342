package analysis

import (
	"slices"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
)

// PodTimes is a pod's own account of its exit, from its app's termination
// message (bookshop's): when the process got its signal, when it closed
// its listening socket, and when the container finished (the kubelet's
// time). The first two are the pod's clock, the kind nodes' as droprun's;
// a zero time is one the app did not say.
type PodTimes struct {
	Signal, ListenerClosed, Finished time.Time
}

// podTimes is PodTimes by pod name, for every pod one of whose termination
// records says when its signal came or its listener closed: of a pod
// whose container ran more than once (a failed liveness probe restarts
// it), the last instance to finish that says so, the one the pod's
// deletion ended. Scrapes and termination records without those times
// (another app, an older bookshop, a message that could not be read) are
// left out.
func podTimes(app []appmetrics.Record) map[string]PodTimes {
	finals := slices.DeleteFunc(slices.Clone(app), func(r appmetrics.Record) bool {
		return r.Source != appmetrics.SourceTermination || (r.SignalAt.IsZero() && r.ListenerClosedAt.IsZero())
	})
	slices.SortStableFunc(finals, func(a, b appmetrics.Record) int { return a.Time.Compare(b.Time) })
	out := map[string]PodTimes{}
	for _, r := range finals {
		out[r.Pod] = PodTimes{Signal: r.SignalAt, ListenerClosed: r.ListenerClosedAt, Finished: r.Time}
	}
	return out
}
