package analysis

import (
	"slices"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/timeline"
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

// probedClose is a pod's listener close as droprun's prober saw it from
// outside (harness/closeprobe): the first connect that failed, and how
// long before it one last succeeded (0 when none did: the close came
// before the probing began, so closed is only an upper bound).
type probedClose struct {
	closed     time.Time
	resolution time.Duration
}

// probedCloses is probedClose by pod name, from the timeline's
// KindListenerProbed events (the first per pod).
func probedCloses(events []timeline.Event) map[string]probedClose {
	out := map[string]probedClose{}
	for _, e := range events {
		open, closed, ok := e.ProbedClose()
		if _, seen := out[e.Pod]; !ok || seen || e.Pod == "" {
			continue
		}
		pc := probedClose{closed: closed}
		if !open.IsZero() {
			pc.resolution = closed.Sub(open)
		}
		out[e.Pod] = pc
	}
	return out
}

// ProbeAgreement is how droprun's prober (harness/closeprobe) agreed with
// an app's own record of its listener close, over a run's deleted pods.
type ProbeAgreement struct {
	// Deleted pods the timeline saw; Probed of them the prober saw close.
	Deleted, Probed int
	// Bracketed were seen open, then closed, by the prober, with the app's
	// own close recorded; Widest is the widest bracket. Outside of them
	// had the app's close after the prober's first refusal (by more than
	// 2 ms), the furthest by Furthest: the two disagree. Early had it
	// before the prober's last open connect, by up to Earliest: an app
	// that stamps its close just before closing (bookshop) can be held
	// between the two on a busy node.
	Bracketed, Outside, Early  int
	Widest, Furthest, Earliest time.Duration
	// Unanswered were bracketed by a connect that timed out, not one
	// refused: no proof the listener had closed (a busy listener's full
	// backlog drops SYNs too), so not held to the app's close.
	Unanswered int
	// Late were closed when the probing began, with the app's own close
	// recorded: the prober's first refusal is then only an upper bound.
	Late int
}

// probeSlack is how far outside the prober's bracket an app's own close
// may be and still agree: both read the same clock (the kind nodes are
// this machine), to about a millisecond.
const probeSlack = 2 * time.Millisecond

// AgreeProbe holds the prober's closes in events to the apps' own records
// in app (bookshop's termination messages).
func AgreeProbe(events []timeline.Event, app []appmetrics.Record) ProbeAgreement {
	own := map[string]time.Time{}
	for _, r := range app {
		if r.Source == appmetrics.SourceTermination && !r.ListenerClosedAt.IsZero() {
			own[r.Pod] = r.ListenerClosedAt
		}
	}
	var a ProbeAgreement
	for _, e := range events {
		if e.Kind == timeline.KindPodDeletionRequested {
			a.Deleted++
		}
		open, closed, ok := e.ProbedClose()
		if !ok {
			continue
		}
		a.Probed++
		at, has := own[e.Pod]
		switch {
		case !has:
		case open.IsZero():
			a.Late++
		case e.Detail[timeline.DetailProbeHow] != timeline.ProbeRefused:
			a.Unanswered++
		default:
			a.Bracketed++
			if off := at.Sub(closed); off > probeSlack {
				a.Outside++
				a.Furthest = max(a.Furthest, off)
			}
			if off := open.Sub(at); off > probeSlack {
				a.Early++
				a.Earliest = max(a.Earliest, off)
			}
			a.Widest = max(a.Widest, closed.Sub(open))
		}
	}
	return a
}

// AgreeProbeIn is AgreeProbe over the run directory dir's events.jsonl and
// app-metrics.jsonl, read as Analyze reads them.
func AgreeProbeIn(dir string) (ProbeAgreement, error) {
	var sum Summary
	events, err := readEvents(dir, &sum)
	if err != nil {
		return ProbeAgreement{}, err
	}
	app, err := readApp(dir, &sum)
	if err != nil {
		return ProbeAgreement{}, err
	}
	return AgreeProbe(events, app), nil
}
