package analysis

import (
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/traffic"
)

// A killed pod's requests in flight make the pods' view uncertain only
// when its exit totals are not sealed: a sealed count cut them unanswered.
func TestServerViewSealedExitIsExact(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sealed     bool
		inFlight   int
		openConns  int
		wantExact  bool
		wantAtExit int
	}{
		{"sealed with requests cut", true, 3, 0, true, 0},
		{"unsealed with requests in flight", false, 3, 0, false, 3},
		{"unsealed with connections open", false, 0, 2, false, 2},
		{"unsealed, nothing in flight", false, 0, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &input{app: []appmetrics.Record{{
				Time: analysistest.At(5), Started: analysistest.At(1), Pod: "web-a", Source: appmetrics.SourceTermination,
				Requests: 10, ByHandler: appmetrics.Counts{"version": {"200": 10}},
				InFlight: tc.inFlight, OpenConns: tc.openConns, Sealed: tc.sealed, Exit: "killed",
			}}}
			p := &plan{attackStart: analysistest.At(0), appScraped: analysistest.At(10)}
			tl := &Timeline{Outside: Tally{Requests: 12, Classes: map[traffic.Class]uint64{traffic.Class2xx: 10, traffic.ClassRefused: 2}}}
			v := in.serverView(p, tl)
			if v == nil {
				t.Fatal("no pods' view")
			}
			if v.PodsAnswered2xx != 10 || v.ClientGot2xx != 10 || v.ClientSent != 12 || v.PodsFinal != 1 {
				t.Errorf("view %+v; want 10 answered, 10 got, 12 sent, 1 final", *v)
			}
			if v.Exact() != tc.wantExact || v.InFlightAtExit != tc.wantAtExit {
				t.Errorf("exact %v, in flight at exit %d; want %v, %d", v.Exact(), v.InFlightAtExit, tc.wantExact, tc.wantAtExit)
			}
		})
	}
}
