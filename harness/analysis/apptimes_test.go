package analysis

import (
	"maps"
	"testing"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/timeline"
)

func TestPodTimes(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	final := func(pod, id string, signal, closed, finished int) appmetrics.Record {
		r := appmetrics.Record{Source: appmetrics.SourceTermination, Pod: pod, ContainerID: id, Time: at(finished)}
		if signal >= 0 {
			r.SignalAt = at(signal)
		}
		if closed >= 0 {
			r.ListenerClosedAt = at(closed)
		}
		return r
	}
	app := []appmetrics.Record{
		// web-a: scraped, then its message.
		{Source: appmetrics.SourceScrape, Pod: "web-a", Time: at(100), Requests: 5},
		final("web-a", "a1", 1000, 6000, 6100),
		// web-b restarted: its second instance's record comes first in
		// the file, but its first instance finished first; the deletion
		// ended the second.
		final("web-b", "b2", 9000, 9001, 9500),
		final("web-b", "b1", 2000, 2001, 2400),
		// web-c: a first instance from an older build without times,
		// then one with a signal but no listener close.
		final("web-c", "c1", -1, -1, 500),
		final("web-c", "c2", 3000, -1, 3500),
		// web-d: an unreadable message, and a scrape; web-e: no times.
		{Source: appmetrics.SourceTermination, Pod: "web-d", Time: at(700), Error: "not bookshop's"},
		{Source: appmetrics.SourceScrape, Pod: "web-d", Time: at(800)},
		final("web-e", "e1", -1, -1, 900),
		{Source: appmetrics.SourceScrapeErrors, Pod: "web-e", Time: at(950), Errors: 3},
	}
	want := map[string]PodTimes{
		"web-a": {Signal: at(1000), ListenerClosed: at(6000), Finished: at(6100)},
		"web-b": {Signal: at(9000), ListenerClosed: at(9001), Finished: at(9500)},
		"web-c": {Signal: at(3000), Finished: at(3500)},
	}
	got := podTimes(app)
	if !maps.EqualFunc(got, want, func(a, b PodTimes) bool {
		return a.Signal.Equal(b.Signal) && a.ListenerClosed.Equal(b.ListenerClosed) && a.Finished.Equal(b.Finished)
	}) {
		t.Errorf("podTimes:\n got %v\nwant %v", got, want)
	}
	if app[2].Pod != "web-b" || app[2].ContainerID != "b2" {
		t.Error("podTimes reordered its input")
	}
	if n := len(podTimes(nil)); n != 0 {
		t.Errorf("podTimes(nil) has %d pods", n)
	}
}

// TestAgreeProbe: a close inside the prober's bracket agrees, one 10 ms
// after the first refusal does not, one 5 ms before the last open connect
// is early, and a pod closed before the probing began is late.
func TestAgreeProbe(t *testing.T) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	probe := func(pod string, open, closed int) timeline.Event {
		d := map[string]string{timeline.DetailProbeClosed: at(closed).Format(time.RFC3339Nano), "how": "refused"}
		if open >= 0 {
			d[timeline.DetailProbeOpen] = at(open).Format(time.RFC3339Nano)
		}
		return timeline.Event{Kind: timeline.KindListenerProbed, Pod: pod, Detail: d}
	}
	probeHow := func(pod string, open, closed int, how string) timeline.Event {
		e := probe(pod, open, closed)
		e.Detail["how"] = how
		return e
	}
	events := []timeline.Event{
		{Kind: timeline.KindPodDeletionRequested, Pod: "a"}, {Kind: timeline.KindPodDeletionRequested, Pod: "b"},
		{Kind: timeline.KindPodDeletionRequested, Pod: "c"}, {Kind: timeline.KindPodDeletionRequested, Pod: "d"},
		{Kind: timeline.KindPodDeletionRequested, Pod: "e"},
		probe("a", 10, 16), probe("b", 10, 16), probe("c", -1, 30), probe("e", 10, 12), probeHow("f", 10, 12, "timeout"),
	}
	own := func(pod string, ms int) appmetrics.Record {
		return appmetrics.Record{Source: appmetrics.SourceTermination, Pod: pod, ListenerClosedAt: at(ms)}
	}
	got := AgreeProbe(events, []appmetrics.Record{own("a", 13), own("b", 26), own("c", 20), own("e", 5), own("f", 3000)})
	want := ProbeAgreement{Deleted: 5, Probed: 5, Unanswered: 1, Bracketed: 3, Outside: 1, Early: 1, Widest: 6 * time.Millisecond, Furthest: 10 * time.Millisecond, Earliest: 5 * time.Millisecond, Late: 1}
	if got != want {
		t.Errorf("AgreeProbe = %+v, want %+v", got, want)
	}
}
