package appmetrics

import (
	"strings"
	"testing"
)

// say they have no timing; other records never carry it.
func TestReadWithoutTiming(t *testing.T) {
	old := `{"time":"2026-11-30T02:00:05Z","source":"scrape","pod":"web-a","container":"web","containerID":"containerd://a1","started":"2026-11-30T02:00:00Z","requests":6,"byCode":{"200":6},"byHandler":{"version":{"200":5},"healthz":{"200":1}}}
{"time":"2026-11-30T02:00:10Z","source":"scrape","pod":"web-a","container":"web","containerID":"containerd://a1","started":"2026-11-30T02:00:00Z","scheduled":"2026-11-30T02:00:09.5Z","lateSeconds":0.25,"tookSeconds":0.25,"requests":9,"byCode":{"200":9},"byHandler":{"version":{"200":8},"healthz":{"200":1}}}
{"time":"2026-11-30T02:00:12Z","source":"scrape-errors","pod":"web-a","errors":2,"since":"2026-11-30T02:00:11Z","error":"refused"}
`
	recs, err := Read(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("read %d records, want 3", len(recs))
	}
	if _, _, ok := recs[0].ReadBetween(); ok || !recs[0].Scheduled.IsZero() || recs[0].TookSeconds != 0 {
		t.Errorf("old scrape %+v: want no timing", recs[0])
	}
	from, to, ok := recs[1].ReadBetween()
	if !ok || !from.Equal(at(9.75)) || !to.Equal(at(10)) || recs[1].LateSeconds != 0.25 {
		t.Errorf("timed scrape: ReadBetween = %v, %v, %v; want %v, %v", from, to, ok, at(9.75), at(10))
	}
	if _, _, ok := recs[2].ReadBetween(); ok {
		t.Error("a scrape-errors record claims a read span")
	}
	if s := Totals(recs, at(4), at(11)); s.Answered != 3 {
		t.Errorf("answered %d between an old and a new scrape, want 3", s.Answered)
	}
}
